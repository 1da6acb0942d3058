// Package goplugin runs scheduler plugins built as native executables and
// served with hashicorp/go-plugin over gRPC (sdk/plugin.Serve in a native
// build).
//
// Every pooled instance is one plugin process. The host and the plugin
// agree on the ABI major through go-plugin's VersionedPlugins handshake,
// then exchange the same encoded abi messages as the wasm runtime. A
// plugin that declares ABI 1.6 takes its evals on the eval socket, a
// socket pair whose end the process inherits (grpcwire.EvalSocket);
// before 1.6, Process carries the request, and the plugin's planner calls
// come back over a GRPCBroker stream on which the host serves the Host
// service. A deadline
// kills the process; a process that crashed is replaced, with a backoff
// that grows while it keeps crashing; and no process outlives the agent
// (see cmd_linux.go and sdk/plugin's parent watch).
package goplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover-sched/drover/internal/hclogzero"
	"github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/sdk/abi"
	"github.com/drover-sched/drover/sdk/plugin"
	"github.com/drover-sched/drover/sdk/plugin/grpcwire"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrInvalidPlugin is returned for an executable that is not a Drover
// scheduler plugin, or speaks an ABI major this host does not support.
var ErrInvalidPlugin = errors.New("goplugin: not a valid Drover plugin executable")

// Config configures how plugin processes run. Start from DefaultConfig.
type Config struct {
	// StartTimeout bounds a process's start and handshake.
	StartTimeout time.Duration
	// RestartBackoff is the wait before starting a process after one
	// crashed; it doubles with every further crash up to MaxRestartBackoff
	// and resets after an eval succeeds.
	RestartBackoff, MaxRestartBackoff time.Duration
	// Log receives the plugin's stdout and stderr, one entry per line,
	// tagged with the plugin's name.
	Log zerolog.Logger
	// Env is the plugin's environment; the agent's is never inherited.
	Env []string
	// MemoryLimitBytes kills a process whose resident memory passes it
	// (0: no limit). It is checked every MemoryCheckEvery during a call,
	// and every idleMemoryCheckEvery between calls.
	MemoryLimitBytes uint64
	MemoryCheckEvery time.Duration
	// EvalsOverGRPC sends evals over gRPC even to plugins that take the
	// eval socket (ABI 1.6), so that benchmarks can compare the two.
	EvalsOverGRPC bool
}

// DefaultConfig starts processes within 10 s and restarts crashed ones
// after 100 ms, backing off to 30 s.
func DefaultConfig() Config {
	return Config{StartTimeout: 10 * time.Second, RestartBackoff: 100 * time.Millisecond,
		MaxRestartBackoff: 30 * time.Second, Log: zerolog.Nop(), MemoryCheckEvery: 20 * time.Millisecond}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.StartTimeout <= 0 {
		return errors.New("goplugin: start timeout must be positive")
	}
	if c.RestartBackoff < 0 || c.MaxRestartBackoff < c.RestartBackoff {
		return errors.New("goplugin: restart backoff must be 0 <= initial <= max")
	}
	if c.MemoryLimitBytes > 0 && c.MemoryCheckEvery <= 0 {
		return errors.New("goplugin: a memory limit needs a positive check interval")
	}
	return nil
}

// Factory starts instances (processes) of one plugin executable.
type Factory struct {
	path string
	cfg  Config
	info abi.Info

	mu        sync.Mutex
	crashes   int
	lastCrash time.Time
}

var (
	_ runtime.Factory       = (*Factory)(nil)
	_ runtime.ConfigChecker = (*Factory)(nil)
)

// isWasm reports whether the file at path starts with the WebAssembly
// header: a wasm plugin given the go-plugin runtime.
func isWasm(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	_, err = io.ReadFull(f, head)
	return err == nil && string(head) == "\x00asm"
}

// Load starts the executable at path once to check its handshake and ABI
// version and read its info, then stops it.
func Load(ctx context.Context, path string, cfg Config) (*Factory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("goplugin: %w", err)
	}
	if st, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("goplugin: %w", err)
	} else if isWasm(abs) {
		return nil, fmt.Errorf(`%w: %s is a WebAssembly module: load it with runtime "wasm" (in the plugin directory, name it *.wasm)`, ErrInvalidPlugin, path)
	} else if st.IsDir() || st.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%w: %s is not an executable file", ErrInvalidPlugin, path)
	}
	f := &Factory{path: abs, cfg: cfg, info: abi.Info{Name: filepath.Base(abs)}}
	inst, err := f.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer inst.Close(ctx)
	raw, err := inst.conn.Scheduler.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: Info: %v", ErrInvalidPlugin, path, err)
	}
	var info abi.Info
	if err := abi.Decode(raw, &info); err != nil {
		return nil, fmt.Errorf("%w: %s: decode info: %v", ErrInvalidPlugin, path, err)
	}
	if err := abi.CheckVersion(abi.Version(info.ABI)); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidPlugin, path, err)
	}
	if info.Name == "" {
		return nil, fmt.Errorf("%w: %s: plugin declares no name", ErrInvalidPlugin, path)
	}
	f.info = info
	return f, nil
}

// Info implements runtime.Factory.
func (f *Factory) Info() abi.Info { return f.info }

// Path is the plugin's executable.
func (f *Factory) Path() string { return f.path }

// NewInstance implements runtime.Factory: it starts a process, after the
// restart backoff if the last one crashed.
func (f *Factory) NewInstance(ctx context.Context) (runtime.Instance, error) {
	if wait := f.backoff(time.Now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("goplugin: %s: restart backoff (%v after %d crashes): %w", f.info.Name, wait, f.crashCount(), ctx.Err())
		}
	}
	inst, err := f.start(ctx)
	if err != nil {
		f.noteCrash()
		return nil, err
	}
	return inst, nil
}

// backoff is how long to wait, at now, before the next start.
func (f *Factory) backoff(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashes == 0 {
		return 0
	}
	d := f.cfg.RestartBackoff
	for i := 1; i < f.crashes && d < f.cfg.MaxRestartBackoff; i++ {
		d *= 2
	}
	d = min(d, f.cfg.MaxRestartBackoff)
	return d - now.Sub(f.lastCrash)
}

func (f *Factory) noteCrash() {
	f.mu.Lock()
	f.crashes++
	f.lastCrash = time.Now()
	f.mu.Unlock()
}

func (f *Factory) noteSuccess() {
	f.mu.Lock()
	f.crashes = 0
	f.mu.Unlock()
}

func (f *Factory) crashCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashes
}

// CheckConfig implements runtime.ConfigChecker: it starts a process of
// its own, calls its CheckConfig method (ABI 1.7) and stops it. The
// process is killed at ctx's deadline or past the memory limit, as during
// an eval; its crash does not count towards the restart backoff of the
// processes that run evals. A plugin that does not serve the method
// accepts any configuration, as a wasm module without the export does.
func (f *Factory) CheckConfig(ctx context.Context, req []byte) ([]byte, error) {
	inst, err := f.start(ctx)
	if err != nil {
		return nil, err
	}
	defer inst.Close(ctx)
	served := true
	out, _, err := inst.guard(ctx, "config check", func() ([]byte, error) {
		out, err := inst.conn.Scheduler.CheckConfig(ctx, req)
		if status.Code(err) == codes.Unimplemented {
			served = false
			return nil, nil
		}
		return out, err
	})
	if err == nil && !served {
		return nil, runtime.ErrConfigCheckNotServed
	}
	return out, err
}

// Close implements runtime.Factory. Processes are stopped by their
// instances' Close.
func (f *Factory) Close(context.Context) error { return nil }

// handshakeHint adds to go-plugin's failed handshake what a plugin built
// with the SDK most likely did: go-plugin's guess (another architecture,
// missing libraries) is seldom it. A plugin that wrote a line to stdout
// before its handshake printed in init, and the handshake line must come
// first; one that wrote nothing exited (or closed stdout) before it.
func handshakeHint(err error) error {
	msg := err.Error()
	switch {
	case !strings.Contains(msg, "Unrecognized remote plugin message"):
		return err
	case strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return fmt.Errorf("%v\n(the plugin wrote nothing to stdout: it exited before its handshake, "+
			"as a panic in init does; its stderr says why)", err)
	}
	return fmt.Errorf("%v\n(the first line a plugin writes to stdout must be go-plugin's handshake: "+
		"write nothing to stdout before plugin.Serve, for example in init; stderr is free)", err)
}

func (f *Factory) start(ctx context.Context) (*instance, error) {
	name := f.info.Name
	cmd := exec.Command(f.path)
	cmd.Env = slices.Clip(f.cfg.Env)
	configureCmd(cmd)
	evals, theirs, err := offerEvalSocket(cmd)
	if err != nil {
		return nil, fmt.Errorf("goplugin: eval socket: %w", err)
	}
	sets := map[int]goplugin.PluginSet{}
	for _, m := range abi.SupportedMajors {
		sets[int(m)] = goplugin.PluginSet{grpcwire.PluginName: &grpcwire.SchedulerPlugin{}}
	}
	stdout := runtime.OutputLog(f.cfg.Log, name, "stdout")
	tail := runtime.NewCapture(1024)
	stderr := io.MultiWriter(runtime.OutputLog(f.cfg.Log, name, "stderr"), tail)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  grpcwire.Handshake,
		VersionedPlugins: sets,
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     f.cfg.StartTimeout,
		Stderr:           stderr,
		SyncStdout:       stdout,
		SyncStderr:       stderr,
		GRPCDialOptions:  grpcwire.DialOptions(),
		// go-plugin's own errors (a process that exited, a handshake
		// refused) at error level, tagged with the plugin.
		Logger: hclogzero.New(f.cfg.Log.With().Str("plugin", name).Logger(), "go-plugin", hclog.Error),
	})
	fail := func(err error) (*instance, error) {
		stop(client, cmd, true, f.cfg.Log)
		if evals != nil {
			evals.Close()
		}
		return nil, err
	}
	rpc, err := client.Client()
	if theirs != nil {
		theirs.Close() // the process has its copy, or failed to start
	}
	if err != nil {
		_, err = fail(fmt.Errorf("%w: start %s: %v", ErrInvalidPlugin, f.path, handshakeHint(err)))
		// Stopped, the process's stderr is read to its end: a plugin that
		// exited before its handshake (a panic in init) says why there.
		return nil, tail.Explain(err)
	}
	raw, err := rpc.Dispense(grpcwire.PluginName)
	if err != nil {
		return fail(fmt.Errorf("%w: dispense %s: %v", ErrInvalidPlugin, f.path, err))
	}
	conn, ok := raw.(*grpcwire.Conn)
	if !ok {
		return fail(fmt.Errorf("%w: dispensed %T", ErrInvalidPlugin, raw))
	}
	inst := &instance{f: f, client: client, cmd: cmd, conn: conn, evals: evals, stderr: tail, done: make(chan struct{})}
	id := conn.Broker.NextId()
	go conn.Broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(grpcwire.ServerOptions(opts)...)
		grpcwire.RegisterHost(s, inst.host)
		return s
	})
	actx, cancel := context.WithTimeout(ctx, f.cfg.StartTimeout)
	defer cancel()
	if err := conn.Scheduler.Attach(actx, id); err != nil {
		return fail(fmt.Errorf("%w: attach %s: %v", ErrInvalidPlugin, f.path, err))
	}
	if limit := f.cfg.MemoryLimitBytes; limit > 0 {
		go inst.watchIdleMemory(limit)
	}
	return inst, nil
}

// instance is one plugin process.
type instance struct {
	f      *Factory
	client *goplugin.Client
	cmd    *exec.Cmd
	conn   *grpcwire.Conn
	// evals is the eval socket (ABI 1.6), used when the plugin declares it.
	evals *grpcwire.EvalSocket
	// current answers the planner calls of the eval in flight.
	current atomic.Pointer[plugin.HostFunc]
	// stderr keeps the start of the process's stderr to explain a crash.
	stderr *runtime.Capture
	// busy is set during a call, whose own watcher then checks memory;
	// idleOver is the resident size at which the watcher between calls
	// killed the process, if it did.
	busy     atomic.Bool
	idleOver atomic.Uint64
	// done is closed once the process is stopped.
	done     chan struct{}
	doneOnce sync.Once
}

// idleMemoryCheckEvery is how often a process's memory is checked between
// calls: less often than during one (MemoryCheckEvery), as nothing waits
// on it there, but often enough that a leak is stopped within a few
// hundred MiB.
const idleMemoryCheckEvery = 250 * time.Millisecond

var (
	_ runtime.Sizer  = (*instance)(nil)
	_ runtime.Prober = (*instance)(nil)
)

// Alive implements runtime.Prober: the process has not exited. One
// killed or crashed while idle is replaced before the next eval, which
// would otherwise fail writing to it.
func (i *instance) Alive() bool { return !i.client.Exited() }

var errNoEval = abi.Err(abi.CodeInvalidEval, "host: planner call outside an evaluation")

func (i *instance) host(op abi.Op, msg []byte) ([]byte, error) {
	h := i.current.Load()
	if h == nil {
		return nil, errNoEval
	}
	return (*h)(op, msg)
}

// Process implements runtime.Instance.
func (i *instance) Process(ctx context.Context, req []byte, host plugin.HostFunc) ([]byte, error) {
	i.current.Store(&host)
	defer i.current.Store(nil)
	out, crashed, err := i.guard(ctx, "", func() ([]byte, error) {
		if i.takesEvalSocket() {
			return i.evals.Process(ctx, req, i.host)
		}
		return i.conn.Scheduler.Process(ctx, req)
	})
	switch {
	case err == nil:
		i.f.noteSuccess()
	case crashed:
		i.f.noteCrash()
	}
	return out, err
}

// guard runs call, one call into the process, with its resident memory
// watched. If the call fails the process is killed, and the error says
// why: the memory limit, ctx's end, or else a crash (crashed), explained
// by the start of its stderr. what, unless empty, names the call in the
// error (an eval's goes unnamed).
func (i *instance) guard(ctx context.Context, what string, call func() ([]byte, error)) (out []byte, crashed bool, err error) {
	i.busy.Store(true)
	defer i.busy.Store(false)
	i.stderr.Reset()
	var overLimit atomic.Uint64
	if limit := i.f.cfg.MemoryLimitBytes; limit > 0 {
		stop := make(chan struct{})
		defer close(stop)
		go i.watchMemory(limit, stop, &overLimit)
	}
	out, err = call()
	if err == nil {
		return out, false, nil
	}
	i.kill()
	who := i.f.info.Name
	if what != "" {
		who += ": " + what
	}
	if rss := max(overLimit.Load(), i.idleOver.Load()); rss > 0 {
		return nil, false, fmt.Errorf("goplugin: %s: memory limit of %d MiB exceeded (resident %d MiB); process killed",
			who, i.f.cfg.MemoryLimitBytes>>20, rss>>20)
	}
	if ctx.Err() != nil {
		return nil, false, fmt.Errorf("goplugin: %s: %w; process killed", who, ctx.Err())
	}
	return nil, true, i.stderr.Explain(fmt.Errorf("goplugin: %s: process failed: %v", who, err))
}

// watchMemory kills the process once its resident memory passes limit,
// recording the size it saw in over, until stop is closed.
func (i *instance) watchMemory(limit uint64, stop <-chan struct{}, over *atomic.Uint64) {
	t := time.NewTicker(i.f.cfg.MemoryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if rss, ok := residentBytes(i.Pid()); ok && rss > limit {
				over.Store(rss)
				i.kill()
				return
			}
		}
	}
}

// watchIdleMemory kills the process once its resident memory passes
// limit between calls, where no call's watcher looks: a goroutine the
// plugin left running after its eval may go on allocating, and nothing
// else would stop it before the next eval, if one ever came. The process
// is then replaced before the next eval (Alive). It returns once the
// process is stopped or has exited.
func (i *instance) watchIdleMemory(limit uint64) {
	t := time.NewTicker(idleMemoryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-i.done:
			return
		case <-t.C:
			if i.client.Exited() {
				return
			}
			if i.busy.Load() {
				continue
			}
			if rss, ok := residentBytes(i.Pid()); ok && rss > limit {
				i.idleOver.Store(rss)
				i.f.cfg.Log.Warn().Str("plugin", i.f.info.Name).Uint64("resident_mib", rss>>20).
					Uint64("limit_mib", limit>>20).Msg("plugin process over its memory limit between evals; killed")
				i.kill()
				return
			}
		}
	}
}

// MemoryBytes implements runtime.Sizer: the process's resident memory, so
// that the pool recycles a process past its high-water mark.
func (i *instance) MemoryBytes() uint64 {
	rss, _ := residentBytes(i.Pid())
	return rss
}

// Pid is the plugin process's ID (0 once it is gone).
func (i *instance) Pid() int {
	if rc := i.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// kill ends the process at once: a hung plugin would not answer go-plugin's
// graceful shutdown.
func (i *instance) kill() {
	stop(i.client, i.cmd, true, i.f.cfg.Log)
	i.closeEvals()
	i.doneOnce.Do(func() { close(i.done) })
}

// Close implements runtime.Instance.
func (i *instance) Close(context.Context) error {
	stop(i.client, i.cmd, false, i.f.cfg.Log)
	i.closeEvals()
	i.doneOnce.Do(func() { close(i.done) })
	return nil
}

// stopGrace bounds how long stopping a process waits for go-plugin's own
// shutdown (a graceful close, then a kill 2 s later) before it kills the
// process's group, and then how long it waits for the group's end.
const stopGrace = 5 * time.Second

// stop ends the plugin process that client started with cmd: at once when
// now (a process that failed or hangs), gracefully otherwise. go-plugin
// reads the process's output to its end before it returns, and a child the
// plugin started (a shell wrapper's command) holds that output open: so the
// process's group is killed as soon as the process has exited, or after
// stopGrace. A process that left the group and still holds the output is
// left running after another stopGrace, with a warning.
func stop(client *goplugin.Client, cmd *exec.Cmd, now bool, log zerolog.Logger) {
	if now {
		killGroup(client, cmd)
	}
	done := make(chan struct{})
	go func() {
		client.Kill()
		close(done)
	}()
	if waitStopped(done, cmd) {
		return
	}
	killGroup(client, cmd)
	select {
	case <-done:
	case <-time.After(stopGrace):
		log.Warn().Int("pid", cmd.Process.Pid).Msg("a process the plugin started holds its output after the plugin's group was killed; leaving it")
	}
}

// waitStopped waits for done and reports true, or reports false as soon as
// the process has exited but is not yet reaped (its group may hold the
// output), or once stopGrace has passed.
func waitStopped(done <-chan struct{}, cmd *exec.Cmd) bool {
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-done:
			return true
		case <-grace.C:
			return false
		case <-poll.C:
			if zombie(cmd) {
				return false
			}
		}
	}
}

// killGroup kills the plugin process and every process in its group, the
// children it started, while the process is not yet reaped: until then
// its pid, the group's id, cannot have been given to another process.
func killGroup(client *goplugin.Client, cmd *exec.Cmd) {
	if cmd.Process != nil && !client.Exited() {
		signalGroup(cmd.Process.Pid)
	}
}

// takesEvalSocket reports whether evals go on the eval socket (ABI 1.6)
// rather than over gRPC.
func (i *instance) takesEvalSocket() bool {
	return i.evals != nil && !i.f.cfg.EvalsOverGRPC && abi.Version(i.f.info.ABI).TakesEvalSocket()
}

func (i *instance) closeEvals() {
	if i.evals != nil {
		i.evals.Close()
	}
}

// PID returns the process ID behind an instance of this runtime, and 0 for
// any other instance; tests use it to check that no process is left behind.
func PID(inst runtime.Instance) int {
	if gi, ok := inst.(*instance); ok {
		return gi.Pid()
	}
	return 0
}
