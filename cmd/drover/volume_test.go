package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/drover-sched/drover/sdk"
	"github.com/hashicorp/cli"
	"github.com/hashicorp/nomad/api"
)

// fullVolumeSpec is a volume specification with every field, as Nomad's
// volume init writes one, with its blocks' arguments one per line.
const fullVolumeSpec = `id          = "db"
namespace   = "default"
name        = "database"
type        = "csi"
plugin_id   = "ebs"
external_id = "vol-0abc"
snapshot_id = "snap-1"
capacity_min = "10GiB"
capacity_max = "20G"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "multi-node-reader-only"
  attachment_mode = "block-device"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["noatime"]
}

topology_request {
  preferred {
    topology {
      segments {
        rack = "R1"
      }
    }
  }
  required {
    topology {
      segments {
        zone = "us-east-1a"
        rack = "R2"
      }
    }
  }
}

secrets {
  token = "s3cret"
}

parameters {
  type = "gp3"
}

context {
  endpoint = "http://192.168.1.101:9425"
}
`

// Volume specifications in HCL (native, or HCL's JSON syntax as Nomad's
// volume init -json writes one) and in the API's JSON parse into the
// volume they give; bad ones are refused with the file, line and column
// of each problem.
func TestParseVolumeSpec(t *testing.T) {
	fsWriter := &api.CSIVolumeCapability{AccessMode: api.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: api.CSIVolumeAttachmentModeFilesystem}
	full := &api.CSIVolume{ID: "db", Namespace: "default", Name: "database", PluginID: "ebs", ExternalID: "vol-0abc",
		SnapshotID: "snap-1", RequestedCapacityMin: 10 << 30, RequestedCapacityMax: 20_000_000_000,
		RequestedCapabilities: []*api.CSIVolumeCapability{fsWriter,
			{AccessMode: api.CSIVolumeAccessModeMultiNodeReader, AttachmentMode: api.CSIVolumeAttachmentModeBlockDevice}},
		MountOptions: &api.CSIMountOptions{FSType: "ext4", MountFlags: []string{"noatime"}},
		RequestedTopologies: &api.CSITopologyRequest{
			Required:  []*api.CSITopology{{Segments: map[string]string{"zone": "us-east-1a", "rack": "R2"}}},
			Preferred: []*api.CSITopology{{Segments: map[string]string{"rack": "R1"}}}},
		Secrets: api.CSISecrets{"token": "s3cret"}, Parameters: map[string]string{"type": "gp3"},
		Context: map[string]string{"endpoint": "http://192.168.1.101:9425"}}
	for _, tc := range []struct {
		name   string
		file   string
		src    string
		asJSON bool
		want   *api.CSIVolume
		errs   []string
	}{
		{name: "HCL, every field", file: "vol.hcl", src: fullVolumeSpec, want: full},
		{name: "HCL, legacy modes", file: "vol.hcl", src: "id = \"v\"\ntype = \"CSI\"\nplugin_id = \"ebs\"\naccess_mode = \"single-node-writer\"\nattachment_mode = \"file-system\"\n",
			want: &api.CSIVolume{ID: "v", PluginID: "ebs", AccessMode: api.CSIVolumeAccessModeSingleNodeWriter, AttachmentMode: api.CSIVolumeAttachmentModeFilesystem}},
		{name: "HCL's JSON syntax, as Nomad's volume init -json writes it", file: "vol.json", src: `{
  "id": "db", "type": "csi", "plugin_id": "ebs",
  "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
  "context": [{"a": "b"}],
  "mount_options": [{"fs_type": "ext4"}],
  "topology_request": {"required": [{"topology": [{"segments": {"zone": "a"}}]}]}
}`, want: &api.CSIVolume{ID: "db", PluginID: "ebs", RequestedCapabilities: []*api.CSIVolumeCapability{fsWriter},
			Context: map[string]string{"a": "b"}, MountOptions: &api.CSIMountOptions{FSType: "ext4"},
			RequestedTopologies: &api.CSITopologyRequest{Required: []*api.CSITopology{{Segments: map[string]string{"zone": "a"}}}}}},
		{name: "API JSON, as volume status -json prints it", file: "vol.json", asJSON: true,
			src: `{"ID": "db", "PluginID": "ebs", "RequestedCapabilities": [{"AccessMode": "single-node-writer", "AttachmentMode": "file-system"}],
				"ReadAllocs": {}, "Allocations": [], "Schedulable": true, "CreateIndex": 7}`,
			want: &api.CSIVolume{ID: "db", PluginID: "ebs", RequestedCapabilities: []*api.CSIVolumeCapability{fsWriter},
				ReadAllocs: map[string]*api.Allocation{}, Allocations: []*api.AllocationListStub{}, Schedulable: true, CreateIndex: 7}},

		{name: "no type", file: "vol.hcl", src: "id = \"v\"\nplugin_id = \"ebs\"\n",
			errs: []string{`vol.hcl:1:1: error: Missing volume type; A volume specification needs type = "csi".`}},
		{name: "a host volume", file: "vol.hcl", src: "id = \"v\"\ntype = \"host\"\n",
			errs: []string{`vol.hcl:2:8: error: Unknown volume type; Volume type "host" is not one Drover has`}},
		{name: "a bad capacity", file: "vol.hcl", src: "type = \"csi\"\ncapacity_max = \"lots\"\n",
			errs: []string{`vol.hcl:2:16: error: Invalid capacity_max; Could not parse "lots" as a size in bytes`}},
		{name: "an unknown argument in a capability", file: "vol.hcl", src: "type = \"csi\"\ncapability {\n  mode = \"rw\"\n}\n",
			errs: []string{`vol.hcl:3:3: error: Unsupported argument; An argument named "mode" is not expected here.`}},
		{name: "two mount_options blocks", file: "vol.hcl", src: "type = \"csi\"\nmount_options {}\nmount_options {}\n",
			errs: []string{`vol.hcl:3:1: error: Duplicate mount_options block`}},
		{name: "segments on one line, as HCL1 takes them", file: "vol.hcl",
			src:  "type = \"csi\"\ntopology_request {\n  required {\n    topology {\n      segments { rack = \"R1\", zone = \"a\" }\n    }\n  }\n}\n",
			errs: []string{`vol.hcl:5:29: error: Invalid single-argument block definition`}},
		{name: "a secret that is not a string", file: "vol.hcl", src: "type = \"csi\"\nsecrets {\n  token = [\"a\"]\n}\n",
			errs: []string{`vol.hcl:3:11: error: Unsuitable value type; Unsuitable value: string required`}},
		{name: "API JSON of the wrong type", file: "vol.json", asJSON: true, src: "{\n  \"ID\": 3\n}",
			errs: []string{`vol.json:2:9: error: Invalid volume JSON; ID: cannot use a JSON number as a string.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol, err := parseVolumeSpec(&specFile{name: tc.file, src: []byte(tc.src)}, tc.asJSON)
			if tc.errs != nil {
				checkSpecError(t, err, tc.errs)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(vol, tc.want) {
				got, _ := json.Marshal(vol)
				want, _ := json.Marshal(tc.want)
				t.Errorf("parsed\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// csiTestNode is node i, which runs CSI plugin ebs as a controller and a
// node plugin, healthy or not.
func csiTestNode(i int, healthy bool) *sdk.Node {
	n := servertest.Node(i, 4000, 8192)
	n.CSINodePlugins = map[string]*sdk.CSIInfo{"ebs": {PluginID: "ebs", Healthy: healthy, Provider: "ebs.csi.aws.com",
		ProviderVersion: "1.2.3", RequiresControllerPlugin: true, RequiresTopologies: true,
		NodeInfo: &sdk.CSINodeInfo{ID: n.ID, RequiresNodeStageVolume: true,
			AccessibleTopology: &sdk.CSITopology{Segments: map[string]string{"zone": "us-east-1a", "rack": "R2"}}}}}
	n.CSIControllerPlugins = map[string]*sdk.CSIInfo{"ebs": {PluginID: "ebs", Healthy: true, Provider: "ebs.csi.aws.com",
		ProviderVersion: "1.2.3", RequiresControllerPlugin: true,
		ControllerInfo: &sdk.CSIControllerInfo{SupportsAttachDetach: true, SupportsListVolumes: true}}}
	return n
}

// The volume and plugin status commands against an agent: register (HCL,
// and the API's JSON that status -json prints, mount flags given again),
// status as a list and of one volume (by prefix), its claim by a job's
// allocation, which neither deregister nor detach undo while it runs,
// then detach and deregister; plugin status as a list and of one plugin.
// The server's refusals come through as errors and exit 1.
func TestVolumeCommands(t *testing.T) {
	s, addr, root := nsAgent(t)
	for i, healthy := range []bool{true, false} {
		if _, _, err := s.RegisterNode(csiTestNode(i, healthy)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()

	_, errOut := mustRun(t, 0, addr, root, "volume", "status")
	if errOut != "No CSI volumes\n" {
		t.Errorf("status without volumes: stderr %q", errOut)
	}
	out, _ := mustRun(t, 0, addr, root, "volume", "register", writeFile(t, dir, "db.hcl", fullVolumeSpec))
	if out != "Volume \"db\" registered\n" {
		t.Errorf("register: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "status")
	if want := "Container Storage Interface\nID  Name      Namespace  Plugin ID  Schedulable  Access Mode\ndb  database  default    ebs        true\n"; out != want {
		t.Errorf("status:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "status", "d")
	checkKVs(t, out, "ID", "db", "Name", "database", "Namespace", "default", "External ID", "vol-0abc", "Plugin ID", "ebs",
		"Provider", "ebs.csi.aws.com", "Version", "1.2.3", "Schedulable", "true", "Controllers Healthy", "2",
		"Controllers Expected", "0", "Nodes Healthy", "1", "Nodes Expected", "0", "Access Mode", "", "Attachment Mode", "",
		"Mount Options", "fs_type: ext4 flags: [REDACTED]")
	checkContains(t, "status of a volume", out, "\nTopologies\nTopology  Segments\n00        rack=R2, zone=us-east-1a\n",
		"\nAllocations\nNo allocations placed\n")
	if strings.Contains(out, "s3cret") {
		t.Errorf("status shows a secret:\n%s", out)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "status", "-short", "db")
	if strings.Contains(out, "Allocations") {
		t.Errorf("status -short:\n%s", out)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "status", "-t", "{{.ExternalID}} {{len .RequestedCapabilities}}", "db")
	if out != "vol-0abc 2\n" {
		t.Errorf("status -t: %q", out)
	}

	// The API's JSON, read back: the mount flags it shows redacted are
	// refused until given again.
	out, _ = mustRun(t, 0, addr, root, "volume", "status", "-json", "db")
	code, _, errOut := runWithStdin(t, addr, root, out, "volume", "register", "-json", "-")
	if code != 1 || !strings.Contains(errOut, `mount flag "[REDACTED]" is what the API shows`) {
		t.Errorf("register -json of what status -json prints: exit %d\n%s", code, errOut)
	}
	changed := strings.Replace(out, `"[REDACTED]"`, `"noatime", "nodev"`, 1)
	if code, _, errOut = runWithStdin(t, addr, root, changed, "volume", "register", "-json", "-"); code != 0 {
		t.Fatalf("register -json with the flags: exit %d\n%s", code, errOut)
	}
	if v := s.Store().Snapshot().CSIVolume("default", "db"); v == nil || v.MountOptions == nil || len(v.MountOptions.MountFlags) != 2 {
		t.Errorf("volume after register -json: %+v", v)
	}

	// Another, for prefixes.
	mustRun(t, 0, addr, root, "volume", "register", writeFile(t, dir, "db2.hcl",
		"id = \"db2\"\ntype = \"csi\"\nplugin_id = \"ebs\"\naccess_mode = \"multi-node-multi-writer\"\nattachment_mode = \"block-device\"\n"))
	_, errOut = mustRun(t, 1, addr, root, "volume", "status", "d")
	checkContains(t, "status of an ambiguous prefix", errOut, "Prefix matched multiple volumes\n\nID   Name      Namespace  Plugin ID  Schedulable  Access Mode\ndb   database  default    ebs        true\ndb2            default    ebs        true")
	_, errOut = mustRun(t, 1, addr, root, "volume", "status", "nope")
	checkContains(t, "status of no volume", errOut, `No volumes(s) with prefix or ID "nope" found`)
	_, errOut = mustRun(t, 1, addr, root, "volume", "status", "-type", "host")
	checkContains(t, "status of host volumes", errOut, "Unsupported volume type: host")
	_, errOut = mustRun(t, 1, addr, root, "volume", "register", writeFile(t, dir, "bad.hcl", "id = \"x\"\ntype = \"csi\"\nplugin_id = \"nfs\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n"))
	checkContains(t, "register with a plugin no node runs", errOut, "no CSI plugin named: nfs could be found")
	bad := writeFile(t, dir, "worse.hcl", "id = \"x\"\ntype = \"csi\"\ncapability {\n  mode = \"rw\"\n}\n")
	_, errOut = mustRun(t, 1, addr, root, "volume", "register", bad)
	checkContains(t, "register of a bad file", errOut, "Error parsing the volume specification:\n"+bad+`:4:3: error: Unsupported argument`)
	_, errOut = mustRun(t, 1, addr, "", "volume", "register", writeFile(t, dir, "anon.hcl", "id = \"db3\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n"))
	checkContains(t, "register without a token", errOut, "403")

	// Claimed by an allocation.
	job := servertest.Job("app", sdk.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].Volumes = map[string]sdk.Opaque{"data": {"Type": "csi", "Source": "db",
		"AccessMode": sdk.CSIAccessModeSingleNodeWriter, "AttachmentMode": sdk.CSIAttachmentModeFilesystem}}
	evalID, _, err := s.RegisterJob(job)
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitForEval(t, s, evalID)
	alloc := s.Store().Snapshot().AllocsByJob("default", "app")[0]
	out, _ = mustRun(t, 0, addr, root, "volume", "status", "db")
	checkKVs(t, out, "Access Mode", "single-node-writer", "Attachment Mode", "file-system")
	checkContains(t, "status of a claimed volume", out, "\nAllocations\nID        Node ID   Task Group", shortID(alloc.ID)+"  "+shortID(alloc.NodeID)+"  g")
	out, _ = mustRun(t, 0, addr, root, "alloc", "status", alloc.ID)
	checkContains(t, "alloc status of the claiming allocation", out, "\nCSI Volumes\nName  ID  Read Only\ndata  db  false\n")
	out, _ = mustRun(t, 0, addr, root, "alloc", "status", "-verbose", alloc.ID)
	checkContains(t, "alloc status -verbose of the claiming allocation", out,
		"\nCSI Volumes\nName  ID  Read Only  Plugin  Provider         Schedulable  Claimed\ndata  db  false      ebs     ebs.csi.aws.com  true         true\n")
	_, errOut = mustRun(t, 1, addr, root, "volume", "deregister", "db")
	checkContains(t, "deregister of a volume in use", errOut, "volume in use: db")
	_, errOut = mustRun(t, 1, addr, root, "volume", "detach", "db", alloc.NodeID)
	checkContains(t, "detach of a volume in use", errOut, "is in use by allocation "+alloc.ID+" on node "+alloc.NodeID)
	_, errOut = mustRun(t, 1, addr, root, "volume", "detach", "db", "node-")
	checkContains(t, "detach from an ambiguous node prefix", errOut, "Prefix matched multiple nodes\n\nID         Name       Status\nnode-0000  node-0000  ready\nnode-0001  node-0001  ready")

	// Plugins.
	out, _ = mustRun(t, 0, addr, root, "plugin", "status")
	if want := "Container Storage Interface\nID   Provider         Controllers Healthy/Expected  Nodes Healthy/Expected\nebs  ebs.csi.aws.com  2/0                           1/0\n"; out != want {
		t.Errorf("plugin status:\n%s\nwant:\n%s", out, want)
	}
	out, _ = mustRun(t, 0, addr, root, "plugin", "status", "-verbose", "eb")
	checkKVs(t, out, "ID", "ebs", "Provider", "ebs.csi.aws.com", "Version", "1.2.3", "Controllers Healthy", "2", "Nodes Healthy", "1")
	checkContains(t, "plugin status -verbose", out, "\nController Capabilities\n  CONTROLLER_ATTACH_DETACH\n  LIST_VOLUMES\n",
		"\nNode Capabilities\n  STAGE_UNSTAGE_VOLUME\n  VOLUME_ACCESSIBILITY_CONSTRAINTS\n",
		"\nAccessible Topologies\nNode ID    Accessible Topology\nnode-0000  rack=R2,zone=us-east-1a\nnode-0001  rack=R2,zone=us-east-1a\n",
		"\nAllocations\nNo allocations placed\n")
	_, errOut = mustRun(t, 1, addr, root, "plugin", "status", "nfs")
	checkContains(t, "plugin status of no plugin", errOut, `No plugins(s) with prefix or ID "nfs" found`)
	_, errOut = mustRun(t, 1, addr, root, "plugin", "status", "-type", "device")
	checkContains(t, "plugin status of another type", errOut, "Unsupported plugin type: device")
	mustRun(t, 0, addr, root, "plugin", "list") // the scheduler plugins, still

	// Finished on its node, the allocation lets go.
	if _, err := s.UpdateAllocsFromClient([]server.AllocUpdate{{ID: alloc.ID, ClientStatus: sdk.AllocClientStatusComplete}}); err != nil {
		t.Fatal(err)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "detach", "db", alloc.NodeID)
	if out != "" {
		t.Errorf("detach printed %q, Nomad's prints nothing", out)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "deregister", "-force", "db")
	if out != "Successfully deregistered volume \"db\"!\n" {
		t.Errorf("deregister: %q", out)
	}
	out, _ = mustRun(t, 0, addr, root, "volume", "status")
	if want := "Container Storage Interface\nID   Name  Namespace  Plugin ID  Schedulable  Access Mode\ndb2        default    ebs        true\n"; out != want {
		t.Errorf("status after the deregistration:\n%s\nwant:\n%s", out, want)
	}
}

// volume init writes the example specification in HCL and in HCL's JSON
// syntax; both are volumes volume register reads, the same volume; an
// existing file is not overwritten.
func TestVolumeInit(t *testing.T) {
	dir := t.TempDir()
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		ui := cli.NewMockUi()
		cmd := &volumeInitCommand{meta: &meta{ui: ui, out: ui.OutputWriter, in: strings.NewReader(""), now: time.Now}}
		if code := cmd.Run(args); code != want {
			t.Fatalf("volume init %v: exit %d, want %d; %s", args, code, want, ui.ErrorWriter.String())
		}
		return ui.OutputWriter.String(), ui.ErrorWriter.String()
	}
	hclPath, jsonPath := filepath.Join(dir, "volume.hcl"), filepath.Join(dir, "volume.json")
	if out, _ := run(0, hclPath); !strings.Contains(out, "Example volume specification written to "+hclPath) {
		t.Fatalf("output %q", out)
	}
	if out, _ := run(0, "-json", "-quiet", jsonPath); out != "" {
		t.Fatalf("-quiet printed %q", out)
	}
	if _, errOut := run(1, hclPath); !strings.Contains(errOut, "already exists") {
		t.Fatalf("an existing file: %q", errOut)
	}
	var vols []*api.CSIVolume
	for _, p := range []string{hclPath, jsonPath} {
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		vol, err := parseVolumeSpec(&specFile{name: p, src: src}, false)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		vols = append(vols, vol)
	}
	if !reflect.DeepEqual(vols[0], vols[1]) {
		a, _ := json.Marshal(vols[0])
		b, _ := json.Marshal(vols[1])
		t.Fatalf("the examples differ:\n%s\n%s", a, b)
	}
	v := vols[0]
	if v.ID != "database" || v.PluginID != "aws-ebs0" || len(v.RequestedCapabilities) != 2 || v.MountOptions.FSType != "ext4" ||
		v.RequestedTopologies.Required[0].Segments["zone"] != "us-east-1a" || v.Secrets["example_secret"] != "xyzzy" {
		t.Fatalf("example volume %+v", v)
	}
}
