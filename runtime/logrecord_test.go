package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// A plugin's log records go to the agent's log under the host's tags: an
// attribute cannot replace the plugin's name, the eval's ID or the
// record's level (JSON readers keep the last of duplicate keys), and a
// record is bounded as a line of the plugin's output is.
func TestDispatch_PluginLogRecordsKeepTheHostsTagsAndAreBounded(t *testing.T) {
	s := sdk.SchedulerFunc(func(ctx *sdk.Context, eval *sdk.Evaluation) error {
		ctx.Logger.Error("I am the service scheduler", "plugin", "service", "eval_id", "fake", "level", "debug", "mode", "x")
		ctx.Logger.Info(strings.Repeat("m", 1<<20), "big", strings.Repeat("v", 1<<20))
		e := eval.Copy()
		e.Status = sdk.EvalStatusComplete
		return ctx.Planner.UpdateEval(e)
	})
	p := runtime.NewPlugin(native.New(plugin.Info{Name: "evil"}, func() sdk.Scheduler { return s }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	eval := h.RegisterEval(job)
	call := runtimetest.Call(h, eval)
	var buf bytes.Buffer
	call.Log = zerolog.New(&buf).With().Str("eval_id", eval.ID).Logger()
	if err := p.Process(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines logged, want 2", len(lines))
	}
	var first map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["plugin"] != "evil" || first["eval_id"] != eval.ID || first["level"] != "error" || first["mode"] != "x" {
		t.Fatalf("logged %s, want the host's plugin name, eval ID and the record's level", lines[0])
	}
	if first["attr.plugin"] != "service" || first["attr.eval_id"] != "fake" || first["attr.level"] != "debug" {
		t.Fatalf("logged %s, want the plugin's own attributes kept apart", lines[0])
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if n := len(lines[1]); n > 17<<10 || second["truncated"] != true {
		t.Fatalf("a record of 2 MiB logged as %d bytes, truncated %v", n, second["truncated"])
	}
}

// A plugin's failure message is quoted in the eval's error, which the
// agent logs with every delivery: it is bounded as a record of its log is,
// not 64 MiB a line because the plugin said so.
func TestPlugin_FailureMessageIsBounded(t *testing.T) {
	s := sdk.SchedulerFunc(func(*sdk.Context, *sdk.Evaluation) error {
		return errors.New("boom: " + strings.Repeat("z", 1<<20))
	})
	p := runtime.NewPlugin(native.New(plugin.Info{Name: "big"}, func() sdk.Scheduler { return s }),
		runtime.DefaultPoolConfig(1), zerolog.Nop())
	defer p.Close(context.Background())
	h := sdktest.New()
	job := sdktest.Job("web", 1)
	h.UpsertJob(job)
	err := p.Process(context.Background(), runtimetest.Call(h, h.RegisterEval(job)))
	if err == nil || !strings.Contains(err.Error(), "boom: zzz") || len(err.Error()) > 17<<10 {
		t.Fatalf("err of %d bytes, want the start of the plugin's message, at most about 16 KiB", len(fmt.Sprint(err)))
	}
}
