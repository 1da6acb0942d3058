package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/rs/zerolog"
)

func TestSandbox_NothingOfTheHostUnlessConfigured(t *testing.T) {
	path := wasmtest.Build(t, "./runtime/wasm/testdata/sandbox")
	cases := []struct {
		name      string
		configure func(*wasm.Config)
		want      map[string]any
	}{
		{"default", func(*wasm.Config) {},
			map[string]any{"env": "0", "greeting": "", "recent_clock": "false", "fs_error": "true"}},
		{"env and clock granted", func(c *wasm.Config) { c.Env = map[string]string{"GREETING": "hi"}; c.SysClock = true },
			map[string]any{"env": "1", "greeting": "hi", "recent_clock": "true", "fs_error": "true"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := wasm.DefaultConfig()
			tc.configure(&cfg)
			p := onePlugin(t, path, cfg)
			h, job := oneJob()
			var logs bytes.Buffer
			call := runtimetest.Call(h, h.RegisterEval(job))
			call.Log = zerolog.New(&logs)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Process(ctx, call); err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(logs.Bytes(), &got); err != nil {
				t.Fatalf("log %q: %v", logs.String(), err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (log: %s)", k, got[k], v, logs.String())
				}
			}
		})
	}
}
