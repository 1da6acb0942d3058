// Command initpanic is a scheduler plugin that panics in init, before it
// registers or writes its handshake.
package main

import "github.com/drover-sched/drover/sdk/plugin"

func init() {
	panic("initpanic: no configuration file")
}

func main() { plugin.Serve() }
