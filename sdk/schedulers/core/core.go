// Package core is Drover's core scheduler: garbage collection of
// evaluations, allocations, jobs, nodes and deployments, as Nomad's core
// scheduler does it.
//
// The host's timers create core evals (Type "_core", TriggeredBy
// "scheduled") whose JobID names the collection: eval-gc, job-gc, node-gc,
// deployment-gc, or force-gc (everything, whatever its age, from the API).
// The plugin reads the thresholds from its configuration (Go durations
// under sdk.ConfigEvalGCThreshold, ...), finds what is old enough with
// Collect (pure), and asks the host to delete it through sdk.Collector.
// The host checks every object again before deleting anything.
//
// The plugin needs evaluations mirrored (plugin.Info.MirrorEvals) and a
// state that lists jobs and deployments (sdk.Catalog).
package core

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/conclude"
)

// MaxBatch bounds the objects one GarbageCollect request names, so that a
// large backlog is deleted in raft entries of bounded size.
const MaxBatch = 2048

// Errors.
var (
	// ErrNoEvalState: the state does not mirror evaluations.
	ErrNoEvalState = errors.New("core: the state does not mirror evaluations (plugin.Info.MirrorEvals)")
	// ErrNoCatalog: the state cannot list jobs and deployments.
	ErrNoCatalog = errors.New("core: the state cannot list jobs and deployments (sdk.Catalog)")
	// ErrNoCollector: the planner cannot collect garbage.
	ErrNoCollector = errors.New("core: the planner offers no garbage collection")
)

// Thresholds are how long ago objects must have last changed to be
// collected (sdk.GCThresholds).
type Thresholds = sdk.GCThresholds

// Scheduler is the core scheduler.
type Scheduler struct{}

var (
	_ sdk.Scheduler     = (*Scheduler)(nil)
	_ sdk.ConfigChecker = (*Scheduler)(nil)
)

// configKeys are the keys the core scheduler takes: its GC thresholds.
var configKeys = []string{sdk.ConfigEvalGCThreshold, sdk.ConfigBatchEvalGCThreshold, sdk.ConfigJobGCThreshold,
	sdk.ConfigNodeGCThreshold, sdk.ConfigDeploymentGCThreshold}

// CheckConfig implements sdk.ConfigChecker. The core scheduler takes its
// GC thresholds, each a non-negative Go duration; the host fills in those
// its plugin block leaves out from its server block (eval_gc_threshold,
// ...). Any other key is an operator's mistake, refused as Nomad refuses
// an unknown setting.
func (s *Scheduler) CheckConfig(config map[string]string) error {
	if err := sdk.CheckConfigKeys(config, configKeys...); err != nil {
		return err
	}
	// The keys left out are the host's to fill: checked as set.
	set := make(map[string]string, len(configKeys))
	for _, k := range configKeys {
		set[k] = "0s"
	}
	maps.Copy(set, config)
	_, err := sdk.GCThresholdsFrom(set)
	return err
}

// Process implements sdk.Scheduler.
func (s *Scheduler) Process(ctx *sdk.Context, eval *sdk.Evaluation) error {
	if eval.Type != sdk.JobTypeCore {
		return conclude.Unhandled(ctx, eval)
	}
	evals, ok := ctx.State.(sdk.EvalState)
	if !ok {
		return ErrNoEvalState
	}
	catalog, ok := ctx.State.(sdk.Catalog)
	if !ok {
		return ErrNoCatalog
	}
	collector, ok := ctx.Planner.(sdk.Collector)
	if !ok {
		return ErrNoCollector
	}
	var th Thresholds
	if eval.JobID != sdk.CoreJobForceGC {
		var err error
		if th, err = sdk.GCThresholdsFrom(ctx.Config); err != nil {
			return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: "core: config " + err.Error()})
		}
	}
	req, err := Collect(eval.JobID, View{State: ctx.State, Evals: evals, Catalog: catalog}, ctx.Now, th)
	if err != nil {
		return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusFailed, Description: err.Error()})
	}
	for _, part := range Split(req, MaxBatch) {
		if err := collector.GarbageCollect(part); err != nil {
			return fmt.Errorf("core: collect: %w", err)
		}
	}
	return conclude.SetStatus(ctx, eval, conclude.Outcome{Status: sdk.EvalStatusComplete})
}

// View is what Collect reads.
type View struct {
	State   sdk.State
	Evals   sdk.EvalState
	Catalog sdk.Catalog
}

// ErrUnknownCollection is returned for a core eval JobID Collect does not
// know.
var ErrUnknownCollection = errors.New("core: unknown collection")

// Collect returns what collection kind (a core JobID) may delete at now
// under th (force-gc: everything terminal, whatever its age).
func Collect(kind string, v View, now time.Time, th Thresholds) (*sdk.GCRequest, error) {
	c := newCollector(v, now, th)
	switch kind {
	case sdk.CoreJobEvalGC:
		c.evalGC()
	case sdk.CoreJobJobGC:
		c.jobGC()
	case sdk.CoreJobNodeGC:
		c.nodeGC()
	case sdk.CoreJobDeploymentGC:
		c.deploymentGC()
	case sdk.CoreJobForceGC:
		c.jobGC()
		c.evalGC()
		c.deploymentGC()
		c.nodeGC()
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownCollection, kind)
	}
	return c.req, nil
}

// collector accumulates one collection.
type collector struct {
	v   View
	now time.Time
	th  Thresholds
	req *sdk.GCRequest
	// allocsByEval indexes every allocation by the eval that placed it.
	allocsByEval map[string][]*sdk.Allocation
	evalsByJob   map[sdk.NamespacedID][]*sdk.Evaluation
	// taken are the IDs already in the request.
	taken map[string]bool
}

func newCollector(v View, now time.Time, th Thresholds) *collector {
	c := &collector{v: v, now: now, th: th, req: &sdk.GCRequest{}, allocsByEval: map[string][]*sdk.Allocation{},
		evalsByJob: map[sdk.NamespacedID][]*sdk.Evaluation{}, taken: map[string]bool{}}
	// Every allocation, whether or not its job or node is still there: an
	// allocation of a purged job on a collected node is reached only
	// through its eval, as in Nomad, or as an orphan once that is gone.
	for _, a := range v.Catalog.Allocs() {
		c.allocsByEval[a.EvalID] = append(c.allocsByEval[a.EvalID], a)
	}
	for _, e := range v.Evals.Evals() {
		k := sdk.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		c.evalsByJob[k] = append(c.evalsByJob[k], e)
	}
	return c
}

// old reports whether a time (Unix nanoseconds) is at least threshold ago.
// A zero threshold (a forced collection) asks no age, not even that the
// time has passed by this clock: the leader that stamped it may run ahead.
func (c *collector) old(unixNano int64, threshold time.Duration) bool {
	return threshold <= 0 || c.now.Sub(time.Unix(0, unixNano)) >= threshold
}

func (c *collector) addAlloc(id string) {
	if !c.taken["a/"+id] {
		c.taken["a/"+id] = true
		c.req.Allocs = append(c.req.Allocs, id)
	}
}

func (c *collector) addEval(id string) {
	if !c.taken["e/"+id] {
		c.taken["e/"+id] = true
		c.req.Evals = append(c.req.Evals, id)
	}
}

// evalGC collects terminal evals older than the eval threshold (the batch
// eval threshold for batch jobs' evals, as in Nomad, which gives sysbatch
// evals the eval threshold) whose allocations may all go, with those
// allocations; and, for batch jobs that still run, the terminal
// allocations of older job versions.
//
// Allocations whose eval is gone (the eval delete endpoint removes evals
// only) are collected under the rules their eval would have had. Nomad
// reaches allocations only through their evals and never collects them.
func (c *collector) evalGC() {
	for _, e := range c.v.Evals.Evals() {
		gcEval, allocs := c.gcEval(e, c.evalThreshold(e.Type), false)
		for _, id := range allocs {
			c.addAlloc(id)
		}
		if gcEval {
			c.addEval(e.ID)
		}
	}
	var orphaned []string
	for evalID := range c.allocsByEval {
		if c.v.Evals.Eval(evalID) == nil {
			orphaned = append(orphaned, evalID)
		}
	}
	slices.Sort(orphaned)
	for _, evalID := range orphaned {
		for _, a := range c.allocsByEval[evalID] {
			job := c.v.State.Job(a.Namespace, a.JobID)
			var typ string
			switch {
			case job != nil:
				typ = job.Type
			case a.Job != nil:
				typ = a.Job.Type
			}
			_, ids := c.gcAllocs([]*sdk.Allocation{a}, typ, job, c.evalThreshold(typ), false)
			for _, id := range ids {
				c.addAlloc(id)
			}
		}
	}
}

// evalThreshold is the threshold eval GC holds an eval of a job of type
// typ to, with its allocations: the batch eval threshold for batch jobs,
// the eval threshold for others, and the longer of the two when the type
// is unknown (an allocation whose eval and job are both gone).
func (c *collector) evalThreshold(typ string) time.Duration {
	switch typ {
	case sdk.JobTypeBatch:
		return c.th.BatchEval
	case "":
		return max(c.th.Eval, c.th.BatchEval)
	}
	return c.th.Eval
}

// gcEval decides whether eval e may be collected and which of its
// allocations may, as Nomad's core scheduler does: an eval of a batch or
// sysbatch job that is not dead keeps its allocations (or the scheduler
// would run them again; Nomad v1.6 protects only batch), except terminal
// ones of older versions or of an earlier instance of the job, and goes
// when those are all it has (or it has none); any other eval goes when all
// its allocations may go.
// allowBatch lets a dead, not stopped (sys)batch job's evals go (job
// collection does).
func (c *collector) gcEval(e *sdk.Evaluation, threshold time.Duration, allowBatch bool) (bool, []string) {
	if !e.TerminalStatus() || !c.old(e.ModifyTime, threshold) {
		return false, nil
	}
	return c.gcAllocs(c.allocsByEval[e.ID], e.Type, c.v.State.Job(e.Namespace, e.JobID), threshold, allowBatch)
}

// gcAllocs decides which allocations of one eval, of type typ, for job
// (nil once purged) may be collected, and whether all of them may.
func (c *collector) gcAllocs(allocs []*sdk.Allocation, typ string, job *sdk.Job, threshold time.Duration, allowBatch bool) (bool, []string) {
	if typ == sdk.JobTypeBatch || typ == sdk.JobTypeSysBatch {
		collect := job == nil || (job.Status == sdk.JobStatusDead && (job.Stop || allowBatch))
		if !collect {
			var older []string
			for _, a := range allocs {
				// Of an older version, or of an earlier instance of the
				// job (purged and registered again, counting versions
				// from 0 again): Nomad tells both apart by index.
				before := a.JobVersion < job.Version || !a.OfInstance(job)
				if before && a.TerminalStatus() && c.old(a.ModifyTime, threshold) && a.ClientStatus != sdk.AllocClientStatusRunning {
					older = append(older, a.ID)
				}
			}
			return len(older) == len(allocs), older
		}
	}
	all := true
	var ids []string
	for _, a := range allocs {
		if c.allocGCEligible(a, job, threshold) {
			ids = append(ids, a.ID)
		} else {
			all = false
		}
	}
	return all, ids
}

// allocGCEligible reports whether an allocation may be collected: it is
// terminal and old, not running on its node, and not a failed allocation
// whose reschedule is still due (its replacement must inherit its
// reschedule history).
func (c *collector) allocGCEligible(a *sdk.Allocation, job *sdk.Job, threshold time.Duration) bool {
	if !a.TerminalStatus() || !c.old(a.ModifyTime, threshold) || a.ClientStatus == sdk.AllocClientStatusRunning {
		return false
	}
	if job == nil || job.Stop || job.Status == sdk.JobStatusDead || a.DesiredStatus == sdk.AllocDesiredStatusStop {
		return true
	}
	if a.ClientStatus != sdk.AllocClientStatusFailed || a.NextAllocation != "" {
		return true
	}
	var p *sdk.ReschedulePolicy
	if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
		p = tg.ReschedulePolicy
	}
	if p == nil || (!p.Unlimited && p.Attempts == 0) {
		return true
	}
	if p.Unlimited || a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return false
	}
	last := a.RescheduleTracker.Events[len(a.RescheduleTracker.Events)-1]
	return c.now.UnixNano()-last.RescheduleTime > p.Interval.Nanoseconds()
}

// jobGC collects jobs that are over (stopped, or dead batch and sysbatch
// jobs; periodic and parameterized templates only when stopped) and
// untouched for the job threshold, with all their evals and allocations,
// when every eval may go. The evals and allocations are held to the job
// threshold too, whatever the eval thresholds, as in Nomad.
func (c *collector) jobGC() {
	threshold := c.th.Job
	for _, job := range c.v.Catalog.Jobs() {
		if !sdk.JobGCEligible(job) || !c.old(job.SubmitTime, c.th.Job) {
			continue
		}
		k := job.NamespacedID()
		evals := c.evalsByJob[k]
		allocs := c.v.State.AllocsByJob(job.Namespace, job.ID)
		ok := true
		for _, e := range evals {
			if gc, _ := c.gcEval(e, threshold, true); !gc {
				ok = false
				break
			}
		}
		// Allocations whose eval is gone (eval delete) are checked too.
		for _, a := range allocs {
			if !c.allocGCEligible(a, job, threshold) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, e := range evals {
			c.addEval(e.ID)
		}
		for _, a := range allocs {
			c.addAlloc(a.ID)
		}
		c.req.Jobs = append(c.req.Jobs, k)
	}
}

// nodeGC collects down nodes whose status changed longer ago than the node
// threshold and that hold no live allocation.
func (c *collector) nodeGC() {
	for _, n := range c.v.State.Nodes() {
		if n.Status != sdk.NodeStatusDown || !c.old(n.StatusUpdatedAt*int64(time.Second), c.th.Node) {
			continue
		}
		live := slices.ContainsFunc(c.v.State.AllocsByNode(n.ID), func(a *sdk.Allocation) bool { return !a.TerminalStatus() })
		if !live {
			c.req.Nodes = append(c.req.Nodes, n.ID)
		}
	}
}

// deploymentGC collects deployments that are no longer active and
// untouched for the deployment threshold, and that no remaining allocation
// belongs to.
func (c *collector) deploymentGC() {
	referenced := map[string]bool{}
	for _, allocs := range c.allocsByEval {
		for _, a := range allocs {
			if a.DeploymentID != "" && !c.taken["a/"+a.ID] {
				referenced[a.DeploymentID] = true
			}
		}
	}
	for _, d := range c.v.Catalog.Deployments() {
		if d.Active() || !c.old(d.ModifyTime, c.th.Deployment) || referenced[d.ID] {
			continue
		}
		c.req.Deployments = append(c.req.Deployments, d.ID)
	}
}

// Split cuts a request into requests naming at most n objects each, in
// the order that keeps each part valid on its own: allocations first, then
// evaluations, deployments, jobs and nodes.
func Split(req *sdk.GCRequest, n int) []*sdk.GCRequest {
	if req.Empty() {
		return nil
	}
	var out []*sdk.GCRequest
	cur := &sdk.GCRequest{}
	size := 0
	flush := func() {
		if size > 0 {
			out = append(out, cur)
			cur, size = &sdk.GCRequest{}, 0
		}
	}
	add := func(f func(*sdk.GCRequest)) {
		if size == n {
			flush()
		}
		f(cur)
		size++
	}
	for _, id := range req.Allocs {
		add(func(r *sdk.GCRequest) { r.Allocs = append(r.Allocs, id) })
	}
	for _, id := range req.Evals {
		add(func(r *sdk.GCRequest) { r.Evals = append(r.Evals, id) })
	}
	for _, id := range req.Deployments {
		add(func(r *sdk.GCRequest) { r.Deployments = append(r.Deployments, id) })
	}
	for _, j := range req.Jobs {
		add(func(r *sdk.GCRequest) { r.Jobs = append(r.Jobs, j) })
	}
	for _, id := range req.Nodes {
		add(func(r *sdk.GCRequest) { r.Nodes = append(r.Nodes, id) })
	}
	flush()
	return out
}
