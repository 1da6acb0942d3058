// Package wasm runs scheduler plugins compiled to WebAssembly (Go wasip1
// reactors built with -buildmode=c-shared) in wazero.
//
// A Module is compiled once (with wazero's file compilation cache when a
// cache directory is set) and instantiated once per pool slot. Instances
// are sandboxed: no file system, network or environment, a fake clock and a
// deterministic random source unless configured, and a memory page limit
// always. The module's exports and the "drover" host functions it imports
// are specified in docs/abi.md.
package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/rs/zerolog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Export names a module must provide.
const (
	ExportABIVersion = "drover_abi_version"
	ExportInfo       = "drover_info"
	ExportBuffer     = "drover_buffer"
	ExportProcess    = "drover_process"
	// ExportIdle is optional (ABI 1.5): called between evals.
	ExportIdle = "drover_idle"
	// ExportCheckConfig is optional (ABI 1.7): called at load on an
	// instance of its own, it says whether the plugin accepts its
	// configuration.
	ExportCheckConfig = "drover_check_config"
	HostModule        = "drover"
	HostTakeResult    = "take_result"
)

// ErrInvalidModule is returned for a module that is not a Drover plugin.
var ErrInvalidModule = errors.New("wasm: not a valid Drover plugin module")

// Config configures how a module runs. The zero value is not valid; start
// from DefaultConfig.
type Config struct {
	// MemoryLimitPages caps an instance's linear memory (64 KiB pages).
	MemoryLimitPages uint32
	// EnforceDeadline lets a call's deadline (or cancellation) stop a guest
	// that never returns. The module is rewritten at load with interrupt
	// checks (interrupt.go), which cost the guest a few percent; a module
	// the rewriter cannot read falls back to wazero's
	// WithCloseOnContextDone, which costs it 2 to 4x (docs/benchmarks.md).
	EnforceDeadline bool
	// CacheDir holds wazero's compilation cache; empty disables it.
	CacheDir string
	// Log receives the plugin's stdout and stderr, one entry per line,
	// tagged with the plugin's name and the stream.
	Log zerolog.Logger
	// Output, when set, receives stdout and stderr instead of Log.
	Output io.Writer
	// SysClock gives the plugin the real clock (walltime, nanotime and
	// sleep); without it the clock is wazero's fake, deterministic one.
	SysClock bool
	// Env is the plugin's environment; empty by default.
	Env map[string]string
}

// DefaultConfig is 1 GiB of memory, deadlines enforced, no cache, no
// clock, no environment, output discarded.
func DefaultConfig() Config {
	return Config{MemoryLimitPages: 16384, EnforceDeadline: true, Log: zerolog.Nop()}
}

// PagesForMB is the page limit for a memory limit in MiB.
func PagesForMB(mb int) uint32 { return uint32(mb) * 16 }

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.MemoryLimitPages == 0 || c.MemoryLimitPages > 65536 {
		return fmt.Errorf("wasm: memory limit must be 1 to 65536 pages, got %d", c.MemoryLimitPages)
	}
	return nil
}

// loadTimeout bounds the plugin code Load runs.
var loadTimeout = 30 * time.Second

// Module is a compiled plugin.
type Module struct {
	cfg      Config
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	info     abi.Info
	cache    wazero.CompilationCache
	// stdout and stderr receive the plugin's output.
	stdout, stderr io.Writer
	// lastSize is the memory size the last closed instance ended with (at
	// most maxPrefault): a new instance starts with that much committed.
	lastSize atomic.Uint64
}

// maxPrefault bounds the memory a new instance has committed up front, so
// that the successor of an instance recycled for its size does not start
// as large.
const maxPrefault = 256 << 20

var (
	_ runtime.Factory       = (*Module)(nil)
	_ runtime.ConfigChecker = (*Module)(nil)
)

// LoadFile reads and loads a module from path.
func LoadFile(ctx context.Context, path string, cfg Config) (*Module, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasm: %w", err)
	}
	m, err := Load(ctx, b, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// emptyCompilationCache removes the files of wazero's compilation caches in
// dir (its "wazero-VERSION-ARCH-OS" directories, which stay: a cache
// writes its entries into them).
func emptyCompilationCache(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// PruneCompilationCache removes the oldest files (by modification time) of
// wazero's compilation caches in dir until what is left takes at most max
// bytes. Each build of a plugin compiles to a new entry (some tens of MB),
// and wazero never removes one, so a cache that is never pruned grows by
// one entry per rebuilt plugin until the disk is full. An entry removed
// that is still wanted is compiled again, once.
func PruneCompilationCache(dir string, max int64) error {
	files, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if err != nil {
		return err
	}
	type entry struct {
		path string
		size int64
		mod  time.Time
	}
	var entries []entry
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		entries = append(entries, entry{f, st.Size(), st.ModTime()})
		total += st.Size()
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.mod.Compare(b.mod) })
	for _, e := range entries {
		if total <= max {
			break
		}
		if err := os.Remove(e.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		total -= e.size
	}
	return nil
}

// checkMagic refuses what is not a WebAssembly binary before anything
// parses it, naming the likely mistake: a go-plugin executable loaded as
// wasm (a file named *.wasm, or runtime = "wasm" in a plugin block).
func checkMagic(b []byte) error {
	if bytes.HasPrefix(b, []byte("\x00asm")) {
		return nil
	}
	for _, magic := range [][]byte{
		[]byte("\x7fELF"), []byte("MZ"), []byte("#!"),
		{0xfe, 0xed, 0xfa, 0xce}, {0xfe, 0xed, 0xfa, 0xcf}, {0xce, 0xfa, 0xed, 0xfe}, {0xcf, 0xfa, 0xed, 0xfe}, {0xca, 0xfe, 0xba, 0xbe},
	} {
		if bytes.HasPrefix(b, magic) {
			return fmt.Errorf(`%w: a native executable, not a WebAssembly module: run a go-plugin binary with runtime "goplugin" (a file in the plugin directory not named *.wasm), or build the plugin with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`, ErrInvalidModule)
		}
	}
	return fmt.Errorf("%w: not a WebAssembly binary (it does not start with \\0asm)", ErrInvalidModule)
}

// Load compiles a module, checks its exports and ABI version, and reads
// its info from a first instance.
func Load(ctx context.Context, wasm []byte, cfg Config) (*Module, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkMagic(wasm); err != nil {
		return nil, err
	}
	m := &Module{cfg: cfg, stdout: cfg.Output, stderr: cfg.Output}
	if cfg.Output == nil {
		// Until the plugin names itself (drover_info), what it writes
		// while loading (in its init, say) is logged as a loading one's.
		m.stdout = runtime.OutputLog(cfg.Log, "(loading)", "stdout")
		m.stderr = runtime.OutputLog(cfg.Log, "(loading)", "stderr")
	}
	closeOnDone := false
	var uninstrumented error // why interrupt checks could not be added
	if threaded, err := threadJumps(wasm); err == nil {
		wasm = threaded
	} else {
		cfg.Log.Debug().Err(err).Msg("wasm: jumps left as they are")
	}
	if cfg.EnforceDeadline {
		checked, err := addInterruptChecks(wasm)
		if err != nil {
			uninstrumented, closeOnDone = err, true
		} else {
			wasm = checked
		}
	}
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(closeOnDone)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm: compilation cache: %w", err)
		}
		m.cache = cache
		rc = rc.WithCompilationCache(cache)
	}
	m.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	fail := func(err error) (*Module, error) {
		_ = m.Close(ctx)
		return nil, err
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, m.rt); err != nil {
		return fail(fmt.Errorf("wasm: wasi: %w", err))
	}
	if err := instantiateHost(ctx, m.rt); err != nil {
		return fail(err)
	}
	compiled, err := m.rt.CompileModule(ctx, wasm)
	if err != nil && m.cache != nil && strings.Contains(err.Error(), "compilationcache:") {
		// A damaged cache entry (a torn write, a full disk) is not the
		// module's fault: the cache holds no state, so it is emptied and
		// the module compiled again. wazero's errors name the cache only
		// in their text.
		cfg.Log.Warn().Err(err).Str("dir", cfg.CacheDir).Msg("wasm: damaged compilation cache emptied; compiling again")
		if cerr := emptyCompilationCache(cfg.CacheDir); cerr != nil {
			return fail(fmt.Errorf("wasm: compilation cache: %v (emptying it: %v)", err, cerr))
		}
		compiled, err = m.rt.CompileModule(ctx, wasm)
	}
	if err != nil && overMemoryLimit(err) {
		return fail(fmt.Errorf("wasm: the module starts with more memory than the plugin's memory limit of %d MiB (limits.memory_mb) allows: %v",
			cfg.MemoryLimitPages/16, err))
	}
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrInvalidModule, err))
	}
	if uninstrumented != nil {
		// Said once the module compiled: a file that is no module is
		// refused for that, not warned about.
		cfg.Log.Warn().Err(uninstrumented).Msg("wasm: deadlines enforced by wazero's slower WithCloseOnContextDone")
	}
	m.compiled = compiled
	exports := compiled.ExportedFunctions()
	if _, reactor := exports["_initialize"]; !reactor {
		if _, command := exports["_start"]; command {
			// A Go plugin built without -buildmode=c-shared still has the
			// SDK's exports, but its runtime is never initialised: the
			// first call would trap in runtime.notInitialized.
			return fail(fmt.Errorf("%w: a WASI command (it exports _start, not _initialize); build it as a reactor: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared", ErrInvalidModule))
		}
	}
	if err := checkExports(exports); err != nil {
		return fail(err)
	}
	// The first instance's initialisation and the ABI and info calls run
	// plugin code: bounded, so that a plugin that never returns fails its
	// load instead of holding up the agent (when deadlines are enforced).
	pctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	inst, err := m.instantiate(pctx)
	if err != nil {
		return fail(err)
	}
	defer inst.Close(ctx)
	res, err := inst.mod.ExportedFunction(ExportABIVersion).Call(pctx)
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %v", ErrInvalidModule, ExportABIVersion, err))
	}
	v := abi.Version(uint32(res[0]))
	if err := abi.CheckVersion(v); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrInvalidModule, err))
	}
	res, err = inst.mod.ExportedFunction(ExportInfo).Call(pctx)
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %v", ErrInvalidModule, ExportInfo, err))
	}
	raw, err := inst.read(res[0])
	if err != nil || len(raw) == 0 {
		return fail(fmt.Errorf("%w: %s returned nothing (no scheduler registered?)", ErrInvalidModule, ExportInfo))
	}
	if err := abi.Decode(raw, &m.info); err != nil {
		return fail(fmt.Errorf("%w: decode info: %v", ErrInvalidModule, err))
	}
	if m.info.Name == "" {
		return fail(fmt.Errorf("%w: plugin declares no name", ErrInvalidModule))
	}
	m.info.ABI = uint32(v)
	m.stdout, m.stderr = cfg.Output, cfg.Output
	if cfg.Output == nil {
		m.stdout = runtime.OutputLog(cfg.Log, m.info.Name, "stdout")
		m.stderr = runtime.OutputLog(cfg.Log, m.info.Name, "stderr")
	}
	return m, nil
}

// exportTypes are the ABI's exports and their types (docs/abi.md, section
// 5); the optional ones are checked when present.
var exportTypes = []struct {
	name            string
	params, results []api.ValueType
	optional        bool
}{
	{ExportABIVersion, nil, []api.ValueType{api.ValueTypeI32}, false},
	{ExportInfo, nil, []api.ValueType{api.ValueTypeI64}, false},
	{ExportBuffer, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}, false},
	{ExportProcess, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}, false},
	{ExportIdle, nil, nil, true},
	{ExportCheckConfig, []api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}, true},
}

// checkExports refuses a module that lacks an export of the ABI or has
// one of another type, which every eval would otherwise fail on.
func checkExports(exports map[string]api.FunctionDefinition) error {
	sig := func(params, results []api.ValueType) string {
		names := func(ts []api.ValueType) string {
			out := make([]string, len(ts))
			for i, t := range ts {
				out[i] = api.ValueTypeName(t)
			}
			return strings.Join(out, ", ")
		}
		return "(" + names(params) + ") -> (" + names(results) + ")"
	}
	for _, e := range exportTypes {
		def, ok := exports[e.name]
		if !ok {
			if e.optional {
				continue
			}
			return fmt.Errorf("%w: missing export %q (build with the Drover SDK and -buildmode=c-shared)", ErrInvalidModule, e.name)
		}
		if !slices.Equal(def.ParamTypes(), e.params) || !slices.Equal(def.ResultTypes(), e.results) {
			return fmt.Errorf("%w: export %q has type %s, the ABI's is %s", ErrInvalidModule, e.name,
				sig(def.ParamTypes(), def.ResultTypes()), sig(e.params, e.results))
		}
	}
	return nil
}

// Info implements runtime.Factory.
func (m *Module) Info() abi.Info { return m.info }

// Exports lists the module's exported functions.
func (m *Module) Exports() []string {
	var out []string
	for name := range m.compiled.ExportedFunctions() {
		out = append(out, name)
	}
	return out
}

// NewInstance implements runtime.Factory.
func (m *Module) NewInstance(ctx context.Context) (runtime.Instance, error) {
	inst, err := m.instantiate(ctx)
	if err != nil {
		return nil, err
	}
	if idle := inst.mod.ExportedFunction(ExportIdle); idle != nil {
		return idlingInstance{instance: inst, idle: idle}, nil
	}
	return inst, nil
}

// CheckConfig implements runtime.ConfigChecker: it calls the module's
// drover_check_config (ABI 1.7) on a new instance, which it then closes.
// The instance has the memory limit of the others, and ctx's deadline
// stops it when deadlines are enforced (Config.EnforceDeadline), as it
// stops an eval. A module without the export accepts any configuration.
func (m *Module) CheckConfig(ctx context.Context, req []byte) ([]byte, error) {
	if _, ok := m.compiled.ExportedFunctions()[ExportCheckConfig]; !ok {
		return nil, runtime.ErrConfigCheckNotServed
	}
	inst, err := m.instantiate(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wasm: instantiate: stopped at the deadline: %w", ctx.Err())
		}
		return nil, err
	}
	// Closed as is: its size says nothing of what an eval's instance needs
	// (Close would record it for the next instance to start with).
	defer inst.mod.Close(context.Background())
	// No planner calls: the host functions answer them CodeInternal, as
	// they do outside drover_process.
	return inst.call(ctx, inst.mod.ExportedFunction(ExportCheckConfig), ExportCheckConfig, req)
}

func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	tail := runtime.NewCapture(1024)
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize").
		WithStdout(m.stdout).WithStderr(io.MultiWriter(m.stderr, tail))
	if m.cfg.SysClock {
		mc = mc.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	for k, v := range m.cfg.Env {
		mc = mc.WithEnv(k, v)
	}
	mod, err := m.rt.InstantiateModule(withReservedMemory(ctx, m.lastSize.Load()), m.compiled, mc)
	if err != nil {
		// What the plugin wrote to stderr is why its initialisation
		// trapped (a Go panic in init); before the load, stderr goes
		// nowhere else.
		return nil, tail.Explain(fmt.Errorf("wasm: instantiate: %w", err))
	}
	return &instance{mod: mod, buffer: mod.ExportedFunction(ExportBuffer), process: mod.ExportedFunction(ExportProcess),
		stderr: tail, lastSize: &m.lastSize, limitPages: m.cfg.MemoryLimitPages}, nil
}

// Close implements runtime.Factory.
func (m *Module) Close(ctx context.Context) error {
	err := m.rt.Close(ctx)
	if m.cache != nil {
		_ = m.cache.Close(ctx)
	}
	return err
}

// instance is one instantiated module.
type instance struct {
	mod     api.Module
	buffer  api.Function
	process api.Function
	// stderr keeps the start of the instance's stderr to explain a trap.
	stderr *runtime.Capture
	// lastSize is its module's record of the last closed instance's size.
	lastSize *atomic.Uint64
	// limitPages is its memory limit, in 64 KiB pages.
	limitPages uint32
}

// trapped explains a trap of the export name: a Go guest out of memory
// says so on stderr before it traps, and the trap is then its memory
// limit's, said as a go-plugin's is; otherwise what it wrote to stderr.
func (i *instance) trapped(name string, err error) error {
	// The Go runtime's own words, at the start of a line of its fatal
	// error: a plugin that logs about memory is not mistaken for one out
	// of it.
	if i.stderr.Contains("\nfatal error: out of memory") || i.stderr.HasPrefix("fatal error: out of memory") ||
		i.stderr.Contains("runtime: out of memory:") {
		err = fmt.Errorf("wasm: %s: memory limit of %d MiB exceeded (linear memory %d MiB): %w",
			name, i.limitPages/16, i.mod.Memory().Size()>>20, err)
	} else {
		err = fmt.Errorf("wasm: %s: %w", name, err)
	}
	return i.stderr.Explain(err)
}

func (i *instance) read(packed uint64) ([]byte, error) {
	ptr, size := uint32(packed>>32), uint32(packed)
	if size == 0 {
		return nil, nil
	}
	b, ok := i.mod.Memory().Read(ptr, size)
	if !ok {
		return nil, fmt.Errorf("wasm: answer at %d+%d is outside memory", ptr, size)
	}
	return append([]byte(nil), b...), nil
}

// Process implements runtime.Instance.
func (i *instance) Process(ctx context.Context, req []byte, host plugin.HostFunc) ([]byte, error) {
	return i.call(withCall(ctx, &callState{host: host}), i.process, ExportProcess, req)
}

// call writes req into the guest's buffer and calls fn, an export that
// takes the request's size and returns its packed answer.
func (i *instance) call(ctx context.Context, fn api.Function, name string, req []byte) ([]byte, error) {
	res, err := i.buffer.Call(ctx, uint64(len(req)))
	if err != nil {
		return nil, fmt.Errorf("wasm: %s: %w", ExportBuffer, err)
	}
	if !i.mod.Memory().Write(uint32(res[0]), req) {
		return nil, fmt.Errorf("wasm: request buffer at %d is outside memory", uint32(res[0]))
	}
	i.stderr.Reset()
	res, err = fn.Call(ctx, uint64(len(req)))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("wasm: %s: stopped at the deadline: %w", name, ctx.Err())
		}
		return nil, i.trapped(name, err)
	}
	return i.read(res[0])
}

// idlingInstance is an instance whose module exports drover_idle.
type idlingInstance struct {
	*instance
	idle api.Function
}

// Idle implements runtime.Idler.
func (i idlingInstance) Idle(ctx context.Context) error {
	if _, err := i.idle.Call(ctx); err != nil {
		return i.trapped(ExportIdle, err)
	}
	return nil
}

// MemoryBytes implements runtime.Sizer.
// overMemoryLimit reports whether a compilation failed because the
// module's memory section asks for more than the limit: a sound module
// under too low a limit, not an invalid one, whose refusal is to name the
// limit to raise (wazero's words give both in Gi, rounded down: "min
// 19261 pages (1 Gi) over limit of 16384 pages (1 Gi)"). wazero says so
// only in its error's text.
func overMemoryLimit(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "section memory:") && strings.Contains(msg, "over limit of")
}

func (i *instance) MemoryBytes() uint64 { return uint64(i.mod.Memory().Size()) }

// Close implements runtime.Instance.
func (i *instance) Close(ctx context.Context) error {
	i.lastSize.Store(min(i.MemoryBytes(), maxPrefault))
	return i.mod.Close(ctx)
}
