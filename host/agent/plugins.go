package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover-sched/drover/host/server"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/goplugin"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/drover-sched/drover/sdk"
	"github.com/rs/zerolog"
)

// Plugin runtimes a PluginConfig may name.
const (
	RuntimeWasm     = "wasm"
	RuntimeGoPlugin = "goplugin"
)

// DefaultPluginMemoryMB caps a wasm plugin's linear memory unless its
// limits say otherwise.
const DefaultPluginMemoryMB = 1024

// DefaultPluginReloadInterval is how often the agent looks for replaced
// plugin files. A replacement takes over once it has loaded, which for a
// wasm module is a compilation: seconds for a large one.
const DefaultPluginReloadInterval = 2 * time.Second

// PluginConfig configures one scheduler plugin: an agent configuration's
// `plugin "NAME" { ... }` block.
type PluginConfig struct {
	// Name is the plugin's name; the plugin must declare the same one.
	Name string
	// Runtime is RuntimeWasm or RuntimeGoPlugin; empty picks wasm for a
	// ".wasm" file and go-plugin otherwise.
	Runtime string
	// Path is the plugin's file. Empty means NAME.wasm, or else the
	// executable NAME, in the plugin directory.
	Path string
	// Config is handed to the plugin with every evaluation; a plugin of
	// ABI 1.7 or later is asked whether it accepts it when it is loaded,
	// and is not loaded if it refuses it.
	Config map[string]string
	// Limits bound the plugin.
	Limits PluginLimits
	// Env is the plugin's environment (wasm and go-plugin); empty by
	// default: a plugin never sees the agent's environment.
	Env map[string]string
	// RealClock gives a wasm plugin the real clock; by default it sees a
	// fake one and decides with the eval's Now, as it should.
	RealClock bool
}

// PluginLimits bound a plugin.
type PluginLimits struct {
	// MemoryMB caps a plugin's memory (default 1024): a wasm instance's
	// linear memory, a go-plugin process's resident memory (checked every
	// 20 ms during an eval; Linux only). Instances are recycled past three
	// quarters of it.
	MemoryMB int
	// Timeout bounds one evaluation (default server.DefaultPluginTimeout).
	Timeout time.Duration
	// EnforceDeadline stops a wasm plugin that overruns its timeout
	// (default on; the checks it adds to the module cost little, see
	// docs/benchmarks.md). A go-plugin process is always killed at the
	// deadline.
	EnforceDeadline *bool
}

// Validate checks a plugin block.
func (c *PluginConfig) Validate() error {
	if c.Name == "" {
		return errors.New("agent: a plugin block needs a name")
	}
	switch c.Runtime {
	case "", RuntimeWasm, RuntimeGoPlugin:
	default:
		return fmt.Errorf("agent: plugin %q: runtime must be %q or %q, not %q", c.Name, RuntimeWasm, RuntimeGoPlugin, c.Runtime)
	}
	if c.Limits.MemoryMB < 0 || c.Limits.MemoryMB > 4096 {
		return fmt.Errorf("agent: plugin %q: limits.memory_mb must be 1 to 4096, got %d", c.Name, c.Limits.MemoryMB)
	}
	if c.Limits.Timeout < 0 {
		return fmt.Errorf("agent: plugin %q: limits.timeout must not be negative", c.Name)
	}
	return nil
}

// pluginSpec is one plugin file to load, and how.
type pluginSpec struct {
	path    string
	runtime string
	// block configures the plugin, if the configuration names it.
	block *PluginConfig
}

// fileStamp tells whether a file may have changed: its modification time
// and size, and where the platform has them (stamp_linux.go) its inode and
// status-change time. The last two catch what the first two miss: a file
// replaced by rename, or rewritten with `cp -p` (same size, the old
// modification time kept). A changed stamp only makes the loader read the
// file; its content hash decides whether it is loaded.
type fileStamp struct {
	mod   time.Time
	size  int64
	ino   uint64
	ctime int64 // ns
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	ino, ctime := changeStamp(st)
	return fileStamp{mod: st.ModTime(), size: st.Size(), ino: ino, ctime: ctime}, nil
}

// digest is a plugin file's content hash.
type digest [sha256.Size]byte

// readPlugin reads a plugin file once: the hash that decides whether it
// changed and a wasm module's load use the same bytes, so that a write
// between the two cannot leave the loader believing it runs content it
// does not. The content is returned for wasm only: a go-plugin binary is
// started from its path.
func readPlugin(sp pluginSpec) ([]byte, digest, error) {
	b, err := os.ReadFile(sp.path)
	if err != nil {
		return nil, digest{}, err
	}
	d := sha256.Sum256(b)
	if sp.runtime != RuntimeWasm {
		b = nil
	}
	return b, d, nil
}

// pluginLoader loads the agent's plugins into its registry and reloads
// those whose file is replaced.
type pluginLoader struct {
	cfg Config
	log zerolog.Logger
	reg *rt.Registry
	dir string
	// cacheDir is where compiled wasm modules are cached, found once
	// (findCacheDir) for the first load and every reload.
	cacheDir func() string

	mu     sync.Mutex
	stamps map[string]fileStamp // by path, as last seen
	// served is, by path, the digest of the content the plugin running
	// from that file was loaded from. A file rewritten with that same
	// content (`make plugins` rewrites every module it builds, changed
	// or not) is not loaded again: loading is seconds of compilation,
	// and the reloads run one after another.
	served map[string]digest
	// conflicts is, by path, the file that served the plugin's name when
	// the file at path was refused for declaring that name too.
	conflicts map[string]string
	// unserved lists the job types no plugin served by default when
	// loadAll or reload, which run one after another, last looked.
	unserved string
	wg       sync.WaitGroup // retiring plugins and the watcher
}

func newPluginLoader(cfg Config, log zerolog.Logger, reg *rt.Registry) (*pluginLoader, error) {
	l := &pluginLoader{cfg: cfg, log: log, reg: reg, dir: cfg.PluginDir, stamps: map[string]fileStamp{}, served: map[string]digest{},
		conflicts: map[string]string{}}
	l.cacheDir = sync.OnceValue(l.findCacheDir)
	if l.dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("agent: locate the drover binary: %w", err)
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		l.dir = filepath.Join(filepath.Dir(exe), "plugins")
	}
	for i := range cfg.Plugins {
		if err := cfg.Plugins[i].Validate(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// missingPlugin is a plugin block whose file is not there.
type missingPlugin struct {
	path string
	err  error
}

// specs lists the plugin files: every *.wasm module and executable file in
// the plugin directory, and every file a plugin block names; missing lists
// the blocks whose file is not there (at start an error, while running
// their own plugin's refusal, not the others').
func (l *pluginLoader) specs() (_ []pluginSpec, missing []missingPlugin, _ error) {
	byPath := map[string]*pluginSpec{}
	entries, err := os.ReadDir(l.dir)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && len(l.cfg.Plugins) > 0) {
		return nil, nil, fmt.Errorf("agent: plugin dir %s: %w", l.dir, err)
	}
	for _, e := range entries {
		p := filepath.Join(l.dir, e.Name())
		if rtName := runtimeOf(p); rtName != "" {
			byPath[p] = &pluginSpec{path: p, runtime: rtName}
		}
	}
	for i := range l.cfg.Plugins {
		b := &l.cfg.Plugins[i]
		p := b.Path
		if p == "" {
			p = filepath.Join(l.dir, b.Name+".wasm")
			if _, err := os.Stat(p); err != nil {
				p = filepath.Join(l.dir, b.Name)
			}
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, nil, fmt.Errorf("agent: plugin %q: %w", b.Name, err)
		}
		if _, err := os.Stat(abs); err != nil {
			if b.Path == "" {
				err = fmt.Errorf("no file %s.wasm or %s in %s: %w", b.Name, b.Name, l.dir, fs.ErrNotExist)
				// Refused under the file it serves from, if it does.
				if e, ok := l.reg.Lookup(b.Name); ok && e.Path != "" {
					abs = e.Path
				}
			}
			missing = append(missing, missingPlugin{abs, fmt.Errorf("agent: plugin %q: %w", b.Name, err)})
			continue
		}
		sp := byPath[abs]
		if sp == nil {
			sp = &pluginSpec{path: abs}
			byPath[abs] = sp
		}
		sp.block = b
		sp.runtime = b.Runtime
		if sp.runtime == "" {
			sp.runtime = RuntimeGoPlugin
			if strings.HasSuffix(abs, ".wasm") {
				sp.runtime = RuntimeWasm
			}
		}
	}
	out := make([]pluginSpec, 0, len(byPath))
	for _, sp := range byPath {
		out = append(out, *sp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, missing, nil
}

// runtimeOf says how a file in the plugin directory runs: wasm for a
// ".wasm" module, goplugin for any other executable file, "" otherwise.
func runtimeOf(path string) string {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	if strings.HasSuffix(path, ".wasm") {
		return RuntimeWasm
	}
	if st.Mode()&0o111 != 0 {
		return RuntimeGoPlugin
	}
	return ""
}

// loadAll loads every plugin; any failure fails the agent's start.
func (l *pluginLoader) loadAll(ctx context.Context) error {
	specs, missing, err := l.specs()
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return missing[0].err
	}
	if len(specs) == 0 {
		return fmt.Errorf("agent: no scheduler plugins in %s; build them with `make build` or point -plugin-dir at them", l.dir)
	}
	// Compiling a module takes up to seconds without the cache: load the
	// plugins in parallel, then register them in path order, so that an
	// error names the same plugin whatever finished first.
	// Say so first: a new build's compilation is seconds of silence.
	start := time.Now()
	l.log.Info().Int("plugins", len(specs)).Str("dir", l.dir).Str("wasm_cache", l.cacheDir()).
		Msg("loading scheduler plugins (a new wasm build is compiled once, then cached)")
	entries := make([]*rt.Entry, len(specs))
	digests := make([]digest, len(specs))
	errs := make([]error, len(specs))
	sem := make(chan struct{}, max(goruntime.GOMAXPROCS(0), 1))
	var wg sync.WaitGroup
	for i, sp := range specs {
		stamp, _ := stampOf(sp.path)
		l.stamps[sp.path] = stamp
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var content []byte
			if content, digests[i], errs[i] = readPlugin(sp); errs[i] != nil {
				errs[i] = fmt.Errorf("agent: plugin %s: %w", sp.path, errs[i])
				return
			}
			entries[i], errs[i] = l.load(ctx, sp, content)
		}()
	}
	wg.Wait()
	l.log.Info().Stringer("took", time.Since(start).Round(time.Millisecond)).Msg("scheduler plugins loaded")
	closeFrom := func(i int) {
		for _, e := range entries[i:] {
			if e != nil {
				_ = e.Plugin.Close(ctx)
			}
		}
	}
	for i, e := range entries {
		if errs[i] != nil {
			closeFrom(i)
			return errs[i]
		}
		if err := l.reg.Register(e); err != nil {
			closeFrom(i)
			return fmt.Errorf("agent: %s: %w", specs[i].path, err)
		}
		l.served[specs[i].path] = digests[i]
		l.log.Debug().Str("plugin", e.Plugin.Info().Name).Strs("types", e.Plugin.Info().Types).
			Str("runtime", e.Runtime).Str("path", specs[i].path).Msg("plugin loaded")
	}
	l.warnUnserved()
	return nil
}

// builtinTypes are the job types an agent schedules without a scheduler
// named: the built-in plugins serve them all.
var builtinTypes = []string{sdk.JobTypeService, sdk.JobTypeBatch, sdk.JobTypeSystem, sdk.JobTypeSysBatch, sdk.JobTypeCore}

// warnUnserved warns, whenever the list changes, of the job types no
// plugin serves by default. A plugin directory of one's own replaces the
// built-ins: without them a job that names no scheduler is refused, and
// without a core plugin garbage is never collected, which nothing else
// says.
func (l *pluginLoader) warnUnserved() {
	served := l.reg.Types()
	var unserved []string
	for _, t := range builtinTypes {
		if !slices.Contains(served, t) {
			unserved = append(unserved, t)
		}
	}
	key := strings.Join(unserved, ",")
	if key == l.unserved {
		return
	}
	l.unserved = key
	switch {
	case len(unserved) == 0:
		l.log.Info().Msg("every job type has a plugin serving it again")
	case slices.Contains(unserved, sdk.JobTypeCore):
		l.log.Warn().Strs("types", unserved).Str("dir", l.dir).
			Msg("no plugin serves these job types: jobs of them must name a scheduler, and without a core plugin garbage collection is off (copy the built-ins from bin/plugins)")
	default:
		l.log.Warn().Strs("types", unserved).Str("dir", l.dir).
			Msg("no plugin serves these job types: jobs of them must name a scheduler (copy the built-ins from bin/plugins)")
	}
}

// load loads one plugin file into a pool, a wasm module from content (what
// readPlugin read), once the plugin accepts its configuration (ABI 1.7). A
// go-plugin binary is started from its path: a write after the read is
// seen by the next poll (its stamp changed) and loaded then.
func (l *pluginLoader) load(ctx context.Context, sp pluginSpec, content []byte) (*rt.Entry, error) {
	lim := PluginLimits{}
	var conf, env map[string]string
	realClock := false
	if sp.block != nil {
		lim, conf, env, realClock = sp.block.Limits, sp.block.Config, sp.block.Env, sp.block.RealClock
	}
	memMB := lim.MemoryMB
	if memMB == 0 {
		memMB = DefaultPluginMemoryMB
	}
	timeout := cmp.Or(lim.Timeout, server.DefaultPluginTimeout)
	// An eval must end before its delivery's nack timeout, or the broker
	// hands it out again while it still runs: every attempt then fails to
	// ack, and the eval fails at its delivery limit.
	if nack := l.cfg.Server.Broker.NackTimeout; nack > 0 && timeout >= nack {
		return nil, fmt.Errorf("agent: load plugin: %s: its eval timeout (%s) must be shorter than the server's "+
			"eval_nack_timeout (%s): raise eval_nack_timeout, or set limits.timeout in the plugin's block", sp.path, timeout, nack)
	}
	enforce := true
	if lim.EnforceDeadline != nil {
		enforce = *lim.EnforceDeadline
	}
	var factory rt.Factory
	switch sp.runtime {
	case RuntimeWasm:
		wcfg := wasm.DefaultConfig()
		wcfg.Log = l.log
		wcfg.MemoryLimitPages = wasm.PagesForMB(memMB)
		wcfg.EnforceDeadline = enforce
		wcfg.Env, wcfg.SysClock = env, realClock
		wcfg.CacheDir = l.cacheDir()
		m, err := wasm.Load(ctx, content, wcfg)
		if err != nil {
			return nil, fmt.Errorf("agent: load plugin: %s: %w", sp.path, err)
		}
		factory = m
	case RuntimeGoPlugin:
		gcfg := goplugin.DefaultConfig()
		gcfg.Log = l.log
		gcfg.MemoryLimitBytes = uint64(memMB) << 20
		for k, v := range env {
			gcfg.Env = append(gcfg.Env, k+"="+v)
		}
		sort.Strings(gcfg.Env)
		f, err := goplugin.Load(ctx, sp.path, gcfg)
		if err != nil {
			return nil, fmt.Errorf("agent: load plugin: %w", err)
		}
		factory, enforce = f, true
	default:
		return nil, fmt.Errorf("agent: %s: unknown runtime %q", sp.path, sp.runtime)
	}
	info := factory.Info()
	if sp.block != nil && info.Name != sp.block.Name {
		_ = factory.Close(ctx)
		return nil, fmt.Errorf("agent: plugin block %q loads %s, which declares the name %q", sp.block.Name, sp.path, info.Name)
	}
	// A plugin that declares ABI 1.7 says whether it takes the
	// configuration its evals will carry, within an eval's time and
	// memory; one that refuses it is not loaded.
	cctx, cancel := context.WithTimeout(ctx, timeout)
	_, err := rt.CheckConfig(cctx, factory, conf)
	cancel()
	if err != nil {
		_ = factory.Close(ctx)
		return nil, fmt.Errorf("agent: load plugin: %s: %w", sp.path, err)
	}
	pool := rt.DefaultPoolConfig(l.cfg.Server.NumWorkers)
	pool.MaxMemoryBytes = uint64(memMB) << 20 * 3 / 4
	return &rt.Entry{Plugin: rt.NewPlugin(factory, pool, l.log), Runtime: sp.runtime, Path: sp.path,
		Config: conf, Timeout: timeout, MemoryMB: memMB, EnforceDeadline: enforce}, nil
}

// findCacheDir is where compiled wasm modules are cached: under the data dir,
// or in dev mode (no data dir) under the user's cache directory, so that a
// dev agent starts in milliseconds rather than seconds after the first
// run. The cache holds compiled code keyed by the module's hash and
// wazero's version, never state. Empty when there is no such place. It is
// pruned to maxWasmCache once, when first wanted: every rebuilt plugin
// adds an entry.
func (l *pluginLoader) findCacheDir() string {
	dir := ""
	if !l.cfg.Dev && l.cfg.Server.DataDir != "" {
		dir = filepath.Join(l.cfg.Server.DataDir, "wasm-cache")
	} else {
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(d, "drover", "wasm-cache")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			l.log.Debug().Err(err).Msg("no wasm compilation cache in dev mode")
			return ""
		}
	}
	if err := wasm.PruneCompilationCache(dir, maxWasmCache); err != nil {
		l.log.Warn().Err(err).Str("dir", dir).Msg("could not prune the wasm compilation cache")
	}
	return dir
}

// maxWasmCache bounds the wasm compilation cache: about forty compiled
// plugins of the built-ins' size.
const maxWasmCache = 1 << 30

// watch reloads replaced plugin files every interval until ctx ends.
func (l *pluginLoader) watch(ctx context.Context, interval time.Duration) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				l.reload(ctx)
			}
		}
	}()
}

// reload loads every plugin file that is new or changed since it was last
// loaded: its stamp changed (fileStamp), and its content is not
// what the plugin running from it was loaded from. A replacement takes
// over new evals once it has loaded (for wasm, compiled: seconds for a
// large module without a cached compilation); until then, and for the
// evals in flight at the swap, the old version runs, and its instances
// close afterwards. A file that fails to load leaves the running plugin
// in place.
func (l *pluginLoader) reload(ctx context.Context) {
	specs, missing, err := l.specs()
	if err != nil {
		l.log.Warn().Err(err).Msg("plugin reload: cannot list plugins")
		return
	}
	l.retryConflicts()
	present := make(map[string]bool, len(specs)+len(missing))
	for _, m := range missing {
		// Its plugin keeps serving, if it was; the others reload as ever.
		// Put back, the file is read again (and its refusal cleared).
		present[m.path] = true
		l.mu.Lock()
		delete(l.stamps, m.path)
		l.mu.Unlock()
		if f, refused := l.reg.Refusal(m.path); !refused || f.Error != m.err.Error() {
			l.reg.Refuse(m.path, m.err, time.Now())
			l.log.Warn().Err(m.err).Msg("plugin file missing; the running version, if any, stays")
		}
	}
	for _, sp := range specs {
		present[sp.path] = true
		stamp, err := stampOf(sp.path)
		if err != nil {
			continue
		}
		l.mu.Lock()
		old, seen := l.stamps[sp.path]
		l.stamps[sp.path] = stamp
		l.mu.Unlock()
		if seen && old == stamp {
			continue
		}
		content, d, err := readPlugin(sp)
		if err != nil {
			continue // gone since it was listed
		}
		l.mu.Lock()
		running, ok := l.served[sp.path]
		l.mu.Unlock()
		if ok && running == d {
			// Rewritten with the content that already runs (or put back
			// after a refused replacement): nothing to load.
			l.reg.ClearRefusal(sp.path)
			l.log.Debug().Str("path", sp.path).Msg("plugin file rewritten with the content that runs; not reloaded")
			continue
		}
		l.swap(ctx, sp, content, d)
	}
	for _, f := range l.reg.Refused() {
		if !present[f.Path] {
			l.reg.ClearRefusal(f.Path) // removed: nothing to refuse any more
		}
	}
	l.mu.Lock()
	for path := range l.conflicts {
		if !present[path] {
			delete(l.conflicts, path)
		}
	}
	l.mu.Unlock()
	l.warnUnserved()
}

// retryConflicts has the files refused for declaring the name another
// file served read again once that other file is gone: their refusal
// told the operator to remove one of the two, and the one left is to
// take over, as a renamed file does, rather than stay refused in the
// name of a file that is no longer there.
func (l *pluginLoader) retryConflicts() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for path, servedFrom := range l.conflicts {
		if _, err := os.Stat(servedFrom); err != nil {
			delete(l.stamps, path)
			delete(l.conflicts, path)
		}
	}
}

// swap loads sp, read as content with digest d, and registers it,
// replacing the plugin of the same name. The log reports how long the load
// took.
func (l *pluginLoader) swap(ctx context.Context, sp pluginSpec, content []byte, d digest) {
	log := l.log.With().Str("path", sp.path).Logger()
	start := time.Now()
	e, err := l.load(ctx, sp, content)
	log = log.With().Stringer("load", time.Since(start).Round(time.Millisecond)).Logger()
	if err != nil {
		l.reg.Refuse(sp.path, err, time.Now())
		log.Error().Err(err).Msg("plugin reload failed; the running version stays")
		return
	}
	name := e.Plugin.Info().Name
	cur, ok := l.reg.Lookup(name)
	if ok && cur.Path != "" && cur.Path != sp.path {
		// Two files declaring one name would be refused at the next
		// start; the one that still exists keeps serving. (A file renamed
		// in the directory takes over from its old name.)
		if _, err := os.Stat(cur.Path); err == nil {
			_ = e.Plugin.Close(ctx)
			l.mu.Lock()
			l.conflicts[sp.path] = cur.Path
			l.mu.Unlock()
			l.reg.Refuse(sp.path, fmt.Errorf("agent: plugin %q is already served from %s; remove one of the files", name, cur.Path), time.Now())
			log.Error().Str("plugin", name).Str("served_from", cur.Path).
				Msg("plugin refused: another file already serves this name; remove one of them")
			return
		}
	}
	if !ok {
		if err := l.reg.Register(e); err != nil {
			_ = e.Plugin.Close(ctx)
			l.reg.Refuse(sp.path, err, time.Now())
			log.Error().Err(err).Msg("new plugin refused")
			return
		}
		l.reg.ClearRefusal(sp.path)
		l.setServed(sp.path, d, "")
		log.Info().Str("plugin", name).Msg("plugin added")
		return
	}
	old, err := l.reg.Replace(e)
	if err != nil {
		_ = e.Plugin.Close(ctx)
		l.reg.Refuse(sp.path, err, time.Now())
		log.Error().Err(err).Msg("plugin reload refused; the running version stays")
		return
	}
	l.reg.ClearRefusal(sp.path)
	l.setServed(sp.path, d, old.Path)
	log.Info().Str("plugin", name).Str("version", e.Plugin.Info().PluginVersion).Msg("plugin replaced")
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		// In-flight evals have at most their timeout left.
		rctx, cancel := context.WithTimeout(context.Background(), old.Timeout+time.Minute)
		defer cancel()
		if err := old.Plugin.Retire(rctx, e.Plugin); err != nil {
			log.Warn().Err(err).Str("plugin", name).Msg("retiring the replaced plugin")
		}
	}()
}

// setServed records that the plugin loaded from path, with content d, now
// runs, in place of one loaded from replaced (if another file).
func (l *pluginLoader) setServed(path string, d digest, replaced string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if replaced != path {
		delete(l.served, replaced)
	}
	l.served[path] = d
}

// close waits for the watcher and retiring plugins, then closes every
// registered plugin.
func (l *pluginLoader) close() {
	l.wg.Wait()
	for _, e := range l.reg.List() {
		_ = e.Plugin.Close(context.Background())
	}
}
