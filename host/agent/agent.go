// Package agent wires a Drover agent together: it loads the scheduler
// plugins, starts the server and its HTTP API, and in dev mode simulates
// a cluster of ready nodes that run what is placed on them.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/drover-sched/drover/runtime/wasm"
	"github.com/rs/zerolog"
)

// Version is Drover's version.
const Version = "0.1.0-dev"

// Config configures an agent.
type Config struct {
	// Dev runs in memory with simulated nodes.
	Dev bool
	// DevNodes is how many nodes dev mode simulates.
	DevNodes int
	// HTTPAddr is where the API listens (host:port; port 0 picks one).
	HTTPAddr string
	// PluginDir holds the scheduler plugins; default: "plugins" beside the
	// drover binary.
	PluginDir string
	// LogLevel (debug, info, warn, error) and LogJSON say how the command
	// that starts the agent logs.
	LogLevel string
	LogJSON  bool
	// Server configures the server.
	Server server.Config
}

// DefaultConfig returns a dev-friendly default.
func DefaultConfig() Config {
	return Config{DevNodes: 10, HTTPAddr: "127.0.0.1:4646", LogLevel: "info", Server: server.DefaultConfig()}
}

// Agent is a running agent.
type Agent struct {
	cfg      Config
	log      zerolog.Logger
	plugins  *rt.Registry
	srv      *server.Server
	http     *http.Server
	listener net.Listener
	sim      *simulator
	cancel   context.CancelFunc
	started  time.Time
}

// New starts an agent.
func New(cfg Config, log zerolog.Logger) (*Agent, error) {
	cfg.Server.Dev = cfg.Dev
	if !cfg.Dev {
		// Refuse a bad data dir before loading anything into it.
		if err := server.CheckDataDir(cfg.Server.DataDir); err != nil {
			return nil, err
		}
	}
	a := &Agent{cfg: cfg, log: log, plugins: rt.NewRegistry(), started: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	if err := a.loadPlugins(ctx); err != nil {
		a.closePlugins()
		cancel()
		return nil, err
	}
	srv, err := server.New(cfg.Server, a.plugins, log)
	if err != nil {
		a.closePlugins()
		cancel()
		return nil, err
	}
	a.srv = srv
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = srv.WaitForLeader(wctx)
	wcancel()
	if err != nil {
		_ = a.Shutdown(context.Background())
		return nil, fmt.Errorf("agent: no leadership: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		_ = a.Shutdown(context.Background())
		return nil, fmt.Errorf("agent: listen on %s: %w", cfg.HTTPAddr, err)
	}
	a.listener = ln
	api := httpapi.New(srv, log, a.self)
	a.http = &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server stopped")
		}
	}()
	if cfg.Dev && cfg.DevNodes > 0 {
		a.sim = newSimulator(srv, cfg.DevNodes, log)
		if err := a.sim.start(ctx); err != nil {
			_ = a.Shutdown(context.Background())
			return nil, err
		}
	}
	log.Info().Str("http", a.Addr()).Bool("dev", cfg.Dev).Int("plugins", len(a.plugins.List())).Msg("agent started")
	return a, nil
}

// Addr is the API's base URL.
func (a *Agent) Addr() string { return "http://" + a.listener.Addr().String() }

// Server returns the agent's server.
func (a *Agent) Server() *server.Server { return a.srv }

// Shutdown stops the agent.
func (a *Agent) Shutdown(ctx context.Context) error {
	a.cancel()
	var errs []error
	if a.sim != nil {
		a.sim.wait()
	}
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.srv != nil {
		if err := a.srv.Shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	a.closePlugins()
	return errors.Join(errs...)
}

func (a *Agent) closePlugins() {
	for _, e := range a.plugins.List() {
		_ = e.Plugin.Close(context.Background())
	}
}

// pluginDir is where the built-in plugins live.
func (a *Agent) pluginDir() (string, error) {
	if a.cfg.PluginDir != "" {
		return a.cfg.PluginDir, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("agent: locate the drover binary: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Join(filepath.Dir(exe), "plugins"), nil
}

// loadPlugins loads every .wasm module in the plugin directory.
func (a *Agent) loadPlugins(ctx context.Context) error {
	dir, err := a.pluginDir()
	if err != nil {
		return err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil {
		return fmt.Errorf("agent: plugin dir %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return fmt.Errorf("agent: no scheduler plugins (*.wasm) in %s; build them with `make build` or point -plugin-dir at them", dir)
	}
	sort.Strings(paths)
	wcfg := wasm.DefaultConfig()
	wcfg.Output = pluginOutput{log: a.log}
	if !a.cfg.Dev && a.cfg.Server.DataDir != "" {
		wcfg.CacheDir = filepath.Join(a.cfg.Server.DataDir, "wasm-cache")
	}
	for _, p := range paths {
		m, err := wasm.LoadFile(ctx, p, wcfg)
		if err != nil {
			return fmt.Errorf("agent: load plugin: %w", err)
		}
		pl := rt.NewPlugin(m, rt.DefaultPoolConfig(a.cfg.Server.NumWorkers), a.log)
		if err := a.plugins.Register(&rt.Entry{Plugin: pl, Runtime: "wasm", Path: p}); err != nil {
			_ = pl.Close(ctx)
			return fmt.Errorf("agent: %s: %w", p, err)
		}
		a.log.Debug().Str("plugin", m.Info().Name).Strs("types", m.Info().Types).Str("path", p).Msg("plugin loaded")
	}
	return nil
}

// pluginOutput sends plugin stdout/stderr to the log.
type pluginOutput struct{ log zerolog.Logger }

func (o pluginOutput) Write(p []byte) (int, error) {
	o.log.Info().Str("source", "plugin").Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Self is the body of /v1/agent/self.
type Self struct {
	Config map[string]any
	Member map[string]any
	Stats  map[string]map[string]string
}

func (a *Agent) self() any {
	b := a.srv.Broker().Stats()
	bl := a.srv.Blocked().Stats()
	return &Self{
		Config: map[string]any{"Version": Version, "Dev": a.cfg.Dev, "Region": a.cfg.Server.Region,
			"Datacenter": a.cfg.Server.Datacenter, "NodeName": a.cfg.Server.NodeName, "Workers": a.cfg.Server.NumWorkers},
		Member: map[string]any{"Name": a.cfg.Server.NodeName, "Status": "alive"},
		Stats: map[string]map[string]string{
			"drover": {"leader": fmt.Sprint(a.srv.IsLeader()), "uptime": time.Since(a.started).Round(time.Second).String()},
			"broker": {"total_ready": fmt.Sprint(b.TotalReady), "total_unacked": fmt.Sprint(b.TotalUnacked),
				"total_pending": fmt.Sprint(b.TotalPending), "total_waiting": fmt.Sprint(b.TotalWaiting),
				"total_cancelable": fmt.Sprint(b.TotalCancelable), "total_failed": fmt.Sprint(b.TotalFailed),
				"paused": fmt.Sprint(a.srv.Broker().Paused())},
			"blocked_evals": {"total_blocked": fmt.Sprint(bl.TotalBlocked), "total_escaped": fmt.Sprint(bl.TotalEscaped),
				"total_captured": fmt.Sprint(bl.TotalCaptured)},
		},
	}
}
