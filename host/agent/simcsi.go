package agent

import (
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/drover-sched/drover/sdk"
)

// The CSI plugins of a dev node, as a Nomad client reports them
// (Node.CSIControllerPlugins and Node.CSINodePlugins): a task with a
// csi_plugin block is a plugin, fingerprinted once its allocation runs.
// A simulated plugin does nothing but report itself:
//
//   - Healthy once its allocation runs (Nomad's probe succeeds; the
//     simulation has no socket to probe, and no health_timeout to miss).
//   - A node plugin (type node or monolith) reports NodeInfo with the
//     node's ID, no volume limit (MaxVolumes 0, which Drover reads as
//     none) and no topology.
//   - A controller (type controller or monolith) reports ControllerInfo
//     with SupportsAttachDetach.
//   - RequiresControllerPlugin, which a real plugin derives from its own
//     capabilities (the same for its node and controller instances), is
//     true for a controller or a monolith and false for type node: a
//     simulated plugin needs a healthy controller only once a controller
//     of it runs somewhere. A plugin deployed as node plugins alone is
//     schedulable by itself; one whose controller stops is not, until a
//     controller runs again.
//   - Provider and ProviderVersion are the task config's csi_provider and
//     csi_provider_version, or the plugin's ID and "simulated".
//   - When its allocation stops (or fails, or its tasks end), the plugin
//     turns unhealthy on the node, with the description Nomad's last
//     fingerprint of a plugin whose task stopped gives
//     (csimanager's instanceManager runs one on shutdown, and the client
//     keeps the entry): it does not leave the node. It leaves when its
//     allocation is garbage-collected, as the simulation derives its
//     report from the allocations in the state (Nomad's client keeps it
//     until it restarts; Nomad's servers drop the node from the plugin
//     as soon as the allocation stops). A restarted dev agent reports the
//     plugins that run, as a restarted Nomad client fingerprints them
//     again.
//
// A node's report changes only when a plugin comes, goes or changes
// health; the node then registers again, as a Nomad client updates its
// node after a fingerprint change.

// simCSIStopped is a stopped plugin's health description: what the last
// fingerprint of Nomad's csimanager reports once the plugin's gRPC
// connection is closed.
const simCSIStopped = "failed fingerprinting with error: rpc error: code = Canceled desc = grpc: the client connection is closing"

// simCSI is what a dev node reports of its CSI plugins, by plugin ID.
type simCSI struct {
	controllers, nodes map[string]*sdk.CSIInfo
}

// equal reports whether both reports are the same, their update times
// included (an entry keeps its time while it does not change).
func (c simCSI) equal(o simCSI) bool {
	same := func(a, b map[string]*sdk.CSIInfo) bool {
		return maps.EqualFunc(a, b, func(x, y *sdk.CSIInfo) bool { return reflect.DeepEqual(x, y) })
	}
	return same(c.controllers, o.controllers) && same(c.nodes, o.nodes)
}

// simCSIPlugin is one plugin task of an allocation.
type simCSIPlugin struct {
	alloc *sdk.Allocation
	id    string
	typ   string
	task  *sdk.Task
}

// simCSIPlugins returns what node nodeID reports of the CSI plugins its
// allocations run, prev being its last report, at now. Per plugin and
// role (controller, node), the running allocation reports it healthy (the
// latest created when several run it, as a Nomad client's registry keeps
// the last plugin registered); without one, the entry of prev whose
// allocation stopped (and is still in allocs) turns unhealthy. An entry
// that does not change keeps prev's update time.
func simCSIPlugins(nodeID string, allocs []*sdk.Allocation, prev simCSI, now time.Time) simCSI {
	// The plugins that run, by role (controller, node) and plugin ID.
	running := map[string]map[string]simCSIPlugin{}
	present := map[string]bool{} // allocations in the state
	for _, a := range allocs {
		present[a.ID] = true
		if a.ClientStatus != sdk.AllocClientStatusRunning || a.Job == nil {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			p, ok := csiPluginOf(a, t)
			if !ok {
				continue
			}
			for _, role := range csiRoles(p.typ) {
				if running[role] == nil {
					running[role] = map[string]simCSIPlugin{}
				}
				if cur, ok := running[role][p.id]; !ok || newerAlloc(a, cur.alloc) {
					running[role][p.id] = p
				}
			}
		}
	}
	report := func(role string, old map[string]*sdk.CSIInfo) map[string]*sdk.CSIInfo {
		out := map[string]*sdk.CSIInfo{}
		for id, p := range running[role] {
			out[id] = p.info(nodeID, role == sdk.CSIPluginTypeController)
		}
		for id, info := range old {
			if _, ok := out[id]; ok || !present[info.AllocID] {
				continue
			}
			stopped := *info
			stopped.Healthy, stopped.HealthDescription = false, simCSIStopped
			out[id] = &stopped
		}
		for id, info := range out {
			if was := old[id]; was != nil {
				info.UpdateTime = was.UpdateTime
				if reflect.DeepEqual(info, was) {
					continue
				}
			}
			info.UpdateTime = now.UTC()
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return simCSI{controllers: report(sdk.CSIPluginTypeController, prev.controllers),
		nodes: report(sdk.CSIPluginTypeNode, prev.nodes)}
}

// csiPluginOf reads task t's csi_plugin block; ok is false when it has
// none, or one without an ID or with a type Nomad does not know (a job
// validation refuses both).
func csiPluginOf(a *sdk.Allocation, t *sdk.Task) (simCSIPlugin, bool) {
	if t.CSIPluginConfig == nil {
		return simCSIPlugin{}, false
	}
	p := simCSIPlugin{alloc: a, task: t, id: opaqueString(t.CSIPluginConfig, "ID"), typ: opaqueString(t.CSIPluginConfig, "Type")}
	return p, p.id != "" && len(csiRoles(p.typ)) > 0
}

// csiRoles are the entries a plugin of type typ reports: a monolith is
// both a controller and a node plugin, as Nomad registers it twice.
func csiRoles(typ string) []string {
	switch typ {
	case sdk.CSIPluginTypeController, sdk.CSIPluginTypeNode:
		return []string{typ}
	case sdk.CSIPluginTypeMonolith:
		return []string{sdk.CSIPluginTypeController, sdk.CSIPluginTypeNode}
	}
	return nil
}

// newerAlloc reports whether a was created after b.
func newerAlloc(a, b *sdk.Allocation) bool {
	if a.CreateIndex != b.CreateIndex {
		return a.CreateIndex > b.CreateIndex
	}
	return a.ID > b.ID
}

// info is the healthy entry p reports on node nodeID, as a controller or
// as a node plugin.
func (p simCSIPlugin) info(nodeID string, controller bool) *sdk.CSIInfo {
	info := &sdk.CSIInfo{
		PluginID: p.id, AllocID: p.alloc.ID, Healthy: true, HealthDescription: "healthy",
		Provider: p.id, ProviderVersion: "simulated",
		RequiresControllerPlugin: p.typ != sdk.CSIPluginTypeNode,
	}
	if v := opaqueString(p.task.Config, "csi_provider"); v != "" {
		info.Provider = v
	}
	if v := opaqueString(p.task.Config, "csi_provider_version"); v != "" {
		info.ProviderVersion = v
	}
	if controller {
		info.ControllerInfo = &sdk.CSIControllerInfo{SupportsAttachDetach: true}
	} else {
		info.NodeInfo = &sdk.CSINodeInfo{ID: nodeID}
	}
	return info
}

// opaqueString is o[key] as a string ("" when missing).
func opaqueString(o sdk.Opaque, key string) string {
	v, ok := o[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
