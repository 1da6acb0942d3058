// Command unchecked is a go-plugin binary that declares ABI 1.7 but does
// not serve the Scheduler service's CheckConfig method, as a plugin
// written without the Go SDK need not: it accepts any configuration.
package main

import (
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/plugin/grpcwire"
	goplugin "github.com/hashicorp/go-plugin"
)

// refusing would refuse any configuration, were it asked.
type refusing struct{ sdk.SchedulerFunc }

func (refusing) CheckConfig(config map[string]string) error { return sdk.CheckConfigKeys(config) }

func main() {
	g := plugin.NewGuest(plugin.Info{Name: "unchecked"}, refusing{func(*sdk.Context, *sdk.Evaluation) error { return nil }})
	cfg := plugin.ServeConfig(g)
	sp := cfg.VersionedPlugins[1][grpcwire.PluginName].(*grpcwire.SchedulerPlugin)
	serve := sp.NewServer
	// The server without its CheckConfig: only SchedulerServer's methods.
	sp.NewServer = func(b *goplugin.GRPCBroker) grpcwire.SchedulerServer {
		return struct{ grpcwire.SchedulerServer }{serve(b)}
	}
	goplugin.Serve(cfg)
}
