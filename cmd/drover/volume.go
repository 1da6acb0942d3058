package main

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
	"github.com/dustin/go-humanize"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// The volume commands, as Nomad 1.6's (command/volume_*.go) for CSI
// volumes: register, status, deregister and detach, against
// /v1/volume(s) and Nomad's JSON. Drover calls no CSI controller plugin:
// a volume is registered once it exists in its storage, and Nomad's
// volume create, delete, snapshot and init are not built.

const volumeGroupHelp = `Usage: drover volume <subcommand> [options] [args]

  Registers, lists, reads and deregisters CSI volumes: storage that
  exists outside the cluster, served to allocations by a CSI plugin that
  runs on the nodes. A task group claims a volume with a volume block of
  type "csi"; the claim is taken as its allocation is placed.

  Write an example volume specification, then register the volume:

      $ drover volume init
      $ drover volume register volume.hcl

  List volumes, or show one:

      $ drover volume status
      $ drover volume status <id>

  Release the claims of a node's finished allocations on a volume:

      $ drover volume detach <id> <node>

  Deregister a volume:

      $ drover volume deregister <id>

  The CSI plugins themselves: drover plugin status.`

// volumeListPath lists the CSI volumes, by ID prefix with &prefix=.
const volumeListPath = "/v1/volumes?type=csi"

// volumePath is the API path of the CSI volume id.
func volumePath(id string) string { return "/v1/volume/csi/" + url.PathEscape(id) }

// The schemas of an HCL volume specification, as Nomad's volume register
// reads one: what it holds, and what its blocks hold.
var (
	volumeSpecSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "id"}, {Name: "namespace"}, {Name: "name"}, {Name: "type"},
			{Name: "plugin_id"}, {Name: "external_id"}, {Name: "snapshot_id"}, {Name: "clone_id"},
			{Name: "capacity_min"}, {Name: "capacity_max"}, {Name: "access_mode"}, {Name: "attachment_mode"}},
		Blocks: []hcl.BlockHeaderSchema{{Type: "capability"}, {Type: "mount_options"}, {Type: "topology_request"},
			{Type: "secrets"}, {Type: "parameters"}, {Type: "context"}},
	}
	volumeCapabilitySchema   = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "access_mode"}, {Name: "attachment_mode"}}}
	volumeMountOptionsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "fs_type"}, {Name: "mount_flags"}}}
	topologyRequestSchema    = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required"}, {Type: "preferred"}}}
	topologyListSchema       = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "topology"}}}
	topologySchema           = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "segments"}}}
)

// parseVolumeSpec parses a volume specification: the API's JSON (a
// volume, as volume status -json prints one) with asJSON, HCL otherwise
// (HCL's JSON syntax for a JSON file, as Nomad's volume init writes one):
//
//	id          = "db"
//	name        = "db"
//	type        = "csi"
//	plugin_id   = "ebs"
//	external_id = "vol-0abc"
//	capability {
//	  access_mode     = "single-node-writer"
//	  attachment_mode = "file-system"
//	}
//	mount_options {
//	  fs_type     = "ext4"
//	  mount_flags = ["noatime"]
//	}
//	topology_request {
//	  required {
//	    topology {
//	      segments {
//	        zone = "us-east-1a"
//	      }
//	    }
//	  }
//	}
//	secrets {
//	  token = "..."
//	}
//	parameters {
//	  type = "gp3"
//	}
//	context {
//	  endpoint = "..."
//	}
//
// The type must be "csi". The capacities are sizes ("10GiB").
func parseVolumeSpec(f *specFile, asJSON bool) (*api.CSIVolume, error) {
	vol := &api.CSIVolume{}
	if asJSON {
		if err := f.decodeJSON("volume", vol); err != nil {
			return nil, err
		}
		return vol, nil
	}
	body, err := f.hclBody()
	if err != nil {
		return nil, err
	}
	content, diags := body.Content(volumeSpecSchema)
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	var typ, capMin, capMax, accessMode, attachmentMode string
	diags = decodeAttrs(content, map[string]any{"id": &vol.ID, "namespace": &vol.Namespace, "name": &vol.Name,
		"type": &typ, "plugin_id": &vol.PluginID, "external_id": &vol.ExternalID, "snapshot_id": &vol.SnapshotID,
		"clone_id": &vol.CloneID, "capacity_min": &capMin, "capacity_max": &capMax, "access_mode": &accessMode,
		"attachment_mode": &attachmentMode})
	vol.AccessMode, vol.AttachmentMode = api.CSIVolumeAccessMode(accessMode), api.CSIVolumeAttachmentMode(attachmentMode)
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	if attr := content.Attributes["type"]; attr == nil {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing volume type",
			Detail: `A volume specification needs type = "csi".`, Subject: content.MissingItemRange.Ptr()})
	} else if !strings.EqualFold(typ, "csi") {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown volume type",
			Detail:  fmt.Sprintf(`Volume type %q is not one Drover has: it registers CSI volumes, type = "csi".`, typ),
			Subject: attr.Expr.Range().Ptr()})
	}
	for name, dst := range map[string]*int64{"capacity_min": &vol.RequestedCapacityMin, "capacity_max": &vol.RequestedCapacityMax} {
		raw := map[string]string{"capacity_min": capMin, "capacity_max": capMax}[name]
		if raw == "" {
			continue
		}
		b, err := humanize.ParseBytes(raw)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + name,
				Detail:  fmt.Sprintf("Could not parse %q as a size in bytes (such as \"10GiB\").", raw),
				Subject: content.Attributes[name].Expr.Range().Ptr()})
			continue
		}
		*dst = int64(b)
	}
	for _, b := range content.Blocks.OfType("capability") {
		c, more := b.Body.Content(volumeCapabilitySchema)
		diags = append(diags, more...)
		var access, attachment string
		diags = append(diags, decodeAttrs(c, map[string]any{"access_mode": &access, "attachment_mode": &attachment})...)
		vol.RequestedCapabilities = append(vol.RequestedCapabilities, &api.CSIVolumeCapability{
			AccessMode: api.CSIVolumeAccessMode(access), AttachmentMode: api.CSIVolumeAttachmentMode(attachment)})
	}
	mountBlock, more := oneBlock(content, "mount_options")
	diags = append(diags, more...)
	if mountBlock != nil {
		vol.MountOptions = &api.CSIMountOptions{}
		m, more := mountBlock.Body.Content(volumeMountOptionsSchema)
		diags = append(append(diags, more...), decodeAttrs(m, map[string]any{
			"fs_type": &vol.MountOptions.FSType, "mount_flags": &vol.MountOptions.MountFlags})...)
	}
	topoBlock, more := oneBlock(content, "topology_request")
	diags = append(diags, more...)
	if topoBlock != nil {
		vol.RequestedTopologies, more = decodeTopologyRequest(topoBlock)
		diags = append(diags, more...)
	}
	for name, dst := range map[string]*map[string]string{"secrets": (*map[string]string)(&vol.Secrets),
		"parameters": &vol.Parameters, "context": &vol.Context} {
		block, more := oneBlock(content, name)
		diags = append(diags, more...)
		m, more := decodeMap(block)
		*dst = m
		diags = append(diags, more...)
	}
	if err := f.diagError(diags); err != nil {
		return nil, err
	}
	return vol, nil
}

// decodeTopologyRequest decodes a topology_request block: its required
// and preferred blocks, each of topology blocks of segments.
func decodeTopologyRequest(block *hcl.Block) (*api.CSITopologyRequest, hcl.Diagnostics) {
	req := &api.CSITopologyRequest{}
	content, diags := block.Body.Content(topologyRequestSchema)
	for name, dst := range map[string]*[]*api.CSITopology{"required": &req.Required, "preferred": &req.Preferred} {
		list, more := oneBlock(content, name)
		diags = append(diags, more...)
		if list == nil {
			continue
		}
		topos, more := list.Body.Content(topologyListSchema)
		diags = append(diags, more...)
		for _, tb := range topos.Blocks.OfType("topology") {
			t, more := tb.Body.Content(topologySchema)
			diags = append(diags, more...)
			segBlock, more := oneBlock(t, "segments")
			diags = append(diags, more...)
			segments, more := decodeMap(segBlock)
			diags = append(diags, more...)
			*dst = append(*dst, &api.CSITopology{Segments: segments})
		}
	}
	return req, diags
}

type volumeRegisterCommand struct{ *meta }

func (c *volumeRegisterCommand) Synopsis() string { return "Register or update a volume" }

func (c *volumeRegisterCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover volume register [options] <input>

  Registers a CSI volume, or updates a registered one (PUT
  /v1/volume/csi/<id>). The volume must exist in its storage: Drover
  records it, and the plugin that serves it, which a node must run.
  <input> is a specification file, or "-" for standard input: HCL (HCL's
  JSON syntax for a *.json file or a JSON object), or the API's JSON with
  -json:

      id          = "db"
      name        = "db"
      type        = "csi"
      plugin_id   = "ebs"
      external_id = "vol-0abc"
      capability {
        access_mode     = "single-node-writer"
        attachment_mode = "file-system"
      }
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
      topology_request {
        required {
          topology {
            segments {
              zone = "us-east-1a"
            }
          }
        }
      }
      secrets {
        token = "..."
      }
      parameters {
        type = "gp3"
      }

  The specification is read as HCL2, as Drover's jobspecs are: a block
  on one line holds one argument at most (Nomad reads it as HCL1, where
  segments { a = "1", b = "2" } fits on a line). capacity_min and
  capacity_max are sizes ("10GiB"). The volume is in its namespace, else
  in -namespace's. An update cannot change the volume's name, external
  ID, plugin, topologies or parameters, nor, while an allocation uses it,
  drop the capability it is used with. With ACLs, the token needs
  csi-write-volume in the volume's namespace, and plugin read.
` + apiOptions + `

Register options:

  -json            Read the specification as the API's JSON (what volume
                   status -json prints, less the secrets and mount flags
                   it hides).`)
}

func (c *volumeRegisterCommand) Run(args []string) int {
	fs := c.flags("volume register", false)
	asJSON := fs.Bool("json", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <input>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	f, err := c.readSpecFile(fs.Arg(0))
	if err != nil {
		return c.errorf("reading the volume specification: %v", err)
	}
	vol, err := parseVolumeSpec(f, *asJSON)
	if err != nil {
		hint := ""
		if !*asJSON && f.isJSON() {
			hint = "A volume in the API's JSON, as volume status -json prints one, is read with -json."
		}
		return c.printSpecError("Error parsing the volume specification", err, hint)
	}
	req := &api.CSIVolumeRegisterRequest{Volumes: []*api.CSIVolume{vol}}
	if _, err := cl.Put(bg, volumePath(vol.ID), req, nil); err != nil {
		return c.errorf("registering volume: %v", err)
	}
	c.ui.Output(fmt.Sprintf("Volume %q registered", vol.ID))
	return exitOK
}

// volumeByPrefix finds the volume a command names, as Nomad's CLI does:
// by exact ID or unique prefix, in the client's namespace ("*": any); an
// ID several namespaces have is ambiguous. It prints Nomad's message when
// there is no such volume or several, and points cl at the namespace of
// the volume it finds.
func (m *meta) volumeByPrefix(cl *client.Client, prefix string) (*httpapi.CSIVolumeListStub, bool) {
	var vols []*httpapi.CSIVolumeListStub
	if _, err := cl.Get(bg, volumeListPath+"&prefix="+url.QueryEscape(prefix), &vols); err != nil {
		m.errorf("querying volumes: %v", err)
		return nil, false
	}
	if len(vols) == 0 {
		m.errorf("No volumes(s) with prefix or ID %q found", prefix)
		return nil, false
	}
	var exact []*httpapi.CSIVolumeListStub
	for _, v := range vols {
		if v.ID == prefix {
			exact = append(exact, v)
		}
	}
	var found *httpapi.CSIVolumeListStub
	switch {
	case len(vols) == 1:
		found = vols[0]
	case len(exact) == 1:
		found = exact[0]
	}
	if found != nil {
		cl.Namespace = found.Namespace
		return found, true
	}
	m.ui.Error("Prefix matched multiple volumes\n\n" + formatVolumes(vols))
	return nil, false
}

// formatVolumes renders volumes as Nomad's volume status lists them, by
// ID.
func formatVolumes(vols []*httpapi.CSIVolumeListStub) string {
	vols = slices.Clone(vols)
	slices.SortFunc(vols, func(a, b *httpapi.CSIVolumeListStub) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Namespace, b.Namespace))
	})
	rows := [][]string{{"ID", "Name", "Namespace", "Plugin ID", "Schedulable", "Access Mode"}}
	for _, v := range vols {
		rows = append(rows, []string{v.ID, v.Name, v.Namespace, v.PluginID, fmt.Sprint(v.Schedulable), v.AccessMode})
	}
	return formatTable(rows)
}

// csiBanner heads what the CSI status commands print, as Nomad's.
const csiBanner = "Container Storage Interface"

type volumeStatusCommand struct{ *meta }

func (c *volumeStatusCommand) Synopsis() string { return "Display status information about a volume" }

func (c *volumeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover volume status [options] [id]

  Without an ID, lists the CSI volumes of the namespace (-namespace=*:
  of every namespace): ID, name, namespace, plugin, whether it is
  schedulable (its plugin runs healthy on a node, and a controller if it
  needs one) and the access mode its claims use. With the ID of a volume,
  or a unique prefix of it, shows it: its plugin's health, its modes and
  mount options, its topologies and the allocations that claim it.
` + apiOptions + `

Status options:

  -type=csi        The type of volumes: csi, the only one.
  -short           Show the volume's fields only.
  -verbose         Show full IDs.` + formatOptions)
}

func (c *volumeStatusCommand) Run(args []string) int {
	fs := c.flags("volume status", true)
	typ := fs.String("type", "", "")
	short := fs.Bool("short", false, "")
	verbose := fs.Bool("verbose", false, "")
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "either no arguments or one: <id>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	if t := strings.ToLower(*typ); t != "" && t != "csi" {
		c.ui.Error(fmt.Sprintf("Unsupported volume type: %s", *typ))
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id := idFormat(*verbose)
	if fs.NArg() == 0 {
		var vols []*httpapi.CSIVolumeListStub
		if _, err := cl.Get(bg, volumeListPath, &vols); err != nil {
			return c.errorf("querying volumes: %v", err)
		}
		slices.SortFunc(vols, func(a, b *httpapi.CSIVolumeListStub) int { return strings.Compare(a.ID, b.ID) })
		if code, printed := c.printJSONOrTemplate(*tmpl, vols); printed {
			return code
		}
		c.ui.Output(csiBanner)
		if len(vols) == 0 {
			c.ui.Error("No CSI volumes")
			return exitOK
		}
		c.ui.Output(formatVolumes(vols))
		return exitOK
	}
	stub, ok := c.volumeByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	var vol httpapi.CSIVolume
	if _, err := cl.Get(bg, volumePath(stub.ID), &vol); err != nil {
		return c.errorf("querying volume: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &vol); printed {
		return code
	}
	c.kv("ID", vol.ID,
		"Name", vol.Name,
		"Namespace", vol.Namespace,
		"External ID", vol.ExternalID,
		"Plugin ID", vol.PluginID,
		"Provider", vol.Provider,
		"Version", vol.ProviderVersion,
		"Schedulable", fmt.Sprint(vol.Schedulable),
		"Controllers Healthy", fmt.Sprint(vol.ControllersHealthy),
		"Controllers Expected", fmt.Sprint(vol.ControllersExpected),
		"Nodes Healthy", fmt.Sprint(vol.NodesHealthy),
		"Nodes Expected", fmt.Sprint(vol.NodesExpected),
		"Access Mode", vol.AccessMode,
		"Attachment Mode", vol.AttachmentMode,
		"Mount Options", mountOptions(vol.MountOptions))
	if *short {
		return exitOK
	}
	if rows := topologyRows(&vol); len(rows) > 1 {
		fmt.Fprintln(c.out, "\nTopologies")
		c.table(rows)
	}
	fmt.Fprintln(c.out, "\nAllocations")
	if len(vol.Allocations) == 0 {
		fmt.Fprintln(c.out, "No allocations placed")
		return exitOK
	}
	c.table(allocRows(vol.Allocations, id))
	return exitOK
}

// mountOptions renders a volume's mount options as Nomad's volume status
// does.
func mountOptions(m *sdk.CSIMountOptions) string {
	if m == nil {
		return "<none>"
	}
	var out string
	if m.FSType != "" {
		out = "fs_type: " + m.FSType
	}
	if len(m.MountFlags) > 0 {
		out = strings.TrimSpace(out + " flags: " + strings.Join(m.MountFlags, ", "))
	}
	return out
}

// topologyRows tabulates a volume's topologies, as Nomad's volume status
// does: an index and the segments of each.
func topologyRows(vol *httpapi.CSIVolume) [][]string {
	rows := [][]string{{"Topology", "Segments"}}
	for i, t := range vol.Topologies {
		if t == nil {
			continue
		}
		rows = append(rows, []string{fmt.Sprintf("%02d", i), segmentPairs(t.Segments, ", ")})
	}
	return rows
}

// segmentPairs renders a topology's segments, by key.
func segmentPairs(segments map[string]string, sep string) string {
	pairs := make([]string, 0, len(segments))
	for _, k := range slices.Sorted(maps.Keys(segments)) {
		pairs = append(pairs, k+"="+segments[k])
	}
	return strings.Join(pairs, sep)
}

type volumeDeregisterCommand struct{ *meta }

func (c *volumeDeregisterCommand) Synopsis() string { return "Remove a volume" }

func (c *volumeDeregisterCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover volume deregister [options] <id>

  Deregisters the CSI volume whose ID, or a unique prefix of it, is given
  (DELETE /v1/volume/csi/<id>). The storage itself is left as it is. A
  volume an allocation uses (one not finished on its node) cannot be
  deregistered: stop the allocation first, or if its node is gone, wait
  for it to be marked lost. With ACLs, the token needs csi-write-volume
  in the volume's namespace.
` + apiOptions + `

Deregister options:

  -force           Sent as Nomad's -force, without its question: in Drover
                   it deregisters no more than without it, since the
                   claims of allocations finished on their nodes already
                   hold no volume, and those of allocations still running
                   on them always do.`)
}

func (c *volumeDeregisterCommand) Run(args []string) int {
	fs := c.flags("volume deregister", false)
	force := fs.Bool("force", false, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 1, 1, "one argument: <id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	vol, ok := c.volumeByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	if _, err := cl.Delete(bg, fmt.Sprintf("%s?force=%t", volumePath(vol.ID), *force), nil); err != nil {
		return c.errorf("deregistering volume: %v", err)
	}
	c.ui.Output(fmt.Sprintf("Successfully deregistered volume %q!", vol.ID))
	return exitOK
}

type volumeDetachCommand struct{ *meta }

func (c *volumeDetachCommand) Synopsis() string { return "Detach a volume" }

func (c *volumeDetachCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover volume detach [options] <vol id> <node id>

  Releases the claims the allocations on a node hold on a CSI volume
  (DELETE /v1/volume/csi/<id>/detach?node=<node>), for a node that
  cannot release them itself. The volume and the node are given by ID or
  a unique prefix; a node that is gone is found among the volume's
  allocations. The claims of allocations still running on the node are
  not released: the command fails. It prints nothing when it succeeds, as
  Nomad's. With ACLs, the token needs csi-mount-volume in the volume's
  namespace, and plugin read.
` + apiOptions)
}

func (c *volumeDetachCommand) Run(args []string) int {
	fs := c.flags("volume detach", false)
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 2, 2, "two arguments: <vol id> <node id>") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	vol, ok := c.volumeByPrefix(cl, fs.Arg(0))
	if !ok {
		return exitError
	}
	nodeID := fs.Arg(1)
	var nodes []*httpapi.NodeListStub
	if _, err := cl.Get(bg, "/v1/nodes?prefix="+url.QueryEscape(nodeID), &nodes); err != nil {
		return c.errorf("detaching volume: %v", err)
	}
	switch len(nodes) {
	case 1:
		nodeID = nodes[0].ID
	case 0:
		// A node gone (purged) may still hold claims: look for it among
		// the volume's allocations, as Nomad's does.
		var full httpapi.CSIVolume
		if _, err := cl.Get(bg, volumePath(vol.ID), &full); err != nil {
			return c.errorf("querying volume: %v", err)
		}
		var ids []string
		for _, a := range full.Allocations {
			if strings.HasPrefix(a.NodeID, nodeID) && !slices.Contains(ids, a.NodeID) {
				ids = append(ids, a.NodeID)
			}
		}
		if len(ids) > 1 {
			slices.Sort(ids)
			c.ui.Error("Prefix matched multiple node IDs\n\n" + strings.Join(ids, "\n"))
			return exitError
		}
		if len(ids) == 1 {
			nodeID = ids[0]
		}
	default:
		rows := [][]string{{"ID", "Name", "Status"}}
		for _, n := range nodes {
			rows = append(rows, []string{n.ID, n.Name, n.Status})
		}
		c.ui.Error("Prefix matched multiple nodes\n\n" + formatTable(rows))
		return exitError
	}
	if _, err := cl.Delete(bg, volumePath(vol.ID)+"/detach?node="+url.QueryEscape(nodeID), nil); err != nil {
		return c.errorf("detaching volume: %v", err)
	}
	return exitOK
}

// The example volume specifications volume init writes, in HCL and in
// HCL's JSON syntax (which volume register reads as HCL, by the file's
// .json name, as Nomad's volume init -json writes it).
const (
	defaultHCLVolumeSpecFile  = "volume.hcl"
	defaultJSONVolumeSpecFile = "volume.json"
	exampleHCLVolumeSpec      = `# A CSI volume that exists outside the cluster, registered with
# drover volume register. Tasks claim it with a volume block of
# type = "csi" whose source is the volume's id.
id          = "database"
name        = "database"
type        = "csi"
plugin_id   = "aws-ebs0"
external_id = "vol-0123456789abcdef0"

# The access and attachment modes the volume offers; a job's volume block
# asks for one of them.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}

# The volume is mounted only on nodes whose plugin reports one of these
# topologies. (HCL names a segment with a plain word: a plugin whose
# segment keys hold dots or slashes is registered through the API's JSON,
# volume register -json.)
topology_request {
  required {
    topology {
      segments {
        zone = "us-east-1a"
      }
    }
  }
}

# Passed to the plugin; secrets are never shown by the API.
secrets {
  example_secret = "xyzzy"
}

parameters {
  type = "gp3"
}
`
	exampleJSONVolumeSpec = `{
  "id": "database",
  "name": "database",
  "type": "csi",
  "plugin_id": "aws-ebs0",
  "external_id": "vol-0123456789abcdef0",
  "capability": [
    {
      "access_mode": "single-node-writer",
      "attachment_mode": "file-system"
    },
    {
      "access_mode": "single-node-reader-only",
      "attachment_mode": "file-system"
    }
  ],
  "mount_options": {
    "fs_type": "ext4",
    "mount_flags": ["noatime"]
  },
  "topology_request": {
    "required": {
      "topology": [
        {
          "segments": {
            "zone": "us-east-1a"
          }
        }
      ]
    }
  },
  "secrets": {
    "example_secret": "xyzzy"
  },
  "parameters": {
    "type": "gp3"
  }
}
`
)

type volumeInitCommand struct{ *meta }

func (c *volumeInitCommand) Synopsis() string {
	return "Create an example volume specification file"
}

func (c *volumeInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover volume init [options] [<filename>]

  Writes an example CSI volume specification, for volume register to
  read, to <filename> (default volume.hcl, or volume.json with -json, in
  HCL's JSON syntax). An existing file is never overwritten.

Init options:

  -json            Write the example in HCL's JSON syntax.
  -quiet           Print nothing when it succeeds.`)
}

func (c *volumeInitCommand) Run(args []string) int {
	flags := c.flags("volume init", false)
	asJSON := flags.Bool("json", false, "")
	quiet := flags.Bool("quiet", false, "")
	if !c.parse(flags, args, c.Help()) || !c.args(flags, 0, 1, "no arguments or one: <filename>") {
		return exitError
	}
	name, content := defaultHCLVolumeSpecFile, exampleHCLVolumeSpec
	if *asJSON {
		name, content = defaultJSONVolumeSpecFile, exampleJSONVolumeSpec
	}
	if flags.NArg() == 1 {
		name = flags.Arg(0)
	}
	if !c.writeNewFile(name, content) {
		return exitError
	}
	if !*quiet {
		c.ui.Output("Example volume specification written to " + name)
	}
	return exitOK
}
