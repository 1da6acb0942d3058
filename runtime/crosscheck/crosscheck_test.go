// Package crosscheck_test runs the same schedulers in every runtime: a
// differential test (identical plans from wasm, go-plugin and native) and
// the runtime benchmarks recorded in docs/benchmarks.md.
package crosscheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/goplugin/goplugintest"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/runtime/runtimetest"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/sdktest"
	"github.com/rs/zerolog"
)

// A runtime to compare: how to make a factory for a plugin package whose
// scheduler is newSched.
type flavour struct {
	name string
	load func(tb testing.TB, pkg string, info plugin.Info, newSched func() sdk.Scheduler) runtime.Factory
}

var flavours = []flavour{
	{"native", func(_ testing.TB, _ string, info plugin.Info, newSched func() sdk.Scheduler) runtime.Factory {
		return native.New(info, newSched)
	}},
	{"wasm", func(tb testing.TB, pkg string, _ plugin.Info, _ func() sdk.Scheduler) runtime.Factory {
		return loadWasm(tb, pkg, true)
	}},
	{"goplugin", func(tb testing.TB, pkg string, _ plugin.Info, _ func() sdk.Scheduler) runtime.Factory {
		return loadGoplugin(tb, pkg, goplugin.DefaultConfig())
	}},
}

func loadGoplugin(tb testing.TB, pkg string, cfg goplugin.Config) runtime.Factory {
	f, err := goplugin.Load(context.Background(), goplugintest.Build(tb, pkg), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func loadWasm(tb testing.TB, pkg string, enforceDeadline bool) runtime.Factory {
	cfg := wasm.DefaultConfig()
	cfg.EnforceDeadline = enforceDeadline
	m, err := wasm.LoadFile(context.Background(), wasmtest.Build(tb, pkg), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// keepOpen is a factory whose pool may close without closing it.
type keepOpen struct{ runtime.Factory }

func (keepOpen) Close(context.Context) error { return nil }

func pool(tb testing.TB, f runtime.Factory) *runtime.Plugin {
	cfg := runtime.DefaultPoolConfig(1)
	cfg.MaxEvals, cfg.MaxMemoryBytes = 0, 0
	p := runtime.NewPlugin(f, cfg, zerolog.Nop())
	tb.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// scenario builds a seeded cluster and job stream: nodes of varied size in
// two datacenters and four racks, some down or ineligible, and jobs with
// varied counts, sizes, constraints and updates.
func scenario(seed uint64) (*sdktest.Harness, []func(h *sdktest.Harness) *sdk.Evaluation) {
	r := rand.New(rand.NewPCG(seed, seed*7919))
	h := sdktest.New()
	nodes := 20 + r.IntN(60)
	for i := 0; i < nodes; i++ {
		n := sdktest.Node(fmt.Sprintf("node-%03d", i), int64(1000+500*r.IntN(8)), int64(1024*(1+r.IntN(8))))
		n.Datacenter = []string{"dc1", "dc2"}[r.IntN(2)]
		n.Meta["rack"] = fmt.Sprintf("r%d", r.IntN(4))
		n.ComputedClass = fmt.Sprintf("class-%d", r.IntN(3))
		switch r.IntN(10) {
		case 0:
			n.Status = sdk.NodeStatusDown
		case 1:
			n.SchedulingEligibility = sdk.NodeSchedulingIneligible
		}
		h.UpsertNode(n)
	}
	var steps []func(*sdktest.Harness) *sdk.Evaluation
	for j := 0; j < 12; j++ {
		id := fmt.Sprintf("job-%02d", j)
		count, cpu, mem := 1+r.IntN(15), 100*(1+r.IntN(10)), 64*(1+r.IntN(16))
		dcs := [][]string{{"dc1"}, {"dc2"}, {"dc1", "dc2"}}[r.IntN(3)]
		var cons []*sdk.Constraint
		if r.IntN(3) == 0 {
			cons = append(cons, &sdk.Constraint{LTarget: "${meta.rack}", RTarget: fmt.Sprintf("r%d", r.IntN(4)), Operand: "!="})
		}
		steps = append(steps, func(h *sdktest.Harness) *sdk.Evaluation {
			job := sdktest.Job(id, count)
			job.Datacenters, job.Constraints = dcs, cons
			job.TaskGroups[0].Tasks[0].Resources.CPU = cpu
			job.TaskGroups[0].Tasks[0].Resources.MemoryMB = mem
			h.UpsertJob(job)
			return h.RegisterEval(job)
		})
		if r.IntN(3) == 0 { // scale the job later
			newCount := r.IntN(20)
			steps = append(steps, func(h *sdktest.Harness) *sdk.Evaluation {
				job := *h.Job("default", id)
				tg := *job.TaskGroups[0]
				tg.Count = newCount
				job.TaskGroups = []*sdk.TaskGroup{&tg}
				h.UpsertJob(&job)
				return h.RegisterEval(&job)
			})
		}
	}
	return h, steps
}

// record runs a scenario on p and returns every plan and eval update the
// scheduler made, as JSON (whose maps are ordered).
func record(t *testing.T, p *runtime.Plugin, seed uint64) []string {
	h, steps := scenario(seed)
	for _, step := range steps {
		if err := runtimetest.Process(p, h, step(h), time.Minute); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	var out []string
	for _, pl := range h.Plans {
		out = append(out, "plan "+canonical(t, pl))
	}
	for _, groups := range [][]*sdk.Evaluation{h.Updated, h.Created, h.Reblocked} {
		for _, e := range groups {
			out = append(out, "eval "+canonical(t, e))
		}
	}
	return out
}

// canonical encodes v as JSON (maps sorted by key) with every number
// rounded to 12 significant digits. Decisions must match exactly; scores
// may differ in their last bits, because Go's math.Exp and math.Pow use
// assembly on amd64 and portable Go in wasm.
func canonical(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	var round func(any) any
	round = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				x[k] = round(v)
			}
		case []any:
			for i, v := range x {
				x[i] = round(v)
			}
		case json.Number:
			if f, err := x.Float64(); err == nil {
				return strconv.FormatFloat(f, 'g', 12, 64)
			}
		}
		return x
	}
	out, err := json.Marshal(round(tree))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestDifferential_ServiceSchedulerPlansAreIdentical(t *testing.T) {
	newSched := func() sdk.Scheduler { return &generic.Scheduler{} }
	info := plugin.Info{Name: "service", Types: []string{"service"}}
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	results := map[string]map[uint64][]string{}
	kept := map[string]int64{}
	for _, fl := range flavours {
		results[fl.name] = map[uint64][]string{}
		f := fl.load(t, "./plugins/service", info, newSched)
		t.Cleanup(func() { _ = f.Close(context.Background()) })
		for _, seed := range seeds {
			// A fresh pool per scenario: a mirror must never see two
			// clusters' indexes.
			p := pool(t, keepOpen{f})
			results[fl.name][seed] = record(t, p, seed)
			kept[fl.name] += p.Stats().KeptPlans.Load()
			_ = p.Close(context.Background())
		}
	}
	// The plugins speak ABI 1.2 or later: their mirrors are fed kept plans (the
	// harness stores placements as the host does), and must still decide
	// as native does.
	for _, fl := range flavours {
		if kept[fl.name] == 0 {
			t.Errorf("%s: no sync left out a kept plan", fl.name)
		}
	}
	plans := 0
	for _, seed := range seeds {
		want := results["native"][seed]
		plans += len(want)
		for _, fl := range flavours[1:] {
			got := results[fl.name][seed]
			if len(got) != len(want) {
				t.Fatalf("seed %d: %s made %d plans and eval updates, native %d", seed, fl.name, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("seed %d: %s differs from native at record %d:\n%s\n%s", seed, fl.name, i, got[i], want[i])
				}
			}
		}
	}
	if plans < 100 {
		t.Fatalf("the scenarios made only %d records; they test too little", plans)
	}
	t.Logf("%d seeds, %d identical records per runtime", len(seeds), plans)
}
