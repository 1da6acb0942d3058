package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// csiNode is node i running the CSI plugins given, as node plugins
// (healthy or not by nodes) and controllers (controllers), with
// provider ebs.csi.aws.com; each plugin says it needs a controller.
func csiNode(i int, nodes map[string]bool, controllers ...string) *sdk.Node {
	n := servertest.Node(i, 4000, 8192)
	info := func(id string, healthy bool) *sdk.CSIInfo {
		return &sdk.CSIInfo{PluginID: id, Healthy: healthy, Provider: "ebs.csi.aws.com", ProviderVersion: "1.2.3",
			RequiresControllerPlugin: id == "ebs", UpdateTime: time.Unix(1700000000, 0).UTC()}
	}
	for id, healthy := range nodes {
		if n.CSINodePlugins == nil {
			n.CSINodePlugins = map[string]*sdk.CSIInfo{}
		}
		n.CSINodePlugins[id] = info(id, healthy)
		n.CSINodePlugins[id].NodeInfo = &sdk.CSINodeInfo{ID: n.ID, MaxVolumes: 8,
			AccessibleTopology: &sdk.CSITopology{Segments: map[string]string{"zone": "a"}}}
	}
	for _, id := range controllers {
		if n.CSIControllerPlugins == nil {
			n.CSIControllerPlugins = map[string]*sdk.CSIInfo{}
		}
		n.CSIControllerPlugins[id] = info(id, true)
		n.CSIControllerPlugins[id].ControllerInfo = &sdk.CSIControllerInfo{SupportsAttachDetach: true}
	}
	return n
}

// errHas reports whether err, an API error whose message Nomad's client
// quotes as JSON, says want.
func errHas(err error, want string) bool {
	return err != nil && strings.Contains(strings.ReplaceAll(err.Error(), `\"`, `"`), want)
}

func mustRegisterNode(t *testing.T, s *server.Server, n *sdk.Node) {
	t.Helper()
	if _, _, err := s.RegisterNode(n); err != nil {
		t.Fatal(err)
	}
}

// pluginJob is a job of type typ whose group of count runs CSI plugin id
// as kind.
func pluginJob(jobID, typ string, count int, id, kind string) *sdk.Job {
	job := servertest.Job(jobID, typ, count, 100, 64)
	job.TaskGroups[0].Tasks[0].CSIPluginConfig = sdk.Opaque{"ID": id, "Type": kind, "MountDir": "/csi"}
	return job
}

// volumeJob is a service job whose one allocation writes CSI volume
// source.
func volumeJob(jobID, source string) *sdk.Job {
	job := servertest.Job(jobID, sdk.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].Volumes = map[string]sdk.Opaque{"data": {"Type": "csi", "Source": source,
		"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
	return job
}

// CSI plugins through Nomad's client: gathered from what the nodes
// report (healthy on ready nodes only), expected as their jobs say (a
// group's count, a system job's allocations), with the allocations the
// nodes name; Drover's scheduler plugin endpoints beside them still
// answer.
func TestNomadClient_CSIPlugins(t *testing.T) {
	ts, s := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	mustRegisterNode(t, s, csiNode(0, map[string]bool{"ebs": true}, "ebs"))
	mustRegisterNode(t, s, csiNode(1, map[string]bool{"ebs": false}))
	mustRegisterNode(t, s, csiNode(2, map[string]bool{"nfs": true}))
	servertest.WaitForEval(t, s, mustRegister(t, s, pluginJob("ebs-plugin", sdk.JobTypeService, 2, "ebs", sdk.CSIPluginTypeMonolith)))
	servertest.WaitForEval(t, s, mustRegister(t, s, pluginJob("nfs-plugin", sdk.JobTypeSystem, 1, "nfs", sdk.CSIPluginTypeNode)))
	// Node 0 says which allocation runs its plugin.
	var pluginAlloc *sdk.Allocation
	for _, al := range s.Store().Snapshot().AllocsByJob("default", "ebs-plugin") {
		pluginAlloc = al
	}
	n0 := csiNode(0, map[string]bool{"ebs": true}, "ebs")
	n0.CSINodePlugins["ebs"].AllocID, n0.CSIControllerPlugins["ebs"].AllocID = pluginAlloc.ID, pluginAlloc.ID
	mustRegisterNode(t, s, n0)
	// A job that runs a plugin no node reports yet.
	servertest.WaitForEval(t, s, mustRegister(t, s, pluginJob("later", sdk.JobTypeBatch, 3, "later", sdk.CSIPluginTypeController)))

	plugins, meta, err := c.CSIPlugins().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if meta.LastIndex == 0 {
		t.Error("no X-Nomad-Index")
	}
	slices.SortFunc(plugins, func(a, b *api.CSIPluginListStub) int { return strings.Compare(a.ID, b.ID) })
	want := []api.CSIPluginListStub{
		{ID: "ebs", Provider: "ebs.csi.aws.com", ControllerRequired: true, ControllersHealthy: 1, ControllersExpected: 2, NodesHealthy: 1, NodesExpected: 2},
		{ID: "later", ControllersExpected: 3},
		{ID: "nfs", Provider: "ebs.csi.aws.com", NodesHealthy: 1, NodesExpected: 3},
	}
	if len(plugins) != len(want) {
		t.Fatalf("plugins: %+v", plugins)
	}
	for i, p := range plugins {
		got := *p
		if got.CreateIndex == 0 || got.ModifyIndex < got.CreateIndex {
			t.Errorf("plugin %s indexes %d, %d", p.ID, got.CreateIndex, got.ModifyIndex)
		}
		got.CreateIndex, got.ModifyIndex = 0, 0
		if got != want[i] {
			t.Errorf("plugin %d = %+v, want %+v", i, got, want[i])
		}
	}
	if ps, _, err := c.CSIPlugins().List(&api.QueryOptions{Prefix: "eb"}); err != nil || len(ps) != 1 || ps[0].ID != "ebs" {
		t.Errorf("prefix eb: %+v %v", ps, err)
	}

	p, _, err := c.CSIPlugins().Info("ebs", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != "1.2.3" || len(p.Controllers) != 1 || p.Controllers["node-0000"] == nil ||
		!p.Controllers["node-0000"].ControllerInfo.SupportsAttachDetach || len(p.Nodes) != 2 ||
		p.Nodes["node-0001"].Healthy || p.Nodes["node-0000"].NodeInfo.AccessibleTopology.Segments["zone"] != "a" {
		t.Errorf("plugin ebs: %+v", p)
	}
	if len(p.Allocations) != 1 || p.Allocations[0].ID != pluginAlloc.ID || p.Allocations[0].JobID != "ebs-plugin" {
		t.Errorf("plugin ebs allocations: %+v", p.Allocations)
	}
	// The plugin's allocations are those of the request's namespace.
	servertest.Namespaces(t, s, "ml")
	if p, _, err := c.CSIPlugins().Info("ebs", &api.QueryOptions{Namespace: "ml"}); err != nil || len(p.Allocations) != 0 {
		t.Errorf("plugin ebs from namespace ml: %+v %v", p, err)
	}
	if _, _, err := c.CSIPlugins().Info("nope", nil); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "plugin not found") {
		t.Errorf("unknown plugin: %v", err)
	}

	// Without ?type=, no plugins, as Nomad's; of another type, no body.
	if resp, body := do(t, "GET", ts.URL+"/v1/plugins", ""); resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("/v1/plugins: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", ts.URL+"/v1/plugins?type=device", ""); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("/v1/plugins?type=device: %d %q", resp.StatusCode, body)
	}
	for _, path := range []string{"/v1/plugins/schedulers", "/v1/plugin/scheduler/service"} {
		if resp, body := do(t, "GET", ts.URL+path, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}

	// A node that goes down takes its plugins' health with it.
	if _, err := s.UpdateNodeStatus(n0.ID, sdk.NodeStatusDown, "test"); err != nil {
		t.Fatal(err)
	}
	if p, _, err := c.CSIPlugins().Info("ebs", nil); err != nil || p.ControllersHealthy != 0 || p.NodesHealthy != 0 {
		t.Errorf("plugin ebs with its node down: %+v %v", p, err)
	}
}

// CSI volumes through Nomad's client: registered, read (with the
// plugin's health, secrets and mount flags hidden), listed with Nomad's
// filters, claimed by an allocation (which neither deregister nor detach
// undo while it runs), released as it finishes, deregistered; the
// refusals in Nomad's words.
func TestNomadClient_CSIVolumes(t *testing.T) {
	ts, s := newAPI(t, 0)
	c := nomadClient(t, ts.URL)
	mustRegisterNode(t, s, csiNode(0, map[string]bool{"ebs": true}, "ebs"))
	servertest.Namespaces(t, s, "ml")

	vol := &api.CSIVolume{ID: "data", Name: "data", ExternalID: "vol-0abc", PluginID: "ebs",
		RequestedCapabilities: []*api.CSIVolumeCapability{{AccessMode: api.CSIVolumeAccessModeSingleNodeWriter,
			AttachmentMode: api.CSIVolumeAttachmentModeFilesystem}},
		MountOptions:        &api.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}},
		Secrets:             api.CSISecrets{"token": "s3cret"},
		Parameters:          map[string]string{"type": "gp3"},
		RequestedTopologies: &api.CSITopologyRequest{Required: []*api.CSITopology{{Segments: map[string]string{"zone": "a"}}}}}
	wm, err := c.CSIVolumes().Register(vol, nil)
	if err != nil {
		t.Fatal(err)
	}
	if wm.LastIndex == 0 {
		t.Error("register: no X-Nomad-Index")
	}
	before := time.Now().UnixNano()
	got, meta, err := c.CSIVolumes().Info("data", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Schedulable || !got.ControllerRequired || got.ControllersHealthy != 1 || got.NodesHealthy != 1 ||
		got.Provider != "ebs.csi.aws.com" || got.ProviderVersion != "1.2.3" || got.Namespace != "default" ||
		got.ExternalID != "vol-0abc" || got.Parameters["type"] != "gp3" || len(got.Topologies) != 1 ||
		got.Topologies[0].Segments["zone"] != "a" || got.CreateTime == 0 || got.CreateTime > before {
		t.Errorf("volume: %+v", got)
	}
	if len(got.Secrets) != 0 || got.MountOptions.FSType != "ext4" || !slices.Equal(got.MountOptions.MountFlags, []string{"[REDACTED]"}) {
		t.Errorf("secrets %v and mount options %+v shown", got.Secrets, got.MountOptions)
	}
	if _, body := do(t, "GET", ts.URL+"/v1/volume/csi/data", ""); strings.Contains(string(body), "s3cret") || strings.Contains(string(body), "noatime") {
		t.Errorf("the volume's JSON shows a secret: %s", body)
	}

	// A plugin that turns unhealthy wakes a blocking read of the volume.
	done := make(chan *api.CSIVolume, 1)
	go func() {
		v, _, err := c.CSIVolumes().Info("data", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- v
	}()
	time.Sleep(50 * time.Millisecond)
	mustRegisterNode(t, s, csiNode(0, map[string]bool{"ebs": false}, "ebs"))
	select {
	case v := <-done:
		if v == nil || v.Schedulable || v.NodesHealthy != 0 {
			t.Errorf("volume after its plugin turned unhealthy: %+v", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocking read did not wake")
	}
	mustRegisterNode(t, s, csiNode(0, map[string]bool{"ebs": true}, "ebs"))

	// Another namespace's volume, and the lists.
	if _, err := c.CSIVolumes().Register(&api.CSIVolume{ID: "scratch", PluginID: "ebs",
		AccessMode: api.CSIVolumeAccessModeMultiNodeMultiWriter, AttachmentMode: api.CSIVolumeAttachmentModeBlockDevice},
		&api.WriteOptions{Namespace: "ml"}); err != nil {
		t.Fatal(err)
	}
	ids := func(q *api.QueryOptions) string {
		t.Helper()
		vols, _, err := c.CSIVolumes().List(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range vols {
			out = append(out, v.Namespace+"/"+v.ID)
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name string
		q    *api.QueryOptions
		want string
	}{
		{"default", nil, "default/data"},
		{"every namespace", &api.QueryOptions{Namespace: "*"}, "default/data,ml/scratch"},
		{"ml", &api.QueryOptions{Namespace: "ml"}, "ml/scratch"},
		{"prefix", &api.QueryOptions{Namespace: "*", Prefix: "scr"}, "ml/scratch"},
		{"plugin", &api.QueryOptions{Namespace: "*", Params: map[string]string{"plugin_id": "nfs"}}, ""},
		{"filter", &api.QueryOptions{Namespace: "*", Filter: `AccessMode == ""`}, "default/data,ml/scratch"},
		{"filter on what a stub leaves out", &api.QueryOptions{Namespace: "*", Filter: `Parameters.type == "gp3"`}, "default/data"},
		{"filter on a secret", &api.QueryOptions{Namespace: "*", Filter: `Secrets.token == "s3cret"`}, ""},
		{"filter on mount flags", &api.QueryOptions{Filter: `"noatime" in MountOptions.MountFlags`}, ""},
		{"filter on redacted mount flags", &api.QueryOptions{Filter: `"[REDACTED]" in MountOptions.MountFlags`}, "default/data"},
		{"a node without allocations", &api.QueryOptions{Params: map[string]string{"node_id": "node-0000"}}, ""},
	} {
		if got := ids(tc.q); got != tc.want {
			t.Errorf("list %s: %q, want %q", tc.name, got, tc.want)
		}
	}
	page1, qm, err := c.CSIVolumes().List(&api.QueryOptions{Namespace: "*", PerPage: 1})
	if err != nil || len(page1) != 1 || page1[0].ID != "data" || qm.NextToken == "" {
		t.Fatalf("first page: %+v %+v %v", page1, qm, err)
	}
	page2, qm, err := c.CSIVolumes().List(&api.QueryOptions{Namespace: "*", PerPage: 1, NextToken: qm.NextToken})
	if err != nil || len(page2) != 1 || page2[0].ID != "scratch" || qm.NextToken != "" {
		t.Fatalf("second page: %+v %+v %v", page2, qm, err)
	}
	scratch, _, err := c.CSIVolumes().Info("scratch", &api.QueryOptions{Namespace: "ml"})
	if err != nil || len(scratch.RequestedCapabilities) != 1 || scratch.RequestedCapabilities[0].AccessMode != api.CSIVolumeAccessModeMultiNodeMultiWriter ||
		scratch.AccessMode != "" {
		t.Errorf("volume registered with the legacy modes: %+v %v", scratch, err)
	}
	if _, _, err := c.CSIVolumes().Info("scratch", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("another namespace's volume: %v", err)
	}

	// Claimed by a running allocation.
	servertest.WaitForEval(t, s, mustRegister(t, s, volumeJob("db", "data")))
	allocs := s.Store().Snapshot().AllocsByJob("default", "db")
	if len(allocs) != 1 {
		t.Fatalf("db: %d allocations", len(allocs))
	}
	alloc := allocs[0]
	got, _, err = c.CSIVolumes().Info("data", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.WriteAllocs[alloc.ID]; !ok || len(got.ReadAllocs) != 0 || len(got.Allocations) != 1 ||
		got.Allocations[0].ID != alloc.ID || got.AccessMode != api.CSIVolumeAccessModeSingleNodeWriter {
		t.Errorf("claimed volume: %+v", got)
	}
	stubs, _, err := c.CSIVolumes().List(&api.QueryOptions{Params: map[string]string{"node_id": alloc.NodeID}})
	if err != nil || len(stubs) != 1 || stubs[0].ID != "data" || stubs[0].CurrentWriters != 1 || stubs[0].CurrentReaders != 0 ||
		!stubs[0].Schedulable || stubs[0].NodesHealthy != 1 {
		t.Errorf("volumes of the allocation's node: %+v %v", stubs, err)
	}
	if err := c.CSIVolumes().Deregister("data", true, nil); err == nil || !strings.Contains(err.Error(), "400") ||
		!strings.Contains(err.Error(), "volume in use: data") {
		t.Errorf("deregister of a volume in use: %v", err)
	}
	if err := c.CSIVolumes().Detach("data", alloc.NodeID, nil); err == nil || !strings.Contains(err.Error(), "is in use by allocation "+alloc.ID) {
		t.Errorf("detach of a volume in use on its node: %v", err)
	}

	// Refusals.
	for _, tc := range []struct {
		name string
		vol  *api.CSIVolume
		want string
	}{
		{"no capability", &api.CSIVolume{ID: "x", PluginID: "ebs"}, "validation: must include at least one capability block"},
		{"no ID", &api.CSIVolume{PluginID: "ebs", AccessMode: "single-node-writer", AttachmentMode: "file-system"}, "missing volume id"},
		{"an unknown plugin", &api.CSIVolume{ID: "x", PluginID: "nfs", AccessMode: "single-node-writer", AttachmentMode: "file-system"},
			"no CSI plugin named: nfs could be found"},
		{"an unknown mode", &api.CSIVolume{ID: "x", PluginID: "ebs", AccessMode: "rw", AttachmentMode: "file-system"},
			`capability 1 has invalid access mode "rw"`},
		{"a name change", &api.CSIVolume{ID: "data", Name: "other", PluginID: "ebs", AccessMode: "single-node-writer", AttachmentMode: "file-system"},
			"volume name cannot be updated"},
		{"a preferred topology without segments", &api.CSIVolume{ID: "x", PluginID: "ebs", AccessMode: "single-node-writer",
			AttachmentMode: "file-system", RequestedTopologies: &api.CSITopologyRequest{Preferred: []*api.CSITopology{{}}}},
			"preferred topology is missing segments field"},
	} {
		if _, err := c.CSIVolumes().Register(tc.vol, nil); err == nil || !strings.Contains(err.Error(), "400") || !errHas(err, tc.want) {
			t.Errorf("register, %s: %v, want 400 %q", tc.name, err, tc.want)
		}
	}
	if _, err := c.CSIVolumes().Register(&api.CSIVolume{ID: "x", PluginID: "ebs", AccessMode: "single-node-writer",
		AttachmentMode: "file-system"}, &api.WriteOptions{Namespace: "nope"}); err == nil || !errHas(err, `volume "x" is in nonexistent namespace "nope"`) {
		t.Errorf("register into an unknown namespace: %v", err)
	}
	for name, err := range map[string]error{
		"deregister": c.CSIVolumes().Deregister("nope", false, nil),
		"detach":     c.CSIVolumes().Detach("nope", alloc.NodeID, nil),
	} {
		if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "volume not found: nope") {
			t.Errorf("%s of an unknown volume: %v", name, err)
		}
	}
	if _, _, err := c.CSIVolumes().Info("nope", nil); err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "volume not found") {
		t.Errorf("info of an unknown volume: %v", err)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"DELETE", "/v1/volume/csi/data/detach", "detach requires node ID"},
		{"DELETE", "/v1/volume/csi/data?force=maybe", "invalid force value"},
		{"PUT", "/v1/volume/csi/", "missing volume id"},
	} {
		body := ""
		if tc.method == "PUT" {
			body = `{"Volumes": [{"PluginID": "ebs", "AccessMode": "single-node-writer", "AttachmentMode": "file-system"}]}`
		}
		if resp, b := do(t, tc.method, ts.URL+tc.path, body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want 400 %q", tc.method, tc.path, resp.StatusCode, b, tc.want)
		}
	}
	if resp, body := do(t, "PUT", ts.URL+"/v1/volume/csi/x/create", `{}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(body), "volume create is not supported") {
		t.Errorf("volume create: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", ts.URL+"/v1/volumes", ""); resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("/v1/volumes without a type: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", ts.URL+"/v1/volumes?type=host", ""); resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("/v1/volumes?type=host: %d %q", resp.StatusCode, body)
	}

	// Finished on its node, the allocation's claim is released; detach
	// (of nothing left) and deregister succeed.
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CSIVolumes().Detach("data", alloc.NodeID, nil); err != nil {
		t.Errorf("detach once finished: %v", err)
	}
	if err := c.CSIVolumes().Deregister("data", false, nil); err != nil {
		t.Fatalf("deregister once released: %v", err)
	}
	if _, _, err := c.CSIVolumes().Info("data", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("info of the deregistered volume: %v", err)
	}
	if got := ids(&api.QueryOptions{Namespace: "*"}); got != "ml/scratch" {
		t.Errorf("volumes left: %q", got)
	}
}

// CSI endpoints with ACLs, as Nomad's: a list takes any of the volume
// capabilities or list-jobs, a read any of csi-read-volume,
// csi-mount-volume or read-job; a registration needs csi-write-volume in
// each volume's namespace (the body's, not only the request's) and plugin
// read, a detach csi-mount-volume and plugin read; plugins need the
// plugin policy (list to list, read to read).
func TestACL_CSI(t *testing.T) {
	ts, s, rootSecret := newACLAPI(t, 0)
	root := withToken(t, ts.URL, rootSecret)
	mustRegisterNode(t, s, csiNode(0, map[string]bool{"ebs": true}, "ebs"))
	servertest.Namespaces(t, s, "other")
	vol := func(id, ns string) *api.CSIVolume {
		return &api.CSIVolume{ID: id, Namespace: ns, PluginID: "ebs", RequestedCapabilities: []*api.CSIVolumeCapability{
			{AccessMode: api.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: api.CSIVolumeAttachmentModeFilesystem}}}
	}
	if _, err := root.CSIVolumes().Register(vol("data", ""), nil); err != nil {
		t.Fatal(err)
	}
	denied := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "403") {
			t.Errorf("%s: %v, want 403", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	lister := withToken(t, ts.URL, makeToken(t, root, "lister", `namespace "default" { capabilities = ["csi-list-volume"] }`))
	_, _, err := lister.CSIVolumes().List(nil)
	allowed("csi-list-volume lists", err)
	_, _, err = lister.CSIVolumes().Info("data", nil)
	denied("csi-list-volume reads", err)
	jobReader := withToken(t, ts.URL, makeToken(t, root, "job-reader", `namespace "default" { capabilities = ["read-job"] }`))
	_, _, err = jobReader.CSIVolumes().Info("data", nil)
	allowed("read-job reads a volume", err)
	_, _, err = jobReader.CSIVolumes().List(nil)
	denied("read-job lists volumes", err)
	jobLister := withToken(t, ts.URL, makeToken(t, root, "job-lister", `namespace "*" { capabilities = ["list-jobs"] }`))
	vols, _, err := jobLister.CSIVolumes().List(&api.QueryOptions{Namespace: "*"})
	allowed("list-jobs lists volumes", err)
	if len(vols) != 1 {
		t.Errorf("list-jobs lists %d volumes", len(vols))
	}

	writer := withToken(t, ts.URL, makeToken(t, root, "writer", `namespace "default" { capabilities = ["csi-write-volume"] }`))
	_, err = writer.CSIVolumes().Register(vol("more", ""), nil)
	denied("csi-write-volume without plugin read registers", err)
	if err := writer.CSIVolumes().Deregister("nope", false, nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("csi-write-volume deregisters (a volume that does not exist): %v, want 404", err)
	}
	otherWriter := withToken(t, ts.URL, makeToken(t, root, "other-writer",
		`namespace "other" { capabilities = ["csi-write-volume"] }
plugin { policy = "read" }`))
	_, err = otherWriter.CSIVolumes().Register(vol("more", ""), &api.WriteOptions{Namespace: "other"})
	allowed("csi-write-volume and plugin read register", err)
	_, err = otherWriter.CSIVolumes().Register(vol("sneaky", "default"), &api.WriteOptions{Namespace: "other"})
	denied("a volume of another namespace in the body", err)
	if s.Store().Snapshot().CSIVolume("default", "sneaky") != nil {
		t.Error("the volume of a namespace the token may not write was registered")
	}

	mounter := withToken(t, ts.URL, makeToken(t, root, "mounter", `namespace "default" { capabilities = ["csi-mount-volume"] }`))
	denied("csi-mount-volume without plugin read detaches", mounter.CSIVolumes().Detach("data", "node-0000", nil))
	mounterPlugin := withToken(t, ts.URL, makeToken(t, root, "mounter-plugin", `namespace "default" { capabilities = ["csi-mount-volume"] }
plugin { policy = "read" }`))
	allowed("csi-mount-volume and plugin read detach", mounterPlugin.CSIVolumes().Detach("data", "node-0000", nil))

	pluginLister := withToken(t, ts.URL, makeToken(t, root, "plugin-lister", `plugin { policy = "list" }`))
	ps, _, err := pluginLister.CSIPlugins().List(nil)
	allowed("plugin list lists", err)
	if len(ps) != 1 {
		t.Errorf("plugin list lists %d plugins", len(ps))
	}
	_, _, err = pluginLister.CSIPlugins().Info("ebs", nil)
	denied("plugin list reads a plugin", err)
	_, _, err = otherWriter.CSIPlugins().Info("ebs", nil)
	allowed("plugin read reads a plugin", err)
}
