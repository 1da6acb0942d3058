package server

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/feasible"
	"github.com/drover-sched/drover/sdk/reconcile"
	"github.com/tinylib/msgp/msgp"
)

// Errors endpoints return for bad requests; the HTTP layer maps them to
// status codes.
var (
	ErrInvalid  = errors.New("invalid request")
	ErrNotFound = state.ErrNotFound
	// ErrForbidden refuses a node agent's request the node may not make:
	// a registration with another secret than the node's, a report about
	// its allocations while the servers hold it down or disconnected; and
	// a job registration while the scheduler configuration rejects them.
	ErrForbidden = errors.New("forbidden")
)

func badRequest(err error) error { return fmt.Errorf("%w: %w", ErrInvalid, err) }

func forbidden(err error) error { return fmt.Errorf("%w: %w", ErrForbidden, err) }

func (s *Server) newEval(job *sdk.Job, trigger string) *sdk.Evaluation {
	now := s.now().UnixNano()
	return &sdk.Evaluation{
		ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: trigger, JobID: job.ID, Status: sdk.EvalStatusPending,
		CreateTime: now, ModifyTime: now,
	}
}

// RegisterJob registers a job (or a new version of it) and, unless it is a
// periodic or parameterized template, a job-register eval.
func (s *Server) RegisterJob(job *sdk.Job) (evalID string, index uint64, err error) {
	return s.RegisterJobOpts(job, RegisterOptions{})
}

// DeregisterJob stops a job (purge: removes it) and evaluates it.
func (s *Server) DeregisterJob(namespace, id string, purge bool) (evalID string, index uint64, err error) {
	return s.DeregisterJobOpts(namespace, id, DeregisterOptions{Purge: purge})
}

// EvaluateJob forces a new evaluation of a job.
func (s *Server) EvaluateJob(namespace, id string) (string, uint64, error) {
	return s.EvaluateJobOpts(namespace, id, EvaluateOptions{})
}

// nodeEvals returns a node-update eval for every job with a live
// allocation on the node and every system job that could run on it (its
// node pool and datacenters take the node), as Nomad's createNodeEvals:
// sysbatch jobs run on the nodes there are when they are evaluated, not
// on nodes that come later.
func (s *Server) nodeEvals(snap *state.Snapshot, node *sdk.Node, trigger string) []*sdk.Evaluation {
	seen := map[sdk.NamespacedID]bool{}
	var out []*sdk.Evaluation
	add := func(job *sdk.Job) {
		k := job.NamespacedID()
		if seen[k] || job.Stop && job.Type == sdk.JobTypeSystem {
			return
		}
		seen[k] = true
		e := s.newEval(job, trigger)
		e.NodeID = node.ID
		e.NodeModifyIndex = node.ModifyIndex
		e.JobModifyIndex = job.JobModifyIndex
		out = append(out, e)
	}
	for _, a := range snap.AllocsByNode(node.ID) {
		if a.TerminalStatus() {
			continue
		}
		if job := snap.Job(a.Namespace, a.JobID); job != nil {
			add(job)
		}
	}
	for _, job := range snap.Jobs("") {
		if job.Type == sdk.JobTypeSystem && !job.Stop && feasible.PoolMatches(job.NodePool, node.NodePool) &&
			feasible.DatacenterMatches(job.Datacenters, node.Datacenter) {
			add(job)
		}
	}
	return out
}

// feasibilityChanged reports whether a node registered again changed what
// feasibility checks read (Nomad's shouldCreateNodeEval): its datacenter,
// name, class, attributes, meta, drivers, host volumes, devices or CSI
// plugins. Its resources are left to blocked evals.
//
// Nomad 1.6 does not compare CSI plugins here: a plugin coming up there
// reaches only blocked evals (the node's class is unblocked, and the
// CSI check leaves a class eligible). Drover compares them, as it does
// drivers, so that the jobs on the node and the system jobs that could
// run there are evaluated when a plugin comes, goes or changes health: a
// system job's group with a CSI volume, filtered on a node without the
// plugin, is not blocked, and only such an eval places it there.
func feasibilityChanged(old, n *sdk.Node) bool {
	devices := func(n *sdk.Node) []*sdk.NodeDeviceResource {
		if n.NodeResources == nil {
			return nil
		}
		return n.NodeResources.Devices
	}
	// A driver's UpdateTime is not compared: feasibility does not read it,
	// and the same instant read from JSON and from the state differs in
	// its location.
	sameDriver := func(a, b *sdk.DriverInfo) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Detected == b.Detected && a.Healthy == b.Healthy && a.HealthDescription == b.HealthDescription &&
			maps.Equal(a.Attributes, b.Attributes)
	}
	od, nd := devices(old), devices(n)
	return old.Datacenter != n.Datacenter || old.Name != n.Name || old.NodeClass != n.NodeClass ||
		!maps.Equal(old.Attributes, n.Attributes) || !maps.Equal(old.Meta, n.Meta) ||
		!maps.EqualFunc(old.Drivers, n.Drivers, sameDriver) || !reflect.DeepEqual(old.HostVolumes, n.HostVolumes) ||
		(len(od) > 0 || len(nd) > 0) && !reflect.DeepEqual(od, nd) ||
		!maps.EqualFunc(old.CSIControllerPlugins, n.CSIControllerPlugins, sameCSIPlugin) ||
		!maps.EqualFunc(old.CSINodePlugins, n.CSINodePlugins, sameCSIPlugin)
}

// sameCSIPlugin reports whether two reports of a CSI plugin on a node
// agree in what the CSI checks and a plugin's health read: its health,
// whether it needs a controller or topologies, and its node and
// controller info. Its allocation, provider, description and update time
// are not compared: a plugin replaced by a new allocation, healthy as
// before, changes nothing for placement.
func sameCSIPlugin(a, b *sdk.CSIInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	sameNode := func(x, y *sdk.CSINodeInfo) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.ID == y.ID && x.MaxVolumes == y.MaxVolumes && x.AccessibleTopology.Equal(y.AccessibleTopology) &&
			x.RequiresNodeStageVolume == y.RequiresNodeStageVolume && x.SupportsStats == y.SupportsStats &&
			x.SupportsExpand == y.SupportsExpand && x.SupportsCondition == y.SupportsCondition
	}
	sameController := func(x, y *sdk.CSIControllerInfo) bool {
		if x == nil || y == nil {
			return x == y
		}
		return *x == *y
	}
	return a.PluginID == b.PluginID && a.Healthy == b.Healthy && a.RequiresControllerPlugin == b.RequiresControllerPlugin &&
		a.RequiresTopologies == b.RequiresTopologies && sameNode(a.NodeInfo, b.NodeInfo) &&
		sameController(a.ControllerInfo, b.ControllerInfo)
}

// validNodePoolName is what a node pool's name may be, as Nomad's
// ValidateNodePoolName.
var validNodePoolName = regexp.MustCompile("^[a-zA-Z0-9-_]{1,128}$")

// RegisterNode registers or updates a node. It answers with the node's
// heartbeat TTL. A node registering again must present the secret it
// registered with (ErrForbidden otherwise).
func (s *Server) RegisterNode(n *sdk.Node) (time.Duration, NodeWrite, error) {
	if n.ID == "" {
		return 0, NodeWrite{}, badRequest(errors.New("node ID is required"))
	}
	if n.Datacenter == "" {
		n.Datacenter = "dc1"
	}
	if strings.ContainsAny(n.Datacenter, "*\x00") {
		// A job's datacenters are globs in which '*' is the wildcard, as
		// Nomad's client refuses such a datacenter.
		return 0, NodeWrite{}, badRequest(fmt.Errorf("node datacenter %q may not contain '*' or NUL", n.Datacenter))
	}
	if n.NodePool == "" {
		n.NodePool = sdk.DefaultNodePool
	}
	if !validNodePoolName.MatchString(n.NodePool) {
		return 0, NodeWrite{}, badRequest(fmt.Errorf("invalid node pool: invalid name %q, must match regex %s", n.NodePool, validNodePoolName))
	}
	if n.NodePool == sdk.AllNodePool {
		// "all" is the pool that lists every node, not one to be in.
		return 0, NodeWrite{}, badRequest(fmt.Errorf("node is not allowed to register in node pool %q", sdk.AllNodePool))
	}
	if n.Status == "" {
		n.Status = sdk.NodeStatusReady
	}
	if n.SchedulingEligibility == "" {
		n.SchedulingEligibility = sdk.NodeSchedulingEligible
	}
	switch n.Status {
	case sdk.NodeStatusInit, sdk.NodeStatusReady, sdk.NodeStatusDown, sdk.NodeStatusDisconnected:
	default:
		return 0, NodeWrite{}, badRequest(fmt.Errorf("node status %q is not valid", n.Status))
	}
	snap := s.store.Snapshot()
	old := snap.Node(n.ID)
	if old != nil && old.SecretID != "" && n.SecretID != old.SecretID {
		return 0, NodeWrite{}, forbidden(fmt.Errorf("node %s: secret ID does not match, not registering the node", n.ID))
	}
	if old != nil {
		// As Nomad's Register: only a status update (here a heartbeat, or
		// the leader's heartbeat timers) changes an existing node's
		// status. A restarted agent registers as initializing, and a node
		// cannot take itself down (its allocations lost) by registering.
		n.Status = old.Status
	}
	n.StatusUpdatedAt = s.now().Unix()
	req := &fsm.NodeRegisterRequest{Node: n}
	if old == nil || feasibilityChanged(old, n) {
		probe := *n
		if old != nil {
			// The servers own these; the FSM keeps them (applyNodeRegister).
			probe.SchedulingEligibility, probe.DrainStrategy = old.SchedulingEligibility, old.DrainStrategy
		}
		probe.ComputeClass()
		req.Evals = s.nodeEvals(snap, &probe, sdk.EvalTriggerNodeUpdate)
	}
	w, err := s.applyNodeWrite(fsm.NodeRegisterRequestType, req, req.Evals)
	if err != nil {
		return 0, NodeWrite{}, err
	}
	return s.heartbeats.reset(n.ID), w, nil
}

// NodeWrite is what a write to a node did: the index it was applied at and
// the evaluations it created (Nomad's EvalIDs; EvalCreateIndex is Index).
type NodeWrite struct {
	Index   uint64
	EvalIDs []string
}

// applyNodeWrite applies a node entry that creates evals.
func (s *Server) applyNodeWrite(t fsm.MessageType, msg msgp.Marshaler, evals []*sdk.Evaluation) (NodeWrite, error) {
	index, err := s.Apply(t, msg)
	if err != nil {
		return NodeWrite{}, err
	}
	w := NodeWrite{Index: index}
	for _, e := range evals {
		w.EvalIDs = append(w.EvalIDs, e.ID)
	}
	return w, nil
}

// NodeHeartbeat records a node's heartbeat, Nomad's UpdateStatus to ready:
// a node that was initializing, down or disconnected is ready (with
// node-update evals, as a transition to ready makes). A heartbeat that
// changes nothing returns a zero NodeWrite.
func (s *Server) NodeHeartbeat(nodeID string) (time.Duration, NodeWrite, error) {
	n := s.store.Snapshot().Node(nodeID)
	if n == nil {
		return 0, NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	var w NodeWrite
	why := ""
	switch n.Status {
	case sdk.NodeStatusDown:
		// Nomad's event (NodeHeartbeatEventReregistered); it adds none
		// for a node back from initializing or disconnected.
		why = "Node reregistered by heartbeat"
		fallthrough
	case sdk.NodeStatusInit, sdk.NodeStatusDisconnected:
		var err error
		if w, err = s.UpdateNodeStatus(nodeID, sdk.NodeStatusReady, why); err != nil {
			return 0, NodeWrite{}, err
		}
	}
	return s.heartbeats.reset(nodeID), w, nil
}

// UpdateNodeStatus changes a node's status, with node-update evals, and
// the node event why (none when empty).
func (s *Server) UpdateNodeStatus(nodeID, status, why string) (NodeWrite, error) {
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	now := s.now()
	req := &fsm.NodeUpdateStatusRequest{NodeID: nodeID, Status: status, UpdatedAt: now.Unix()}
	if why != "" {
		req.Event = &sdk.NodeEvent{Message: why, Subsystem: "Cluster", Timestamp: now}
	}
	if n.Status != status {
		req.Evals = s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)
	}
	return s.applyNodeWrite(fsm.NodeUpdateStatusRequestType, req, req.Evals)
}

// UpdateNodeEligibility marks a node eligible or ineligible, with a node
// event. A draining node cannot be made eligible, and the eligibility the
// node has already is a no-op (a zero NodeWrite), as in Nomad.
func (s *Server) UpdateNodeEligibility(nodeID, eligibility string) (NodeWrite, error) {
	if eligibility != sdk.NodeSchedulingEligible && eligibility != sdk.NodeSchedulingIneligible {
		return NodeWrite{}, badRequest(fmt.Errorf("eligibility must be %q or %q", sdk.NodeSchedulingEligible, sdk.NodeSchedulingIneligible))
	}
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	// As Nomad's: a drain keeps its node ineligible (the FSM refuses it
	// too, should a drain start in between), and the eligibility the node
	// has already writes nothing (a zero NodeWrite).
	if n.DrainStrategy != nil && eligibility == sdk.NodeSchedulingEligible {
		return NodeWrite{}, badRequest(fmt.Errorf("node %s: can not set node's scheduling eligibility to eligible while it is draining", nodeID))
	}
	if n.SchedulingEligibility == eligibility {
		return NodeWrite{}, nil
	}
	now := s.now()
	msg := "Node marked as ineligible for scheduling"
	if eligibility == sdk.NodeSchedulingEligible {
		msg = "Node marked as eligible for scheduling"
	}
	req := &fsm.NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: eligibility, UpdatedAt: now.Unix(),
		Event: &sdk.NodeEvent{Message: msg, Subsystem: "Cluster", Timestamp: now}}
	// As Nomad's: a node turning eligible may take system jobs'
	// allocations, so they are evaluated; one turning ineligible keeps
	// what it runs, and nothing needs evaluating.
	if eligibility == sdk.NodeSchedulingEligible {
		req.Evals = s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)
	}
	w, err := s.applyNodeWrite(fsm.NodeUpdateEligibilityRequestType, req, req.Evals)
	if errors.Is(err, fsm.ErrNodeDraining) {
		err = badRequest(err)
	}
	return w, err
}

// EvaluateNode forces node-update evaluations of the jobs that run, or as
// system jobs could run, on a node (Nomad's Node.Evaluate). With no such
// job it writes nothing and returns a zero NodeWrite, as Nomad's answers
// index 0.
func (s *Server) EvaluateNode(nodeID string) (NodeWrite, error) {
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	evals := s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)
	if len(evals) == 0 {
		return NodeWrite{}, nil
	}
	return s.applyNodeWrite(fsm.EvalUpdateRequestType, &fsm.EvalUpdateRequest{Evals: evals}, evals)
}

// DeregisterNode removes a node (purge).
func (s *Server) DeregisterNode(nodeID string) (NodeWrite, error) {
	snap := s.store.Snapshot()
	n := snap.Node(nodeID)
	if n == nil {
		return NodeWrite{}, fmt.Errorf("%w: node %q", ErrNotFound, nodeID)
	}
	req := &fsm.NodeDeregisterRequest{NodeIDs: []string{nodeID}, Evals: s.nodeEvals(snap, n, sdk.EvalTriggerNodeUpdate)}
	w, err := s.applyNodeWrite(fsm.NodeDeregisterRequestType, req, req.Evals)
	if err == nil {
		s.heartbeats.clear(nodeID)
	}
	return w, err
}

// AllocUpdate is what a node reports about one allocation.
type AllocUpdate struct {
	ID                string
	ClientStatus      string
	ClientDescription string
	DeploymentStatus  *sdk.AllocDeploymentStatus
	TaskStates        map[string]sdk.Opaque
}

// UpdateAllocsFromClient records what nodes report about allocations. A
// failed allocation gets an alloc-failure eval for its job so it can be
// rescheduled. Reports of allocations the server no longer has (garbage
// collected) are skipped, so a node that keeps reporting one does not lose
// its other reports. As Nomad's UpdateAlloc, a report about an allocation
// whose node is down or disconnected is refused (ErrForbidden): the node
// must heartbeat first, which makes it ready; otherwise a lost allocation
// would run again on a down node, and an unknown one would reconnect
// without its node.
func (s *Server) UpdateAllocsFromClient(updates []AllocUpdate) (uint64, error) {
	snap := s.store.Snapshot()
	now := s.now()
	req := &fsm.AllocClientUpdateRequest{UpdatedAt: now.UnixNano()}
	evalFor := map[sdk.NamespacedID]bool{}
	for _, u := range updates {
		switch u.ClientStatus {
		case sdk.AllocClientStatusPending, sdk.AllocClientStatusRunning, sdk.AllocClientStatusComplete,
			sdk.AllocClientStatusFailed, sdk.AllocClientStatusLost, sdk.AllocClientStatusUnknown:
		default:
			return 0, badRequest(fmt.Errorf("allocation %s: client status %q is not valid", u.ID, u.ClientStatus))
		}
		a := snap.Alloc(u.ID)
		if a == nil {
			continue
		}
		if n := snap.Node(a.NodeID); n != nil && (n.Status == sdk.NodeStatusDown || n.Status == sdk.NodeStatusDisconnected) {
			return 0, forbidden(fmt.Errorf("node %s is not allowed to update allocs while in status %s", n.ID, n.Status))
		}
		req.Allocs = append(req.Allocs, &sdk.Allocation{ID: u.ID, ClientStatus: u.ClientStatus,
			ClientDescription: u.ClientDescription, DeploymentStatus: u.DeploymentStatus, TaskStates: u.TaskStates})
		// A failed allocation its reschedule policy lets be rescheduled
		// gets an eval, as in Nomad (a system job's never does: it has no
		// policy, and its scheduler takes no alloc-failure evals); one that
		// was unknown (its node disconnected) and is reported again has
		// reconnected, and its scheduler decides between it and its
		// replacement.
		job := snap.Job(a.Namespace, a.JobID)
		if job == nil || job.Stop {
			continue
		}
		trigger := ""
		switch {
		case u.ClientStatus == sdk.AllocClientStatusFailed && a.ClientStatus != sdk.AllocClientStatusFailed &&
			a.FollowupEvalID == "" && mayReschedule(a, job, now):
			trigger = sdk.EvalTriggerRetryFailedAlloc
		case a.ClientStatus == sdk.AllocClientStatusUnknown && u.ClientStatus != sdk.AllocClientStatusUnknown:
			trigger = sdk.EvalTriggerReconnect
		}
		jk := sdk.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
		if trigger != "" && !evalFor[jk] {
			evalFor[jk] = true
			e := s.newEval(job, trigger)
			e.JobModifyIndex = job.JobModifyIndex
			req.Evals = append(req.Evals, e)
		}
	}
	if len(req.Allocs) == 0 {
		return snap.Index(), nil
	}
	return s.Apply(fsm.AllocClientUpdateRequestType, req)
}

// mayReschedule reports whether the reschedule policy of a's group (in the
// job version it runs, else job) allows one more reschedule of a, failed
// now.
func mayReschedule(a *sdk.Allocation, job *sdk.Job, now time.Time) bool {
	if a.Job == nil {
		c := *a
		c.Job = job
		a = &c
	}
	_, ok := reconcile.NextRescheduleTimeByFailTime(a, now)
	return ok
}

// StopAlloc asks for an allocation to be stopped and rescheduled
// (`alloc stop`), with an alloc-stop eval. The allocation of a purged job
// is stopped too, as by Nomad: its eval is made from the allocation's copy
// of the job, and the scheduler, finding no job, stops what is left of it.
func (s *Server) StopAlloc(allocID string) (string, uint64, error) {
	snap := s.store.Snapshot()
	a := snap.Alloc(allocID)
	if a == nil {
		return "", 0, fmt.Errorf("%w: allocation %q", ErrNotFound, allocID)
	}
	job := snap.Job(a.Namespace, a.JobID)
	if job == nil {
		job = a.Job
	}
	if job == nil {
		return "", 0, fmt.Errorf("%w: job %q of allocation %s", ErrNotFound, a.JobID, allocID)
	}
	yes := true
	e := s.newEval(job, sdk.EvalTriggerAllocStop)
	e.JobModifyIndex = job.JobModifyIndex
	req := &fsm.AllocUpdateDesiredTransitionRequest{
		Allocs: map[string]*sdk.DesiredTransition{allocID: {Migrate: &yes}},
		Evals:  []*sdk.Evaluation{e},
	}
	index, err := s.Apply(fsm.AllocUpdateDesiredTransitionRequestType, req)
	return e.ID, index, err
}

// SetSchedulerConfig replaces the scheduler configuration.
func (s *Server) SetSchedulerConfig(c *sdk.SchedulerConfiguration) (uint64, error) {
	return s.setSchedulerConfig(&fsm.SchedulerConfigRequest{Config: c})
}

// ensureSchedulerConfig writes the scheduler configuration a cluster starts
// with (server.default_scheduler_config, else Nomad's default) when the
// state holds none yet, as Nomad's leader does, so that the configuration
// read back has its indexes. A configuration an operator set first stays.
// The leader calls it, holding s.mu, before its broker hands out an eval
// (as Nomad's leader writes it before it enables its workers): an eval
// scheduled before the write would have had Nomad's default rather than
// default_scheduler_config. Where the write fails, the leader goes on
// under Nomad's default, as Nomad's does, and the next leader writes it.
func (s *Server) ensureSchedulerConfig() {
	if s.store.Snapshot().SchedulerConfigSet() {
		return
	}
	_, err := s.Apply(fsm.SchedulerConfigRequestType, &fsm.SchedulerConfigRequest{Config: s.startingSchedulerConfig(), CAS: true})
	if err != nil && !errors.Is(err, fsm.ErrConflict) && !errors.Is(err, ErrNotLeader) {
		s.log.Warn().Err(err).Msg("could not write the default scheduler configuration; evals are scheduled under Nomad's default until a leader does")
	}
}

// startingSchedulerConfig is the configuration a cluster starts with:
// server.default_scheduler_config (checked by Config.Validate), else
// Nomad's default.
func (s *Server) startingSchedulerConfig() *sdk.SchedulerConfiguration {
	c := sdk.DefaultSchedulerConfiguration()
	if d := s.cfg.DefaultSchedulerConfig; d != nil {
		c = new(*d)
	}
	_ = normalizeSchedulerConfig(c)
	return c
}

// normalizeSchedulerConfig refuses an unknown scheduler algorithm and
// gives an empty one its default, binpack.
func normalizeSchedulerConfig(c *sdk.SchedulerConfiguration) error {
	switch c.SchedulerAlgorithm {
	case "", sdk.SchedulerAlgorithmBinpack, sdk.SchedulerAlgorithmSpread:
	default:
		return badRequest(fmt.Errorf("scheduler algorithm %q is not binpack or spread", c.SchedulerAlgorithm))
	}
	if c.SchedulerAlgorithm == "" {
		c.SchedulerAlgorithm = sdk.SchedulerAlgorithmBinpack
	}
	return nil
}

func (s *Server) setSchedulerConfig(req *fsm.SchedulerConfigRequest) (uint64, error) {
	if err := normalizeSchedulerConfig(req.Config); err != nil {
		return 0, err
	}
	index, err := s.Apply(fsm.SchedulerConfigRequestType, req)
	if err == nil {
		// The broker follows the configuration stored now, not this
		// request's: of two writes that commit in one order and return in
		// the other, the last committed wins. s.mu orders this with a
		// leadership change, which sets it from the state too.
		s.mu.Lock()
		s.broker.SetPaused(s.store.Snapshot().SchedulerConfig().PauseEvalBroker)
		s.mu.Unlock()
	}
	return index, err
}
