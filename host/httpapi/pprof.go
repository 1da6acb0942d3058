package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/acl"
)

// The Go profiler of the agent answering, Nomad's /v1/agent/pprof/:
// profile (CPU, ?seconds=, 1 by default), trace (?seconds=), cmdline and
// the runtime's named profiles (goroutine, heap, allocs, threadcreate,
// block, mutex; ?debug=N for text, ?gc=1 to collect first for heap), in
// pprof's formats. With ACLs on, a token with agent write may read them;
// without, only an agent with enable_debug (a dev agent) serves them, as
// Nomad's. `drover operator debug` gathers them.

// maxProfileSeconds bounds a CPU profile or trace, which holds the
// request that long.
const maxProfileSeconds = 300

// pprofProfiles are the runtime's named profiles served.
var pprofProfiles = []string{"goroutine", "heap", "allocs", "threadcreate", "block", "mutex"}

func (a *API) registerPprof() {
	a.on(http.MethodGet, "/v1/agent/pprof/{profile}", needs((*acl.ACL).AllowAgentWrite), a.atServer(a.pprof))
}

func (a *API) pprof(w http.ResponseWriter, r *http.Request) (any, error) {
	if !a.srv.ACLEnabled() && !a.srv.Config().EnableDebug {
		return nil, errPermissionDenied // Nomad's answer: enable_debug is off
	}
	q := r.URL.Query()
	intParam := func(name string, def int) (int, error) {
		raw := q.Get(name)
		if raw == "" {
			return def, nil
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return 0, errorf(http.StatusBadRequest, "%s=%q is not a number of 0 or more", name, raw)
		}
		return n, nil
	}
	name := r.PathValue("profile")
	var buf bytes.Buffer
	switch name {
	case "profile", "trace":
		secs, err := intParam("seconds", 1)
		if err != nil {
			return nil, err
		}
		if secs < 1 || secs > maxProfileSeconds {
			return nil, errorf(http.StatusBadRequest, "seconds=%d: a %s lasts 1 to %d seconds", secs, name, maxProfileSeconds)
		}
		start, stop := pprof.StartCPUProfile, pprof.StopCPUProfile
		if name == "trace" {
			start, stop = trace.Start, trace.Stop
		}
		if err := start(&buf); err != nil {
			// Another profile or trace runs (the runtime holds one at
			// a time).
			return nil, errorf(http.StatusConflict, "cannot start the %s: %v", name, err)
		}
		select {
		case <-time.After(time.Duration(secs) * time.Second):
		case <-r.Context().Done():
		}
		stop()
		if r.Context().Err() != nil {
			return nil, r.Context().Err()
		}
	case "cmdline":
		buf.WriteString(strings.Join(os.Args, "\x00"))
	default:
		if !slices.Contains(pprofProfiles, name) {
			return nil, errorf(http.StatusNotFound, "no profile %q (profiles: profile, trace, cmdline, %s)", name, strings.Join(pprofProfiles, ", "))
		}
		debug, err := intParam("debug", 0)
		if err != nil {
			return nil, err
		}
		gc, err := intParam("gc", 0)
		if err != nil {
			return nil, err
		}
		if name == "heap" && gc > 0 {
			runtime.GC()
		}
		if err := pprof.Lookup(name).WriteTo(&buf, debug); err != nil {
			return nil, fmt.Errorf("write the %s profile: %w", name, err)
		}
	}
	return written(func(w http.ResponseWriter) {
		ct := "application/octet-stream"
		if name == "cmdline" || q.Get("debug") != "" && q.Get("debug") != "0" {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(buf.Bytes())
	}), nil
}
