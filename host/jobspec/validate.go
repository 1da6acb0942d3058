package jobspec

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cronexpr"
	"github.com/hashicorp/go-version"
)

// ErrInvalidJob is what a ValidationError is (errors.Is).
var ErrInvalidJob = errors.New("jobspec: invalid job")

// ValidationError lists everything wrong with a job.
type ValidationError struct {
	Problems []*FieldError
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "invalid job: " + e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid job: %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  * ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidJob) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidJob }

// FieldError is one problem in one part of a job.
type FieldError struct {
	Path Path
	Err  error
}

func (e *FieldError) Error() string { return e.Path.String() + ": " + e.Err.Error() }

// Unwrap returns the problem.
func (e *FieldError) Unwrap() error { return e.Err }

// checker collects problems.
type checker struct{ problems []*FieldError }

func (c *checker) add(p Path, format string, args ...any) {
	c.problems = append(c.problems, &FieldError{Path: p, Err: fmt.Errorf(format, args...)})
}

// validNamespace is what a namespace's name may be, as Nomad's.
var validNamespace = regexp.MustCompile(`^[a-zA-Z0-9-]{1,128}$`)

// Validate checks a canonicalized job as Nomad's server does, and returns
// a *ValidationError listing every problem, or nil.
func Validate(j *sdk.Job) error {
	c := &checker{}
	c.job(j)
	if len(c.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: c.problems}
}

func (c *checker) job(j *sdk.Job) {
	var root Path
	switch {
	case j.ID == "":
		c.add(root.Attr("id"), "a job ID is required")
	case strings.Contains(j.ID, " "):
		c.add(root.Attr("id"), "the job ID %q contains a space", j.ID)
	case strings.Contains(j.ID, "\x00"):
		c.add(root.Attr("id"), "the job ID contains a null character")
	}
	if j.Name == "" {
		c.add(root.Attr("name"), "a job name is required")
	} else if strings.Contains(j.Name, "\x00") {
		c.add(root.Attr("name"), "the job name contains a null character")
	}
	if j.Region == "" {
		c.add(root.Attr("region"), "a region is required")
	}
	switch {
	case j.Namespace == "":
		c.add(root.Attr("namespace"), "a namespace is required")
	case j.Namespace == sdk.CoreJobNamespace:
		c.add(root.Attr("namespace"), "the namespace %q is reserved for the core scheduler's evaluations", j.Namespace)
	case strings.Contains(j.Namespace, "\x00"):
		// The state's indexes end each key part with a null: the jobs of
		// namespace "a" would list those of "a\x00b" too.
		c.add(root.Attr("namespace"), "the namespace contains a null character")
	case !validNamespace.MatchString(j.Namespace):
		// As Nomad's namespace names: "*" (every namespace, to lists and
		// ACL policies) or a glob is not one.
		c.add(root.Attr("namespace"), "the namespace %q is not a namespace name (letters, digits and dashes, at most 128)", j.Namespace)
	}
	switch j.Type {
	case sdk.JobTypeService, sdk.JobTypeBatch, sdk.JobTypeSystem, sdk.JobTypeSysBatch:
	default:
		c.add(root.Attr("type"), "%q is not a job type (service, batch, system or sysbatch)", j.Type)
	}
	if j.Priority < sdk.JobMinPriority || j.Priority > sdk.JobMaxPriority {
		c.add(root.Attr("priority"), "must be between %d and %d, not %d", sdk.JobMinPriority, sdk.JobMaxPriority, j.Priority)
	}
	if len(j.Datacenters) == 0 {
		c.add(root.Attr("datacenters"), "at least one datacenter is required")
	}
	for _, dc := range j.Datacenters {
		if dc == "" {
			c.add(root.Attr("datacenters"), "a datacenter must not be empty")
		}
	}
	if len(j.TaskGroups) == 0 {
		c.add(root, "a job needs at least one group")
	}
	if len(j.Multiregion) > 0 {
		// Nomad's open-source edition refuses them too ("Multiregion jobs
		// are unlicensed"); ignoring the block would run the job with none
		// of its regions' counts and datacenters. A job without one may
		// hold an empty map once stored, so emptiness is what counts.
		c.add(root.Attr("multiregion"), "multiregion jobs are not supported: Drover runs a single region")
	}
	c.constraints(root, j.Constraints, false)
	c.affinities(root, j.Type, j.Affinities)
	c.spreads(root, j.Type, j.Spreads)
	if p := j.Periodic; p != nil && p.Enabled {
		c.periodic(root.Attr("periodic"), j.Type, p)
	}
	if p := j.ParameterizedJob; p != nil && !j.Dispatched {
		c.parameterized(root.Attr("parameterized"), j.Type, p)
	}
	seen := map[string]int{}
	for i, tg := range j.TaskGroups {
		p := root.Block("group", tg.Name)
		if tg.Name == "" {
			c.add(root.Item("group", i), "group %d has no name", i+1)
		} else if prev, ok := seen[tg.Name]; ok {
			c.add(p, "group %d redefines %q from group %d", i+1, tg.Name, prev+1)
		} else {
			seen[tg.Name] = i
		}
		c.group(j, tg, p)
	}
}

func (c *checker) group(j *sdk.Job, tg *sdk.TaskGroup, p Path) {
	if strings.Contains(tg.Name, "\x00") {
		c.add(p, "the group name contains a null character")
	}
	if tg.Count < 0 {
		c.add(p.Attr("count"), "must not be negative, not %d", tg.Count)
	}
	if j.Type == sdk.JobTypeSystem && tg.Count > 1 {
		c.add(p.Attr("count"), "a system job runs one allocation per node; count cannot exceed 1, not %d", tg.Count)
	}
	if len(tg.Tasks) == 0 {
		c.add(p, "a group needs at least one task")
	}
	c.constraints(p, tg.Constraints, false)
	c.affinities(p, j.Type, tg.Affinities)
	c.spreads(p, j.Type, tg.Spreads)
	if tg.RestartPolicy == nil {
		c.add(p.Attr("restart"), "a restart policy is required")
	} else {
		c.restart(p.Attr("restart"), tg.RestartPolicy)
	}
	switch {
	case j.Type == sdk.JobTypeSystem && tg.ReschedulePolicy != nil:
		c.add(p.Attr("reschedule"), "system jobs are not rescheduled; remove the reschedule block")
	case tg.ReschedulePolicy != nil:
		c.reschedule(p.Attr("reschedule"), tg.ReschedulePolicy)
	}
	if tg.EphemeralDisk == nil {
		c.add(p.Attr("ephemeral_disk"), "an ephemeral disk is required")
	} else if tg.EphemeralDisk.SizeMB < 10 {
		c.add(p.Attr("ephemeral_disk").Attr("size"), "must be at least 10 MB, not %d", tg.EphemeralDisk.SizeMB)
	}
	if u := tg.Update; u != nil {
		if j.Type != sdk.JobTypeService && j.Type != sdk.JobTypeSystem {
			c.add(p.Attr("update"), "%s jobs do not roll out updates; the update block is only for service and system jobs", j.Type)
		}
		c.update(p.Attr("update"), u)
	}
	if m := tg.Migrate; m != nil {
		if j.Type != sdk.JobTypeService {
			c.add(p.Attr("migrate"), "%s jobs are not migrated; the migrate block is only for service jobs", j.Type)
		} else {
			c.migrate(p.Attr("migrate"), m)
		}
	}
	if tg.ShutdownDelay != nil && *tg.ShutdownDelay < 0 {
		c.add(p.Attr("shutdown_delay"), "must not be negative, not %s", *tg.ShutdownDelay)
	}
	c.disconnect(j, tg, p)
	c.scaling(tg, p)
	c.networks(tg, p)
	c.volumes(tg, p)
	c.services(tg, nil, p, tg.Services)
	tasks := map[string]int{}
	leaders := 0
	for i, t := range tg.Tasks {
		tp := p.Block("task", t.Name)
		if t.Name == "" {
			c.add(p.Item("task", i), "task %d has no name", i+1)
		} else if prev, ok := tasks[t.Name]; ok {
			c.add(tp, "task %d redefines %q from task %d", i+1, t.Name, prev+1)
		} else {
			tasks[t.Name] = i
		}
		if t.Leader {
			leaders++
		}
		c.task(j, tg, t, tp)
	}
	if leaders > 1 {
		c.add(p, "only one task may be the leader, not %d", leaders)
	}
}

func (c *checker) disconnect(j *sdk.Job, tg *sdk.TaskGroup, p Path) {
	legacyBoth := tg.MaxClientDisconnect != nil && tg.StopAfterClientDisconnect != nil
	if legacyBoth {
		c.add(p.Attr("max_client_disconnect"), "cannot be set together with stop_after_client_disconnect")
	}
	if tg.MaxClientDisconnect != nil && *tg.MaxClientDisconnect < 0 {
		c.add(p.Attr("max_client_disconnect"), "must not be negative, not %s", *tg.MaxClientDisconnect)
	}
	if d := tg.StopAfterClientDisconnect; d != nil && *d != 0 {
		if *d < 0 {
			c.add(p.Attr("stop_after_client_disconnect"), "must not be negative, not %s", *d)
		} else if j.Type != sdk.JobTypeBatch && j.Type != sdk.JobTypeService {
			c.add(p.Attr("stop_after_client_disconnect"), "is only for batch and service jobs")
		}
	}
	d := tg.Disconnect
	if d == nil {
		return
	}
	dp := p.Attr("disconnect")
	if tg.MaxClientDisconnect != nil && d.LostAfter != *tg.MaxClientDisconnect {
		c.add(p.Attr("max_client_disconnect"), "cannot be set together with disconnect's lost_after; use lost_after")
	}
	if d.LostAfter < 0 {
		c.add(dp.Attr("lost_after"), "must not be negative, not %s", d.LostAfter)
	}
	if d.StopOnClientAfter != nil && *d.StopOnClientAfter < 0 {
		c.add(dp.Attr("stop_on_client_after"), "must not be negative, not %s", *d.StopOnClientAfter)
	}
	// A disconnect block that Canonicalize made of the two legacy fields
	// repeats their conflict, reported above where the user wrote it.
	fromLegacy := legacyBoth && d.LostAfter == *tg.MaxClientDisconnect && d.StopOnClientAfter != nil &&
		*d.StopOnClientAfter == *tg.StopAfterClientDisconnect
	if d.LostAfter > 0 && d.StopOnClientAfter != nil && *d.StopOnClientAfter > 0 && !fromLegacy {
		c.add(dp, "lost_after and stop_on_client_after cannot both be set")
	}
	switch d.Reconcile {
	case "", sdk.ReconcileBestScore, sdk.ReconcileKeepOriginal, sdk.ReconcileKeepReplacement, sdk.ReconcileLongestRunning:
	default:
		c.add(dp.Attr("reconcile"), "%q is not best_score, keep_original, keep_replacement or longest_running", d.Reconcile)
	}
}

func (c *checker) scaling(tg *sdk.TaskGroup, p Path) {
	s := tg.Scaling
	if s == nil {
		return
	}
	sp := p.Attr("scaling")
	switch {
	case s.Max < 0:
		c.add(sp.Attr("max"), "a maximum count is required and must not be negative")
	case s.Min < 0:
		c.add(sp.Attr("min"), "must not be negative, not %d", s.Min)
	case s.Min > s.Max:
		c.add(sp.Attr("min"), "must not be greater than max (%d > %d)", s.Min, s.Max)
	case int64(tg.Count) < s.Min:
		c.add(p.Attr("count"), "must not be less than the scaling block's min (%d < %d)", tg.Count, s.Min)
	case int64(tg.Count) > s.Max:
		c.add(p.Attr("count"), "must not be greater than the scaling block's max (%d > %d)", tg.Count, s.Max)
	}
}

// networks checks port labels and static ports across the group's and its
// tasks' networks. A static port may be asked for once per host network,
// as in Nomad: ports are counted per address, so one port on two host
// networks binds two addresses. A task's network binds its ports on the
// node's address whatever host network they name (as Nomad's task
// networks do), so its static ports count as the default network's.
func (c *checker) networks(tg *sdk.TaskGroup, p Path) {
	labels := map[string]string{}
	type static struct {
		port    int
		network string
	}
	reserved := map[static]string{}
	check := func(np Path, owner string, n *sdk.NetworkResource, task bool) {
		for _, port := range append(append([]sdk.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			pp := np.Block("port", port.Label)
			if other, ok := labels[port.Label]; ok {
				c.add(pp, "the port label %q is already used by %s", port.Label, other)
			} else {
				labels[port.Label] = owner
			}
			if port.Value != 0 {
				key := static{port.Value, cmpOr(port.HostNetwork, "default")}
				if task {
					key.network = "default"
				}
				switch by, taken := reserved[key]; {
				case port.Value < 0 || port.Value > math.MaxUint16:
					c.add(pp.Attr("static"), "%d is not a port (1 to %d)", port.Value, math.MaxUint16)
				case taken && task && cmpOr(port.HostNetwork, "default") != "default":
					c.add(pp.Attr("static"), "port %d is already reserved by %s, on host network \"default\": a task's network binds its ports on the node's default address",
						port.Value, by)
				case taken:
					c.add(pp.Attr("static"), "port %d is already reserved by %s", port.Value, by)
				default:
					reserved[key] = fmt.Sprintf("%s port %q", owner, port.Label)
				}
			}
			if port.To < -1 || port.To > math.MaxUint16 {
				c.add(pp.Attr("to"), "%d is not a port to map to (-1 to %d)", port.To, math.MaxUint16)
			}
		}
	}
	for i, n := range tg.Networks {
		check(p.Item("network", i), "the group network", n, false)
	}
	for _, t := range tg.Tasks {
		if t.Resources == nil {
			continue
		}
		for i, n := range t.Resources.Networks {
			check(p.Block("task", t.Name).Attr("resources").Item("network", i), fmt.Sprintf("task %q", t.Name), n, true)
		}
	}
}

func (c *checker) task(j *sdk.Job, tg *sdk.TaskGroup, t *sdk.Task, p Path) {
	if strings.ContainsAny(t.Name, `/\`) {
		c.add(p, "a task name cannot contain slashes")
	} else if strings.Contains(t.Name, "\x00") {
		c.add(p, "the task name contains a null character")
	}
	if t.Driver == "" {
		c.add(p.Attr("driver"), "a task driver is required (such as docker, exec or raw_exec)")
	}
	if t.KillTimeout < 0 {
		c.add(p.Attr("kill_timeout"), "must not be negative, not %s", t.KillTimeout)
	} else if u := tg.Update; j.Type == sdk.JobTypeService && u != nil && u.ProgressDeadline > 0 && t.KillTimeout > u.ProgressDeadline {
		c.add(p.Attr("kill_timeout"), "%s is longer than the group's progress_deadline (%s)", t.KillTimeout, u.ProgressDeadline)
	}
	if t.ShutdownDelay < 0 {
		c.add(p.Attr("shutdown_delay"), "must not be negative, not %s", t.ShutdownDelay)
	}
	if t.Resources == nil {
		c.add(p.Attr("resources"), "resources are required")
	} else {
		c.resources(p.Attr("resources"), t.Resources)
	}
	c.constraints(p, t.Constraints, true)
	c.affinities(p, j.Type, t.Affinities)
	if l := t.Lifecycle; l != nil {
		switch l.Hook {
		case "prestart", "poststart", "poststop":
		default:
			c.add(p.Attr("lifecycle").Attr("hook"), "%q is not prestart, poststart or poststop", l.Hook)
		}
	}
	c.services(tg, t, p, t.Services)
	c.templates(p, t.Templates)
	c.artifacts(p, t.Artifacts)
	c.volumeMounts(tg, p, t.VolumeMounts)
	c.csiPlugin(p.Attr("csi_plugin"), t.CSIPluginConfig)
	for i, sp := range t.ScalingPolicies {
		if sp.Max < 0 {
			c.add(p.Item("scaling", i).Attr("max"), "a maximum is required and must not be negative")
		} else if sp.Min > sp.Max {
			c.add(p.Item("scaling", i).Attr("min"), "must not be greater than max (%d > %d)", sp.Min, sp.Max)
		}
	}
}

func (c *checker) resources(p Path, r *sdk.Resources) {
	if r.Cores > 0 && r.CPU > 0 {
		c.add(p, "ask for cpu or cores, not both")
	}
	if r.Cores < 0 {
		c.add(p.Attr("cores"), "must not be negative, not %d", r.Cores)
	}
	if r.Cores == 0 && r.CPU < 1 {
		c.add(p.Attr("cpu"), "must be at least 1 MHz, not %d", r.CPU)
	}
	if r.MemoryMB < 10 {
		c.add(p.Attr("memory"), "must be at least 10 MB, not %d", r.MemoryMB)
	}
	if r.MemoryMaxMB != 0 && r.MemoryMaxMB < r.MemoryMB {
		c.add(p.Attr("memory_max"), "must be at least memory (%d MB), not %d", r.MemoryMB, r.MemoryMaxMB)
	}
	if r.DiskMB < 0 {
		c.add(p.Attr("disk"), "must not be negative, not %d", r.DiskMB)
	}
	for _, d := range r.Devices {
		dp := p.Block("device", d.Name)
		if d.Name == "" {
			c.add(dp, "a device needs a name (type, vendor/type or vendor/type/model)")
		}
		c.constraints(dp, d.Constraints, false)
		c.affinities(dp, "", d.Affinities)
	}
}

func (c *checker) constraints(p Path, cs []*sdk.Constraint, taskLevel bool) {
	for i, con := range cs {
		cp := p.Item("constraint", i)
		if taskLevel && (con.Operand == sdk.ConstraintDistinctHosts || con.Operand == sdk.ConstraintDistinctProperty) {
			c.add(cp, "%s applies to groups and jobs, not to a task", con.Operand)
			continue
		}
		c.constraint(cp, con)
	}
}

func (c *checker) constraint(p Path, con *sdk.Constraint) {
	needLeft := true
	switch con.Operand {
	case sdk.ConstraintDistinctHosts:
		needLeft = false
	case sdk.ConstraintSetContains, sdk.ConstraintSetContainsAll, sdk.ConstraintSetContainsAny:
		if con.RTarget == "" {
			c.add(p.Attr("value"), "%s needs a value", con.Operand)
		}
	case sdk.ConstraintRegex:
		if _, err := regexp.Compile(con.RTarget); err != nil {
			c.add(p.Attr("value"), "the regular expression does not compile: %v", err)
		}
	case sdk.ConstraintVersion:
		if _, err := version.NewConstraint(con.RTarget); err != nil {
			c.add(p.Attr("value"), "%q is not a version constraint: %v", con.RTarget, err)
		}
	case sdk.ConstraintSemver:
		if _, err := version.NewConstraint(con.RTarget); err != nil {
			c.add(p.Attr("value"), "%q is not a semver constraint: %v", con.RTarget, err)
		}
	case sdk.ConstraintDistinctProperty:
		if con.RTarget != "" {
			if n, err := strconv.ParseUint(con.RTarget, 10, 64); err != nil || n < 1 {
				c.add(p.Attr("value"), "distinct_property allows a count of 1 or more, not %q", con.RTarget)
			}
		}
	case sdk.ConstraintAttributeIsSet, sdk.ConstraintAttributeIsNotSet:
		if con.RTarget != "" {
			c.add(p.Attr("value"), "%s takes no value", con.Operand)
		}
	case "=", "==", "is", "!=", "not", "<", "<=", ">", ">=":
		if con.RTarget == "" {
			c.add(p.Attr("value"), "the operator %q needs a value", con.Operand)
		}
	default:
		c.add(p.Attr("operator"), "%q is not a constraint operator", con.Operand)
	}
	if needLeft && con.LTarget == "" {
		c.add(p.Attr("attribute"), "an attribute is required")
	}
}

func (c *checker) affinities(p Path, jobType string, as []*sdk.Affinity) {
	if len(as) > 0 && jobType == sdk.JobTypeSystem {
		c.add(p.Item("affinity", 0), "system jobs run on every node; they may not have affinities")
		return
	}
	for i, a := range as {
		ap := p.Item("affinity", i)
		switch a.Operand {
		case sdk.ConstraintSetContains, sdk.ConstraintSetContainsAll, sdk.ConstraintSetContainsAny:
			if a.RTarget == "" {
				c.add(ap.Attr("value"), "%s needs a value", a.Operand)
			}
		case sdk.ConstraintRegex:
			if _, err := regexp.Compile(a.RTarget); err != nil {
				c.add(ap.Attr("value"), "the regular expression does not compile: %v", err)
			}
		case sdk.ConstraintVersion:
			if _, err := version.NewConstraint(a.RTarget); err != nil {
				c.add(ap.Attr("value"), "%q is not a version constraint: %v", a.RTarget, err)
			}
		case sdk.ConstraintSemver:
			if _, err := version.NewConstraint(a.RTarget); err != nil {
				c.add(ap.Attr("value"), "%q is not a semver constraint: %v", a.RTarget, err)
			}
		case "=", "==", "is", "!=", "not", "<", "<=", ">", ">=":
			if a.RTarget == "" {
				c.add(ap.Attr("value"), "the operator %q needs a value", a.Operand)
			}
		default:
			c.add(ap.Attr("operator"), "%q is not an affinity operator", a.Operand)
		}
		if a.LTarget == "" {
			c.add(ap.Attr("attribute"), "an attribute is required")
		}
		if a.Weight == 0 || a.Weight > 100 || a.Weight < -100 {
			c.add(ap.Attr("weight"), "must be between -100 and 100 and not zero, not %d", a.Weight)
		}
	}
}

func (c *checker) spreads(p Path, jobType string, ss []*sdk.Spread) {
	if len(ss) > 0 && jobType == sdk.JobTypeSystem {
		c.add(p.Item("spread", 0), "system jobs run on every node; they may not have spreads")
		return
	}
	for i, s := range ss {
		sp := p.Item("spread", i)
		if s.Attribute == "" {
			c.add(sp.Attr("attribute"), "an attribute is required")
		}
		if s.Weight <= 0 || s.Weight > 100 {
			c.add(sp.Attr("weight"), "must be between 1 and 100, not %d", s.Weight)
		}
		seen := map[string]bool{}
		sum := 0
		for _, t := range s.SpreadTarget {
			tp := sp.Block("target", t.Value)
			if seen[t.Value] {
				c.add(tp, "the target %q is defined twice", t.Value)
			}
			seen[t.Value] = true
			if t.Percent > 100 {
				c.add(tp.Attr("percent"), "must be between 0 and 100, not %d", t.Percent)
			}
			sum += int(t.Percent)
		}
		if sum > 100 {
			c.add(sp, "the targets' percentages add up to %d%%, more than 100%%", sum)
		}
	}
}

func (c *checker) restart(p Path, r *sdk.RestartPolicy) {
	switch r.Mode {
	case "delay", "fail":
	default:
		c.add(p.Attr("mode"), "%q is not a restart mode (delay or fail)", r.Mode)
	}
	if r.Attempts == 0 && r.Mode != "fail" {
		c.add(p.Attr("attempts"), "a %q restart policy with 0 attempts is ambiguous", r.Mode)
	}
	if r.Interval < 5*time.Second {
		c.add(p.Attr("interval"), "must be at least 5s, not %s", r.Interval)
	}
	if time.Duration(r.Attempts)*r.Delay > r.Interval {
		c.add(p, "%d attempts with a delay of %s do not fit in an interval of %s", r.Attempts, r.Delay, r.Interval)
	}
}

func (c *checker) reschedule(p Path, r *sdk.ReschedulePolicy) {
	if r.Attempts <= 0 && !r.Unlimited {
		return // rescheduling is off
	}
	if r.Attempts > 0 && r.Interval <= 0 {
		c.add(p.Attr("interval"), "an interval is required when attempts is set")
	}
	if r.Attempts > 0 && r.Unlimited {
		c.add(p.Attr("unlimited"), "attempts = %d and unlimited = true contradict each other", r.Attempts)
	}
	delaysOK := r.Delay >= 5*time.Second
	if !delaysOK {
		c.add(p.Attr("delay"), "must be at least 5s, not %s", r.Delay)
	}
	ceiling := ""
	switch r.DelayFunction {
	case sdk.DelayFunctionConstant:
	case sdk.DelayFunctionExponential, sdk.DelayFunctionFibonacci:
		ceiling = fmt.Sprintf(", max_delay %s", r.MaxDelay)
		if r.MaxDelay < 5*time.Second || r.MaxDelay < r.Delay {
			c.add(p.Attr("max_delay"), "must be at least 5s and at least delay (%s), not %s", r.Delay, r.MaxDelay)
			delaysOK = false
		}
	default:
		c.add(p.Attr("delay_function"), "%q is not constant, exponential or fibonacci", r.DelayFunction)
		delaysOK = false
	}
	if r.Unlimited {
		return
	}
	if r.Interval < 15*time.Second {
		c.add(p.Attr("interval"), "must be at least 15s, not %s", r.Interval)
	}
	if !delaysOK {
		return
	}
	if ok, fit, need := viableAttempts(r); !ok {
		c.add(p.Attr("interval"), "%d of the %d attempts fit in %s (delay %s, %s delay function%s); make the interval at least %s",
			fit, r.Attempts, r.Interval, r.Delay, r.DelayFunction, ceiling, need.Round(time.Second))
	}
}

// viableAttempts reports whether all the attempts of a limited reschedule
// policy fit in its interval, as Nomad's server reckons it, with how many
// do and the interval all of them need. Nomad's reckoning is kept, odd as
// it is: with the exponential function, the time an attempt needs is its
// own delay until the delays reach max_delay, then grows by max_delay per
// attempt. The delays are followed until they reach max_delay and the rest
// is computed, so that a huge attempts costs nothing. r's delays are valid:
// delay and max_delay at least 5s, delay at most max_delay.
func viableAttempts(r *sdk.ReschedulePolicy) (ok bool, fit int, need time.Duration) {
	n := r.Attempts
	switch r.DelayFunction {
	case sdk.DelayFunctionConstant:
		need = mulDuration(n, r.Delay)
		return r.Interval >= need, int(r.Interval / r.Delay), need
	case sdk.DelayFunctionExponential:
		delay := r.Delay
		for i := 0; i < n; i++ {
			if delay > r.MaxDelay || delay == math.MaxInt64 {
				// This attempt and every later one add max_delay.
				rest := n - i
				if room := r.Interval - need; room > 0 {
					fit += min(rest, int((room-1)/r.MaxDelay))
				}
				need = addDuration(need, mulDuration(rest, r.MaxDelay))
				break
			}
			need = delay
			if need < r.Interval {
				fit++
			}
			delay = addDuration(delay, delay)
		}
		return fit >= n, fit, need
	default: // fibonacci
		// Each delay is the sum of the two before it until that exceeds
		// max_delay, which it then is; each later one is max_delay more
		// than the one before it.
		seq := []time.Duration{r.Delay, r.Delay}
		for reached := false; len(seq) < n && !reached; {
			next := addDuration(seq[len(seq)-1], seq[len(seq)-2])
			if next > r.MaxDelay {
				next, reached = r.MaxDelay, true
			}
			seq = append(seq, next)
		}
		last := len(seq) - 1
		need = addDuration(seq[last], mulDuration(max(n, 2)-len(seq), r.MaxDelay))
		if r.Interval >= need {
			return true, n, need
		}
		for i, d := range seq {
			if d > r.Interval {
				return false, i, need
			}
		}
		return false, last + int((r.Interval-seq[last])/r.MaxDelay) + 1, need
	}
}

// addDuration and mulDuration saturate at the longest duration.
func addDuration(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulDuration(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

func (c *checker) update(p Path, u *sdk.UpdateStrategy) {
	switch u.HealthCheck {
	case "checks", "task_states", "manual":
	default:
		c.add(p.Attr("health_check"), "%q is not checks, task_states or manual", u.HealthCheck)
	}
	if u.MaxParallel < 0 {
		c.add(p.Attr("max_parallel"), "must not be negative, not %d", u.MaxParallel)
	}
	if u.Canary < 0 {
		c.add(p.Attr("canary"), "must not be negative, not %d", u.Canary)
	}
	if u.Canary == 0 && u.AutoPromote {
		c.add(p.Attr("auto_promote"), "auto_promote needs canaries (canary > 0)")
	}
	if u.MinHealthyTime < 0 {
		c.add(p.Attr("min_healthy_time"), "must not be negative, not %s", u.MinHealthyTime)
	}
	if u.HealthyDeadline <= 0 {
		c.add(p.Attr("healthy_deadline"), "must be positive, not %s", u.HealthyDeadline)
	}
	if u.ProgressDeadline < 0 {
		c.add(p.Attr("progress_deadline"), "must not be negative, not %s", u.ProgressDeadline)
	}
	if u.MinHealthyTime >= u.HealthyDeadline {
		c.add(p.Attr("min_healthy_time"), "must be less than healthy_deadline (%s >= %s)", u.MinHealthyTime, u.HealthyDeadline)
	}
	if u.ProgressDeadline != 0 && u.HealthyDeadline >= u.ProgressDeadline {
		c.add(p.Attr("healthy_deadline"), "must be less than progress_deadline (%s >= %s)", u.HealthyDeadline, u.ProgressDeadline)
	}
	if u.Stagger <= 0 {
		c.add(p.Attr("stagger"), "must be positive, not %s", u.Stagger)
	}
}

func (c *checker) migrate(p Path, m *sdk.MigrateStrategy) {
	if m.MaxParallel < 0 {
		c.add(p.Attr("max_parallel"), "must not be negative, not %d", m.MaxParallel)
	}
	switch m.HealthCheck {
	case "checks", "task_states":
	case "":
		if m.MaxParallel > 0 {
			c.add(p.Attr("health_check"), "a health check (checks or task_states) is required")
		}
	default:
		c.add(p.Attr("health_check"), "%q is not checks or task_states", m.HealthCheck)
	}
	if m.MinHealthyTime < 0 {
		c.add(p.Attr("min_healthy_time"), "must not be negative, not %s", m.MinHealthyTime)
	}
	if m.HealthyDeadline < 0 {
		c.add(p.Attr("healthy_deadline"), "must not be negative, not %s", m.HealthyDeadline)
	}
	if m.MinHealthyTime > m.HealthyDeadline {
		c.add(p.Attr("min_healthy_time"), "must not be more than healthy_deadline (%s > %s)", m.MinHealthyTime, m.HealthyDeadline)
	}
}

func (c *checker) periodic(p Path, jobType string, pc *sdk.PeriodicConfig) {
	if jobType != sdk.JobTypeBatch && jobType != sdk.JobTypeSysBatch {
		c.add(p, "only batch and sysbatch jobs can be periodic, not %s jobs", jobType)
	}
	specs := pc.Specs
	if pc.Spec != "" {
		specs = append([]string{pc.Spec}, specs...)
	}
	if len(specs) == 0 {
		c.add(p.Attr("cron"), "a cron expression is required")
	}
	if pc.SpecType != "cron" && pc.SpecType != "test" {
		c.add(p, "%q is not a periodic spec type", pc.SpecType)
	}
	if pc.SpecType == "cron" {
		for _, s := range specs {
			if err := parseCron(s); err != nil {
				c.add(p.Attr("cron"), "%q is not a cron expression: %v", s, err)
			}
		}
	}
	if pc.TimeZone != "" {
		if _, err := time.LoadLocation(pc.TimeZone); err != nil {
			c.add(p.Attr("time_zone"), "%q is not a time zone: %v", pc.TimeZone, err)
		}
	}
}

// parseCron parses a cron expression and evaluates it once, from
// cronProbeTime: cronexpr panics on some inputs in Parse, and in Next on
// some it parses (a month range written backwards, DEC-JAN or 10-1,
// leaves no month), which would fail every launch.
func parseCron(s string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	e, err := cronexpr.Parse(s)
	if err != nil {
		return err
	}
	if r := backwardRange(s); r != "" {
		// Before the probe: cronexpr accepts such a range and its Next
		// then scans every day to 2099 (seconds for 10-5 in the seconds
		// field) or panics (a month range).
		return fmt.Errorf("a field matches no value (the range %s is written backwards)", r)
	}
	return probeCron(e)
}

// backwardRange returns the first numeric range of spec written backwards
// ("10-5", also with a step, "10-5/2"), or "". Such a range matches
// nothing.
func backwardRange(spec string) string {
	for _, field := range strings.Fields(spec) {
		for _, part := range strings.Split(field, ",") {
			r, _, _ := strings.Cut(part, "/")
			lo, hi, ok := strings.Cut(r, "-")
			if !ok {
				continue
			}
			a, errA := strconv.Atoi(lo)
			b, errB := strconv.Atoi(hi)
			if errA == nil && errB == nil && a > b {
				return r
			}
		}
	}
	return ""
}

// cronProbeTime is the first year cronexpr knows: every year a spec names
// is ahead of it, so a spec that panics from some time panics from it (a
// spec whose years are all past would never launch anyway).
var cronProbeTime = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

func probeCron(e *cronexpr.Expression) (err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("a field matches no value (a range written backwards, such as DEC-JAN or 10-1?)")
		}
	}()
	e.Next(cronProbeTime)
	return nil
}

func (c *checker) parameterized(p Path, jobType string, pc *sdk.ParameterizedJobConfig) {
	if jobType != sdk.JobTypeBatch && jobType != sdk.JobTypeSysBatch {
		c.add(p, "only batch and sysbatch jobs can be parameterized, not %s jobs", jobType)
	}
	switch pc.Payload {
	case sdk.DispatchPayloadOptional, sdk.DispatchPayloadRequired, sdk.DispatchPayloadForbidden:
	default:
		c.add(p.Attr("payload"), "%q is not optional, required or forbidden", pc.Payload)
	}
	required := map[string]bool{}
	for _, k := range pc.MetaRequired {
		required[k] = true
	}
	var both []string
	for _, k := range pc.MetaOptional {
		if required[k] {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		c.add(p.Attr("meta_optional"), "keys cannot be both required and optional: %s", strings.Join(both, ", "))
	}
}
