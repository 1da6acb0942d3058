package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/sdk"
)

// plugin status, as Nomad 1.6's (command/plugin_status*.go): the CSI
// plugins, which the nodes report and jobs run. Drover's scheduler
// plugins are plugin list's and plugin inspect's.

type pluginStatusCommand struct{ *meta }

func (c *pluginStatusCommand) Synopsis() string {
	return "Display status information about CSI plugins"
}

func (c *pluginStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover plugin status [options] [plugin]

  Without an ID, lists the CSI plugins: those the nodes report running,
  and those jobs run (a task with a csi_plugin block) that no node
  reports yet; each with its provider, and how many of its controllers
  and node plugins are healthy (on ready nodes) of those its jobs expect
  (a group's count; a system job's allocations). With the ID of a plugin,
  or a unique prefix of it, shows it and the allocations that run it. The
  scheduler plugins are listed by plugin list. With ACLs, the token needs
  plugin list to list, plugin read to show one; the allocations shown
  are those of -namespace's namespace ("*": any) where it may read jobs.
` + apiOptions + `

Status options:

  -type=csi        The type of plugins: csi, the only one.
  -short           Show the plugin's fields only.
  -verbose         Show full IDs, and the plugin's controller and node
                   capabilities and its nodes' topologies.` + formatOptions)
}

func (c *pluginStatusCommand) Run(args []string) int {
	fs := c.flags("plugin status", true)
	typ := fs.String("type", "", "")
	short := fs.Bool("short", false, "")
	verbose := fs.Bool("verbose", false, "")
	tmpl := fs.String("t", "", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 1, "either no arguments or one: <plugin>") || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	if t := strings.ToLower(*typ); t != "" && t != "csi" {
		c.ui.Error(fmt.Sprintf("Unsupported plugin type: %s", *typ))
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	id := idFormat(*verbose)
	list := func(prefix string) ([]*httpapi.CSIPluginListStub, bool) {
		var ps []*httpapi.CSIPluginListStub
		if _, err := cl.Get(bg, "/v1/plugins?type=csi&prefix="+url.QueryEscape(prefix), &ps); err != nil {
			c.errorf("querying CSI plugins: %v", err)
			return nil, false
		}
		slices.SortFunc(ps, func(a, b *httpapi.CSIPluginListStub) int { return strings.Compare(a.ID, b.ID) })
		return ps, true
	}
	if fs.NArg() == 0 {
		ps, ok := list("")
		if !ok {
			return exitError
		}
		if code, printed := c.printJSONOrTemplate(*tmpl, ps); printed {
			return code
		}
		c.ui.Output(csiBanner)
		if len(ps) == 0 {
			c.ui.Error("No CSI plugins")
			return exitOK
		}
		c.ui.Output(formatCSIPlugins(ps, id))
		return exitOK
	}
	prefix := fs.Arg(0)
	ps, ok := list(prefix)
	switch {
	case !ok:
		return exitError
	case len(ps) == 0:
		return c.errorf("No plugins(s) with prefix or ID %q found", prefix)
	case len(ps) > 1 && ps[0].ID != prefix:
		c.ui.Error("Prefix matched multiple plugins\n\n" + formatCSIPlugins(ps, id))
		return exitError
	}
	var p httpapi.CSIPlugin
	if _, err := cl.Get(bg, "/v1/plugin/csi/"+url.PathEscape(ps[0].ID), &p); err != nil {
		return c.errorf("querying plugin: %v", err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, &p); printed {
		return code
	}
	c.kv("ID", p.ID,
		"Provider", p.Provider,
		"Version", p.Version,
		"Controllers Healthy", fmt.Sprint(p.ControllersHealthy),
		"Controllers Expected", fmt.Sprint(p.ControllersExpected),
		"Nodes Healthy", fmt.Sprint(p.NodesHealthy),
		"Nodes Expected", fmt.Sprint(p.NodesExpected))
	if *short {
		return exitOK
	}
	if *verbose {
		if caps := controllerCaps(p.Controllers); len(caps) > 0 {
			fmt.Fprintln(c.out, "\nController Capabilities")
			fmt.Fprintln(c.out, "  "+strings.Join(caps, "\n  "))
		}
		if caps := nodeCaps(p.Nodes); len(caps) > 0 {
			fmt.Fprintln(c.out, "\nNode Capabilities")
			fmt.Fprintln(c.out, "  "+strings.Join(caps, "\n  "))
		}
		rows := [][]string{{"Node ID", "Accessible Topology"}}
		for _, nodeID := range slices.Sorted(maps.Keys(p.Nodes)) {
			if info := p.Nodes[nodeID].NodeInfo; info != nil && info.AccessibleTopology != nil {
				rows = append(rows, []string{id(nodeID), segmentPairs(info.AccessibleTopology.Segments, ",")})
			}
		}
		if len(rows) > 1 {
			fmt.Fprintln(c.out, "\nAccessible Topologies")
			c.table(rows)
		}
	}
	fmt.Fprintln(c.out, "\nAllocations")
	if len(p.Allocations) == 0 {
		fmt.Fprintln(c.out, "No allocations placed")
		return exitOK
	}
	c.table(allocRows(p.Allocations, id))
	return exitOK
}

// formatCSIPlugins renders CSI plugins as Nomad's plugin status lists
// them.
func formatCSIPlugins(ps []*httpapi.CSIPluginListStub, id func(string) string) string {
	rows := [][]string{{"ID", "Provider", "Controllers Healthy/Expected", "Nodes Healthy/Expected"}}
	for _, p := range ps {
		rows = append(rows, []string{id(p.ID), p.Provider, fmt.Sprintf("%d/%d", p.ControllersHealthy, p.ControllersExpected),
			fmt.Sprintf("%d/%d", p.NodesHealthy, p.NodesExpected)})
	}
	return formatTable(rows)
}

// controllerCaps are the CSI capabilities some controller of the plugin
// reports, by their CSI names, sorted.
func controllerCaps(controllers map[string]*sdk.CSIInfo) []string {
	set := map[string]bool{}
	for _, c := range controllers {
		info := c.ControllerInfo
		if info == nil {
			continue
		}
		for name, ok := range map[string]bool{
			"CREATE_DELETE_VOLUME": info.SupportsCreateDelete, "CONTROLLER_ATTACH_DETACH": info.SupportsAttachDetach,
			"LIST_VOLUMES": info.SupportsListVolumes, "GET_CAPACITY": info.SupportsGetCapacity,
			"CREATE_DELETE_SNAPSHOT": info.SupportsCreateDeleteSnapshot, "LIST_SNAPSHOTS": info.SupportsListSnapshots,
			"CLONE_VOLUME": info.SupportsClone, "ATTACH_READONLY": info.SupportsReadOnlyAttach,
			"EXPAND_VOLUME": info.SupportsExpand, "LIST_VOLUMES_PUBLISHED_NODES": info.SupportsListVolumesAttachedNodes,
			"VOLUME_CONDITION": info.SupportsCondition, "GET_VOLUME": info.SupportsGet,
		} {
			set[name] = set[name] || ok
		}
	}
	return trueKeys(set)
}

// nodeCaps are the CSI capabilities some node plugin of the plugin
// reports, by their CSI names, sorted.
func nodeCaps(nodes map[string]*sdk.CSIInfo) []string {
	set := map[string]bool{}
	for _, n := range nodes {
		set["VOLUME_ACCESSIBILITY_CONSTRAINTS"] = set["VOLUME_ACCESSIBILITY_CONSTRAINTS"] || n.RequiresTopologies
		info := n.NodeInfo
		if info == nil {
			continue
		}
		for name, ok := range map[string]bool{"STAGE_UNSTAGE_VOLUME": info.RequiresNodeStageVolume,
			"GET_VOLUME_STATS": info.SupportsStats, "EXPAND_VOLUME": info.SupportsExpand,
			"VOLUME_CONDITION": info.SupportsCondition} {
			set[name] = set[name] || ok
		}
	}
	return trueKeys(set)
}

// trueKeys are the keys of set that are true, sorted.
func trueKeys(set map[string]bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if set[k] {
			out = append(out, k)
		}
	}
	return out
}
