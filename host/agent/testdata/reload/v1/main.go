// Command v1 is version 1 of the "reload" test plugin.
package main

import (
	"github.com/drover-sched/drover/host/agent/testdata/reload/slow"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() { plugin.Register(plugin.Info{Name: "reload", Version: "1"}, &slow.Scheduler{}) }

func main() { plugin.Serve() }
