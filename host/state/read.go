package state

import (
	"iter"
	"strings"

	"github.com/drover-sched/drover/sdk"
	memdb "github.com/hashicorp/go-memdb"
)

// reader holds the read queries shared by snapshots and write transactions.
type reader struct{ txn *memdb.Txn }

func first[T any](r reader, table, index string, args ...any) *T {
	raw, err := r.txn.First(table, index, args...)
	if err != nil || raw == nil {
		return nil
	}
	return raw.(*T)
}

func all[T any](r reader, table, index string, args ...any) []*T {
	it, err := r.txn.Get(table, index, args...)
	if err != nil {
		return nil
	}
	var out []*T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*T))
	}
	return out
}

// each calls fn for each object of an index query until fn returns false,
// without collecting them.
func each[T any](r reader, fn func(*T) bool, table, index string, args ...any) {
	it, err := r.txn.Get(table, index, args...)
	if err != nil {
		return
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if !fn(raw.(*T)) {
			return
		}
	}
}

// TableIndex returns the last index at which table changed.
func (r reader) TableIndex(table string) uint64 {
	if e := first[IndexEntry](r, TableIndex, "id", table); e != nil {
		return e.Value
	}
	return 0
}

// Node returns a node by ID.
func (r reader) Node(id string) *sdk.Node { return first[sdk.Node](r, TableNodes, "id", id) }

// Nodes returns every node, ordered by ID.
func (r reader) Nodes() []*sdk.Node { return all[sdk.Node](r, TableNodes, "id") }

// EachNode yields every node, ordered by ID, without collecting them: for
// a caller that may stop early.
func (r reader) EachNode() iter.Seq[*sdk.Node] {
	return func(yield func(*sdk.Node) bool) { each(r, yield, TableNodes, "id") }
}

// NodesByPrefix returns nodes whose ID starts with prefix.
func (r reader) NodesByPrefix(prefix string) []*sdk.Node {
	return all[sdk.Node](r, TableNodes, "id_prefix", prefix)
}

// Job returns a job by namespace and ID.
func (r reader) Job(ns, id string) *sdk.Job { return first[sdk.Job](r, TableJobs, "id", ns, id) }

// Jobs returns every job in namespace ns ("" or "*" for all), ordered by ID.
func (r reader) Jobs(ns string) []*sdk.Job {
	if ns == "" || ns == "*" {
		return all[sdk.Job](r, TableJobs, "id")
	}
	return all[sdk.Job](r, TableJobs, "id_prefix", ns, "")
}

// EachJob yields the jobs Jobs(ns) returns, without collecting them.
func (r reader) EachJob(ns string) iter.Seq[*sdk.Job] {
	return func(yield func(*sdk.Job) bool) {
		if ns == "" || ns == "*" {
			each(r, yield, TableJobs, "id")
			return
		}
		each(r, yield, TableJobs, "id_prefix", ns, "")
	}
}

// JobVersions returns the kept versions of a job, newest first.
func (r reader) JobVersions(ns, id string) []*sdk.Job {
	vs := all[sdk.Job](r, TableJobVersions, "id_prefix", ns, id)
	for i, j := 0, len(vs)-1; i < j; i, j = i+1, j-1 {
		vs[i], vs[j] = vs[j], vs[i]
	}
	return vs
}

// JobVersion returns one kept version of a job.
func (r reader) JobVersion(ns, id string, v uint64) *sdk.Job {
	return first[sdk.Job](r, TableJobVersions, "id", ns, id, v)
}

// JobSubmission returns the source a kept job version was registered
// from (nil when it came with none).
func (r reader) JobSubmission(ns, id string, v uint64) *JobSubmission {
	return first[JobSubmission](r, TableSubmissions, "id", ns, id, v)
}

// JobSubmissions returns every kept submission.
func (r reader) JobSubmissions() []*JobSubmission {
	return all[JobSubmission](r, TableSubmissions, "id")
}

// Alloc returns an allocation by ID.
func (r reader) Alloc(id string) *sdk.Allocation {
	return first[sdk.Allocation](r, TableAllocs, "id", id)
}

// Allocs returns every allocation, ordered by ID.
func (r reader) Allocs() []*sdk.Allocation { return all[sdk.Allocation](r, TableAllocs, "id") }

// EachAlloc yields every allocation, ordered by ID, without collecting
// them.
func (r reader) EachAlloc() iter.Seq[*sdk.Allocation] {
	return func(yield func(*sdk.Allocation) bool) { each(r, yield, TableAllocs, "id") }
}

// AllocsByPrefix returns allocations whose ID starts with prefix.
func (r reader) AllocsByPrefix(prefix string) []*sdk.Allocation {
	return all[sdk.Allocation](r, TableAllocs, "id_prefix", prefix)
}

// AllocsByJob returns every allocation of a job ID, whichever instance of
// the job each belongs to: after a job was purged and registered again,
// the purged instance's too (Nomad's AllocsByJob with anyCreateIndex).
// Schedulers see them all likewise, in their state mirror, to stop those
// still running; what the API shows of a job is AllocsByJobInstance's.
func (r reader) AllocsByJob(ns, jobID string) []*sdk.Allocation {
	return all[sdk.Allocation](r, TableAllocs, "job", ns, jobID)
}

// AllocsByJobInstance returns the allocations of the job registered as
// ns/jobID, leaving out those of an earlier instance of it (a job of the
// same ID, purged since), as Nomad's AllocsByJob without anyCreateIndex.
// With no job registered under the ID, it returns every allocation of it.
func (r reader) AllocsByJobInstance(ns, jobID string) []*sdk.Allocation {
	job := r.Job(ns, jobID)
	if job == nil {
		return r.AllocsByJob(ns, jobID)
	}
	return r.jobAllocsWhere(ns, jobID, func(a *sdk.Allocation) bool { return a.OfInstance(job) })
}

// AllocsByNode returns a node's allocations.
func (r reader) AllocsByNode(nodeID string) []*sdk.Allocation {
	return all[sdk.Allocation](r, TableAllocs, "node", nodeID)
}

// AllocsByEval returns the allocations an eval (one the state holds)
// created or last updated. They are found among its job's allocations:
// an index by eval would cost every plan commit another radix-tree insert
// per allocation (schema).
func (r reader) AllocsByEval(evalID string) []*sdk.Allocation {
	e := r.Eval(evalID)
	if e == nil {
		return nil
	}
	return r.jobAllocsWhere(e.Namespace, e.JobID, func(a *sdk.Allocation) bool { return a.EvalID == evalID })
}

// AllocsByDeployment returns the allocations of a deployment the state
// holds, found among its job's allocations as AllocsByEval's are.
func (r reader) AllocsByDeployment(id string) []*sdk.Allocation {
	d := r.Deployment(id)
	if d == nil {
		return nil
	}
	return r.jobAllocsWhere(d.Namespace, d.JobID, func(a *sdk.Allocation) bool { return a.DeploymentID == id })
}

// jobAllocsWhere returns the job's allocations that keep says to.
func (r reader) jobAllocsWhere(ns, jobID string, keep func(*sdk.Allocation) bool) []*sdk.Allocation {
	var out []*sdk.Allocation
	each(r, func(a *sdk.Allocation) bool {
		if keep(a) {
			out = append(out, a)
		}
		return true
	}, TableAllocs, "job", ns, jobID)
	return out
}

// Eval returns an evaluation by ID.
func (r reader) Eval(id string) *sdk.Evaluation {
	return first[sdk.Evaluation](r, TableEvals, "id", id)
}

// Evals returns every evaluation, ordered by ID.
func (r reader) Evals() []*sdk.Evaluation { return all[sdk.Evaluation](r, TableEvals, "id") }

// EvalsByPrefix returns evaluations whose ID starts with prefix.
func (r reader) EvalsByPrefix(prefix string) []*sdk.Evaluation {
	return all[sdk.Evaluation](r, TableEvals, "id_prefix", prefix)
}

// EvalsByJob returns a job's evaluations.
func (r reader) EvalsByJob(ns, jobID string) []*sdk.Evaluation {
	return all[sdk.Evaluation](r, TableEvals, "job", ns, jobID)
}

// Deployment returns a deployment by ID.
func (r reader) Deployment(id string) *sdk.Deployment {
	return first[sdk.Deployment](r, TableDeployments, "id", id)
}

// Deployments returns every deployment.
func (r reader) Deployments() []*sdk.Deployment {
	return all[sdk.Deployment](r, TableDeployments, "id")
}

// DeploymentsByJob returns every deployment of a job ID, whichever
// instance of the job each belongs to (see AllocsByJob).
func (r reader) DeploymentsByJob(ns, jobID string) []*sdk.Deployment {
	return all[sdk.Deployment](r, TableDeployments, "job", ns, jobID)
}

// DeploymentsByJobInstance returns the deployments of the job registered as
// ns/jobID, leaving out those of an earlier instance of it, as Nomad's
// DeploymentsByJobID without all: those whose JobCreateIndex is the job's
// create index. With no job registered under the ID, it returns every
// deployment of it.
func (r reader) DeploymentsByJobInstance(ns, jobID string) []*sdk.Deployment {
	job := r.Job(ns, jobID)
	if job == nil {
		return r.DeploymentsByJob(ns, jobID)
	}
	var out []*sdk.Deployment
	each(r, func(d *sdk.Deployment) bool {
		if d.JobCreateIndex == job.CreateIndex {
			out = append(out, d)
		}
		return true
	}, TableDeployments, "job", ns, jobID)
	return out
}

// LatestDeployment returns the most recently created deployment of a job
// ID, whichever instance of the job it belongs to, as Nomad's
// LatestDeploymentByJobID and the schedulers' state mirror (whose
// reconciler cancels one of an earlier instance).
func (r reader) LatestDeployment(ns, jobID string) *sdk.Deployment {
	return latestDeployment(r.DeploymentsByJob(ns, jobID))
}

// LatestDeploymentByJobInstance returns the most recently created
// deployment of the job registered as ns/jobID, among
// DeploymentsByJobInstance's, as Nomad's latest deployment endpoint does.
func (r reader) LatestDeploymentByJobInstance(ns, jobID string) *sdk.Deployment {
	return latestDeployment(r.DeploymentsByJobInstance(ns, jobID))
}

func latestDeployment(ds []*sdk.Deployment) *sdk.Deployment {
	var latest *sdk.Deployment
	for _, d := range ds {
		if latest == nil || d.CreateIndex > latest.CreateIndex {
			latest = d
		}
	}
	return latest
}

// PeriodicLaunch returns a periodic job's last launch record.
func (r reader) PeriodicLaunch(ns, id string) *PeriodicLaunch {
	return first[PeriodicLaunch](r, TablePeriodic, "id", ns, id)
}

// PeriodicLaunches returns every periodic launch record.
func (r reader) PeriodicLaunches() []*PeriodicLaunch {
	return all[PeriodicLaunch](r, TablePeriodic, "id")
}

// ScalingEvents returns a job's scaling events (nil when it has none).
func (r reader) ScalingEvents(ns, jobID string) *JobScalingEvents {
	return first[JobScalingEvents](r, TableScaling, "id", ns, jobID)
}

// JobSummaryKept returns what job ns/jobID's summary keeps across garbage
// collection, nil if nothing yet.
func (r reader) JobSummaryKept(ns, jobID string) *JobSummaryKept {
	return first[JobSummaryKept](r, TableSummaries, "id", ns, jobID)
}

// JobSummariesKept returns every job's kept summary.
func (r reader) JobSummariesKept() []*JobSummaryKept {
	return all[JobSummaryKept](r, TableSummaries, "id")
}

// AllScalingEvents returns every job's scaling events.
func (r reader) AllScalingEvents() []*JobScalingEvents {
	return all[JobScalingEvents](r, TableScaling, "id")
}

// JobsByIDPrefix returns the jobs of namespace ns whose ID starts with
// prefix (a periodic job's children start with its ID).
func (r reader) JobsByIDPrefix(ns, prefix string) []*sdk.Job {
	return all[sdk.Job](r, TableJobs, "id_prefix", ns, prefix)
}

// SchedulerConfig returns the scheduler configuration (the default if none
// was set).
func (r reader) SchedulerConfig() *sdk.SchedulerConfiguration {
	if e := first[SchedulerConfigEntry](r, TableSchedConfig, "id", "config"); e != nil {
		return e.Config
	}
	return sdk.DefaultSchedulerConfiguration()
}

// SchedulerConfigSet reports whether a scheduler configuration was written
// (SchedulerConfig answers the default until one is).
func (r reader) SchedulerConfigSet() bool {
	return first[SchedulerConfigEntry](r, TableSchedConfig, "id", "config") != nil
}

// ClusterMeta returns the cluster's identity, nil until its first leader
// wrote it.
func (r reader) ClusterMeta() *ClusterMeta {
	return first[ClusterMeta](r, TableCluster, "id", ClusterMetaKey)
}

func jobKey(ns, id string) string { return ns + "\x00" + id }

func splitJobKey(k string) (string, string) {
	ns, id, _ := strings.Cut(k, "\x00")
	return ns, id
}
