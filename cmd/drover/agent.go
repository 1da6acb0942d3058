package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/host/logmon"
	"github.com/drover-sched/drover/host/server"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

type agentCommand struct{ *meta }

func (c *agentCommand) Synopsis() string { return "Run a Drover agent" }

func (c *agentCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover agent [options]

  Runs a Drover agent: the server (state, broker, workers, plan applier)
  and its HTTP API. With -dev it keeps its state in memory and simulates a
  cluster of ready nodes, so jobs place at once. Otherwise it keeps its
  state in -data-dir (a raft log and snapshots) and restores it on start.

Options:

  -config=FILE         Agent configuration file (HCL, or JSON if it ends in
                       .json): name, region, datacenter, data_dir, http_addr,
                       rpc_addr, plugin_dir, log_level, log_json,
                       enable_debug (/v1/agent/pprof without ACLs; on
                       in dev mode); a server
                       block (num_schedulers, broker, heartbeat, GC and raft
                       settings, bootstrap_expect, server_join), advertise,
                       telemetry, tls (HTTPS for the API, TLS between
                       servers; drover tls makes certificates), acl
                       (enabled, token_min_expiration_ttl,
                       token_max_expiration_ttl), limits
                       (https_handshake_timeout,
                       http_max_conns_per_client, rpc_handshake_timeout,
                       rpc_max_conns_per_client), autopilot
                       (cleanup_dead_servers, last_contact_threshold,
                       max_trailing_logs, min_quorum,
                       server_stabilization_time), and plugin
                       "NAME" blocks (runtime, path, config, env,
                       real_clock, limits { memory_mb, timeout,
                       enforce_deadline }) that add or configure scheduler
                       plugins. Flags override it.
  -dev                 Run in dev mode: in-memory state, simulated nodes.
  -dev-nodes=N         Number of simulated nodes in dev mode (default 10).
  -http-addr=HOST:PORT Address of the HTTP API (default 127.0.0.1:4646).
  -data-dir=PATH       Where state is kept (required outside dev mode).
  -plugin-dir=PATH     Directory of scheduler plugins (default: "plugins"
                       beside the drover binary).
  -workers=N           Scheduling workers (default: one per CPU core).
  -node=NAME           This server's name, unique in its cluster (default
                       drover-server).
  -rpc-addr=HOST:PORT  Where this server listens for the other servers of
                       its cluster (raft, forwarded requests). Without it
                       the server runs alone.
  -bootstrap-expect=N  How many servers form a new cluster.
  -acl-enabled         Enforce ACLs: every API request needs a token whose
                       policies allow it (drover acl bootstrap makes the
                       first, management token).
  -retry-join=ADDR     Another server's RPC address, asked until this
                       server is in a cluster; repeat for each server.
  -log-level=LEVEL     debug, info, warn or error (default info).
  -log-json            Log JSON lines instead of text.

Signals:

  SIGINT, SIGTERM  Stop the agent (a leader hands the lead over first).
  SIGHUP           Read the configuration file again for its log_level
                   (a -log-level flag still wins), and the tls block's
                   certificate, key and CA files: new connections use
                   them (a file that would be refused at start keeps the
                   previous ones, with an error in the log). Other
                   settings need a restart.

Exit codes:

  0  stopped by a signal
  1  bad flags or configuration, or another error
  3  the data dir is locked by another agent
  4  the data dir is corrupt (raft log, snapshot or metadata)
  5  the data dir was initialized but its state is missing
  6  the data dir is unusable (not a directory, not writable, someone
     else's directory, or written by a newer Drover)
`)
}

// reloadLogLevel builds the agent's configuration again (SIGHUP) and
// takes its log level; a configuration now refused, or a level that is
// not one, keeps the current level, with an error in the log. Other
// settings need a restart.
func reloadLogLevel(configure func() (agent.Config, error), log zerolog.Logger) {
	cfg, err := configure()
	if err != nil {
		log.Error().Err(err).Msg("reload: configuration refused; kept the log level")
		return
	}
	lvl, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || lvl == zerolog.NoLevel {
		log.Error().Str("log_level", cfg.LogLevel).Msg("reload: not a log level; kept the log level")
		return
	}
	if old := zerolog.GlobalLevel(); lvl != old {
		zerolog.SetGlobalLevel(lvl)
		log.WithLevel(max(lvl, zerolog.InfoLevel)).Str("from", old.String()).Str("to", lvl.String()).Msg("reload: log level changed")
	}
}

// Agent exit codes for data dir problems.
const (
	exitDataDirLocked   = 3
	exitDataDirCorrupt  = 4
	exitDataDirMissing  = 5
	exitDataDirUnusable = 6
)

func (c *agentCommand) Run(args []string) int {
	defaults := agent.DefaultConfig()
	var flagCfg agent.Config
	var configPath string
	// Not c.flags: the agent takes none of the API commands' -address,
	// -namespace and -json, and must not take "-address" for -http-addr.
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&configPath, "config", "", "")
	fs.BoolVar(&flagCfg.Dev, "dev", false, "")
	fs.IntVar(&flagCfg.DevNodes, "dev-nodes", defaults.DevNodes, "")
	fs.StringVar(&flagCfg.HTTPAddr, "http-addr", defaults.HTTPAddr, "")
	fs.StringVar(&flagCfg.Server.DataDir, "data-dir", "", "")
	fs.StringVar(&flagCfg.PluginDir, "plugin-dir", "", "")
	fs.IntVar(&flagCfg.Server.NumWorkers, "workers", 0, "")
	fs.StringVar(&flagCfg.LogLevel, "log-level", defaults.LogLevel, "")
	fs.BoolVar(&flagCfg.LogJSON, "log-json", false, "")
	fs.StringVar(&flagCfg.Server.NodeName, "node", "", "")
	fs.StringVar(&flagCfg.Server.RPCAddr, "rpc-addr", "", "")
	fs.IntVar(&flagCfg.Server.BootstrapExpect, "bootstrap-expect", 0, "")
	fs.BoolVar(&flagCfg.Server.ACLEnabled, "acl-enabled", false, "")
	fs.Func("retry-join", "", func(v string) error {
		flagCfg.Server.RetryJoin = append(flagCfg.Server.RetryJoin, v)
		return nil
	})
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	// configure builds the agent's configuration: the defaults, then the
	// file's settings, then the flags given on the command line, which
	// win. SIGHUP builds it again.
	configure := func() (agent.Config, error) {
		cfg := agent.DefaultConfig()
		if configPath != "" {
			f, err := agent.LoadConfigFile(configPath)
			if err != nil {
				return cfg, err
			}
			if err := f.Apply(&cfg); err != nil {
				return cfg, err
			}
		}
		// Flags given on the command line win over the file.
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "dev":
				cfg.Dev = flagCfg.Dev
			case "dev-nodes":
				cfg.DevNodes = flagCfg.DevNodes
			case "http-addr":
				cfg.HTTPAddr = flagCfg.HTTPAddr
			case "data-dir":
				cfg.Server.DataDir = flagCfg.Server.DataDir
			case "plugin-dir":
				cfg.PluginDir = flagCfg.PluginDir
			case "workers":
				cfg.Server.NumWorkers = flagCfg.Server.NumWorkers
			case "log-level":
				cfg.LogLevel = flagCfg.LogLevel
			case "log-json":
				cfg.LogJSON = flagCfg.LogJSON
			case "node":
				cfg.Server.NodeName = flagCfg.Server.NodeName
			case "rpc-addr":
				cfg.Server.RPCAddr = flagCfg.Server.RPCAddr
			case "bootstrap-expect":
				cfg.Server.BootstrapExpect = flagCfg.Server.BootstrapExpect
			case "retry-join":
				cfg.Server.RetryJoin = flagCfg.Server.RetryJoin
			case "acl-enabled":
				cfg.Server.ACLEnabled = flagCfg.Server.ACLEnabled
			}
		})
		return cfg, nil
	}
	cfg, err := configure()
	if err != nil {
		return c.errorf("%v", err)
	}
	lvl, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil {
		return c.errorf("invalid log level %q", cfg.LogLevel)
	}
	// The level is the process's (zerolog's global level) rather than the
	// logger's, so that SIGHUP can change it.
	zerolog.SetGlobalLevel(lvl)
	// The log goes to stderr and to drover monitor (/v1/agent/monitor).
	var out io.Writer = os.Stderr
	if !cfg.LogJSON {
		out = zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly, NoColor: !colorful(os.Stderr)}
	}
	cfg.Logs = logmon.NewHub()
	log := zerolog.New(zerolog.MultiLevelWriter(out, cfg.Logs)).With().Timestamp().Logger()
	if !cfg.Dev && cfg.Server.DataDir == "" {
		return c.errorf("-data-dir (or data_dir in -config) is required unless -dev is set")
	}
	// SIGHUP is caught from before the agent serves: one sent once its
	// API answers must not find Go's default action (exit) still in
	// place; one caught while it starts is handled once it has. SIGINT
	// and SIGTERM keep stopping a starting agent at once.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	defer signal.Stop(sig)
	a, err := agent.New(cfg, log)
	if err != nil {
		c.ui.Error(fmt.Sprintf("Error: %v", err))
		switch {
		case errors.Is(err, server.ErrDataDirLocked):
			return exitDataDirLocked
		case errors.Is(err, server.ErrDataDirCorrupt):
			return exitDataDirCorrupt
		case errors.Is(err, server.ErrDataDirMissingState):
			return exitDataDirMissing
		case errors.Is(err, server.ErrDataDirUnusable):
			return exitDataDirUnusable
		}
		return exitError
	}
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	c.ui.Output("==> Drover agent started! Log data will stream in below:")
	c.ui.Output("    API: " + a.Addr())
	for s := range sig {
		if s != syscall.SIGHUP {
			break
		}
		// As Nomad's agent does on SIGHUP: read the configuration again
		// for its log level, and the TLS files, so that rotated
		// certificates serve without a restart.
		c.ui.Output("==> Caught SIGHUP, reloading")
		reloadLogLevel(configure, log)
		_ = a.Reload()
	}
	c.ui.Output("==> Caught signal, shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		return c.errorf("shutdown: %v", err)
	}
	return exitOK
}

// colorful reports whether the console log to f may use colours: f is a
// terminal and NO_COLOR (no-color.org) is not set. A log redirected to a
// file or a pipe gets no escape codes.
func colorful(f *os.File) bool {
	return os.Getenv("NO_COLOR") == "" && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
