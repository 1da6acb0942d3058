package bench

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/rs/zerolog"
)

func TestRun_AllScenariosPlaceEverything(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nodes = []int{60}
	// Two runs: the second finds the instance warm from the first, whose
	// cluster it must forget (Resync).
	cfg.Runs = 2
	plugins := NativePlugins(cfg.Log)
	defer plugins.Close(context.Background())
	cfg.Plugins = plugins.Plugin
	rows, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(Scenarios) {
		t.Fatalf("rows = %d", len(rows))
	}
	for _, r := range rows {
		want := 0
		for _, sc := range Scenarios {
			if sc.Name == r.Scenario {
				want = sc.Jobs * sc.Count
				if sc.Count == 0 {
					want = sc.Jobs * 60
				}
			}
		}
		// 60 nodes x 4000 MHz hold 2400 tasks of 100 MHz: everything fits.
		if r.Placed != want || r.Failed != 0 || r.Status != fmt.Sprintf("complete:%d", r.Evals*cfg.Runs) {
			t.Errorf("%s: placed %d failed %d status %s, want %d placed", r.Scenario, r.Placed, r.Failed, r.Status, want)
		}
	}
}

func TestConfig_Validate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Plugins = NativePlugins(cfg.Log).Plugin
	cfg.Scenarios = []string{"no-such-scenario"}
	if err := cfg.Validate(); err == nil {
		t.Fatal("unknown scenario accepted")
	}
}

// BenchmarkNative times each scenario with the native runtime:
//
//	go test ./bench -run '^$' -bench Native -benchtime 3x -cpuprofile cpu.out
func BenchmarkNative(b *testing.B) {
	benchScenarios(b, NativePlugins(zerolog.Nop()))
}

// BenchmarkWasm times each scenario with the wasm plugins in
// DROVER_PLUGIN_DIR (make build puts them in bin/plugins), with deadlines
// enforced as the agent runs them (BENCH_DEADLINES=0 runs them without):
//
//	DROVER_PLUGIN_DIR=$PWD/bin/plugins go test ./bench -run '^$' -bench Wasm
func BenchmarkWasm(b *testing.B) {
	dir := os.Getenv("DROVER_PLUGIN_DIR")
	if dir == "" {
		b.Skip("DROVER_PLUGIN_DIR is not set")
	}
	wcfg := wasm.DefaultConfig()
	wcfg.EnforceDeadline = os.Getenv("BENCH_DEADLINES") != "0"
	plugins, err := WasmPlugins(context.Background(), dir, wcfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer plugins.Close(context.Background())
	benchScenarios(b, plugins)
}

// benchScenarios runs every scenario at 1,000 and 5,000 nodes with plugins,
// on warm instances (BENCH_FRESH=1: a fresh instance for every run;
// BENCH_PORTS=1: each group asks for a dynamic port, as -ports does).
func benchScenarios(b *testing.B, plugins *Plugins) {
	plugins.Fresh = os.Getenv("BENCH_FRESH") == "1"
	ports := os.Getenv("BENCH_PORTS") == "1"
	for _, n := range []int{1000, 5000} {
		for _, sc := range Scenarios {
			b.Run(fmt.Sprintf("%s/nodes=%d", sc.Name, n), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Plugins, cfg.Ports = plugins.Plugin, ports
				placed := 0
				var total float64
				for i := 0; i < b.N; i++ {
					rr, err := runOne(context.Background(), cfg, sc, n)
					if err != nil {
						b.Fatal(err)
					}
					placed += rr.Placed
					total += rr.Total.Seconds()
				}
				b.ReportMetric(float64(placed)/total, "placements/s")
				b.ReportMetric(total/float64(b.N)*1000, "ms/scenario")
			})
		}
	}
}

// BenchmarkGoplugin times each scenario with the go-plugin executables in
// DROVER_GOPLUGIN_DIR (make goplugins puts them in bin/goplugins).
func BenchmarkGoplugin(b *testing.B) {
	dir := os.Getenv("DROVER_GOPLUGIN_DIR")
	if dir == "" {
		b.Skip("DROVER_GOPLUGIN_DIR is not set")
	}
	plugins, err := GopluginPlugins(context.Background(), dir, goplugin.DefaultConfig(), zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer plugins.Close(context.Background())
	benchScenarios(b, plugins)
}
