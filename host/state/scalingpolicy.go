package state

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/drover-sched/drover/sdk"
	"github.com/google/uuid"
)

// A task group's scaling block is a scaling policy (Nomad's
// /v1/scaling/policies, what its autoscaler reads). The policy lives in the
// job, as in Nomad, where the server gives it an ID and indexes when the
// job is written: the ID stays while the job keeps a policy of that type on
// that group, CreateIndex is the write that added it, and ModifyIndex the
// last write that changed it. Nomad's open-source server keeps group
// (horizontal) policies only; so does Drover. Task-level (vertical) blocks
// stay in the job as written.
//
// A dispatched or periodic child's groups are copies of its parent's, the
// parent's policy included, as in Nomad: the policy is the parent's, and
// the child's copy is neither given an identity of its own nor listed.

// policyKey is what names a policy within its job, as Nomad's JobKey: its
// type and target group (and task, for the vertical policies a job may
// carry).
func policyKey(p *sdk.ScalingPolicy) string {
	return p.Type + "\x00" + p.Target["Group"] + "\x00" + p.Target["Task"]
}

// policyTarget is a group policy's target: the job it is in, whatever a
// client sent.
func policyTarget(j *sdk.Job, tg *sdk.TaskGroup) map[string]string {
	return map[string]string{"Namespace": j.Namespace, "Job": j.ID, "Group": tg.Name}
}

// identifyScalingPolicies gives j's group policies their target, ID and
// indexes, from old (the job j replaces, nil for a new one), and stamps
// TableScalingPolicies when one is added, changed or removed. j's
// CreateIndex must be set. An ID a client sent is ignored, as in Nomad.
// Groups are copied before they change: j may share them with the stored
// job.
func (t *Txn) identifyScalingPolicies(old, j *sdk.Job) {
	if j.ParentID != "" {
		return
	}
	index := t.index
	had := map[string]*sdk.ScalingPolicy{}
	if old != nil {
		for _, tg := range old.TaskGroups {
			if p := tg.Scaling; p != nil && p.ID != "" {
				had[policyKey(p)] = p
			}
		}
	}
	copied := false
	for i, tg := range j.TaskGroups {
		if tg.Scaling == nil {
			continue
		}
		p := *tg.Scaling
		p.Target = policyTarget(j, tg)
		prev := had[policyKey(&p)]
		delete(had, policyKey(&p))
		if prev != nil {
			p.ID, p.CreateIndex, p.ModifyIndex = prev.ID, prev.CreateIndex, prev.ModifyIndex
			if !samePolicy(prev, &p) {
				p.ModifyIndex = index
			}
		} else {
			p.ID, p.CreateIndex, p.ModifyIndex = policyID(j, &p), index, index
		}
		if p.ModifyIndex == index {
			t.tables[TableScalingPolicies] = true
		}
		if reflect.DeepEqual(&p, tg.Scaling) {
			continue
		}
		if !copied {
			j.TaskGroups, copied = slices.Clone(j.TaskGroups), true
		}
		c := *tg
		c.Scaling = &p
		j.TaskGroups[i] = &c
	}
	if len(had) > 0 { // removed
		t.tables[TableScalingPolicies] = true
	}
}

// policyID is a policy's ID: derived from the job's namespace, ID and
// CreateIndex and the policy's place in it, so every server makes the same
// one however it came by the job (applying its registration, or restoring
// a snapshot written before policies had IDs), and a job purged and
// registered again gets new ones.
func policyID(j *sdk.Job, p *sdk.ScalingPolicy) string {
	key := j.Namespace + "\x00" + j.ID + "\x00" + strconv.FormatUint(j.CreateIndex, 10) + "\x00" + policyKey(p)
	return uuid.NewSHA1(uuid.Nil, []byte(key)).String()
}

// restoreScalingPolicies gives the policies of a job restored from a
// snapshot written before policies had an identity one: the ID every
// server derives, and the job's JobModifyIndex as their indexes (the write
// that added each is not known).
func restoreScalingPolicies(j *sdk.Job) {
	if j.ParentID != "" {
		return
	}
	for _, tg := range j.TaskGroups {
		if p := tg.Scaling; p != nil && p.ID == "" {
			p.Target = policyTarget(j, tg)
			p.ID, p.CreateIndex, p.ModifyIndex = policyID(j, p), j.JobModifyIndex, j.JobModifyIndex
		}
	}
}

// hasScalingPolicy reports whether j lists a scaling policy.
func hasScalingPolicy(j *sdk.Job) bool {
	return j.ParentID == "" && slices.ContainsFunc(j.TaskGroups, func(tg *sdk.TaskGroup) bool { return tg.Scaling != nil && tg.Scaling.ID != "" })
}

// samePolicy reports whether two policies say the same, whatever their
// identity (ID, indexes) and target.
func samePolicy(a, b *sdk.ScalingPolicy) bool {
	return reflect.DeepEqual(policySpec(a), policySpec(b))
}

// withoutPolicyIdentity returns j with its group policies' identity
// cleared, its groups copied where they have one.
func withoutPolicyIdentity(j sdk.Job) sdk.Job {
	if !slices.ContainsFunc(j.TaskGroups, func(tg *sdk.TaskGroup) bool { return tg != nil && tg.Scaling != nil }) {
		return j
	}
	j.TaskGroups = slices.Clone(j.TaskGroups)
	for i, tg := range j.TaskGroups {
		if tg != nil && tg.Scaling != nil {
			g, p := *tg, policySpec(tg.Scaling)
			g.Scaling = &p
			j.TaskGroups[i] = &g
		}
	}
	return j
}

// policySpec is p without its identity (host/jobdiff leaves the same
// fields out of a diff).
func policySpec(p *sdk.ScalingPolicy) sdk.ScalingPolicy {
	c := *p
	c.ID, c.Target, c.CreateIndex, c.ModifyIndex = "", nil, 0, 0
	return c
}

// ScalingPolicies returns the group scaling policies of the jobs of
// namespace ns ("*" for all), ordered by namespace, job and group, as
// Nomad's target index orders them.
func (r reader) ScalingPolicies(ns string) []*sdk.ScalingPolicy {
	var out []*sdk.ScalingPolicy
	for _, j := range r.Jobs(ns) {
		if !hasScalingPolicy(j) {
			continue
		}
		from := len(out)
		for _, tg := range j.TaskGroups {
			if tg.Scaling != nil && tg.Scaling.ID != "" {
				out = append(out, tg.Scaling)
			}
		}
		slices.SortFunc(out[from:], func(a, b *sdk.ScalingPolicy) int { return strings.Compare(a.Target["Group"], b.Target["Group"]) })
	}
	return out
}

// ScalingPolicy returns the policy with ID id, nil when no job has it.
func (r reader) ScalingPolicy(id string) *sdk.ScalingPolicy {
	if j := first[sdk.Job](r, TableJobs, "scaling_policy", id); j != nil {
		for _, tg := range j.TaskGroups {
			if tg.Scaling != nil && tg.Scaling.ID == id {
				return tg.Scaling
			}
		}
	}
	return nil
}

// policyIndexer indexes jobs by the IDs of the scaling policies they list.
type policyIndexer struct{}

func (policyIndexer) FromObject(obj any) (bool, [][]byte, error) {
	j, ok := obj.(*sdk.Job)
	if !ok {
		return false, nil, fmt.Errorf("state: %s holds %T", TableJobs, obj)
	}
	if !hasScalingPolicy(j) {
		return false, nil, nil
	}
	var ids [][]byte
	for _, tg := range j.TaskGroups {
		if tg.Scaling != nil && tg.Scaling.ID != "" {
			ids = append(ids, append([]byte(tg.Scaling.ID), 0))
		}
	}
	return true, ids, nil
}

func (policyIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) == 1 {
		if id, ok := args[0].(string); ok {
			return append([]byte(id), 0), nil
		}
	}
	return nil, fmt.Errorf("state: the scaling_policy index takes a policy ID")
}
