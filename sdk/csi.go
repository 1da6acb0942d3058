package sdk

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// CSI access modes, as Nomad names them.
const (
	CSIAccessModeSingleNodeReader            = "single-node-reader-only"
	CSIAccessModeSingleNodeWriter            = "single-node-writer"
	CSIAccessModeMultiNodeReader             = "multi-node-reader-only"
	CSIAccessModeMultiNodeSingleWriter       = "multi-node-single-writer"
	CSIAccessModeMultiNodeMultiWriter        = "multi-node-multi-writer"
	CSIAttachmentModeFilesystem              = "file-system"
	CSIAttachmentModeBlockDevice             = "block-device"
	CSIClaimRead                             = 0
	CSIClaimWrite                            = 1
	CSIPluginTypeNode                        = "node"
	CSIPluginTypeController                  = "controller"
	CSIPluginTypeMonolith                    = "monolith"
	csiAccessModeUnknown                     = ""
	csiVolumeTypeCSI                         = "csi"
	csiDefaultMaxVolumes               int64 = 1<<63 - 1
)

// CSIAccessModes are the access modes a volume may be registered with.
var CSIAccessModes = []string{CSIAccessModeSingleNodeReader, CSIAccessModeSingleNodeWriter,
	CSIAccessModeMultiNodeReader, CSIAccessModeMultiNodeSingleWriter, CSIAccessModeMultiNodeMultiWriter}

// CSIVolume is a volume registered with the cluster, served by a CSI
// plugin. Field names follow Nomad's; ReadClaims and WriteClaims are the
// allocations using it, keyed by allocation ID. The fields Nomad derives
// from the plugin's health (Schedulable, ControllersHealthy, ...) are not
// stored: a reader works them out from the nodes (CSIPluginHealth).
type CSIVolume struct {
	ID                    string                 `msg:",omitempty"`
	Name                  string                 `msg:",omitempty"`
	ExternalID            string                 `msg:",omitempty"`
	Namespace             string                 `msg:",omitempty"`
	Topologies            []*CSITopology         `msg:",omitempty"`
	AccessMode            string                 `msg:",omitempty"`
	AttachmentMode        string                 `msg:",omitempty"`
	MountOptions          *CSIMountOptions       `msg:",omitempty"`
	Secrets               map[string]string      `json:"-" msg:",omitempty"`
	Parameters            map[string]string      `msg:",omitempty"`
	Context               map[string]string      `msg:",omitempty"`
	Capacity              int64                  `msg:",omitempty"`
	RequestedCapacityMin  int64                  `msg:",omitempty"`
	RequestedCapacityMax  int64                  `msg:",omitempty"`
	RequestedCapabilities []*CSIVolumeCapability `msg:",omitempty"`
	CloneID               string                 `msg:",omitempty"`
	SnapshotID            string                 `msg:",omitempty"`
	PluginID              string                 `msg:",omitempty"`
	Provider              string                 `msg:",omitempty"`
	ProviderVersion       string                 `msg:",omitempty"`
	ReadClaims            map[string]*CSIClaim   `msg:",omitempty"`
	WriteClaims           map[string]*CSIClaim   `msg:",omitempty"`
	CreateIndex           uint64                 `msg:",omitempty"`
	ModifyIndex           uint64                 `msg:",omitempty"`
	CreateTime            int64                  `msg:",omitempty"`
	ModifyTime            int64                  `msg:",omitempty"`
}

// CSITopology is a set of segments (such as a zone) a volume or a node
// plugin is in.
type CSITopology struct {
	Segments map[string]string `msg:",omitempty"`
}

// Equal reports whether both have the same segments.
func (t *CSITopology) Equal(o *CSITopology) bool {
	if t == nil || o == nil {
		return t == o
	}
	if len(t.Segments) != len(o.Segments) {
		return false
	}
	for k, v := range t.Segments {
		if ov, ok := o.Segments[k]; !ok || ov != v {
			return false
		}
	}
	return true
}

// CSIMountOptions are a volume's file system type and mount flags.
type CSIMountOptions struct {
	FSType     string   `msg:",omitempty"`
	MountFlags []string `msg:",omitempty"`
}

// CSIVolumeCapability is an access and attachment mode a volume offers.
type CSIVolumeCapability struct {
	AccessMode     string `msg:",omitempty"`
	AttachmentMode string `msg:",omitempty"`
}

// CSIClaim is an allocation's use of a volume.
type CSIClaim struct {
	AllocationID   string `msg:",omitempty"`
	NodeID         string `msg:",omitempty"`
	Mode           int    `msg:",omitempty"` // CSIClaimRead or CSIClaimWrite
	AccessMode     string `msg:",omitempty"`
	AttachmentMode string `msg:",omitempty"`
}

// CSIInfo is what a node reports of a CSI plugin running on it, as a
// controller or as a node plugin.
type CSIInfo struct {
	PluginID                 string             `msg:",omitempty"`
	AllocID                  string             `msg:",omitempty"`
	Healthy                  bool               `msg:",omitempty"`
	HealthDescription        string             `msg:",omitempty"`
	UpdateTime               time.Time          `msg:",omitempty"`
	Provider                 string             `msg:",omitempty"`
	ProviderVersion          string             `msg:",omitempty"`
	RequiresControllerPlugin bool               `msg:",omitempty"`
	RequiresTopologies       bool               `msg:",omitempty"`
	ControllerInfo           *CSIControllerInfo `json:",omitempty" msg:",omitempty"`
	NodeInfo                 *CSINodeInfo       `json:",omitempty" msg:",omitempty"`
}

// CSINodeInfo is a node plugin's own description of the node.
type CSINodeInfo struct {
	ID                      string       `msg:",omitempty"`
	MaxVolumes              int64        `msg:",omitempty"`
	AccessibleTopology      *CSITopology `msg:",omitempty"`
	RequiresNodeStageVolume bool         `msg:",omitempty"`
	SupportsStats           bool         `msg:",omitempty"`
	SupportsExpand          bool         `msg:",omitempty"`
	SupportsCondition       bool         `msg:",omitempty"`
}

// CSIControllerInfo is what a controller plugin supports.
type CSIControllerInfo struct {
	SupportsCreateDelete             bool `msg:",omitempty"`
	SupportsAttachDetach             bool `msg:",omitempty"`
	SupportsListVolumes              bool `msg:",omitempty"`
	SupportsGetCapacity              bool `msg:",omitempty"`
	SupportsCreateDeleteSnapshot     bool `msg:",omitempty"`
	SupportsListSnapshots            bool `msg:",omitempty"`
	SupportsClone                    bool `msg:",omitempty"`
	SupportsReadOnlyAttach           bool `msg:",omitempty"`
	SupportsExpand                   bool `msg:",omitempty"`
	SupportsListVolumesAttachedNodes bool `msg:",omitempty"`
	SupportsCondition                bool `msg:",omitempty"`
	SupportsGet                      bool `msg:",omitempty"`
}

// MaxVolumes is how many volumes of the plugin the node may mount: what
// the plugin reports, or no limit when it reports none.
func (i *CSINodeInfo) maxVolumes() int64 {
	if i == nil || i.MaxVolumes <= 0 {
		return csiDefaultMaxVolumes
	}
	return i.MaxVolumes
}

// CSIVolumeRequest is a task group's request for a CSI volume, read from
// its volume block.
type CSIVolumeRequest struct {
	// Name is the volume block's label.
	Name string
	// Source is the volume's ID; for a per_alloc request, with the
	// allocation's index appended ("data[2]").
	Source         string
	ReadOnly       bool
	AccessMode     string
	AttachmentMode string
	PerAlloc       bool
}

// CSIVolumeRequests returns the group's CSI volume requests for the
// allocation named allocName (its per_alloc sources resolved), ordered by
// name; nil when it has none.
func CSIVolumeRequests(tg *TaskGroup, allocName string) []CSIVolumeRequest {
	var out []CSIVolumeRequest
	for name, v := range tg.Volumes {
		if opaqueStr(v, "Type") != csiVolumeTypeCSI {
			continue
		}
		r := CSIVolumeRequest{Name: name, Source: opaqueStr(v, "Source"), ReadOnly: opaqueBool(v, "ReadOnly"),
			AccessMode: opaqueStr(v, "AccessMode"), AttachmentMode: opaqueStr(v, "AttachmentMode"), PerAlloc: opaqueBool(v, "PerAlloc")}
		if r.PerAlloc {
			r.Source += AllocSuffix(allocName)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b CSIVolumeRequest) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// CSIAllocRequests returns the CSI volume requests of allocation a, a
// placement of job (the version it runs), per_alloc sources resolved by
// its name; nil when its group has none or job is nil.
func CSIAllocRequests(job *Job, a *Allocation) []CSIVolumeRequest {
	if job == nil {
		return nil
	}
	tg := job.LookupTaskGroup(a.TaskGroup)
	if tg == nil || len(tg.Volumes) == 0 {
		return nil
	}
	return CSIVolumeRequests(tg, a.Name)
}

// Claim is the claim the request makes for allocation a.
func (r CSIVolumeRequest) Claim(a *Allocation) *CSIClaim {
	c := &CSIClaim{AllocationID: a.ID, NodeID: a.NodeID, AccessMode: r.AccessMode, AttachmentMode: r.AttachmentMode}
	if !r.ReadOnly {
		c.Mode = CSIClaimWrite
	}
	return c
}

// AddClaim records c among the volume's claims (its claim maps must be
// the caller's own), replacing any the allocation held; the first claim
// of an unclaimed volume sets its access and attachment modes.
func (v *CSIVolume) AddClaim(c *CSIClaim) {
	delete(v.ReadClaims, c.AllocationID)
	delete(v.WriteClaims, c.AllocationID)
	m := &v.ReadClaims
	if c.Mode == CSIClaimWrite {
		m = &v.WriteClaims
	}
	if *m == nil {
		*m = map[string]*CSIClaim{}
	}
	(*m)[c.AllocationID] = c
	if v.AccessMode == "" {
		v.AccessMode, v.AttachmentMode = c.AccessMode, c.AttachmentMode
	}
}

// ReleaseClaim drops the allocation's claims (the volume's claim maps
// must be the caller's own). A volume left without claims forgets the
// modes it was claimed with, unless they are the only ones it was
// registered with (no RequestedCapabilities), as Nomad's; one left with
// claims takes the modes of the one of the lowest allocation ID (the
// released claim may have set them, and a replacement that took its
// claim over may have claimed with others).
func (v *CSIVolume) ReleaseClaim(allocID string) {
	delete(v.ReadClaims, allocID)
	delete(v.WriteClaims, allocID)
	if len(v.ReadClaims)+len(v.WriteClaims) == 0 {
		if len(v.RequestedCapabilities) > 0 {
			v.AccessMode, v.AttachmentMode = "", ""
		}
		return
	}
	var first *CSIClaim
	for _, m := range []map[string]*CSIClaim{v.ReadClaims, v.WriteClaims} {
		for id, c := range m {
			if first == nil || id < first.AllocationID {
				first = c
			}
		}
	}
	v.AccessMode, v.AttachmentMode = first.AccessMode, first.AttachmentMode
}

// HasCSIVolumes reports whether the group requests a CSI volume.
func HasCSIVolumes(tg *TaskGroup) bool {
	for _, v := range tg.Volumes {
		if opaqueStr(v, "Type") == csiVolumeTypeCSI {
			return true
		}
	}
	return false
}

// AllocSuffix is the "[index]" ending of an allocation's name, which a
// per_alloc volume request appends to its source.
func AllocSuffix(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '[' {
			return name[i:]
		}
	}
	return ""
}

func opaqueStr(o Opaque, field string) string {
	s, _ := o.Field(field).(string)
	return s
}

func opaqueBool(o Opaque, field string) bool {
	switch b := o.Field(field).(type) {
	case bool:
		return b
	case string:
		v, _ := strconv.ParseBool(b)
		return v
	}
	return false
}

// CSIPlugin is the health of a CSI plugin across the nodes, as the nodes
// report it.
type CSIPlugin struct {
	ID                 string
	ControllerRequired bool
	ControllersHealthy int
	NodesHealthy       int
	// Controllers and Nodes are the nodes reporting the plugin, by node ID.
	Controllers map[string]*CSIInfo
	Nodes       map[string]*CSIInfo
	Provider    string
	Version     string
}

// CSIPlugins gathers the plugins the nodes report, by plugin ID.
func CSIPlugins(nodes []*Node) map[string]*CSIPlugin {
	out := map[string]*CSIPlugin{}
	get := func(id string) *CSIPlugin {
		p := out[id]
		if p == nil {
			p = &CSIPlugin{ID: id, Controllers: map[string]*CSIInfo{}, Nodes: map[string]*CSIInfo{}}
			out[id] = p
		}
		return p
	}
	for _, n := range nodes {
		for id, info := range n.CSIControllerPlugins {
			get(id).add(n, info, true)
		}
		for id, info := range n.CSINodePlugins {
			get(id).add(n, info, false)
		}
	}
	return out
}

func (p *CSIPlugin) add(n *Node, info *CSIInfo, controller bool) {
	if info == nil {
		return
	}
	healthy := info.Healthy && n.Status == NodeStatusReady
	if controller {
		p.Controllers[n.ID] = info
		if healthy {
			p.ControllersHealthy++
		}
	} else {
		p.Nodes[n.ID] = info
		if healthy {
			p.NodesHealthy++
		}
	}
	if info.RequiresControllerPlugin {
		p.ControllerRequired = true
	}
	if p.Provider == "" {
		p.Provider, p.Version = info.Provider, info.ProviderVersion
	}
}

// Schedulable reports whether volumes of the plugin may be claimed: some
// node runs it healthy, and a controller does too if it needs one.
func (p *CSIPlugin) Schedulable() bool {
	if p == nil || p.NodesHealthy == 0 {
		return false
	}
	return !p.ControllerRequired || p.ControllersHealthy > 0
}

// Capable reports whether the volume offers the access and attachment
// modes asked for: its registered capabilities, or once claimed, the mode
// it was claimed with (Nomad's check of a volume request against a
// volume).
func (v *CSIVolume) Capable(accessMode, attachmentMode string) bool {
	for _, c := range v.RequestedCapabilities {
		if c.AccessMode == accessMode && c.AttachmentMode == attachmentMode {
			return true
		}
	}
	return len(v.RequestedCapabilities) == 0 && (v.AccessMode == "" || v.AccessMode == accessMode) &&
		(v.AttachmentMode == "" || v.AttachmentMode == attachmentMode)
}

// CSIClaimLive tells whether the allocation holding a claim still uses
// the volume. A claim whose allocation is not live does not count against
// the volume's free claims.
type CSIClaimLive func(allocID string) bool

// Nomad's explanations of a volume that cannot be claimed.
const (
	csiNoRead  = "CSI volume %s is unschedulable or has exhausted its available reader claims"
	csiNoWrite = "CSI volume %s is unschedulable or is read-only"
	csiInUse   = "CSI volume %s has exhausted its available writer claims"
)

// LiveClaims counts the volume's claims whose allocations are live (all
// of them when live is nil).
func (v *CSIVolume) LiveClaims(live CSIClaimLive) (reads, writes int) {
	return v.liveClaims(v.ReadClaims, live), v.liveClaims(v.WriteClaims, live)
}

// CanClaim reports why the volume cannot take the request, or "" when it
// can, with reads and writes claims held: Nomad's ReadSchedulable,
// WriteSchedulable and free-claim checks by access mode, and the
// request's modes among those the volume offers. schedulable is whether
// its plugin is (CSIPlugin.Schedulable).
func (v *CSIVolume) CanClaim(r CSIVolumeRequest, schedulable bool, reads, writes int) string {
	noClaim := csiNoWrite
	if r.ReadOnly {
		noClaim = csiNoRead
	}
	if !schedulable {
		return fmt.Sprintf(noClaim, v.ID)
	}
	if !v.Capable(r.AccessMode, r.AttachmentMode) {
		return fmt.Sprintf("CSI volume %s does not offer access mode %s with attachment mode %s", v.ID, r.AccessMode, r.AttachmentMode)
	}
	// The modes a volume was claimed with bind while a claim lives.
	mode := r.AccessMode
	if reads+writes > 0 {
		if v.AttachmentMode != "" && r.AttachmentMode != "" && v.AttachmentMode != r.AttachmentMode {
			return fmt.Sprintf("CSI volume %s cannot change attachment mode of claimed volume", v.ID)
		}
		if v.AccessMode != csiAccessModeUnknown {
			mode = v.AccessMode
		}
	}
	if r.ReadOnly {
		switch {
		case mode == CSIAccessModeSingleNodeReader && reads > 0,
			mode == CSIAccessModeSingleNodeWriter && reads+writes > 0:
			return fmt.Sprintf(csiNoRead, v.ID)
		}
		return ""
	}
	switch mode {
	case CSIAccessModeSingleNodeWriter, CSIAccessModeMultiNodeSingleWriter:
		if writes > 0 {
			return fmt.Sprintf(csiInUse, v.ID)
		}
		return ""
	case CSIAccessModeMultiNodeMultiWriter:
		return ""
	}
	return fmt.Sprintf(csiNoWrite, v.ID)
}

func (v *CSIVolume) liveClaims(claims map[string]*CSIClaim, live CSIClaimLive) int {
	n := 0
	for id := range claims {
		if live == nil || live(id) {
			n++
		}
	}
	return n
}

// Claim returns the volume's claim of the allocation, if any.
func (v *CSIVolume) Claim(allocID string) *CSIClaim {
	if c := v.WriteClaims[allocID]; c != nil {
		return c
	}
	return v.ReadClaims[allocID]
}

// InUse reports whether a live allocation claims the volume.
func (v *CSIVolume) InUse(live CSIClaimLive) bool {
	return v.liveClaims(v.ReadClaims, live)+v.liveClaims(v.WriteClaims, live) > 0
}

// CSINodeCheck reports why the node cannot mount the volume, or "" when
// it can: it runs the volume's plugin, healthy, with room for one more
// volume (mounted counts the node's volumes of that plugin in use) and in
// a topology the volume is accessible from. The messages are Nomad's.
func CSINodeCheck(n *Node, v *CSIVolume, mounted int64) string {
	info := n.CSINodePlugins[v.PluginID]
	switch {
	case info == nil:
		return fmt.Sprintf("CSI plugin %s is missing from client %s", v.PluginID, n.ID)
	case !info.Healthy:
		return fmt.Sprintf("CSI plugin %s is unhealthy on client %s", v.PluginID, n.ID)
	case mounted >= info.NodeInfo.maxVolumes():
		return fmt.Sprintf("CSI plugin %s has the maximum number of volumes on client %s", v.PluginID, n.ID)
	}
	if len(v.Topologies) > 0 {
		var at *CSITopology
		if info.NodeInfo != nil {
			at = info.NodeInfo.AccessibleTopology
		}
		if !slices.ContainsFunc(v.Topologies, at.Equal) {
			return "did not meet topology requirement"
		}
	}
	return ""
}
