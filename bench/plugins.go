package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/native"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/sdk"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/schedulers/generic"
	"github.com/drover-sched/drover/sdk/schedulers/system"
	"github.com/rs/zerolog"
)

// ErrRuntimeUnavailable is returned for a runtime this build cannot run.
var ErrRuntimeUnavailable = errors.New("bench: runtime not available")

// Plugins provides the built-in schedulers in one runtime. Factories are
// made once (a wasm module is compiled once), and so is one pool of one
// instance over each: an agent's instance serves thousands of evals, so
// its heap is warm (a go-plugin process's pages faulted in, a wasm memory
// grown), and the benchmark measures that, not a process start.
// Each run still begins with a full sync of its own cluster (runOne calls
// Resync). Fresh starts a new pool, and so a new instance, for every run
// instead.
type Plugins struct {
	Fresh  bool
	byType map[string]rt.Factory
	all    []rt.Factory
	pools  map[rt.Factory]*rt.Plugin
	log    zerolog.Logger
}

// NativePlugins runs the built-in schedulers in process.
func NativePlugins(log zerolog.Logger) *Plugins {
	p := &Plugins{byType: map[string]rt.Factory{}, pools: map[rt.Factory]*rt.Plugin{}, log: log}
	add := func(name string, types []string, make func() sdk.Scheduler) {
		f := native.New(plugin.Info{Name: name, Types: types, Version: "bench"}, make)
		p.all = append(p.all, f)
		for _, t := range types {
			p.byType[t] = f
		}
	}
	add("service", []string{sdk.JobTypeService}, func() sdk.Scheduler { return &generic.Scheduler{} })
	add("batch", []string{sdk.JobTypeBatch}, func() sdk.Scheduler { return &generic.Scheduler{Batch: true} })
	add("system", []string{sdk.JobTypeSystem, sdk.JobTypeSysBatch}, func() sdk.Scheduler { return &system.Scheduler{} })
	return p
}

// WasmPlugins loads the built-in schedulers' modules (service.wasm,
// batch.wasm, system.wasm) from dir with cfg.
func WasmPlugins(ctx context.Context, dir string, cfg wasm.Config, log zerolog.Logger) (*Plugins, error) {
	return loadPlugins(ctx, log, "build the plugins with `make build`, or set -plugin-dir", func(name string) (rt.Factory, error) {
		return wasm.LoadFile(ctx, filepath.Join(dir, name+".wasm"), cfg)
	})
}

// GopluginPlugins loads the built-in schedulers built as native go-plugin
// executables (service, batch, system) from dir with cfg (`make goplugins`
// puts them in bin/goplugins).
func GopluginPlugins(ctx context.Context, dir string, cfg goplugin.Config, log zerolog.Logger) (*Plugins, error) {
	return loadPlugins(ctx, log, "build them with `make goplugins`, or set -plugin-dir", func(name string) (rt.Factory, error) {
		return goplugin.Load(ctx, filepath.Join(dir, name), cfg)
	})
}

// loadPlugins loads the built-in schedulers (service, batch, system) with
// load; hint says how to get them when one is missing.
func loadPlugins(ctx context.Context, log zerolog.Logger, hint string, load func(name string) (rt.Factory, error)) (*Plugins, error) {
	p := &Plugins{byType: map[string]rt.Factory{}, pools: map[rt.Factory]*rt.Plugin{}, log: log}
	for _, name := range []string{"service", "batch", "system"} {
		f, err := load(name)
		if err != nil {
			p.Close(ctx)
			return nil, fmt.Errorf("bench: %w (%s)", err, hint)
		}
		p.all = append(p.all, f)
		for _, t := range f.Info().Types {
			p.byType[t] = f
		}
	}
	return p, nil
}

// Plugin returns the pool of one instance of the plugin serving jobType:
// the one kept for it, or with Fresh a new one (the previous one closed).
// The pool stays Plugins': callers do not close it.
func (p *Plugins) Plugin(jobType string) (*rt.Plugin, error) {
	f, ok := p.byType[jobType]
	if !ok {
		return nil, fmt.Errorf("bench: no plugin serves job type %q", jobType)
	}
	pool := p.pools[f]
	if pool != nil && p.Fresh {
		_ = pool.Close(context.Background())
		pool = nil
	}
	if pool == nil {
		pool = rt.NewPlugin(keepOpen{f}, rt.PoolConfig{Instances: 1}, p.log)
		p.pools[f] = pool
	}
	return pool, nil
}

// Close closes the pools, then the factories.
func (p *Plugins) Close(ctx context.Context) {
	for _, pool := range p.pools {
		_ = pool.Close(ctx)
	}
	for _, f := range p.all {
		_ = f.Close(ctx)
	}
}

// keepOpen lets a pool close its instances without closing the shared
// factory.
type keepOpen struct{ rt.Factory }

func (keepOpen) Close(context.Context) error { return nil }
