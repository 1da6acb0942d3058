// Package agent wires a Drover agent together: it loads the scheduler
// plugins, starts the server and its HTTP API, and in dev mode simulates
// a cluster of ready nodes that run what is placed on them.
package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/logmon"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/tlsutil"
	rt "github.com/drover-sched/drover/runtime"
	"github.com/rs/zerolog"
)

// Version is Drover's version.
const Version = server.Version

// Config configures an agent.
type Config struct {
	// Dev runs in memory with simulated nodes.
	Dev bool
	// DevNodes is how many nodes dev mode simulates.
	DevNodes int
	// HTTPAddr is where the API listens (host:port; port 0 picks one).
	HTTPAddr string
	// HTTPSHandshakeTimeout bounds how long a new connection to an HTTPS
	// API may take to finish its TLS handshake and start its first
	// request (the limits block's https_handshake_timeout, Nomad's, 5s);
	// 0: no bound of its own (ReadHeaderTimeout still bounds handshakes).
	HTTPSHandshakeTimeout time.Duration
	// HTTPMaxConnsPerClient is how many connections one IP address may
	// hold open to the API at once (http_max_conns_per_client, 100); one
	// more is answered 429 and closed. 0: no limit.
	HTTPMaxConnsPerClient int
	// PluginDir holds the scheduler plugins; default: "plugins" beside the
	// drover binary.
	PluginDir string
	// Plugins configure plugins (plugin blocks of the configuration file).
	Plugins []PluginConfig
	// PluginReloadInterval is how often replaced plugin files are looked
	// for; 0 or less turns reloading off. A replacement takes over once
	// it has loaded (compiled, for wasm), after the poll that noticed it.
	PluginReloadInterval time.Duration
	// EnableDebug serves the Go profiler (/v1/agent/pprof) without ACLs
	// (Nomad's enable_debug); nil: in dev mode only, as Nomad's.
	EnableDebug *bool
	// LogLevel (debug, info, warn, error) and LogJSON say how the command
	// that starts the agent logs.
	LogLevel string
	LogJSON  bool
	// Logs, if set, is where the agent's logger also writes: /v1/agent/monitor
	// streams it.
	Logs *logmon.Hub
	// Server configures the server.
	Server server.Config
	// TLS configures HTTPS for the API and TLS between servers (the
	// configuration file's tls block).
	TLS tlsutil.Config
}

// DefaultConfig returns a dev-friendly default.
func DefaultConfig() Config {
	return Config{DevNodes: 10, HTTPAddr: "127.0.0.1:4646", LogLevel: "info", Server: server.DefaultConfig(),
		PluginReloadInterval: DefaultPluginReloadInterval, HTTPSHandshakeTimeout: 5 * time.Second, HTTPMaxConnsPerClient: 100}
}

// Agent is a running agent.
type Agent struct {
	cfg      Config
	log      zerolog.Logger
	plugins  *rt.Registry
	loader   *pluginLoader
	srv      *server.Server
	http     *http.Server
	listener net.Listener // the bound TCP listener (served under TLS if https)
	https    bool         // the API is HTTPS: the tls block's http is on
	tls      *tlsutil.TLS // nil without TLS
	sim      *simulator
	cancel   context.CancelFunc
	started  time.Time
}

// New starts an agent.
func New(cfg Config, log zerolog.Logger) (*Agent, error) {
	cfg.Server.Dev = cfg.Dev
	cfg.Server.EnableDebug = cfg.Dev
	if cfg.EnableDebug != nil {
		cfg.Server.EnableDebug = *cfg.EnableDebug
	}
	// A bad configuration, data dir or HTTP address is refused before the
	// plugins load (seconds, on a new build) and before raft writes into
	// the data dir.
	if err := cfg.Server.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.validateLimits(); err != nil {
		return nil, err
	}
	if !cfg.Dev {
		if err := server.CheckDataDir(cfg.Server.DataDir); err != nil {
			return nil, err
		}
	}
	tlsc, err := tlsutil.Load(cfg.TLS, cfg.Server.Region)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cfg.Server.TLS = tlsc
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("agent: listen on %s: %w", cfg.HTTPAddr, err)
	}
	a := &Agent{cfg: cfg, log: log, plugins: rt.NewRegistry(), started: time.Now(), listener: ln,
		https: tlsc.HTTPServer() != nil, tls: tlsc}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	fail := func(err error) (*Agent, error) {
		a.closePlugins()
		cancel()
		_ = ln.Close()
		return nil, err
	}
	loader, err := newPluginLoader(cfg, log, a.plugins)
	if err != nil {
		return fail(err)
	}
	a.loader = loader
	if err := loader.loadAll(ctx); err != nil {
		return fail(err)
	}
	srv, err := server.New(cfg.Server, a.plugins, log)
	if err != nil {
		return fail(err)
	}
	a.srv = srv
	srv.Telemetry().SetGlobal() // raft's metrics, beside the server's
	if srv.Alone() {
		// A server alone leads as soon as raft starts. One of several
		// serves its API at once, as Nomad's do, while the cluster forms
		// or elects a leader ("no cluster leader" until then).
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		err = srv.WaitForLeader(wctx)
		wcancel()
		if err != nil {
			_ = a.Shutdown(context.Background())
			return nil, fmt.Errorf("agent: no leadership: %w", err)
		}
	}
	api := httpapi.New(srv, log, a.self)
	if cfg.Logs != nil {
		api.SetLogs(cfg.Logs)
	}
	api.SetAdvertise(ln.Addr().String())
	srv.SetForwardedHandler(api.Handler())
	// ReadHeaderTimeout also bounds the TLS handshake.
	a.http = &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: stdlog.New(httpErrorLog{log}, "", 0), ConnState: newConnLimits(cfg, a.https, log).connState()}
	a.http.RegisterOnShutdown(api.Close)
	served := ln
	if c := tlsc.HTTPServer(); c != nil {
		// With verify_https_client, a client without a certificate the CA
		// signed fails the handshake, before any handler runs.
		served = tls.NewListener(ln, c)
	}
	go func() {
		if err := a.http.Serve(served); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server stopped")
		}
	}()
	if cfg.Dev && cfg.DevNodes > 0 {
		a.sim = newSimulator(srv, cfg.DevNodes, ln.Addr().String(), a.https, log)
		if err := a.sim.start(ctx); err != nil {
			_ = a.Shutdown(context.Background())
			return nil, err
		}
	}
	if cfg.PluginReloadInterval > 0 {
		loader.watch(ctx, cfg.PluginReloadInterval)
	}
	log.Info().Str("http", a.Addr()).Str("rpc", srv.RPCAddr()).Bool("dev", cfg.Dev).Int("plugins", len(a.plugins.List())).Msg("agent started")
	return a, nil
}

// Addr is the API's base URL: https://host:port when the tls block's
// http is on.
func (a *Agent) Addr() string {
	if a.https {
		return "https://" + a.listener.Addr().String()
	}
	return "http://" + a.listener.Addr().String()
}

// Reload reads the TLS files again (SIGHUP): the API's new connections,
// and new connections between servers, use the certificates they hold.
// Files that would be refused at start are refused, and the previous
// certificates kept; the log says which.
func (a *Agent) Reload() error {
	if a.tls == nil {
		a.log.Info().Msg("reload: no TLS to reload")
		return nil
	}
	if err := a.tls.Reload(); err != nil {
		a.log.Error().Err(err).Msg("reload: kept the previous TLS certificates")
		return err
	}
	a.log.Info().Str("cert_file", a.cfg.TLS.CertFile).Msg("reload: TLS certificates read again")
	return nil
}

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
	} else if a.listener != nil {
		_ = a.listener.Close() // bound at start, never served
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
	if a.loader != nil {
		a.loader.close()
	}
}

// httpErrorLog takes what net/http logs into the agent's log: at debug,
// as Nomad logs it at trace, since it is mostly clients' faults (a TLS
// handshake a plain-HTTP client or one without a certificate failed), but
// a handler's panic at error.
type httpErrorLog struct{ log zerolog.Logger }

func (l httpErrorLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if bytes.Contains(p, []byte("panic")) {
		l.log.Error().Str("component", "http").Msg(msg)
	} else {
		l.log.Debug().Str("component", "http").Msg(msg)
	}
	return len(p), nil
}

// self is the agent's part of /v1/agent/self: its configuration and
// statistics (the API adds the version and this server as a member).
func (a *Agent) self() *httpapi.AgentSelf {
	b := a.srv.Broker().Stats()
	bl := a.srv.Blocked().Stats()
	return &httpapi.AgentSelf{
		Config: map[string]any{"Dev": a.cfg.Dev, "Region": a.cfg.Server.Region,
			"Datacenter": a.cfg.Server.Datacenter, "NodeName": a.cfg.Server.NodeName, "Workers": a.cfg.Server.NumWorkers,
			"TLSConfig": tlsSelf(a.cfg.TLS),
			// Nomad's ACLConfig (its UI reads Enabled) and Limits, under
			// Nomad's names and types.
			"ACL": map[string]any{"Enabled": a.cfg.Server.ACLEnabled,
				"TokenMinExpirationTTL": a.cfg.Server.ACLTokenMinExpirationTTL,
				"TokenMaxExpirationTTL": a.cfg.Server.ACLTokenMaxExpirationTTL},
			"Limits": map[string]any{"HTTPSHandshakeTimeout": a.cfg.HTTPSHandshakeTimeout.String(),
				"HTTPMaxConnsPerClient": a.cfg.HTTPMaxConnsPerClient,
				"RPCHandshakeTimeout":   a.cfg.Server.RPCHandshakeTimeout.String(),
				"RPCMaxConnsPerClient":  a.cfg.Server.RPCMaxConnsPerClient}},
		// Nomad's sections (nomad, raft, runtime), with Drover's own
		// additions (rpc_addr, uptime; broker, blocked_evals).
		Stats: map[string]map[string]string{
			"nomad": {"server": "true", "leader": fmt.Sprint(a.srv.IsLeader()), "leader_addr": a.srv.Leader(),
				"bootstrap": fmt.Sprint(a.cfg.Server.BootstrapExpect == 1 || a.cfg.Dev), "known_regions": "1",
				"rpc_addr": a.srv.RPCAddr(), "uptime": time.Since(a.started).Round(time.Second).String()},
			"raft": a.srv.RaftStats(),
			"runtime": {"arch": goruntime.GOARCH, "os": goruntime.GOOS, "version": goruntime.Version(),
				"max_procs": fmt.Sprint(goruntime.GOMAXPROCS(0)), "goroutines": fmt.Sprint(goruntime.NumGoroutine()),
				"cpu_count": fmt.Sprint(goruntime.NumCPU()), "kernel.name": goruntime.GOOS},
			"broker": {"total_ready": fmt.Sprint(b.TotalReady), "total_unacked": fmt.Sprint(b.TotalUnacked),
				"total_pending": fmt.Sprint(b.TotalPending), "total_waiting": fmt.Sprint(b.TotalWaiting),
				"total_cancelable": fmt.Sprint(b.TotalCancelable), "total_failed": fmt.Sprint(b.TotalFailed),
				"paused": fmt.Sprint(a.srv.Broker().Paused())},
			"blocked_evals": {"total_blocked": fmt.Sprint(bl.TotalBlocked), "total_escaped": fmt.Sprint(bl.TotalEscaped),
				"total_captured": fmt.Sprint(bl.TotalCaptured)},
		},
	}
}

// tlsSelf is the tls block as Nomad's /v1/agent/self gives it, under
// Nomad's names: what tells a client whether the API is HTTPS.
func tlsSelf(c tlsutil.Config) map[string]any {
	minVersion := ""
	switch c.MinVersion {
	case tls.VersionTLS12:
		minVersion = "tls12"
	case tls.VersionTLS13:
		minVersion = "tls13"
	}
	suites := make([]string, len(c.CipherSuites))
	for i, id := range c.CipherSuites {
		suites[i] = tls.CipherSuiteName(id)
	}
	return map[string]any{"EnableHTTP": c.HTTP, "EnableRPC": c.RPC, "VerifyServerHostname": c.VerifyServerHostname,
		"VerifyHTTPSClient": c.VerifyHTTPSClient, "RPCUpgradeMode": c.RPCUpgradeMode, "CAFile": c.CAFile,
		"CertFile": c.CertFile, "KeyFile": c.KeyFile, "TLSMinVersion": minVersion, "TLSCipherSuites": strings.Join(suites, ",")}
}
