package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
)

// csiNode is a ready node that runs CSI plugin pluginID as a node plugin,
// healthy, in zone a.
func csiNode(i int, pluginID string) *sdk.Node {
	n := servertest.Node(i, 4000, 8192)
	n.CSINodePlugins = map[string]*sdk.CSIInfo{pluginID: {PluginID: pluginID, Healthy: true, Provider: "ebs.csi.aws.com",
		ProviderVersion: "1.2.3", NodeInfo: &sdk.CSINodeInfo{ID: n.ID, MaxVolumes: 10,
			AccessibleTopology: &sdk.CSITopology{Segments: map[string]string{"zone": "a"}}}}}
	return n
}

// fsCap is a capability of access mode mode on a file system.
func fsCap(mode string) []*sdk.CSIVolumeCapability {
	return []*sdk.CSIVolumeCapability{{AccessMode: mode, AttachmentMode: sdk.CSIAttachmentModeFilesystem}}
}

// Registration checks the volume as Nomad's does, before anything is
// written: what is missing or invalid all at once, the namespace and the
// plugin; the legacy modes become the one capability.
func TestServer_RegisterCSIVolumes_Validation(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(csiNode(0, "ebs")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		vol  *sdk.CSIVolume
		want string // "" registers it
	}{
		{name: "ok", vol: &sdk.CSIVolume{ID: "a", Namespace: "default", PluginID: "ebs", RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter)}},
		{name: "everything missing", vol: &sdk.CSIVolume{SnapshotID: "s", CloneID: "c"},
			want: "validation: missing volume id, missing plugin id, missing namespace, only one of snapshot_id and clone_id is allowed, must include at least one capability block"},
		{name: "a legacy access mode alone", vol: &sdk.CSIVolume{ID: "b", Namespace: "default", PluginID: "ebs", AccessMode: sdk.CSIAccessModeSingleNodeWriter},
			want: "must include at least one capability block"},
		{name: "bad modes", vol: &sdk.CSIVolume{ID: "b", Namespace: "default", PluginID: "ebs",
			RequestedCapabilities: []*sdk.CSIVolumeCapability{{AccessMode: "single-node-writer"}, {AccessMode: "rw", AttachmentMode: "file-system"}}},
			want: `validation: capability 1 has invalid attachment mode "" (one of: file-system, block-device), capability 2 has invalid access mode "rw" (one of: single-node-reader-only,`},
		{name: "a topology without segments", vol: &sdk.CSIVolume{ID: "b", Namespace: "default", PluginID: "ebs",
			RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter), Topologies: []*sdk.CSITopology{{}}},
			want: "required topology is missing segments field"},
		{name: "redacted mount flags, as the API shows them", vol: &sdk.CSIVolume{ID: "b", Namespace: "default", PluginID: "ebs",
			RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter), MountOptions: &sdk.CSIMountOptions{MountFlags: []string{"[REDACTED]"}}},
			want: `mount flag "[REDACTED]" is what the API shows of a volume's mount flags`},
		{name: "a namespace that does not exist", vol: &sdk.CSIVolume{ID: "b", Namespace: "nope", PluginID: "ebs",
			RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter)},
			want: `volume "b" is in nonexistent namespace "nope"`},
		{name: "a plugin no node runs", vol: &sdk.CSIVolume{ID: "b", Namespace: "default", PluginID: "nfs",
			RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter)},
			want: "no CSI plugin named: nfs could be found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RegisterCSIVolumes([]*sdk.CSIVolume{tc.vol})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, tc.want)
			}
			if tc.vol.ID != "" && s.Store().Snapshot().CSIVolume(tc.vol.Namespace, tc.vol.ID) != nil {
				t.Fatal("the refused volume was registered")
			}
		})
	}

	// The legacy modes: the one capability; the volume's own modes are
	// its claims', none yet.
	start := time.Now().UnixNano()
	if _, err := s.RegisterCSIVolumes([]*sdk.CSIVolume{{ID: "legacy", Namespace: "default", PluginID: "ebs",
		AccessMode: sdk.CSIAccessModeMultiNodeReader, AttachmentMode: sdk.CSIAttachmentModeBlockDevice}}); err != nil {
		t.Fatal(err)
	}
	v := s.Store().Snapshot().CSIVolume("default", "legacy")
	if len(v.RequestedCapabilities) != 1 || *v.RequestedCapabilities[0] != (sdk.CSIVolumeCapability{
		AccessMode: sdk.CSIAccessModeMultiNodeReader, AttachmentMode: sdk.CSIAttachmentModeBlockDevice}) || v.AccessMode != "" {
		t.Fatalf("legacy volume %+v", v)
	}
	if v.Provider != "ebs.csi.aws.com" || v.ProviderVersion != "1.2.3" || v.CreateTime < start || v.ModifyTime != v.CreateTime {
		t.Fatalf("provider and times of %+v", v)
	}
}

// An update keeps what names the storage and the creation time; it may
// change capabilities, mount options, secrets and context; a volume in
// use is not deregistered; deregistering or detaching one that does not
// exist is ErrNotFound, without a write.
func TestServer_CSIVolumeUpdateDeregisterDetach(t *testing.T) {
	s := servertest.New(t, nil, nil)
	if _, _, err := s.RegisterNode(csiNode(0, "ebs")); err != nil {
		t.Fatal(err)
	}
	zoneA := []*sdk.CSITopology{{Segments: map[string]string{"zone": "a"}}}
	vol := &sdk.CSIVolume{ID: "data", Name: "data", ExternalID: "vol-1", Namespace: "default", PluginID: "ebs",
		Topologies: zoneA, Parameters: map[string]string{"type": "gp3"}, Secrets: map[string]string{"k": "1"},
		RequestedCapabilities: fsCap(sdk.CSIAccessModeSingleNodeWriter)}
	if _, err := s.RegisterCSIVolumes([]*sdk.CSIVolume{vol}); err != nil {
		t.Fatal(err)
	}
	created := s.Store().Snapshot().CSIVolume("default", "data")

	for _, tc := range []struct {
		name   string
		change func(v *sdk.CSIVolume)
		want   string
	}{
		{"name", func(v *sdk.CSIVolume) { v.Name = "other" }, "volume name cannot be updated"},
		{"external ID", func(v *sdk.CSIVolume) { v.ExternalID = "vol-2" }, "volume external ID cannot be updated"},
		{"topology", func(v *sdk.CSIVolume) { v.Topologies = []*sdk.CSITopology{{Segments: map[string]string{"zone": "b"}}} },
			"volume topology request update was not compatible with existing topology"},
		{"parameters", func(v *sdk.CSIVolume) { v.Parameters = map[string]string{"type": "io2"} }, "volume parameters cannot be updated"},
	} {
		nv := *vol
		tc.change(&nv)
		if _, err := s.RegisterCSIVolumes([]*sdk.CSIVolume{&nv}); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("changing the %s: %v, want %q", tc.name, err, tc.want)
		}
	}

	// Left out, what names the storage stays; the rest is the update's.
	time.Sleep(time.Millisecond)
	update := &sdk.CSIVolume{ID: "data", Namespace: "default", PluginID: "ebs", Secrets: map[string]string{"k": "2"},
		MountOptions: &sdk.CSIMountOptions{FSType: "xfs"}, Context: map[string]string{"c": "d"},
		RequestedCapabilities: append(fsCap(sdk.CSIAccessModeSingleNodeWriter), fsCap(sdk.CSIAccessModeMultiNodeReader)...)}
	if _, err := s.RegisterCSIVolumes([]*sdk.CSIVolume{update}); err != nil {
		t.Fatal(err)
	}
	v := s.Store().Snapshot().CSIVolume("default", "data")
	if v.Name != "data" || v.ExternalID != "vol-1" || len(v.Topologies) != 1 || v.Parameters["type"] != "gp3" ||
		v.Secrets["k"] != "2" || v.MountOptions.FSType != "xfs" || v.Context["c"] != "d" || len(v.RequestedCapabilities) != 2 {
		t.Fatalf("updated volume %+v", v)
	}
	if v.CreateIndex != created.CreateIndex || v.CreateTime != created.CreateTime || v.ModifyTime <= created.ModifyTime {
		t.Fatalf("update's times and indexes: %+v, created %+v", v, created)
	}

	// Claimed by a running allocation, it stays registered.
	job := servertest.Job("db", sdk.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].Volumes = map[string]sdk.Opaque{"data": {"Type": "csi", "Source": "data",
		"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	allocs := s.Store().Snapshot().AllocsByJob("default", "db")
	if len(allocs) != 1 {
		t.Fatalf("%d allocations", len(allocs))
	}
	alloc := allocs[0]
	if v := s.Store().Snapshot().CSIVolume("default", "data"); v.WriteClaims[alloc.ID] == nil {
		t.Fatalf("the allocation holds no claim: %+v", v)
	}
	if _, err := s.DeregisterCSIVolume("default", "data"); !errors.Is(err, state.ErrInUse) {
		t.Fatalf("deregister of a volume in use: %v", err)
	}
	if _, err := s.DetachCSIVolume("default", "data", alloc.NodeID); !errors.Is(err, state.ErrInUse) {
		t.Fatalf("detach of a volume in use on its node: %v", err)
	}

	// Unknown volumes, before any write.
	index := s.Store().Snapshot().Index()
	if _, err := s.DeregisterCSIVolume("default", "nope"); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("deregister of an unknown volume: %v", err)
	}
	if _, err := s.DeregisterCSIVolume("prod", "data"); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("deregister in another namespace: %v", err)
	}
	if _, err := s.DetachCSIVolume("default", "nope", alloc.NodeID); !errors.Is(err, server.ErrNotFound) {
		t.Fatalf("detach of an unknown volume: %v", err)
	}
	if _, err := s.DetachCSIVolume("default", "data", ""); !errors.Is(err, server.ErrInvalid) || !strings.Contains(err.Error(), "detach requires node ID") {
		t.Fatalf("detach without a node: %v", err)
	}
	if got := s.Store().Snapshot().Index(); got != index {
		t.Fatalf("refused requests wrote: index %d, was %d", got, index)
	}

	// Finished on its node, the allocation's claim is released; the volume
	// goes.
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeregisterCSIVolume("default", "data"); err != nil {
		t.Fatalf("deregister once unclaimed: %v", err)
	}
	if s.Store().Snapshot().CSIVolume("default", "data") != nil {
		t.Fatal("the volume is still registered")
	}
}
