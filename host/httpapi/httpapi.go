// Package httpapi is Drover's HTTP API. Paths, methods, query parameters and
// JSON field names follow Nomad's HTTP API, so Nomad's clients and habits
// work; where Nomad's clients speak RPC (node registration, heartbeats,
// allocation status), Drover adds documented HTTP endpoints (docs/api.md).
//
// Reads are blocking queries (?index=&wait=) answered from one state
// snapshot, with the X-Nomad-Index header; lists take prefix, filter (a
// go-bexpr expression), per_page, next_token and reverse. Request bodies
// are size-limited and decoded strictly: an unknown field is an error. Job
// submissions decode into Nomad's own API types, so whatever Nomad's
// official Go client sends is accepted. Errors are JSON objects,
// {"code": 404, "error": "..."}, with a matching status code.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	pathpkg "path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/jobspec"
	"github.com/drover-sched/drover/host/logmon"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/state"
	"github.com/rs/zerolog"
)

// ServerHeader names the server that answered a request.
const ServerHeader = "X-Drover-Server"

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 16 << 20

// API serves the HTTP API of one server.
type API struct {
	srv *server.Server
	log zerolog.Logger
	mux *http.ServeMux
	// pools serves /v1/node/pool/ (poolRoutes).
	pools *http.ServeMux
	self  func() *AgentSelf
	// routes maps each path pattern to its route per method.
	routes map[string]map[string]route
	// closing ends long-lived responses (event streams) when the agent
	// stops: http.Server.Shutdown waits for them otherwise.
	closing context.Context
	close   context.CancelFunc
	// logs feeds /v1/agent/monitor (nil: not served).
	logs *logmon.Hub
	// advertise is the agent's API address (host:port), if known.
	advertise string
	// forwarder sends requests to the leader over forwardTransport
	// (clustered servers only).
	forwarder        *httputil.ReverseProxy
	forwardTransport *http.Transport
	// parses bounds the jobspec parses run at once (parses.go).
	parses *parseSlots
	// heartbeat is how often an idle event stream sends "{}"
	// (EventHeartbeat; shorter in tests).
	heartbeat time.Duration
}

// New returns the API of srv. self gives the agent's part of
// /v1/agent/self (its configuration and statistics); nil gives none.
func New(srv *server.Server, log zerolog.Logger, self func() *AgentSelf) *API {
	a := &API{srv: srv, log: log, mux: http.NewServeMux(), self: self, routes: map[string]map[string]route{},
		parses: defaultParseSlots(), heartbeat: EventHeartbeat}
	a.closing, a.close = context.WithCancel(context.Background())
	if srv.Clustered() {
		a.forwarder = a.newForwarder()
	}
	if b := srv.Events(); b != nil {
		b.SetPresenter(presentEvent)
	}
	a.register()
	a.pools = a.poolRoutes()
	for pattern, byMethod := range a.routes {
		a.mux.HandleFunc(pattern, a.dispatch(byMethod))
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path))
	})
	return a
}

// Close ends the responses that stream (event streams) and drops the
// connections to the leader; register it with
// http.Server.RegisterOnShutdown.
func (a *API) Close() {
	a.close()
	if a.forwardTransport != nil {
		a.forwardTransport.CloseIdleConnections()
	}
}

// Handler returns the API's handler.
func (a *API) Handler() http.Handler { return a }

// ServeHTTP implements http.Handler; a panic in a handler becomes a 500.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p) // a proxied answer broke off: drop the connection
			}
			a.log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Str("path", r.URL.Path).Msg("http handler panicked")
			writeError(w, &Error{Code: http.StatusInternalServerError, Message: "internal error"})
		}
	}()
	if a.redirectToCanonical(w, r) {
		return
	}
	if err := a.checkRegion(r); err != nil {
		a.answeredHere(w)
		writeError(w, err)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		// A malformed ?stale is refused by whichever server is asked, as
		// Nomad's, before it decides where the read goes.
		if _, err := boolParam(r, "stale"); err != nil {
			a.answeredHere(w)
			writeError(w, toError(err))
			return
		}
	}
	if a.forward(w, r) {
		return
	}
	a.answeredHere(w)
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		// How current this server's answer is, as Nomad's queries say.
		w.Header().Set("X-Nomad-KnownLeader", strconv.FormatBool(a.srv.Leader() != ""))
		w.Header().Set("X-Nomad-LastContact", strconv.FormatInt(a.srv.LastContact().Milliseconds(), 10))
	}
	if strings.HasPrefix(r.URL.Path, "/v1/node/pool/") {
		a.pools.ServeHTTP(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// redirectToCanonical answers a request whose path is not in its
// canonical form (repeated slashes, "." or ".." segments, or a subtree's
// root without its slash: /v1/job) with a 301 to that form, as Nomad's
// ServeMux (Go 1.20) does, and reports whether it did. Go's ServeMux now
// answers these with a 307, which keeps the method and body: a client's
// empty job ID, PUT /v1/job//scale, would become PUT /v1/job/scale, a
// write of job "scale", where Nomad's clients follow the 301 with a GET
// and are told that there is no such job.
func (a *API) redirectToCanonical(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodConnect {
		return false
	}
	path := r.URL.EscapedPath()
	target := cleanPath(path)
	if target == path {
		if _, pattern := a.mux.Handler(r); pattern == "" || pattern != path+"/" {
			return false
		}
		target = path + "/"
	}
	a.answeredHere(w)
	u := &url.URL{Path: target, RawQuery: r.URL.RawQuery}
	http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
	return true
}

// cleanPath is path with its "." and ".." segments resolved and its
// repeated slashes folded, keeping a trailing slash, as Go's ServeMux
// cleans a request's path.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := pathpkg.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// checkRegion refuses a request for another region (?region=, which
// Nomad's CLI sends with -region, NOMAD_REGION or a job's region): the
// cluster is one region, and Nomad's servers answer such a request "No
// path to region" rather than from their own. The endpoints every agent
// answers from itself whatever the region, in Nomad too, take any.
func (a *API) checkRegion(r *http.Request) *Error {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/v1/agent/"), p == "/v1/regions", p == "/v1/metrics", p == "/v1/jobs/parse":
		return nil
	}
	return a.regionError(r.URL.Query().Get("region"))
}

// regionError refuses region unless it is this cluster's: its own name,
// "global" (as Nomad's agents take it for a job: jobs without a region are
// "global", and nomad job run sends a job's region) or none.
func (a *API) regionError(region string) *Error {
	own := a.srv.Config().Region
	if region == "" || region == own || region == jobspec.DefaultGlobalRegion {
		return nil
	}
	return errorf(http.StatusBadRequest, "No path to region %q: this cluster is region %q", region, own)
}

// answeredHere says in the answer that this server gave it (a forwarded
// answer carries the leader's name instead).
func (a *API) answeredHere(w http.ResponseWriter) {
	w.Header().Set(ServerHeader, a.srv.Config().NodeName)
}

// Error is an API error: a status code and a message, sent as JSON.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Code)
	_ = json.NewEncoder(w).Encode(e)
}

// toError maps an endpoint error to a status code.
func toError(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, server.ErrNotFound):
		return &Error{Code: http.StatusNotFound, Message: err.Error()}
	case errors.Is(err, server.ErrInvalid), errors.Is(err, jobspec.ErrInvalidJob), errors.Is(err, state.ErrNonexistent),
		errors.Is(err, state.ErrInUse), errors.Is(err, state.ErrBuiltIn):
		return &Error{Code: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, server.ErrUnauthorized):
		return &Error{Code: http.StatusUnauthorized, Message: err.Error()}
	case errors.Is(err, server.ErrForbidden):
		return &Error{Code: http.StatusForbidden, Message: err.Error()}
	case errors.Is(err, server.ErrConflict):
		return &Error{Code: http.StatusConflict, Message: err.Error()}
	case errors.Is(err, server.ErrNoLeader):
		return &Error{Code: http.StatusInternalServerError, Message: err.Error()}
	case errors.Is(err, server.ErrNotLeader):
		return &Error{Code: http.StatusServiceUnavailable, Message: err.Error()}
	}
	return &Error{Code: http.StatusInternalServerError, Message: err.Error()}
}

// handler is an endpoint: it returns the value to encode, or an error.
type handler func(w http.ResponseWriter, r *http.Request) (any, error)

// route is an endpoint and what it needs of the request's ACL token.
type route struct {
	access access
	h      handler
}

// on adds an endpoint.
func (a *API) on(method, pattern string, acc access, h handler) {
	if !acc.declared() {
		panic("httpapi: " + method + " " + pattern + " says nothing of what it needs of an ACL token")
	}
	if a.routes[pattern] == nil {
		a.routes[pattern] = map[string]route{}
	}
	a.routes[pattern][method] = route{acc, h}
}

// dispatch picks the route for the request's method, checks the request's
// token against it and runs its handler; an unknown method is a 405 that
// lists the allowed ones.
func (a *API) dispatch(byMethod map[string]route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rt, ok := byMethod[r.Method]
		if !ok {
			allowed := make([]string, 0, len(byMethod))
			for m := range byMethod {
				allowed = append(allowed, m)
			}
			slices.Sort(allowed)
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeError(w, errorf(http.StatusMethodNotAllowed, "method %s not allowed on %s (allowed: %s)",
				r.Method, r.URL.Path, strings.Join(allowed, ", ")))
			return
		}
		r, err := a.authorize(r, rt.access)
		if err != nil {
			writeError(w, toError(err))
			return
		}
		a.serve(w, r, rt.h)
	}
}

// written is a handler's answer that writes itself rather than being
// encoded as JSON.
type written func(w http.ResponseWriter)

// streamed answers a request whose response was streamed as it went.
var streamed = written(func(http.ResponseWriter) {})

// noBody answers a write with no body, as Nomad's do that answer only an
// index (in X-Nomad-Index).
var noBody = written(func(http.ResponseWriter) {})

// startStream begins a streamed answer of JSON lines: the headers go out
// at once, ctx ends when the client leaves or the agent stops (stop
// releases it), and send writes one value as a line and flushes it,
// reporting false once the client is gone.
func (a *API) startStream(w http.ResponseWriter, r *http.Request) (ctx context.Context, stop func(), send func(v any) bool) {
	ctx, cancel := context.WithCancel(r.Context())
	unhook := context.AfterFunc(a.closing, cancel)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	send = func(v any) bool {
		if err := enc.Encode(v); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	return ctx, func() { unhook(); cancel() }, send
}

// serve runs h and writes its answer or its error.
func (a *API) serve(w http.ResponseWriter, r *http.Request, h handler) {
	out, err := h(w, r)
	if err != nil {
		e := toError(err)
		if e.Code >= 500 {
			a.log.Error().Err(err).Str("path", r.URL.Path).Msg("request failed")
		}
		writeError(w, e)
		return
	}
	if write, ok := out.(written); ok {
		write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	// As Nomad's: ?pretty, with any value but 0.
	if v, ok := r.URL.Query()["pretty"]; ok && (len(v) == 0 || v[0] != "0") {
		enc.SetIndent("", "    ")
	}
	if err := enc.Encode(out); err != nil {
		a.log.Warn().Err(err).Str("path", r.URL.Path).Msg("write response")
	}
}

// decode reads a size-limited JSON body strictly: unknown fields and
// trailing data are errors.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := jobspec.DecodeStrict(body, v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", mbe.Limit)
		case errors.Is(err, io.EOF):
			return errorf(http.StatusBadRequest, "request body is empty")
		}
		return errorf(http.StatusBadRequest, "invalid request body: %v", err)
	}
	return nil
}

// decodeOptional is decode for endpoints whose body Nomad's client may
// leave out; it reports whether there was one.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) (bool, error) {
	if r.ContentLength == 0 {
		return false, nil
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	raw, err := io.ReadAll(body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return false, errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", mbe.Limit)
		}
		return false, errorf(http.StatusBadRequest, "reading request body: %v", err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return false, nil
	}
	if err := jobspec.DecodeStrict(bytes.NewReader(raw), v); err != nil {
		return false, errorf(http.StatusBadRequest, "invalid request body: %v", err)
	}
	return true, nil
}

// setIndex sets Nomad's query meta headers.
func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(max(index, 1), 10))
}

// boolParam reads a boolean query parameter ("", "1", "true", ...); a
// parameter present without a value is true, as in Nomad.
func boolParam(r *http.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, errorf(http.StatusBadRequest, "invalid %s %q: not a boolean", name, v)
	}
	return b, nil
}

// intParam reads an integer query parameter (0 when absent).
func intParam(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, errorf(http.StatusBadRequest, "invalid %s %q: not an integer", name, v)
	}
	return n, nil
}
