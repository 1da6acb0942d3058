// Command abi2goplugin is a go-plugin binary that speaks only ABI major 2.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	goplugin "github.com/hashicorp/go-plugin"
)

func main() {
	g := plugin.NewGuest(plugin.Info{Name: "abi2"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error { return nil }))
	cfg := plugin.ServeConfig(g)
	cfg.HandshakeConfig.ProtocolVersion = 2
	cfg.VersionedPlugins = map[int]goplugin.PluginSet{2: cfg.VersionedPlugins[1]}
	goplugin.Serve(cfg)
}
