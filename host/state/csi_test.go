package state

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover-sched/drover/sdk"
)

// A detach refused because allocations on the node still run names the
// same one on every server, whatever order the claims are kept in: the
// FSM's answer depends on the entry alone.
func TestDetachCSIVolume_RefusalIsDeterministic(t *testing.T) {
	s, _ := NewStore()
	job := &sdk.Job{Namespace: "default", ID: "db", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 3,
		Volumes: map[string]sdk.Opaque{"d": {"Type": "csi", "Source": "data", "ReadOnly": true,
			"AccessMode": sdk.CSIAccessModeMultiNodeReader}}}}}
	err := s.Write(1, func(tx *Txn) error {
		if err := tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs"}}); err != nil {
			return err
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		for _, id := range []string{"c", "a", "b", "d", "e"} {
			if err := tx.UpsertAlloc(&sdk.Allocation{ID: id, Namespace: "default", JobID: "db", TaskGroup: "g", Name: "db.g[0]",
				NodeID: "n1", Job: tx.Job("default", "db"), DesiredStatus: sdk.AllocDesiredStatusRun}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		err := s.Write(2, func(tx *Txn) error { return tx.DetachCSIVolume("default", "data", "n1") })
		if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "allocation a on node n1") {
			t.Fatalf("attempt %d: err = %v, want the refusal naming allocation a", i, err)
		}
	}
}

// A detach that releases a volume's last claims leaves it unclaimed, as a
// release by an allocation finishing does: its access and attachment modes
// are again any its capabilities offer, not those of the claims it had.
func TestDetachCSIVolume_LastClaimFreesTheModes(t *testing.T) {
	s, _ := NewStore()
	job := &sdk.Job{Namespace: "default", ID: "db", Type: "service", TaskGroups: []*sdk.TaskGroup{{Name: "g", Count: 1,
		Volumes: map[string]sdk.Opaque{"d": {"Type": "csi", "Source": "data",
			"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}}}}
	write := func(index uint64, fn func(tx *Txn) error) {
		t.Helper()
		if err := s.Write(index, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(1, func(tx *Txn) error {
		if err := tx.RegisterCSIVolumes([]*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "ebs",
			RequestedCapabilities: []*sdk.CSIVolumeCapability{
				{AccessMode: sdk.CSIAccessModeSingleNodeWriter, AttachmentMode: sdk.CSIAttachmentModeFilesystem},
				{AccessMode: sdk.CSIAccessModeMultiNodeMultiWriter, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}}}); err != nil {
			return err
		}
		if err := tx.UpsertJob(job); err != nil {
			return err
		}
		return tx.UpsertAlloc(&sdk.Allocation{ID: "a", Namespace: "default", JobID: "db", TaskGroup: "g", Name: "db.g[0]",
			NodeID: "n1", Job: tx.Job("default", "db"), DesiredStatus: sdk.AllocDesiredStatusRun})
	})
	if v := s.Snapshot().CSIVolume("default", "data"); v.AccessMode != sdk.CSIAccessModeSingleNodeWriter {
		t.Fatalf("claimed: access mode %q", v.AccessMode)
	}
	// A claim left behind (its allocation removed without releasing it),
	// which is what detach is for.
	write(2, func(tx *Txn) error { return tx.delete(TableAllocs, tx.Alloc("a")) })
	write(3, func(tx *Txn) error { return tx.DetachCSIVolume("default", "data", "n1") })
	v := s.Snapshot().CSIVolume("default", "data")
	if len(v.WriteClaims) != 0 || v.AccessMode != "" || v.AttachmentMode != "" {
		t.Fatalf("after detach: claims %v, modes %q/%q; want none", v.WriteClaims, v.AccessMode, v.AttachmentMode)
	}
}
