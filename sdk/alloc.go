package sdk

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Allocation places one instance of a task group on a node.
type Allocation struct {
	ID        string `msg:",omitempty"`
	Namespace string `msg:",omitempty"`
	EvalID    string `msg:",omitempty"`
	Name      string `msg:",omitempty"`
	NodeID    string `msg:",omitempty"`
	NodeName  string `msg:",omitempty"`
	JobID     string `msg:",omitempty"`
	// Job is the job version the allocation runs. On the plugin wire it is
	// left out and restored from JobVersion.
	Job *Job `msg:",omitempty"`
	// JobVersion is Job.Version, kept beside Job so that allocations can be
	// sent without their job.
	JobVersion uint64
	// JobModifyIndex is Job.JobModifyIndex: with the job's namespace and
	// ID it names the job version exactly, even after the job was purged
	// and registered again (when version numbers start over). A plugin's
	// state mirror links allocations to their job by it.
	JobModifyIndex uint64 `msg:",omitempty"`
	TaskGroup      string `msg:",omitempty"`
	// AllocatedResources is never changed in place once an allocation
	// holds it: allocations may share one (a plan's placements of a
	// group do, and the SDK's plan and the plugin wire count on it).
	AllocatedResources   *AllocatedResources `msg:",omitempty"`
	Metrics              *AllocMetric        `msg:",omitempty"`
	DesiredStatus        string              `msg:",omitempty"`
	DesiredDescription   string              `msg:",omitempty"`
	DesiredTransition    DesiredTransition
	ClientStatus         string                 `msg:",omitempty"`
	ClientDescription    string                 `msg:",omitempty"`
	TaskStates           map[string]Opaque      `msg:",omitempty"`
	DeploymentID         string                 `msg:",omitempty"`
	DeploymentStatus     *AllocDeploymentStatus `msg:",omitempty"`
	FollowupEvalID       string                 `msg:",omitempty"`
	PreviousAllocation   string                 `msg:",omitempty"`
	NextAllocation       string                 `msg:",omitempty"`
	RescheduleTracker    *RescheduleTracker     `msg:",omitempty"`
	PreemptedAllocations []string               `msg:",omitempty"`
	// PreemptedByAllocation is set on allocations evicted to make room.
	PreemptedByAllocation string `msg:",omitempty"`
	CreateIndex           uint64 `msg:",omitempty"`
	ModifyIndex           uint64 `msg:",omitempty"`
	AllocModifyIndex      uint64 `msg:",omitempty"`
	CreateTime            int64  `msg:",omitempty"`
	ModifyTime            int64  `msg:",omitempty"`
	// AllocStates records transitions of the allocation's client status
	// that the servers keep: when it was marked unknown, by its scheduler
	// on a disconnected node or by its client (see LastUnknown).
	AllocStates []*AllocState `msg:",omitempty"`
}

// AllocState is one transition of an allocation's field, as Nomad's
// AllocState: Field is AllocStateFieldClientStatus, Value the new status.
type AllocState struct {
	Field string    `msg:",omitempty"`
	Value string    `msg:",omitempty"`
	Time  time.Time `msg:",omitempty"`
}

// AllocStateFieldClientStatus names the client status in AllocState.Field.
const AllocStateFieldClientStatus = "ClientStatus"

// LastUnknown returns when the allocation was last marked unknown, or the
// zero time if it never was. A disconnected allocation's lost_after counts
// from it: the scheduler that marked it set it to its eval's time, from
// which it also dated the eval that declares it lost.
func (a *Allocation) LastUnknown() time.Time {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		if s := a.AllocStates[i]; s != nil && s.Field == AllocStateFieldClientStatus && s.Value == AllocClientStatusUnknown {
			return s.Time
		}
	}
	return time.Time{}
}

// MarkedUnknown returns a copy of a whose client status is unknown since
// now, with description desc: its AllocStates gain the transition.
func (a *Allocation) MarkedUnknown(now time.Time, desc string) *Allocation {
	c := *a
	c.ClientStatus, c.ClientDescription = AllocClientStatusUnknown, desc
	c.AllocStates = a.withState(AllocStateFieldClientStatus, AllocClientStatusUnknown, now)
	return &c
}

// CommittedUnknown returns the AllocStates the servers keep when a plan
// marks old unknown with its copy a, committed at now: old's record (a
// plan cannot rewrite it) and the transition, dated by the mark a's
// scheduler added to that record (MarkedUnknown), else now; never after
// now, nor before old last changed. (A copy that only carries old's
// record would otherwise date the transition by an earlier disconnect.)
func CommittedUnknown(old, a *Allocation, now time.Time) []*AllocState {
	at := now
	if n := len(old.AllocStates); len(a.AllocStates) > n {
		added := Allocation{AllocStates: a.AllocStates[n:]}
		if t := added.LastUnknown(); !t.IsZero() {
			at = t
		}
	}
	if at.After(now) {
		at = now
	}
	if old.ModifyTime != 0 && at.Before(time.Unix(0, old.ModifyTime)) {
		at = time.Unix(0, old.ModifyTime)
	}
	return old.withState(AllocStateFieldClientStatus, AllocClientStatusUnknown, at)
}

// withState returns a's AllocStates with one more transition.
func (a *Allocation) withState(field, value string, at time.Time) []*AllocState {
	return append(a.AllocStates[:len(a.AllocStates):len(a.AllocStates)], &AllocState{Field: field, Value: value, Time: at.UTC()})
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

// SameAllocation reports whether update, a plan entry for node that
// reuses the ID of the stored allocation old, can be an update of it: an
// update keeps the allocation's job, node, group and name. A new placement
// that reused the ID would replace another allocation.
func SameAllocation(old, update *Allocation, node string) bool {
	return old.JobID == update.JobID && old.Namespace == update.Namespace && old.NodeID == node &&
		old.TaskGroup == update.TaskGroup && old.Name == update.Name
}

// KeepsVersion reports whether update, an update of the stored allocation
// old within a plan, keeps the job version old runs: it names that version
// exactly (JobVersion and JobModifyIndex). That is an annotation (a
// follow-up eval for a delayed reschedule, an allocation marked unknown),
// which leaves an allocation on the version it ran. Any other update of an
// existing allocation is an in-place update to the plan's job, named by
// the plan's job version and modify index.
func KeepsVersion(old, update *Allocation) bool {
	v, mod := old.JobVersion, old.JobModifyIndex
	if old.Job != nil {
		v, mod = old.Job.Version, old.Job.JobModifyIndex
	}
	return update.JobVersion == v && update.JobModifyIndex == mod
}

// OfInstance reports whether the allocation belongs to job's instance
// (a job purged and registered again is another instance, whose versions
// count from 0 again): whether the job version it runs has job's create
// index, as Nomad compares them. Without the version, its JobModifyIndex
// tells: each version of an instance has one at or above the instance's
// create index, while a purged instance's versions all have one below the
// purge, hence below any later instance's create index. An allocation
// that names no version at all is taken to be the job's.
func (a *Allocation) OfInstance(job *Job) bool {
	if a.Job != nil {
		return a.Job.CreateIndex == job.CreateIndex
	}
	return a.JobModifyIndex == 0 || a.JobModifyIndex >= job.CreateIndex
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
	Migrate         *bool `msg:",omitempty"`
	Reschedule      *bool `msg:",omitempty"`
	ForceReschedule *bool `msg:",omitempty"`
	NoShutdownDelay *bool `msg:",omitempty"`
}

// ShouldMigrate reports whether the allocation is marked to migrate.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// Merge sets in d what o sets (its non-nil marks), as Nomad's does.
func (d *DesiredTransition) Merge(o DesiredTransition) {
	if o.Migrate != nil {
		d.Migrate = o.Migrate
	}
	if o.Reschedule != nil {
		d.Reschedule = o.Reschedule
	}
	if o.ForceReschedule != nil {
		d.ForceReschedule = o.ForceReschedule
	}
	if o.NoShutdownDelay != nil {
		d.NoShutdownDelay = o.NoShutdownDelay
	}
}

// ShouldReschedule reports whether the allocation is marked to be
// rescheduled although its deployment is active (its deployment watcher
// allows its replacement).
func (d DesiredTransition) ShouldReschedule() bool { return d.Reschedule != nil && *d.Reschedule }

// ShouldForceReschedule reports whether a reschedule was forced.
func (d DesiredTransition) ShouldForceReschedule() bool {
	return d.ForceReschedule != nil && *d.ForceReschedule
}

// AllocDeploymentStatus is an allocation's health within a deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool     `msg:",omitempty"`
	Timestamp   time.Time `msg:",omitempty"`
	Canary      bool      `msg:",omitempty"`
	ModifyIndex uint64    `msg:",omitempty"`
}

// IsHealthy reports whether the allocation was marked healthy.
func (s *AllocDeploymentStatus) IsHealthy() bool { return s != nil && s.Healthy != nil && *s.Healthy }

// HasHealth reports whether the allocation's health was reported, healthy
// or not.
func (s *AllocDeploymentStatus) HasHealth() bool { return s != nil && s.Healthy != nil }

// IsUnhealthy reports whether the allocation was marked unhealthy.
func (s *AllocDeploymentStatus) IsUnhealthy() bool {
	return s != nil && s.Healthy != nil && !*s.Healthy
}

// RescheduleTracker records an allocation's reschedule history.
type RescheduleTracker struct {
	Events         []*RescheduleEvent `msg:",omitempty"`
	LastReschedule string             `msg:",omitempty"`
}

// RescheduleEvent is one reschedule.
type RescheduleEvent struct {
	RescheduleTime int64         `msg:",omitempty"`
	PrevAllocID    string        `msg:",omitempty"`
	PrevNodeID     string        `msg:",omitempty"`
	Delay          time.Duration `msg:",omitempty"`
}

// AllocMetric explains a placement decision, as Nomad reports it.
type AllocMetric struct {
	NodesEvaluated     int                   `msg:",omitempty"`
	NodesFiltered      int                   `msg:",omitempty"`
	NodesInPool        int                   `msg:",omitempty"`
	NodePool           string                `msg:",omitempty"`
	NodesAvailable     map[string]int        `msg:",omitempty"`
	ClassFiltered      map[string]int        `msg:",omitempty"`
	ConstraintFiltered map[string]int        `msg:",omitempty"`
	NodesExhausted     int                   `msg:",omitempty"`
	ClassExhausted     map[string]int        `msg:",omitempty"`
	DimensionExhausted map[string]int        `msg:",omitempty"`
	QuotaExhausted     []string              `msg:",omitempty"`
	ResourcesExhausted map[string]*Resources `msg:",omitempty"`
	Scores             map[string]float64    `msg:",omitempty"`
	ScoreMetaData      []*NodeScoreMeta      `msg:",omitempty"`
	AllocationTime     time.Duration         `msg:",omitempty"`
	CoalescedFailures  int                   `msg:",omitempty"`
}

// NodeScoreMeta is the score of one of the top nodes.
type NodeScoreMeta struct {
	NodeID    string     `msg:",omitempty"`
	Scores    NodeScores `msg:",omitempty"`
	NormScore float64    `msg:",omitempty"`
}

// NodeScores are the scores a node got, one per scorer. In JSON they are
// an object from scorer name to score, as Nomad reports them; on the
// plugin wire and in memory a short list, which costs a fraction of a map
// to build and encode for each of the top nodes of every placement.
type NodeScores []NodeScore

// NodeScore is one scorer's score.
type NodeScore struct {
	Name  string
	Score float64
}

//msgp:tuple NodeScore

// Get returns the named scorer's score.
func (s NodeScores) Get(name string) (float64, bool) {
	for _, e := range s {
		if e.Name == name {
			return e.Score, true
		}
	}
	return 0, false
}

// MarshalJSON encodes the scores as an object, scorer name to score.
func (s NodeScores) MarshalJSON() ([]byte, error) {
	m := make(map[string]float64, len(s))
	for _, e := range s {
		m[e.Name] = e.Score
	}
	return json.Marshal(m)
}

// UnmarshalJSON decodes an object of scores, in name order.
func (s *NodeScores) UnmarshalJSON(b []byte) error {
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make(NodeScores, 0, len(m))
	for _, k := range names {
		out = append(out, NodeScore{Name: k, Score: m[k]})
	}
	*s = out
	return nil
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
