package state

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
)

// Snapshot is a consistent, immutable view of the state at one index.
type Snapshot struct {
	reader
	index   uint64
	journal *Journal
}

// Index is the snapshot's index.
func (s *Snapshot) Index() uint64 { return s.index }

// Sync returns the StateSync that brings a plugin mirror at index from to
// this snapshot's index: a delta built from the journal when it covers the
// range, and a full sync otherwise (or when from is 0). evals says whether
// the mirror holds evaluations too.
func (s *Snapshot) Sync(from uint64, evals bool) *abi.StateSync {
	if from == 0 {
		return s.FullSync(evals)
	}
	lo, hi := from, s.index
	if lo > hi {
		lo, hi = hi, lo
	}
	// Eval changes are most of the journal on a busy cluster; a mirror
	// without evals never looks at them, and no mirror at ACL changes.
	changes, ok := s.journal.between(lo, hi, func(c Change) bool { return c.Kind.mirrored() && (evals || c.Kind != KindEval) })
	if !ok {
		return s.FullSync(evals)
	}
	sync := &abi.StateSync{FromIndex: from, Index: s.index}
	seen := make(map[Change]bool, len(changes))
	versions := newVersionSet()
	for _, c := range changes {
		c.Index = 0
		if seen[c] {
			continue
		}
		seen[c] = true
		switch c.Kind {
		case KindNode:
			if n := s.Node(c.Key); n != nil {
				sync.Nodes = append(sync.Nodes, pluginNode(n))
			} else {
				sync.DeletedNodes = append(sync.DeletedNodes, c.Key)
			}
		case KindJob:
			ns, id := splitJobKey(c.Key)
			if j := s.Job(ns, id); j != nil {
				sync.Jobs = append(sync.Jobs, j)
			} else {
				sync.DeletedJobs = append(sync.DeletedJobs, sdk.NamespacedID{Namespace: ns, ID: id})
			}
		case KindAlloc:
			if a := s.Alloc(c.Key); a != nil {
				sync.Allocs = append(sync.Allocs, versions.strip(s, a))
			} else {
				sync.DeletedAllocs = append(sync.DeletedAllocs, c.Key)
			}
		case KindDeployment:
			if d := s.Deployment(c.Key); d != nil {
				sync.Deployments = append(sync.Deployments, d)
			} else {
				sync.DeletedDeployments = append(sync.DeletedDeployments, c.Key)
			}
		case KindSchedConfig:
			sync.SchedulerConfig = s.SchedulerConfig()
		case KindCSIVolume:
			ns, id := splitJobKey(c.Key)
			if v := s.CSIVolume(ns, id); v != nil {
				sync.CSIVolumes = append(sync.CSIVolumes, pluginVolume(v))
			} else {
				sync.DeletedCSIVolumes = append(sync.DeletedCSIVolumes, sdk.NamespacedID{Namespace: ns, ID: id})
			}
		case KindEval:
			if !evals {
				continue
			}
			if e := s.Eval(c.Key); e != nil {
				sync.Evals = append(sync.Evals, e)
			} else {
				sync.DeletedEvals = append(sync.DeletedEvals, c.Key)
			}
		}
	}
	sync.JobVersions = versions.list
	return sync
}

// FullSync returns the whole mirrored state at the snapshot's index,
// evaluations included when evals is set.
func (s *Snapshot) FullSync(evals bool) *abi.StateSync {
	sync := &abi.StateSync{Full: true, Index: s.index, SchedulerConfig: s.SchedulerConfig()}
	for _, n := range s.Nodes() {
		sync.Nodes = append(sync.Nodes, pluginNode(n))
	}
	sync.Jobs = s.Jobs("")
	versions := newVersionSet()
	allocs := s.Allocs()
	sync.Allocs = make([]*sdk.Allocation, len(allocs))
	for i, a := range allocs {
		sync.Allocs[i] = versions.strip(s, a)
	}
	sync.JobVersions = versions.list
	sync.Deployments = s.Deployments()
	for _, v := range s.CSIVolumes("*") {
		sync.CSIVolumes = append(sync.CSIVolumes, pluginVolume(v))
	}
	if evals {
		sync.Evals = s.Evals()
	}
	return sync
}

// pluginNode hides the node's secret from plugins.
func pluginNode(n *sdk.Node) *sdk.Node {
	if n.SecretID == "" {
		return n
	}
	c := *n
	c.SecretID = ""
	return &c
}

// pluginVolume hides the volume's secrets from plugins.
func pluginVolume(v *sdk.CSIVolume) *sdk.CSIVolume {
	if len(v.Secrets) == 0 {
		return v
	}
	c := *v
	c.Secrets = nil
	return &c
}

// versionSet collects the job versions a sync's allocations reference.
type versionSet struct {
	seen map[versionKeyT]bool
	list []*sdk.Job
	// last is the job strip looked up last: a delta's allocations come a
	// plan at a time, and so mostly of one job.
	last struct {
		ns, id string
		job    *sdk.Job
	}
}

// versionKeyT names a job version by its JobModifyIndex (unique across
// versions and registrations).
type versionKeyT struct {
	ns, id   string
	modIndex uint64
}

func newVersionSet() *versionSet { return &versionSet{seen: map[versionKeyT]bool{}} }

// strip returns a copy of a without its Job and Metrics, remembering the
// job version if it is not the job's current one. Metrics explain a past
// placement to the API; no scheduler reads them, and they are half of an
// allocation's encoding, which a wasm plugin decodes at some cost.
func (vs *versionSet) strip(s *Snapshot, a *sdk.Allocation) *sdk.Allocation {
	c := *a
	c.Job, c.Metrics = nil, nil
	if a.Job == nil {
		return &c
	}
	if vs.last.job == nil || vs.last.id != a.JobID || vs.last.ns != a.Namespace {
		vs.last.ns, vs.last.id, vs.last.job = a.Namespace, a.JobID, s.Job(a.Namespace, a.JobID)
	}
	if cur := vs.last.job; cur != nil && cur.Version == a.Job.Version && cur.JobModifyIndex == a.Job.JobModifyIndex {
		return &c
	}
	k := versionKeyT{a.Namespace, a.JobID, a.Job.JobModifyIndex}
	if !vs.seen[k] {
		vs.seen[k] = true
		vs.list = append(vs.list, a.Job)
	}
	return &c
}
