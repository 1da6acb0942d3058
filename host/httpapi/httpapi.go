// Package httpapi is Drover's HTTP API. Paths, methods and JSON field
// names follow Nomad's HTTP API, so Nomad's clients and habits work; where
// Nomad's clients speak RPC (node registration, heartbeats, allocation
// status), Drover adds documented HTTP endpoints (docs/api.md).
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/drover-sched/drover/host/server"
	"github.com/rs/zerolog"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 16 << 20

// API serves the HTTP API of one server.
type API struct {
	srv  *server.Server
	log  zerolog.Logger
	mux  *http.ServeMux
	self func() any
}

// New returns the API of srv. self answers /v1/agent/self.
func New(srv *server.Server, log zerolog.Logger, self func() any) *API {
	a := &API{srv: srv, log: log, mux: http.NewServeMux(), self: self}
	a.routes()
	return a
}

// Handler returns the API's handler.
func (a *API) Handler() http.Handler { return a }

// ServeHTTP implements http.Handler; a panic in a handler becomes a 500.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Str("path", r.URL.Path).Msg("http handler panicked")
			writeError(w, &Error{Code: http.StatusInternalServerError, Message: "internal error"})
		}
	}()
	a.mux.ServeHTTP(w, r)
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
	case errors.Is(err, server.ErrInvalid):
		return &Error{Code: http.StatusBadRequest, Message: err.Error()}
	case errors.Is(err, server.ErrNotLeader):
		return &Error{Code: http.StatusServiceUnavailable, Message: err.Error()}
	}
	return &Error{Code: http.StatusInternalServerError, Message: err.Error()}
}

// handler is an endpoint: it returns the value to encode, or an error.
type handler func(w http.ResponseWriter, r *http.Request) (any, error)

func (a *API) handle(pattern string, h handler) {
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		out, err := h(w, r)
		if err != nil {
			e := toError(err)
			if e.Code >= 500 {
				a.log.Error().Err(err).Str("path", r.URL.Path).Msg("request failed")
			}
			writeError(w, e)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		if _, ok := r.URL.Query()["pretty"]; ok {
			enc.SetIndent("", "    ")
		}
		if err := enc.Encode(out); err != nil {
			a.log.Warn().Err(err).Str("path", r.URL.Path).Msg("write response")
		}
	})
}

// decode reads a size-limited JSON body strictly: unknown fields and
// trailing data are errors.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", mbe.Limit)
		}
		if errors.Is(err, io.EOF) {
			return errorf(http.StatusBadRequest, "request body is empty")
		}
		return errorf(http.StatusBadRequest, "invalid request body: %v", err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "invalid request body: trailing data after the JSON value")
	}
	return nil
}

// setIndex sets Nomad's index header.
func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
	w.Header().Set("X-Nomad-KnownLeader", "true")
	w.Header().Set("X-Nomad-LastContact", "0")
}

// blockingQuery honours ?index=&wait=: it waits until the state passes
// index (at most wait, 5 minutes by default, capped at 10) before reading.
func (a *API) blockingQuery(r *http.Request) error {
	q := r.URL.Query()
	raw := q.Get("index")
	if raw == "" {
		return nil
	}
	minIndex, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return errorf(http.StatusBadRequest, "invalid index %q", raw)
	}
	wait := 5 * time.Minute
	if ws := q.Get("wait"); ws != "" {
		if wait, err = parseWait(ws); err != nil {
			return errorf(http.StatusBadRequest, "invalid wait %q: %v", ws, err)
		}
	}
	wait = min(wait, 10*time.Minute)
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	_, _ = a.srv.Store().WaitForIndex(ctx, minIndex+1)
	return nil
}

func parseWait(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	ms, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}
