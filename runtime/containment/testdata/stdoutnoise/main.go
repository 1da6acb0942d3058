// Command stdoutnoise is a go-plugin binary that prints to stdout before
// the go-plugin handshake, which corrupts it.
package main

import (
	"fmt"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

func init() {
	plugin.Register(plugin.Info{Name: "stdoutnoise"}, sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error { return nil }))
}

func main() {
	fmt.Println("hello from a chatty plugin")
	plugin.Serve()
}
