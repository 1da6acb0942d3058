package fsm

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
	"github.com/tinylib/msgp/msgp"
)

// CSI volume entries, applied through the log: a placed allocation claims
// its group's volumes (per_alloc ones by its index), one finishing on its
// node or collected releases them; a volume in use is not deregistered,
// nor given capabilities that drop the mode it is used with; detach
// releases only finished allocations' claims.
func TestFSM_CSIVolumeClaims(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	job := &sdk.Job{Namespace: "default", ID: "db", Name: "db", Type: sdk.JobTypeService, Status: sdk.JobStatusPending,
		TaskGroups: []*sdk.TaskGroup{{Name: "db", Count: 2, Volumes: map[string]sdk.Opaque{
			"data":  {"Type": "csi", "Source": "data", "AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem},
			"shard": {"Type": "csi", "Source": "shard", "PerAlloc": true, "ReadOnly": true, "AccessMode": sdk.CSIAccessModeMultiNodeReader, "AttachmentMode": sdk.CSIAttachmentModeFilesystem},
			"host":  {"Type": "host", "Source": "scratch"},
		}}}}
	caps := []*sdk.CSIVolumeCapability{{AccessMode: sdk.CSIAccessModeSingleNodeWriter, AttachmentMode: sdk.CSIAttachmentModeFilesystem},
		{AccessMode: sdk.CSIAccessModeMultiNodeReader, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}
	vol := func(id string, caps []*sdk.CSIVolumeCapability) *sdk.CSIVolume {
		return &sdk.CSIVolume{Namespace: "default", ID: id, Name: id, PluginID: "ebs", RequestedCapabilities: caps}
	}
	alloc := func(id, name, node string) *sdk.Allocation {
		return &sdk.Allocation{ID: id, Namespace: "default", JobID: "db", TaskGroup: "db", Name: name, NodeID: node, Job: job,
			DesiredStatus: sdk.AllocDesiredStatusRun, ClientStatus: sdk.AllocClientStatusPending}
	}
	finished := func(id string) *AllocClientUpdateRequest {
		return &AllocClientUpdateRequest{Allocs: []*sdk.Allocation{{ID: id, ClientStatus: sdk.AllocClientStatusComplete}}}
	}
	steps := []struct {
		typ  MessageType
		msg  msgp.Marshaler
		want error
	}{
		/* 1 */ {CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*sdk.CSIVolume{vol("data", caps), vol("shard[0]", caps), vol("shard[1]", caps)}}, nil},
		/* 2 */ {JobRegisterRequestType, &JobRegisterRequest{Job: job}, nil},
		/* 3 */ {ApplyPlanResultsRequestType, &ApplyPlanResultsRequest{Job: job, AllocsUpdated: []*sdk.Allocation{
			alloc("a0", "db.db[0]", "n1"), alloc("a1", "db.db[1]", "n2")}}, nil},
		/* 4 */ {CSIVolumeDeregisterRequestType, &CSIVolumeDeregisterRequest{Namespace: "default", IDs: []string{"data"}}, state.ErrInUse},
		// Dropping the claimed single-node-writer capability is refused;
		// the plugin cannot change.
		/* 5 */ {CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*sdk.CSIVolume{vol("data", caps[1:])}}, state.ErrInUse},
		/* 6 */ {CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*sdk.CSIVolume{{Namespace: "default", ID: "data", PluginID: "nfs"}}}, state.ErrInUse},
		/* 7 */ {CSIVolumeDetachRequestType, &CSIVolumeDetachRequest{Namespace: "default", ID: "shard[0]", NodeID: "n1"}, state.ErrInUse},
		/* 8 */ {AllocClientUpdateRequestType, finished("a0"), nil},
		/* 9 */ {CSIVolumeDeregisterRequestType, &CSIVolumeDeregisterRequest{Namespace: "default", IDs: []string{"shard[0]"}}, nil},
		/* 10 */ {CSIVolumeDeregisterRequestType, &CSIVolumeDeregisterRequest{Namespace: "default", IDs: []string{"nope"}}, state.ErrNotFound},
		/* 11 */ {GarbageCollectRequestType, &GarbageCollectRequest{Allocs: []string{"a1"}}, nil},
		/* 12 */ {CSIVolumeDeregisterRequestType, &CSIVolumeDeregisterRequest{Namespace: "default", IDs: []string{"data"}}, nil},
	}
	check := func(step int, id string, reads, writes []string) {
		t.Helper()
		v := store.Snapshot().CSIVolume("default", id)
		if v == nil {
			t.Fatalf("after step %d: volume %s gone", step, id)
		}
		if got := claimIDs(v.ReadClaims); !slices.Equal(got, reads) {
			t.Fatalf("after step %d: %s read claims %v, want %v", step, id, got, reads)
		}
		if got := claimIDs(v.WriteClaims); !slices.Equal(got, writes) {
			t.Fatalf("after step %d: %s write claims %v, want %v", step, id, got, writes)
		}
	}
	for i, st := range steps {
		if err := applyEntry(t, f, uint64(i+1), st.typ, st.msg); !errors.Is(err, st.want) {
			t.Fatalf("step %d (%T): err = %v, want %v", i+1, st.msg, err, st.want)
		}
		switch i + 1 {
		case 3:
			check(3, "data", nil, []string{"a0", "a1"})
			check(3, "shard[0]", []string{"a0"}, nil)
			check(3, "shard[1]", []string{"a1"}, nil)
			v := store.Snapshot().CSIVolume("default", "data")
			if v.AccessMode != sdk.CSIAccessModeSingleNodeWriter || v.WriteClaims["a1"].NodeID != "n2" {
				t.Fatalf("claimed volume %+v", v)
			}
		case 8:
			check(8, "data", nil, []string{"a1"})
			check(8, "shard[0]", nil, nil)
		case 11:
			v := store.Snapshot().CSIVolume("default", "data")
			if v.InUse(nil) || v.AccessMode != "" {
				t.Fatalf("volume still claimed after its allocations went: %+v", v)
			}
		}
	}
	if vs := store.Snapshot().CSIVolumes("*"); len(vs) != 1 || vs[0].ID != "shard[1]" {
		t.Fatalf("volumes left: %v", vs)
	}
}

// TestSnapshot_CSIVolumesRoundTrip: volumes come back from a snapshot
// with their claims and indexes.
func TestSnapshot_CSIVolumesRoundTrip(t *testing.T) {
	store, _ := state.NewStore()
	f := New(store, nil, zerolog.Nop())
	v := &sdk.CSIVolume{Namespace: "default", ID: "data", PluginID: "ebs", Secrets: map[string]string{"k": "v"},
		Topologies: []*sdk.CSITopology{{Segments: map[string]string{"zone": "a"}}}}
	if err := applyEntry(t, f, 1, CSIVolumeRegisterRequestType, &CSIVolumeRegisterRequest{Volumes: []*sdk.CSIVolume{v}}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writeSnapshot(&buf, store.Snapshot()); err != nil {
		t.Fatal(err)
	}
	store2, _ := state.NewStore()
	if err := restore(store2, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	got := store2.Snapshot().CSIVolume("default", "data")
	if got == nil || got.CreateIndex != 1 || got.Secrets["k"] != "v" || got.Topologies[0].Segments["zone"] != "a" {
		t.Fatalf("restored %+v", got)
	}
	if store2.Snapshot().TableIndex(state.TableCSIVolumes) != 1 {
		t.Fatalf("table index %d", store2.Snapshot().TableIndex(state.TableCSIVolumes))
	}
}

func claimIDs(m map[string]*sdk.CSIClaim) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}
