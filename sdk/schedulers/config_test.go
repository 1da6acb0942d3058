package schedulers_test

import (
	"testing"

	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/schedulers/core"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/system"
	"github.com/drover-sched/drover/sdk/sdktest"
)

// TestBuiltins_CheckConfig: the built-in schedulers check the
// configuration of their plugin blocks when they are loaded (ABI 1.7).
// Service, batch and system take none, so any key is refused; core takes
// its GC thresholds, the ones set checked as durations, the others left
// for the host to fill.
func TestBuiltins_CheckConfig(t *testing.T) {
	tests := []struct {
		name   string
		sched  sdk.Scheduler
		config map[string]string
		want   string // "" when accepted
	}{
		{"service, none", &generic.Scheduler{}, nil, ""},
		{"service, a key", &generic.Scheduler{}, map[string]string{"zone_attribute": "meta.zone"},
			`unknown configuration key "zone_attribute" (it takes none)`},
		{"batch, a key", &generic.Scheduler{Batch: true}, map[string]string{"k": "v"}, `unknown configuration key "k" (it takes none)`},
		{"system, none", &system.Scheduler{}, map[string]string{}, ""},
		{"system, a key", &system.Scheduler{}, map[string]string{"k": "v"}, `unknown configuration key "k" (it takes none)`},
		{"core, none", &core.Scheduler{}, nil, ""},
		{"core, some thresholds", &core.Scheduler{}, map[string]string{sdk.ConfigEvalGCThreshold: "2h", sdk.ConfigNodeGCThreshold: "0s"}, ""},
		{"core, every threshold", &core.Scheduler{}, map[string]string{sdk.ConfigEvalGCThreshold: "1h",
			sdk.ConfigBatchEvalGCThreshold: "24h", sdk.ConfigJobGCThreshold: "4h", sdk.ConfigNodeGCThreshold: "24h",
			sdk.ConfigDeploymentGCThreshold: "1h"}, ""},
		{"core, a bad threshold", &core.Scheduler{}, map[string]string{sdk.ConfigJobGCThreshold: "4 hours"},
			`job_gc_threshold = "4 hours" is not a duration`},
		{"core, a negative threshold", &core.Scheduler{}, map[string]string{sdk.ConfigJobGCThreshold: "-1h"},
			`job_gc_threshold = "-1h" is not a duration`},
		{"core, a typo", &core.Scheduler{}, map[string]string{"eval_gc_treshold": "1h"},
			`unknown configuration key "eval_gc_treshold" (it takes "eval_gc_threshold", "batch_eval_gc_threshold", "job_gc_threshold", "node_gc_threshold", "deployment_gc_threshold")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := sdktest.New()
			h.Config = tt.config
			sdktest.WantConfig(t, h.CheckConfig(tt.sched), tt.want)
		})
	}
}
