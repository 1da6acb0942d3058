// Command strict is version 3 of the "reload" test plugin: it checks its
// configuration (ABI 1.7) and takes none, as an upgrade that refuses what
// its predecessor ignored.
package main

import (
	"github.com/drover-sched/drover/host/agent/testdata/reload/slow"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
)

type strict struct{ *slow.Scheduler }

// CheckConfig implements sdk.ConfigChecker.
func (strict) CheckConfig(config map[string]string) error { return sdk.CheckConfigKeys(config) }

func init() { plugin.Register(plugin.Info{Name: "reload", Version: "3"}, strict{&slow.Scheduler{}}) }

func main() { plugin.Serve() }
