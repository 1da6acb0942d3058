package plan

import (
	"testing"

	"github.com/drover-sched/drover/host/fsm"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// The overlay lays a committing placement's CSI claims over the snapshot
// as the FSM will take them: those of the job version the placement runs,
// an older kept one it names (its Job stripped by verify.Plan) as well as
// the plan's.
func TestOverlay_ClaimsOfThePlacedVersion(t *testing.T) {
	s, v0 := fixture(t)
	v0 = v0.Copy()
	v0.TaskGroups[0].Volumes = map[string]sdk.Opaque{"data": {"Type": "csi", "Source": "data",
		"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
	err := s.Write(2, func(tx *state.Txn) error {
		if err := tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs",
			RequestedCapabilities: []*sdk.CSIVolumeCapability{{AccessMode: sdk.CSIAccessModeSingleNodeWriter,
				AttachmentMode: sdk.CSIAttachmentModeFilesystem}}}}); err != nil {
			return err
		}
		return tx.UpsertJob(v0)
	})
	if err != nil {
		t.Fatal(err)
	}
	v0 = s.Snapshot().Job("default", "web")
	v1 := v0.Copy()
	v1.TaskGroups[0].Volumes = nil
	if err := s.Write(3, func(tx *state.Txn) error { return tx.UpsertJob(v1) }); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	cur := snap.Job("default", "web")
	a := withVersion(place("a", "n0", 1), v0.Version, v0.JobModifyIndex)
	o := newOverlay(snap, &fsm.ApplyPlanResultsRequest{Job: cur, AllocsUpdated: []*sdk.Allocation{a}})
	if v := o.CSIVolume("default", "data"); v == nil || v.WriteClaims["a"] == nil {
		t.Fatalf("volume %+v: want the write claim of a, which runs version %d", v, v0.Version)
	}
}
