package httpapi

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/acl"
	"github.com/drover-sched/drover/host/state"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/nomad/api"
)

// CSI volumes and plugins, as Nomad 1.6's API shows them. Volumes are
// stored; plugins are not: a plugin is what the nodes report of it
// (sdk.CSIPlugins) and what the jobs that run it expect, worked out from
// one snapshot for each answer. A volume shows its plugin's health as
// Nomad's denormalized volume does.

// registerCSI adds the CSI volume and plugin endpoints.
func (a *API) registerCSI() {
	write := a.write
	volumeList := inNSAny(true, acl.NamespaceCapabilityCSIListVolume, acl.NamespaceCapabilityCSIReadVolume,
		acl.NamespaceCapabilityCSIMountVolume, acl.NamespaceCapabilityListJobs)
	volumeRead := inNSAny(false, acl.NamespaceCapabilityCSIReadVolume, acl.NamespaceCapabilityCSIMountVolume,
		acl.NamespaceCapabilityReadJob)
	// The volumes' namespaces are in the body: the handler checks
	// csi-write-volume in each.
	volumeRegister := access{cap: acl.NamespaceCapabilityCSIWriteVolume, body: true, pluginRead: true}
	volumeDetach := access{cap: acl.NamespaceCapabilityCSIMountVolume, pluginRead: true}

	a.on(http.MethodGet, "/v1/volumes", volumeList, a.csiVolumeList)
	write("/v1/volumes", volumeRegister, a.csiVolumeRegister)
	a.on(http.MethodGet, "/v1/volume/csi/{id}", volumeRead, a.csiVolumeRead)
	write("/v1/volume/csi/{id}", volumeRegister, a.csiVolumeRegister)
	// Nomad's client registers a volume without an ID here, to be told
	// it has none.
	write("/v1/volume/csi/{$}", volumeRegister, a.csiVolumeRegister)
	a.on(http.MethodDelete, "/v1/volume/csi/{id}", inNS(acl.NamespaceCapabilityCSIWriteVolume), a.csiVolumeDeregister)
	// Nomad's client detaches with DELETE; PUT and POST are taken too.
	a.on(http.MethodDelete, "/v1/volume/csi/{id}/detach", volumeDetach, a.csiVolumeDetach)
	write("/v1/volume/csi/{id}/detach", volumeDetach, a.csiVolumeDetach)

	// What Drover does not do: it calls no CSI controller plugin.
	write("/v1/volume/csi/{id}/create", anyToken, csiNotBuilt("volume create", "register a volume that exists instead"))
	a.on(http.MethodDelete, "/v1/volume/csi/{id}/delete", anyToken, csiNotBuilt("volume delete", "deregister the volume instead"))
	snapshots := csiNotBuilt("volume snapshots", "")
	a.on(http.MethodGet, "/v1/volumes/snapshot", anyToken, snapshots)
	write("/v1/volumes/snapshot", anyToken, snapshots)
	a.on(http.MethodDelete, "/v1/volumes/snapshot", anyToken, snapshots)
	a.on(http.MethodGet, "/v1/volumes/external", anyToken, csiNotBuilt("listing a plugin's external volumes", ""))

	a.on(http.MethodGet, "/v1/plugins", needs((*acl.ACL).AllowPluginList), a.csiPluginList)
	a.on(http.MethodGet, "/v1/plugin/csi/{id}", needs((*acl.ACL).AllowPluginRead), a.csiPluginRead)
}

// csiNotBuilt answers a CSI endpoint of Nomad's that needs a controller
// plugin to act on the storage, which Drover does not call.
func csiNotBuilt(what, instead string) handler {
	msg := what + " is not supported: Drover calls no CSI controller plugin, it registers volumes that exist"
	if instead != "" {
		msg += "; " + instead
	}
	return func(http.ResponseWriter, *http.Request) (any, error) {
		return nil, errorf(http.StatusBadRequest, "%s", msg)
	}
}

// CSIVolumeListStub is a volume in a list, as Nomad's CSIVolListStub
// (CreateTime and ModifyTime as later versions add them).
type CSIVolumeListStub struct {
	ID                  string
	Namespace           string
	Name                string
	ExternalID          string
	Topologies          []*sdk.CSITopology
	AccessMode          string
	AttachmentMode      string
	CurrentReaders      int
	CurrentWriters      int
	Schedulable         bool
	PluginID            string
	Provider            string
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	ResourceExhausted   time.Time
	CreateIndex         uint64
	ModifyIndex         uint64
	CreateTime          int64
	ModifyTime          int64
}

// CSIVolume is a volume as Nomad's API shows one: ReadAllocs and
// WriteAllocs name the claiming allocations (their values are always
// null, as Nomad's), Allocations are their stubs; Secrets are never
// shown, mount flags are shown as "[REDACTED]". RequestedTopologies are
// not kept (a registration's required topologies are the volume's
// Topologies): always null.
type CSIVolume struct {
	ID                    string
	Name                  string
	ExternalID            string
	Namespace             string
	RequestedTopologies   *api.CSITopologyRequest
	Topologies            []*sdk.CSITopology
	AccessMode            string
	AttachmentMode        string
	MountOptions          *sdk.CSIMountOptions
	Secrets               map[string]string
	Parameters            map[string]string
	Context               map[string]string
	Capacity              int64
	RequestedCapacityMin  int64
	RequestedCapacityMax  int64
	RequestedCapabilities []*sdk.CSIVolumeCapability
	CloneID               string
	SnapshotID            string
	ReadAllocs            map[string]*sdk.Allocation
	WriteAllocs           map[string]*sdk.Allocation
	Allocations           []*sdk.AllocationListStub
	Schedulable           bool
	PluginID              string
	Provider              string
	ProviderVersion       string
	ControllerRequired    bool
	ControllersHealthy    int
	ControllersExpected   int
	NodesHealthy          int
	NodesExpected         int
	ResourceExhausted     time.Time
	CreateIndex           uint64
	ModifyIndex           uint64
	CreateTime            int64
	ModifyTime            int64
}

// CSIVolumeRegisterResponse answers a registration as later Nomad
// versions do (Nomad 1.6's clients read no body): the volumes as
// registered.
type CSIVolumeRegisterResponse struct {
	Volumes  []*CSIVolume
	Warnings string
}

// CSIPluginListStub is a CSI plugin in a list, as Nomad's.
type CSIPluginListStub struct {
	ID                  string
	Provider            string
	ControllerRequired  bool
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	CreateIndex         uint64
	ModifyIndex         uint64
}

// CSIPlugin is a CSI plugin as Nomad's API shows one: what each node
// reports of it, as a controller and as a node plugin, by node ID; the
// allocations that run it.
type CSIPlugin struct {
	ID                  string
	Provider            string
	Version             string
	ControllerRequired  bool
	Controllers         map[string]*sdk.CSIInfo
	Nodes               map[string]*sdk.CSIInfo
	Allocations         []*sdk.AllocationListStub
	ControllersHealthy  int
	ControllersExpected int
	NodesHealthy        int
	NodesExpected       int
	CreateIndex         uint64
	ModifyIndex         uint64
}

// csiPlugin is a plugin as the nodes report it, with how many controller
// and node instances its jobs expect; its indexes span the nodes and jobs
// it is made of.
type csiPlugin struct {
	*sdk.CSIPlugin
	controllersExpected, nodesExpected int
	createIndex, modifyIndex           uint64
}

func (p *csiPlugin) from(createIndex, modifyIndex uint64) {
	if p.createIndex == 0 || createIndex < p.createIndex {
		p.createIndex = createIndex
	}
	p.modifyIndex = max(p.modifyIndex, modifyIndex)
}

// csiPlugins are the CSI plugins of snap, by ID: those the nodes report,
// and those the jobs that are not stopped run (a task with a csi_plugin
// block) before any node reports them. A job's group expects as many
// instances of its plugin (as a controller, a node plugin, or both for a
// monolith) as its count, as Nomad's; a system or sysbatch job's, as many
// as it has allocations not finished.
func csiPlugins(snap *state.Snapshot) map[string]*csiPlugin {
	nodes := snap.Nodes()
	out := map[string]*csiPlugin{}
	for id, p := range sdk.CSIPlugins(nodes) {
		out[id] = &csiPlugin{CSIPlugin: p}
	}
	for _, n := range nodes {
		for id := range n.CSIControllerPlugins {
			if p := out[id]; p != nil {
				p.from(n.CreateIndex, n.ModifyIndex)
			}
		}
		for id := range n.CSINodePlugins {
			if p := out[id]; p != nil {
				p.from(n.CreateIndex, n.ModifyIndex)
			}
		}
	}
	for _, j := range snap.Jobs("*") {
		if j.Stopped() || j.Status == sdk.JobStatusDead {
			continue
		}
		for _, tg := range j.TaskGroups {
			for id, kinds := range groupCSIPlugins(tg) {
				p := out[id]
				if p == nil {
					p = &csiPlugin{CSIPlugin: &sdk.CSIPlugin{ID: id, Controllers: map[string]*sdk.CSIInfo{}, Nodes: map[string]*sdk.CSIInfo{}}}
					out[id] = p
				}
				p.from(j.CreateIndex, j.ModifyIndex)
				count := tg.Count
				if j.Type == sdk.JobTypeSystem || j.Type == sdk.JobTypeSysBatch {
					count = 0
					for _, al := range snap.AllocsByJob(j.Namespace, j.ID) {
						if al.TaskGroup == tg.Name && al.DesiredStatus == sdk.AllocDesiredStatusRun && !al.ClientTerminalStatus() {
							count++
						}
					}
				}
				if kinds.controller {
					p.controllersExpected += count
				}
				if kinds.node {
					p.nodesExpected += count
				}
			}
		}
	}
	return out
}

// csiPluginKinds says whether a group runs a plugin as a controller, as a
// node plugin, or both.
type csiPluginKinds struct{ controller, node bool }

// groupCSIPlugins are the CSI plugins the group's tasks run, by ID.
func groupCSIPlugins(tg *sdk.TaskGroup) map[string]csiPluginKinds {
	var out map[string]csiPluginKinds
	for _, t := range tg.Tasks {
		id, _ := t.CSIPluginConfig["ID"].(string)
		if id == "" {
			continue
		}
		if out == nil {
			out = map[string]csiPluginKinds{}
		}
		k := out[id]
		switch typ, _ := t.CSIPluginConfig["Type"].(string); typ {
		case sdk.CSIPluginTypeController:
			k.controller = true
		case sdk.CSIPluginTypeNode:
			k.node = true
		case sdk.CSIPluginTypeMonolith:
			k.controller, k.node = true, true
		}
		out[id] = k
	}
	return out
}

// csiPluginsIndex is the index the plugins of snap reflect.
func csiPluginsIndex(snap *state.Snapshot) uint64 {
	return max(snap.TableIndex(state.TableNodes), snap.TableIndex(state.TableJobs), snap.TableIndex(state.TableAllocs))
}

// csiHealth is what a volume shows of its plugin.
type csiHealth struct {
	schedulable, controllerRequired                                      bool
	controllersHealthy, controllersExpected, nodesHealthy, nodesExpected int
	provider, version                                                    string
}

// healthOf is what volume v shows of its plugin p (nil: no node runs it
// and no job expects it: not schedulable).
func healthOf(v *sdk.CSIVolume, p *csiPlugin) csiHealth {
	if p == nil {
		return csiHealth{provider: v.Provider, version: v.ProviderVersion}
	}
	h := csiHealth{schedulable: p.Schedulable(), controllerRequired: p.ControllerRequired,
		controllersHealthy: p.ControllersHealthy, controllersExpected: p.controllersExpected,
		nodesHealthy: p.NodesHealthy, nodesExpected: p.nodesExpected, provider: p.Provider, version: p.Version}
	if h.provider == "" {
		h.provider, h.version = v.Provider, v.ProviderVersion
	}
	return h
}

func csiVolumeStub(v *sdk.CSIVolume, p *csiPlugin) *CSIVolumeListStub {
	h := healthOf(v, p)
	return &CSIVolumeListStub{ID: v.ID, Namespace: v.Namespace, Name: v.Name, ExternalID: v.ExternalID, Topologies: v.Topologies,
		AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode, CurrentReaders: len(v.ReadClaims), CurrentWriters: len(v.WriteClaims),
		Schedulable: h.schedulable, PluginID: v.PluginID, Provider: h.provider, ControllerRequired: h.controllerRequired,
		ControllersHealthy: h.controllersHealthy, ControllersExpected: h.controllersExpected, NodesHealthy: h.nodesHealthy,
		NodesExpected: h.nodesExpected, CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex, CreateTime: v.CreateTime,
		ModifyTime: v.ModifyTime}
}

func csiVolumeOut(snap *state.Snapshot, v *sdk.CSIVolume, p *csiPlugin) *CSIVolume {
	h := healthOf(v, p)
	out := &CSIVolume{ID: v.ID, Name: v.Name, ExternalID: v.ExternalID, Namespace: v.Namespace, Topologies: v.Topologies,
		AccessMode: v.AccessMode, AttachmentMode: v.AttachmentMode, Parameters: v.Parameters, Context: v.Context,
		Capacity: v.Capacity, RequestedCapacityMin: v.RequestedCapacityMin, RequestedCapacityMax: v.RequestedCapacityMax,
		RequestedCapabilities: v.RequestedCapabilities, CloneID: v.CloneID, SnapshotID: v.SnapshotID,
		ReadAllocs: map[string]*sdk.Allocation{}, WriteAllocs: map[string]*sdk.Allocation{}, Allocations: []*sdk.AllocationListStub{},
		Schedulable: h.schedulable, PluginID: v.PluginID, Provider: h.provider, ProviderVersion: h.version,
		ControllerRequired: h.controllerRequired, ControllersHealthy: h.controllersHealthy,
		ControllersExpected: h.controllersExpected, NodesHealthy: h.nodesHealthy, NodesExpected: h.nodesExpected,
		CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex, CreateTime: v.CreateTime, ModifyTime: v.ModifyTime}
	if m := v.MountOptions; m != nil {
		out.MountOptions = &sdk.CSIMountOptions{FSType: m.FSType}
		if len(m.MountFlags) > 0 {
			// Mount flags may hold secrets: shown to be there, as Nomad's.
			out.MountOptions.MountFlags = []string{"[REDACTED]"}
		}
	}
	var allocs []*sdk.Allocation
	for id := range v.ReadClaims {
		out.ReadAllocs[id] = nil
		if al := snap.Alloc(id); al != nil {
			allocs = append(allocs, al)
		}
	}
	for id := range v.WriteClaims {
		out.WriteAllocs[id] = nil
		if al := snap.Alloc(id); al != nil {
			allocs = append(allocs, al)
		}
	}
	out.Allocations = newestFirst(allocs)
	return out
}

// newestFirst are the allocations' stubs, the last modified first.
func newestFirst(allocs []*sdk.Allocation) []*sdk.AllocationListStub {
	slices.SortFunc(allocs, func(a, b *sdk.Allocation) int {
		return cmp.Or(cmp.Compare(b.ModifyIndex, a.ModifyIndex), strings.Compare(a.ID, b.ID))
	})
	return stubsOf(allocs, (*sdk.Allocation).Stub)
}

// csiVolumesIndex is the index a volume list reflects: the volumes' and
// their plugins' health (the nodes). Nomad's answers with the volumes'
// alone; as Nomad says of its denormalized plugin counts, what the jobs
// expect may lag.
func csiVolumesIndex(snap *state.Snapshot) uint64 {
	return max(snap.TableIndex(state.TableCSIVolumes), snap.TableIndex(state.TableNodes))
}

// csiType reads a list's ?type=, as Nomad 1.6's: without one, the list is
// empty; of another type than csi, the answer has no body.
func csiType(r *http.Request) (empty, none bool) {
	q := r.URL.Query()
	if !q.Has("type") {
		return true, false
	}
	return false, q.Get("type") != "csi"
}

// csiVolumeList serves GET /v1/volumes?type=csi: the volumes of the
// request's namespace ("*": those of the namespaces where the token may
// list volumes), by namespace and ID; ?prefix= on the ID, ?plugin_id=,
// ?node_id= (the volumes the node's allocations that run or are to run
// ask for, per_alloc ones by their index), then the list parameters. The
// filter reads the stored volumes, as Nomad's, but for what they hide
// (filterableVolume).
func (a *API) csiVolumeList(w http.ResponseWriter, r *http.Request) (any, error) {
	if empty, none := csiType(r); empty {
		return []*CSIVolumeListStub{}, nil
	} else if none {
		return noBody, nil
	}
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	pluginID, nodeID := q.Get("plugin_id"), q.Get("node_id")
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		index := csiVolumesIndex(snap)
		var onNode map[[2]string]bool
		if nodeID != "" {
			onNode = map[[2]string]bool{}
			for _, al := range snap.AllocsByNode(nodeID) {
				if al.Job == nil {
					continue
				}
				tg := al.Job.LookupTaskGroup(al.TaskGroup)
				if tg == nil || al.DesiredStatus != sdk.AllocDesiredStatusRun && al.ClientStatus != sdk.AllocClientStatusRunning {
					continue
				}
				for _, req := range sdk.CSIVolumeRequests(tg, al.Name) {
					onNode[[2]string{al.Namespace, req.Source}] = true
				}
			}
			index = max(index, snap.TableIndex(state.TableAllocs))
		}
		var vols []*sdk.CSIVolume
		for _, v := range snap.CSIVolumes(requestNamespace(r)) {
			if namespaced(r, v.Namespace) && strings.HasPrefix(v.ID, o.prefix) && (pluginID == "" || v.PluginID == pluginID) &&
				(onNode == nil || onNode[[2]string{v.Namespace, v.ID}]) {
				vols = append(vols, filterableVolume(o, v))
			}
		}
		pg, next, err := page(o, vols, func(v *sdk.CSIVolume) string { return nsIDToken(v.Namespace, v.ID) },
			func(v *sdk.CSIVolume, token string) int { return nsIDSeek(v.Namespace, v.ID, token) })
		plugins := csiPlugins(snap)
		out := stubsOf(pg, func(v *sdk.CSIVolume) *CSIVolumeListStub { return csiVolumeStub(v, plugins[v.PluginID]) })
		return &listed{out, next}, index, err
	})
}

// filterableVolume is v as a list's filter reads it (a copy, when there
// is a filter): without what the API never shows, its secrets and its
// mount flags, which may hold secrets too and read as Nomad shows them,
// "[REDACTED]". Nomad's filter reads them, behind volume capabilities
// that do not give a reader the secrets otherwise.
func filterableVolume(o *listOptions, v *sdk.CSIVolume) *sdk.CSIVolume {
	if o.filter == nil {
		return v // nothing reads them: the stubs leave them out
	}
	c := *v
	c.Secrets = nil
	if m := v.MountOptions; m != nil && len(m.MountFlags) > 0 {
		c.MountOptions = &sdk.CSIMountOptions{FSType: m.FSType, MountFlags: []string{"[REDACTED]"}}
	}
	return &c
}

// csiVolumeRead serves GET /v1/volume/csi/:id, the volume of the
// request's namespace.
func (a *API) csiVolumeRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, ns := r.PathValue("id"), requestNamespace(r)
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		index := max(csiVolumesIndex(snap), snap.TableIndex(state.TableAllocs))
		v := snap.CSIVolume(ns, id)
		if v == nil {
			return nil, index, errorf(http.StatusNotFound, "volume not found")
		}
		return csiVolumeOut(snap, v, csiPlugins(snap)[v.PluginID]), index, nil
	})
}

// csiVolumeRegister serves PUT and POST /v1/volume/csi/:id and
// /v1/volumes: the body is Nomad's register request, whose volumes are
// registered (the path's ID is not read, as Nomad's does not). A volume
// without a namespace is in the request's; the token needs
// csi-write-volume in each volume's, and plugin read.
func (a *API) csiVolumeRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var in api.CSIVolumeRegisterRequest // what Nomad's clients send, later versions' fields too
	if err := decode(w, r, &in); err != nil {
		return nil, err
	}
	vols := make([]*sdk.CSIVolume, 0, len(in.Volumes))
	for _, av := range in.Volumes {
		if av == nil {
			return nil, errorf(http.StatusBadRequest, "missing volume definition")
		}
		v, err := csiVolumeIn(av)
		if err != nil {
			return nil, err
		}
		if v.Namespace == "" {
			v.Namespace = requestNamespace(r)
		}
		if !allowedIn(r, v.Namespace, acl.NamespaceCapabilityCSIWriteVolume) {
			return nil, errPermissionDenied
		}
		vols = append(vols, v)
	}
	index, err := a.srv.RegisterCSIVolumes(vols)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	snap := a.srv.Store().Snapshot()
	plugins := csiPlugins(snap)
	out := &CSIVolumeRegisterResponse{Volumes: []*CSIVolume{}}
	for _, v := range vols {
		if got := snap.CSIVolume(v.Namespace, v.ID); got != nil {
			out.Volumes = append(out.Volumes, csiVolumeOut(snap, got, plugins[got.PluginID]))
		}
	}
	return out, nil
}

// csiVolumeIn is the volume Nomad's API gives, as Drover keeps one: the
// fields Nomad works out (its claims' allocations, the plugin's health,
// indexes) are not read. A volume's topologies are those given, else its
// required topology request's, as Nomad's registration takes them.
func csiVolumeIn(av *api.CSIVolume) (*sdk.CSIVolume, error) {
	v := &sdk.CSIVolume{ID: av.ID, Name: av.Name, ExternalID: av.ExternalID, Namespace: av.Namespace,
		AccessMode: string(av.AccessMode), AttachmentMode: string(av.AttachmentMode), Secrets: av.Secrets,
		Parameters: av.Parameters, Context: av.Context, Capacity: av.Capacity, RequestedCapacityMin: av.RequestedCapacityMin,
		RequestedCapacityMax: av.RequestedCapacityMax, CloneID: av.CloneID, SnapshotID: av.SnapshotID, PluginID: av.PluginID}
	topologies := func(ts []*api.CSITopology) []*sdk.CSITopology {
		var out []*sdk.CSITopology
		for _, t := range ts {
			st := &sdk.CSITopology{}
			if t != nil {
				st.Segments = maps.Clone(t.Segments)
			}
			out = append(out, st)
		}
		return out
	}
	v.Topologies = topologies(av.Topologies)
	if req := av.RequestedTopologies; req != nil {
		for _, check := range []struct {
			what string
			ts   []*api.CSITopology
		}{{"required", req.Required}, {"preferred", req.Preferred}} {
			for _, t := range check.ts {
				if t != nil && len(t.Segments) == 0 {
					return nil, errorf(http.StatusBadRequest, "validation: %s topology is missing segments field", check.what)
				}
			}
		}
		if len(v.Topologies) == 0 {
			v.Topologies = topologies(req.Required)
		}
	}
	if m := av.MountOptions; m != nil {
		v.MountOptions = &sdk.CSIMountOptions{FSType: m.FSType, MountFlags: m.MountFlags}
	}
	for _, c := range av.RequestedCapabilities {
		var sc *sdk.CSIVolumeCapability
		if c != nil {
			sc = &sdk.CSIVolumeCapability{AccessMode: string(c.AccessMode), AttachmentMode: string(c.AttachmentMode)}
		}
		v.RequestedCapabilities = append(v.RequestedCapabilities, sc)
	}
	return v, nil
}

// csiVolumeDeregister serves DELETE /v1/volume/csi/:id. ?force= is read
// as Nomad's, and changes nothing: Nomad's deregisters a volume whose
// claims are left by allocations that are all stopping or done, where
// Drover's claims of allocations finished on their nodes count already
// for nothing, and those of allocations still running on their nodes
// (being stopped, the volume perhaps still mounted) always count.
func (a *API) csiVolumeDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	if raw := r.URL.Query().Get("force"); raw != "" {
		if _, err := boolParam(r, "force"); err != nil {
			return nil, errorf(http.StatusBadRequest, "invalid force value")
		}
	}
	index, err := a.srv.DeregisterCSIVolume(requestNamespace(r), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}

// csiVolumeDetach serves DELETE (as Nomad's client sends it), PUT and
// POST /v1/volume/csi/:id/detach?node=: the claims of the node's finished
// allocations on the volume are released.
func (a *API) csiVolumeDetach(w http.ResponseWriter, r *http.Request) (any, error) {
	nodeID := r.URL.Query().Get("node")
	if nodeID == "" {
		return nil, errorf(http.StatusBadRequest, "detach requires node ID")
	}
	index, err := a.srv.DetachCSIVolume(requestNamespace(r), r.PathValue("id"), nodeID)
	if err != nil {
		return nil, err
	}
	setIndex(w, index)
	return noBody, nil
}

// csiPluginList serves GET /v1/plugins?type=csi: the CSI plugins by ID,
// ?prefix= on the ID, then the list parameters.
func (a *API) csiPluginList(w http.ResponseWriter, r *http.Request) (any, error) {
	if empty, none := csiType(r); empty {
		return []*CSIPluginListStub{}, nil
	} else if none {
		return noBody, nil
	}
	o, err := listParams(r)
	if err != nil {
		return nil, err
	}
	return a.list(w, r, func(snap *state.Snapshot) (*listed, uint64, error) {
		plugins := csiPlugins(snap)
		var stubs []*CSIPluginListStub
		for _, id := range slices.Sorted(maps.Keys(plugins)) {
			if p := plugins[id]; strings.HasPrefix(id, o.prefix) {
				stubs = append(stubs, &CSIPluginListStub{ID: id, Provider: p.Provider, ControllerRequired: p.ControllerRequired,
					ControllersHealthy: p.ControllersHealthy, ControllersExpected: p.controllersExpected,
					NodesHealthy: p.NodesHealthy, NodesExpected: p.nodesExpected, CreateIndex: p.createIndex, ModifyIndex: p.modifyIndex})
			}
		}
		out, next, err := page(o, stubs, func(s *CSIPluginListStub) string { return s.ID }, nil)
		return &listed{out, next}, csiPluginsIndex(snap), err
	})
}

// csiPluginRead serves GET /v1/plugin/csi/:id. Its allocations are those
// of the request's namespace ("*": of any) where the token may read jobs,
// as Nomad's shows those of the request's namespace to a token that may
// read jobs there.
func (a *API) csiPluginRead(w http.ResponseWriter, r *http.Request) (any, error) {
	id, ns := r.PathValue("id"), requestNamespace(r)
	return a.read(w, r, func(snap *state.Snapshot) (any, uint64, error) {
		index := csiPluginsIndex(snap)
		p := csiPlugins(snap)[id]
		if p == nil {
			return nil, index, errorf(http.StatusNotFound, "plugin not found")
		}
		out := &CSIPlugin{ID: p.ID, Provider: p.Provider, Version: p.Version, ControllerRequired: p.ControllerRequired,
			Controllers: p.Controllers, Nodes: p.Nodes, ControllersHealthy: p.ControllersHealthy,
			ControllersExpected: p.controllersExpected, NodesHealthy: p.NodesHealthy, NodesExpected: p.nodesExpected,
			CreateIndex: p.createIndex, ModifyIndex: p.modifyIndex}
		seen := map[string]bool{}
		var allocs []*sdk.Allocation
		for _, infos := range []map[string]*sdk.CSIInfo{p.Controllers, p.Nodes} {
			for _, info := range infos {
				if info.AllocID == "" || seen[info.AllocID] {
					continue
				}
				seen[info.AllocID] = true
				if al := snap.Alloc(info.AllocID); al != nil && (ns == "*" || al.Namespace == ns) &&
					allowedIn(r, al.Namespace, acl.NamespaceCapabilityReadJob) {
					allocs = append(allocs, al)
				}
			}
		}
		out.Allocations = newestFirst(allocs)
		return out, index, nil
	})
}
