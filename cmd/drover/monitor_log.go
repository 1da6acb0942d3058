package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/drover-sched/drover/host/httpapi"
)

type logMonitorCommand struct{ *meta }

func (c *logMonitorCommand) Synopsis() string { return "Stream the agent's log" }

func (c *logMonitorCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover monitor [options]

  Streams the agent's log as it is written (GET /v1/agent/monitor) until
  interrupted. Lines below the agent's own log level are not written, so
  a more verbose -log-level than the agent's shows no more.
` + apiOptions + `

Monitor options:

  -log-level=LEVEL  trace, debug, info (default), warn or error.
  -json             Print the log as JSON lines.`)
}

func (c *logMonitorCommand) Run(args []string) int {
	fs := c.flags("monitor", true)
	level := fs.String("log-level", "info", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	cl, err := c.client()
	if err != nil {
		return c.errorf("%v", err)
	}
	q := url.Values{"log_level": {*level}}
	if c.json {
		q.Set("log_json", "true")
	}
	body, err := cl.Stream(bg, http.MethodGet, "/v1/agent/monitor?"+q.Encode(), nil)
	if err != nil {
		return c.errorf("monitoring the agent: %v", err)
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var f httpapi.StreamFrame
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return exitOK // the agent stopped
			}
			return c.errorf("monitoring the agent: %v", err)
		}
		if _, err := c.out.Write(f.Data); err != nil {
			return exitError
		}
	}
}
