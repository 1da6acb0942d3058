// Command zones is a zone-balancing scheduler plugin for Drover. The same
// main builds as a WebAssembly module or as a go-plugin binary:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o zones.wasm .
//	go build -o zones .
//
// See README.md for how to install it and select it from a job.
package main

import (
	"github.com/drover-sched/drover/examples/plugins/zones/zones"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	// A plugin registers in init: a wasm reactor runs init but never main.
	// No Types: jobs pick it with scheduler = "zones".
	plugin.Register(plugin.Info{Name: "zones", Version: "1.0.0"}, zones.Scheduler{})
}

func main() { plugin.Serve() }
