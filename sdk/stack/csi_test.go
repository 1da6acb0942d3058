package stack

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/mirror"
)

// The plan's claims on a volume are those of the allocations it places or
// updates in place: an annotation (a failed allocation's follow-up eval,
// a disconnected one marked unknown) changes no claim, as the host takes
// none for it. Counted, a failed writer's annotation kept a reader of the
// job's other group off a single-node-writer volume the host would have
// let it claim.
func TestPlan_CSIPlanClaimsLeaveAnnotationsOut(t *testing.T) {
	vol := func(readOnly bool) sdk.Opaque {
		return sdk.Opaque{"Type": "csi", "Source": "data", "ReadOnly": readOnly,
			"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}
	}
	job := &sdk.Job{Namespace: "default", ID: "db", Type: "service", TaskGroups: []*sdk.TaskGroup{
		{Name: "w", Count: 1, Volumes: map[string]sdk.Opaque{"data": vol(false)}},
		{Name: "r", Count: 1, Volumes: map[string]sdk.Opaque{"data": vol(true)}}}}
	failed := &sdk.Allocation{ID: "a1", Namespace: "default", JobID: "db", TaskGroup: "w", Name: "db.w[0]", NodeID: "n1",
		DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusFailed}
	state := mirror.New()
	if err := state.Apply(&abi.StateSync{Full: true, Index: 1, SchedulerConfig: sdk.DefaultSchedulerConfiguration(),
		Jobs: []*sdk.Job{job}, Allocs: []*sdk.Allocation{failed}, Nodes: []*sdk.Node{{ID: "n1"}},
		CSIVolumes: []*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs"}}}); err != nil {
		t.Fatal(err)
	}
	plan := NewPlan(state, &sdk.Evaluation{ID: "e1"}, job)
	annotated := *failed
	annotated.FollowupEvalID = "e2"
	plan.Annotate(&annotated)
	if r, w := plan.csiPlanClaims("default", "data"); r != 0 || w != 0 {
		t.Fatalf("plan claims %d reads, %d writes; want none for an annotation", r, w)
	}
	placed := &sdk.Allocation{ID: "a2", Namespace: "default", JobID: "db", TaskGroup: "r", Name: "db.r[0]", NodeID: "n1",
		DesiredStatus: sdk.AllocDesiredStatusRun}
	plan.Place(placed)
	if r, w := plan.csiPlanClaims("default", "data"); r != 1 || w != 0 {
		t.Fatalf("plan claims %d reads, %d writes; want the placement's read", r, w)
	}
}
