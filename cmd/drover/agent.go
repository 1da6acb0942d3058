package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/rs/zerolog"
)

type agentCommand struct{ *meta }

func (c *agentCommand) Synopsis() string { return "Run a Drover agent" }

func (c *agentCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover agent [options]

  Runs a Drover agent: the server (state, broker, workers, plan applier)
  and its HTTP API. With -dev it keeps its state in memory and simulates a
  cluster of ready nodes, so jobs place at once.

Options:

  -dev                 Run in dev mode: in-memory state, simulated nodes.
  -dev-nodes=N         Number of simulated nodes in dev mode (default 10).
  -http-addr=HOST:PORT Address of the HTTP API (default 127.0.0.1:4646).
  -data-dir=PATH       Where state is kept (required outside dev mode).
  -plugin-dir=PATH     Directory of scheduler plugins (default: "plugins"
                       beside the drover binary).
  -workers=N           Scheduling workers (default: one per CPU core).
  -log-level=LEVEL     debug, info, warn or error (default info).
  -log-json            Log JSON lines instead of text.
`)
}

func (c *agentCommand) Run(args []string) int {
	cfg := agent.DefaultConfig()
	fs := c.flags("agent", false)
	fs.BoolVar(&cfg.Dev, "dev", false, "")
	fs.IntVar(&cfg.DevNodes, "dev-nodes", cfg.DevNodes, "")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", cfg.HTTPAddr, "")
	fs.StringVar(&cfg.Server.DataDir, "data-dir", "", "")
	fs.StringVar(&cfg.PluginDir, "plugin-dir", "", "")
	fs.IntVar(&cfg.Server.NumWorkers, "workers", 0, "")
	level := fs.String("log-level", "info", "")
	logJSON := fs.Bool("log-json", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	lvl, err := zerolog.ParseLevel(*level)
	if err != nil {
		return c.errorf("invalid -log-level %q", *level)
	}
	var log zerolog.Logger
	if *logJSON {
		log = zerolog.New(os.Stderr).With().Timestamp().Logger().Level(lvl)
	} else {
		log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.TimeOnly}).With().Timestamp().Logger().Level(lvl)
	}
	if !cfg.Dev && cfg.Server.DataDir == "" {
		return c.errorf("-data-dir is required unless -dev is set")
	}
	a, err := agent.New(cfg, log)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.ui.Output("==> Drover agent started! Log data will stream in below:")
	c.ui.Output("    API: " + a.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	c.ui.Output("==> Caught signal, shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		return c.errorf("shutdown: %v", err)
	}
	return exitOK
}
