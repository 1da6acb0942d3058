package sdk

import (
	"strconv"
	"time"
)

// Allocation places one instance of a task group on a node.
type Allocation struct {
	ID        string
	Namespace string
	EvalID    string
	Name      string
	NodeID    string
	NodeName  string
	JobID     string
	// Job is the job version the allocation runs. On the plugin wire it is
	// left out and restored from JobVersion.
	Job *Job
	// JobVersion is Job.Version, kept beside Job so that allocations can be
	// sent without their job.
	JobVersion           uint64
	TaskGroup            string
	AllocatedResources   *AllocatedResources
	Metrics              *AllocMetric
	DesiredStatus        string
	DesiredDescription   string
	DesiredTransition    DesiredTransition
	ClientStatus         string
	ClientDescription    string
	TaskStates           map[string]Opaque
	DeploymentID         string
	DeploymentStatus     *AllocDeploymentStatus
	FollowupEvalID       string
	PreviousAllocation   string
	NextAllocation       string
	RescheduleTracker    *RescheduleTracker
	PreemptedAllocations []string
	// PreemptedByAllocation is set on allocations evicted to make room.
	PreemptedByAllocation string
	CreateIndex           uint64
	ModifyIndex           uint64
	AllocModifyIndex      uint64
	CreateTime            int64
	ModifyTime            int64
}

// TerminalStatus reports whether the allocation no longer holds resources:
// the server stopped or evicted it, or the node reports it finished.
func (a *Allocation) TerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return a.ClientTerminalStatus()
}

// ClientTerminalStatus reports whether the node reports the allocation as
// finished.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Usage is what the allocation holds on its node while not terminal.
func (a *Allocation) Usage() Usage { return a.AllocatedResources.Usage() }

// Index returns the allocation's index in its group, parsed from its Name
// ("job.group[index]"), or -1.
func (a *Allocation) Index() int {
	n := a.Name
	l := len(n)
	if l == 0 || n[l-1] != ']' {
		return -1
	}
	i := l - 2
	v, mul := 0, 1
	for ; i >= 0 && n[i] >= '0' && n[i] <= '9'; i-- {
		v += int(n[i]-'0') * mul
		mul *= 10
	}
	if i < 0 || n[i] != '[' || i == l-2 {
		return -1
	}
	return v
}

// AllocName returns the canonical name of allocation idx of a group.
func AllocName(job, group string, idx int) string {
	return job + "." + group + "[" + strconv.Itoa(idx) + "]"
}

// DesiredTransition is what the server asks of a running allocation.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
	NoShutdownDelay *bool
}

// ShouldMigrate reports whether the allocation is marked to migrate.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// ShouldForceReschedule reports whether a reschedule was forced.
func (d DesiredTransition) ShouldForceReschedule() bool {
	return d.ForceReschedule != nil && *d.ForceReschedule
}

// AllocDeploymentStatus is an allocation's health within a deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool
	Timestamp   time.Time
	Canary      bool
	ModifyIndex uint64
}

// IsHealthy reports whether the allocation was marked healthy.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }

// IsUnhealthy reports whether the allocation was marked unhealthy.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// RescheduleTracker records an allocation's reschedule history.
type RescheduleTracker struct {
	Events         []*RescheduleEvent
	LastReschedule string
}

// RescheduleEvent is one reschedule.
type RescheduleEvent struct {
	RescheduleTime int64
	PrevAllocID    string
	PrevNodeID     string
	Delay          time.Duration
}

// AllocMetric explains a placement decision, as Nomad reports it.
type AllocMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesInPool        int
	NodePool           string
	NodesAvailable     map[string]int
	ClassFiltered      map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	ClassExhausted     map[string]int
	DimensionExhausted map[string]int
	QuotaExhausted     []string
	ResourcesExhausted map[string]*Resources
	Scores             map[string]float64
	ScoreMetaData      []*NodeScoreMeta
	AllocationTime     time.Duration
	CoalescedFailures  int
}

// NodeScoreMeta is the score of one of the top nodes.
type NodeScoreMeta struct {
	NodeID    string
	Scores    map[string]float64
	NormScore float64
}

// FilterNode records that node was filtered out by the named check.
func (m *AllocMetric) FilterNode(n *Node, check string) {
	m.NodesFiltered++
	if n != nil && n.NodeClass != "" {
		if m.ClassFiltered == nil {
			m.ClassFiltered = map[string]int{}
		}
		m.ClassFiltered[n.NodeClass]++
	}
	if check != "" {
		if m.ConstraintFiltered == nil {
			m.ConstraintFiltered = map[string]int{}
		}
		m.ConstraintFiltered[check]++
	}
}

// ExhaustedNode records that node had no room in the named dimension.
func (m *AllocMetric) ExhaustedNode(n *Node, dimension string) {
	m.NodesExhausted++
	if n != nil && n.NodeClass != "" {
		if m.ClassExhausted == nil {
			m.ClassExhausted = map[string]int{}
		}
		m.ClassExhausted[n.NodeClass]++
	}
	if dimension != "" {
		if m.DimensionExhausted == nil {
			m.DimensionExhausted = map[string]int{}
		}
		m.DimensionExhausted[dimension]++
	}
}

// ExhaustResources records, per task of tg, what it asks for in the
// dimensions some node was exhausted on (cpu, memory), as Nomad reports a
// failed placement.
func (m *AllocMetric) ExhaustResources(tg *TaskGroup) {
	if m.DimensionExhausted == nil {
		return
	}
	if m.ResourcesExhausted == nil {
		m.ResourcesExhausted = map[string]*Resources{}
	}
	for _, t := range tg.Tasks {
		r := m.ResourcesExhausted[t.Name]
		if r == nil {
			r = &Resources{}
			m.ResourcesExhausted[t.Name] = r
		}
		if t.Resources == nil {
			continue
		}
		if m.DimensionExhausted["memory"] > 0 {
			r.MemoryMB += t.Resources.MemoryMB
		}
		if m.DimensionExhausted["cpu"] > 0 {
			r.CPU += t.Resources.CPU
		}
	}
}
