package state

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/drover-sched/drover/sdk"
	memdb "github.com/hashicorp/go-memdb"
)

// JobTrackedVersions is how many versions of a job are kept.
const JobTrackedVersions = 6

// Txn is a write transaction at one index. Every write stamps indexes,
// marks its table changed and records the change in the journal.
type Txn struct {
	reader
	txn     *memdb.Txn
	index   uint64
	tables  map[string]bool
	changes []Change
	// restore inserts objects as they are, without stamping or journaling.
	restore bool
	// touched jobs get their status recomputed before commit.
	touched map[sdk.NamespacedID]bool
	// evalsDeleted are the touched jobs some of whose evals this
	// transaction deleted (jobStatus).
	evalsDeleted map[sdk.NamespacedID]bool
	// keptFor and kept cache UpsertAlloc's last job version lookup: a
	// plan's allocations all name the same job. Any write to the job
	// versions table clears it.
	keptFor, kept *sdk.Job
}

// Index is the transaction's index.
func (t *Txn) Index() uint64 { return t.index }

func (t *Txn) insert(table string, obj any) error {
	if table == TableJobVersions {
		t.keptFor, t.kept = nil, nil
	}
	if err := t.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: insert into %s: %w", table, err)
	}
	t.tables[table] = true
	return nil
}

func (t *Txn) delete(table string, obj any) error {
	if table == TableJobVersions {
		t.keptFor, t.kept = nil, nil
	}
	if err := t.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("state: delete from %s: %w", table, err)
	}
	t.tables[table] = true
	return nil
}

func (t *Txn) record(kind Kind, key string) {
	if !t.restore {
		t.changes = append(t.changes, Change{Index: t.index, Kind: kind, Key: key})
	}
}

func (t *Txn) touch(ns, jobID string) {
	if t.restore {
		return
	}
	if t.touched == nil {
		t.touched = map[sdk.NamespacedID]bool{}
	}
	t.touched[sdk.NamespacedID{Namespace: ns, ID: jobID}] = true
}

// UpsertNode inserts or replaces a node, keeping its create index. Its
// class is computed again also on restore: a snapshot written by an older
// version holds classes hashed as that version did (sdk.Node.ComputeClass).
func (t *Txn) UpsertNode(n *sdk.Node) error {
	if !t.restore {
		if old := t.Node(n.ID); old != nil {
			n.CreateIndex = old.CreateIndex
		} else {
			n.CreateIndex = t.index
		}
		n.ModifyIndex = t.index
	}
	n.ComputeClass()
	t.record(KindNode, n.ID)
	return t.insert(TableNodes, n)
}

// DeleteNode removes a node.
func (t *Txn) DeleteNode(id string) error {
	old := t.Node(id)
	if old == nil {
		return fmt.Errorf("%w: node %s", ErrNotFound, id)
	}
	t.record(KindNode, id)
	return t.delete(TableNodes, old)
}

// UpsertJob registers a job or a new version of it. The version number
// rises only when the specification changed.
func (t *Txn) UpsertJob(j *sdk.Job) error {
	if t.restore {
		restoreScalingPolicies(j)
	} else {
		j.ModifyIndex = t.index
		old := t.Job(j.Namespace, j.ID)
		j.CreateIndex = t.index
		if old != nil {
			j.CreateIndex = old.CreateIndex
		}
		t.identifyScalingPolicies(old, j)
		if old != nil {
			if SpecChanged(old, j) {
				j.Version = old.Version + 1
				j.JobModifyIndex = t.index
				j.Stable = false
			} else {
				j.Version = old.Version
				j.JobModifyIndex = old.JobModifyIndex
				j.Stable = old.Stable
			}
			if j.Status == "" {
				j.Status = old.Status
			}
		} else {
			j.JobModifyIndex = t.index
			j.Version = 0
		}
		if j.Status == "" {
			j.Status = sdk.JobStatusPending
		}
		t.touch(j.Namespace, j.ID)
	}
	t.record(KindJob, jobKey(j.Namespace, j.ID))
	if err := t.insert(TableJobs, j); err != nil {
		return err
	}
	if t.restore {
		return nil
	}
	return t.upsertJobVersion(j)
}

// SetJobStability marks a kept job version stable or not, and the job too
// when that version is its current one. Unlike UpsertJob it changes
// nothing else: stability is the server's mark, not the user's spec.
func (t *Txn) SetJobStability(ns, id string, version uint64, stable bool) error {
	v := t.JobVersion(ns, id, version)
	if v == nil {
		return fmt.Errorf("%w: job %s/%s version %d", ErrNotFound, ns, id, version)
	}
	c := *v
	c.Stable = stable
	if err := t.insert(TableJobVersions, &c); err != nil {
		return err
	}
	cur := t.Job(ns, id)
	if cur == nil || cur.Version != version {
		return nil
	}
	j := *cur
	j.Stable = stable
	j.ModifyIndex = t.index
	t.record(KindJob, jobKey(ns, id))
	return t.insert(TableJobs, &j)
}

// UpsertJobVersion inserts a kept job version (restore only).
func (t *Txn) UpsertJobVersion(j *sdk.Job) error { return t.insert(TableJobVersions, j) }

func (t *Txn) upsertJobVersion(j *sdk.Job) error {
	if err := t.insert(TableJobVersions, j); err != nil {
		return err
	}
	return t.pruneJobVersions(j.Namespace, j.ID)
}

// UpsertJobSubmission keeps sub as the source job ns/id's current version
// was registered from, if this write made that version: a registration
// that changes nothing of the spec (so no new version) keeps nothing, as
// Nomad applies none.
func (t *Txn) UpsertJobSubmission(ns, id string, sub *JobSubmission) error {
	j := t.Job(ns, id)
	if j == nil {
		return fmt.Errorf("%w: job %s/%s", ErrNotFound, ns, id)
	}
	if j.JobModifyIndex != t.index || t.JobSubmission(ns, id, j.Version) != nil {
		return nil
	}
	c := *sub
	c.Namespace, c.JobID, c.Version, c.JobModifyIndex = ns, id, j.Version, j.JobModifyIndex
	return t.insert(TableSubmissions, &c)
}

// RestoreJobSubmission inserts a kept submission (restore only).
func (t *Txn) RestoreJobSubmission(sub *JobSubmission) error { return t.insert(TableSubmissions, sub) }

// DeleteJob purges a job, its versions, their submissions and tags (its
// allocations and evals stay until garbage collection).
func (t *Txn) DeleteJob(ns, id string) error {
	old := t.Job(ns, id)
	if old == nil {
		return fmt.Errorf("%w: job %s/%s", ErrNotFound, ns, id)
	}
	for _, v := range t.JobVersions(ns, id) {
		if err := t.delete(TableJobVersions, v); err != nil {
			return err
		}
	}
	for _, sub := range all[JobSubmission](t.reader, TableSubmissions, "id_prefix", ns, id) {
		if err := t.delete(TableSubmissions, sub); err != nil {
			return err
		}
	}
	if err := t.DeletePeriodicLaunch(ns, id); err != nil {
		return err
	}
	if old := t.ScalingEvents(ns, id); old != nil {
		if err := t.delete(TableScaling, old); err != nil {
			return err
		}
	}
	if old := t.JobSummaryKept(ns, id); old != nil {
		if err := t.delete(TableSummaries, old); err != nil {
			return err
		}
	}
	if tags := t.JobVersionTags(ns, id); tags != nil {
		if err := t.delete(TableVersionTags, tags); err != nil {
			return err
		}
	}
	if hasScalingPolicy(old) {
		t.tables[TableScalingPolicies] = true
	}
	t.record(KindJob, jobKey(ns, id))
	return t.delete(TableJobs, old)
}

// TouchEval sets an evaluation's ModifyIndex to the transaction's and
// changes nothing else, as Nomad's plan applier does to the eval whose
// plan it commits. A missing eval is left alone.
func (t *Txn) TouchEval(id string) error {
	old := t.Eval(id)
	if old == nil {
		return nil
	}
	c := *old
	c.ModifyIndex = t.index
	t.record(KindEval, id)
	return t.insert(TableEvals, &c)
}

// UpsertEval inserts or replaces an evaluation.
func (t *Txn) UpsertEval(e *sdk.Evaluation) error {
	if !t.restore {
		if old := t.Eval(e.ID); old != nil {
			e.CreateIndex = old.CreateIndex
			e.CreateTime = old.CreateTime
		} else {
			e.CreateIndex = t.index
		}
		e.ModifyIndex = t.index
		t.touch(e.Namespace, e.JobID)
		// The job's summary keeps what an eval counted queued, group by
		// group, as Nomad's does (a group the eval does not name keeps its
		// count); a canceled eval's count is no longer so.
		if e.QueuedAllocations != nil && e.Status != sdk.EvalStatusCanceled {
			if err := t.keepSummary(e.Namespace, e.JobID, func(k *JobSummaryKept) {
				if k.Queued == nil {
					k.Queued = make(map[string]int, len(e.QueuedAllocations))
				}
				maps.Copy(k.Queued, e.QueuedAllocations)
			}); err != nil {
				return err
			}
		}
	}
	t.record(KindEval, e.ID)
	return t.insert(TableEvals, e)
}

// keepSummary applies change to what job ns/jobID's summary keeps, if the
// job is there: a new record for a new job instance.
func (t *Txn) keepSummary(ns, jobID string, change func(*JobSummaryKept)) error {
	job := t.Job(ns, jobID)
	if job == nil {
		return nil
	}
	k := &JobSummaryKept{Namespace: ns, JobID: jobID, JobCreateIndex: job.CreateIndex}
	if old := t.JobSummaryKept(ns, jobID); old != nil && old.JobCreateIndex == job.CreateIndex {
		c := *old
		c.Queued, c.Collected = maps.Clone(old.Queued), maps.Clone(old.Collected)
		k = &c
	}
	change(k)
	k.ModifyIndex = t.index
	return t.insert(TableSummaries, k)
}

// RestoreJobSummaryKept inserts a kept summary (restore only).
func (t *Txn) RestoreJobSummaryKept(k *JobSummaryKept) error { return t.insert(TableSummaries, k) }

// DeleteEval removes an evaluation, and has its job's status recomputed
// as one whose evals were deleted (jobStatus), as Nomad's DeleteEval does.
func (t *Txn) DeleteEval(id string) error {
	old := t.Eval(id)
	if old == nil {
		return nil
	}
	if !t.restore {
		t.touch(old.Namespace, old.JobID)
		if t.evalsDeleted == nil {
			t.evalsDeleted = map[sdk.NamespacedID]bool{}
		}
		t.evalsDeleted[sdk.NamespacedID{Namespace: old.Namespace, ID: old.JobID}] = true
	}
	t.record(KindEval, id)
	return t.delete(TableEvals, old)
}

// UpsertAlloc inserts or replaces an allocation.
func (t *Txn) UpsertAlloc(a *sdk.Allocation) error {
	var old *sdk.Allocation
	if !t.restore {
		old = t.Alloc(a.ID)
	}
	return t.UpsertAllocOver(a, old)
}

// UpsertAllocOver is UpsertAlloc for a caller that has just looked up the
// allocation's current version in this transaction: old (nil for a new
// allocation). It saves a lookup per allocation of a large plan.
func (t *Txn) UpsertAllocOver(a, old *sdk.Allocation) error {
	if !t.restore {
		if old != nil {
			a.CreateIndex = old.CreateIndex
			a.CreateTime = old.CreateTime
			if a.Job == nil {
				a.Job = old.Job
			}
		} else {
			a.CreateIndex = t.index
			a.AllocModifyIndex = t.index
		}
		a.ModifyIndex = t.index
		if a.Job != nil {
			// Share the kept version rather than hold a copy per alloc; it
			// is also what a restored snapshot links allocations to.
			if a.Job != t.keptFor {
				t.keptFor, t.kept = a.Job, t.JobVersion(a.Job.Namespace, a.Job.ID, a.Job.Version)
			}
			if kept := t.kept; kept != nil && kept.JobModifyIndex == a.Job.JobModifyIndex {
				a.Job = kept
			}
			a.JobVersion, a.JobModifyIndex = a.Job.Version, a.Job.JobModifyIndex
		}
		t.touch(a.Namespace, a.JobID)
		if err := t.csiClaimsOf(a, old); err != nil {
			return err
		}
	}
	t.record(KindAlloc, a.ID)
	return t.insert(TableAllocs, a)
}

// csiClaimsOf keeps the CSI volume claims in step with an allocation's
// write: a new allocation claims its group's volumes, and one that
// finishes on its node releases them.
func (t *Txn) csiClaimsOf(a, old *sdk.Allocation) error {
	if a.Job == nil {
		return nil
	}
	switch {
	case old == nil:
		return t.claimCSIVolumes(a)
	case !old.ClientTerminalStatus() && a.ClientTerminalStatus():
		return t.releaseCSIClaims(a)
	}
	return nil
}

// DeleteAlloc removes an allocation. It leaves its job's status alone, as
// Nomad's DeleteEval does for the allocations it deletes: only terminal
// allocations are collected, and a job left with neither evals nor
// allocations would otherwise go back to pending (jobStatus).
func (t *Txn) DeleteAlloc(id string) error {
	old := t.Alloc(id)
	if old == nil {
		return nil
	}
	t.record(KindAlloc, id)
	if err := t.delete(TableAllocs, old); err != nil {
		return err
	}
	if err := t.releaseCSIClaims(old); err != nil {
		return err
	}
	// A terminal allocation of the job's instance collected leaves its
	// count in the job's summary, as Nomad's running totals keep it.
	if job := t.Job(old.Namespace, old.JobID); job != nil && old.OfInstance(job) && old.ClientTerminalStatus() {
		return t.keepSummary(old.Namespace, old.JobID, func(k *JobSummaryKept) {
			if k.Collected == nil {
				k.Collected = map[string]CollectedAllocs{}
			}
			c := k.Collected[old.TaskGroup]
			c.add(old.ClientStatus)
			k.Collected[old.TaskGroup] = c
		})
	}
	return nil
}

// UpsertDeployment inserts or replaces a deployment.
func (t *Txn) UpsertDeployment(d *sdk.Deployment) error {
	if !t.restore {
		if old := t.Deployment(d.ID); old != nil {
			d.CreateIndex = old.CreateIndex
		} else {
			d.CreateIndex = t.index
		}
		d.ModifyIndex = t.index
	}
	t.record(KindDeployment, d.ID)
	return t.insert(TableDeployments, d)
}

// DeleteDeployment removes a deployment.
func (t *Txn) DeleteDeployment(id string) error {
	old := t.Deployment(id)
	if old == nil {
		return nil
	}
	t.record(KindDeployment, id)
	return t.delete(TableDeployments, old)
}

// UpsertPeriodicLaunch records a periodic job's launch.
func (t *Txn) UpsertPeriodicLaunch(l *PeriodicLaunch) error {
	if !t.restore {
		if old := t.PeriodicLaunch(l.Namespace, l.ID); old != nil {
			l.CreateIndex = old.CreateIndex
		} else {
			l.CreateIndex = t.index
		}
		l.ModifyIndex = t.index
	}
	return t.insert(TablePeriodic, l)
}

// DeletePeriodicLaunch removes a periodic job's launch record, if any.
func (t *Txn) DeletePeriodicLaunch(ns, id string) error {
	old := t.PeriodicLaunch(ns, id)
	if old == nil {
		return nil
	}
	return t.delete(TablePeriodic, old)
}

// AddScalingEvent records a scaling event of a job's task group, keeping
// the group's latest MaxScalingEvents.
func (t *Txn) AddScalingEvent(ns, jobID, group string, e *ScalingEvent) error {
	e.CreateIndex = t.index
	next := &JobScalingEvents{Namespace: ns, JobID: jobID, ScalingEvents: map[string][]*ScalingEvent{}, ModifyIndex: t.index}
	if old := t.ScalingEvents(ns, jobID); old != nil {
		for g, es := range old.ScalingEvents {
			next.ScalingEvents[g] = es
		}
	}
	events := append([]*ScalingEvent{e}, next.ScalingEvents[group]...)
	next.ScalingEvents[group] = events[:min(len(events), MaxScalingEvents)]
	return t.insert(TableScaling, next)
}

// RestoreScalingEvents inserts a job's scaling events as a snapshot holds
// them.
func (t *Txn) RestoreScalingEvents(e *JobScalingEvents) error { return t.insert(TableScaling, e) }

// SetSchedulerConfig replaces the scheduler configuration.
func (t *Txn) SetSchedulerConfig(c *sdk.SchedulerConfiguration) error {
	if !t.restore {
		old := t.SchedulerConfig()
		c.CreateIndex = old.CreateIndex
		if c.CreateIndex == 0 {
			c.CreateIndex = t.index
		}
		c.ModifyIndex = t.index
	}
	t.record(KindSchedConfig, "config")
	return t.insert(TableSchedConfig, &SchedulerConfigEntry{ID: "config", Config: c})
}

// SetClusterMeta records the cluster's identity; the first one written
// stays (a second leader racing the first writes nothing).
func (t *Txn) SetClusterMeta(m *ClusterMeta) error {
	if t.ClusterMeta() != nil {
		return nil
	}
	c := *m
	c.Key = ClusterMetaKey
	return t.insert(TableCluster, &c)
}

// finish recomputes the status of every job the transaction touched.
func (t *Txn) finish() error {
	for id := range t.touched {
		job := t.Job(id.Namespace, id.ID)
		if job == nil {
			continue
		}
		status := t.jobStatus(job, t.evalsDeleted[id])
		if status == job.Status {
			continue
		}
		c := *job
		c.Status = status
		c.ModifyIndex = t.index
		t.record(KindJob, jobKey(c.Namespace, c.ID))
		if err := t.insert(TableJobs, &c); err != nil {
			return err
		}
	}
	return nil
}

// jobStatus derives a job's status as Nomad's getJobStatus does: running
// while any allocation is live, pending while evaluations are outstanding,
// dead after, or when its evals were deleted (evalsDeleted: collected, or
// deleted by DELETE /v1/evaluations), which leaves nothing to wait for. A
// job with neither evals nor allocations otherwise is pending, stopped or
// not, as in Nomad: it is about to get an eval (every registration and
// stop of such a job comes with one).
func (t *Txn) jobStatus(job *sdk.Job, evalsDeleted bool) string {
	if job.Type == sdk.JobTypeSystem || job.IsPeriodic() || job.IsParameterized() {
		if job.Stop {
			return sdk.JobStatusDead
		}
		return sdk.JobStatusRunning
	}
	// Stop at the first answer: a job can have many allocations and evals.
	hasAlloc, live := false, false
	each(t.reader, func(a *sdk.Allocation) bool {
		hasAlloc = true
		live = !a.TerminalStatus()
		return !live
	}, TableAllocs, "job", job.Namespace, job.ID)
	if live {
		return sdk.JobStatusRunning
	}
	hasEval, open := false, false
	each(t.reader, func(e *sdk.Evaluation) bool {
		hasEval = true
		open = !e.TerminalStatus()
		return !open
	}, TableEvals, "job", job.Namespace, job.ID)
	if open {
		return sdk.JobStatusPending
	}
	if evalsDeleted || hasEval || hasAlloc {
		return sdk.JobStatusDead
	}
	return sdk.JobStatusPending
}

// SpecChanged reports whether the user-facing specification of a job
// differs between two versions, ignoring what the server sets: the fields
// a job status carries (specOf) and its scaling policies' identity, which
// a client's copy of the job may lack or have stale. That identity changes
// only with the policy, so with the JobModifyIndex, as the rest of the
// specification.
func SpecChanged(a, b *sdk.Job) bool {
	return !reflect.DeepEqual(withoutPolicyIdentity(specOf(a)), withoutPolicyIdentity(specOf(b)))
}

// specOf returns j without the fields a job status carries (abi.JobStatus).
func specOf(j *sdk.Job) sdk.Job {
	c := *j
	c.Status, c.StatusDescription = "", ""
	c.Stable = false
	c.Version = 0
	c.SubmitTime = 0
	c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
	return c
}

// RestoreTableIndex sets a table's index (restore only).
func (t *Txn) RestoreTableIndex(e *IndexEntry) error { return t.txn.Insert(TableIndex, e) }
