package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"

	"github.com/drover-sched/drover/host/server"
)

// In a cluster of servers a follower answers from its own replica only
// what needs no leader: this agent's own endpoints, and reads that allow a
// stale answer (?stale, as Nomad's). Everything else goes to the leader
// over its RPC address, so writes commit and reads see them, whichever
// server a client talks to.

// localPrefixes are the paths every agent answers itself.
var localPrefixes = []string{
	"/v1/agent/", "/v1/status/", "/v1/metrics", "/v1/regions", "/v1/event/stream",
	"/v1/plugins/", "/v1/plugin/", "/v1/jobs/parse", "/v1/validate/job",
}

// leaderKey carries the leader's address to the proxy's Rewrite.
type leaderKey struct{}

// newForwarder returns the reverse proxy that sends requests to the
// leader; its connections are pooled per leader address.
func (a *API) newForwarder() *httputil.ReverseProxy {
	a.forwardTransport = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return a.srv.DialLeader(ctx, addr)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host, _ = pr.In.Context().Value(leaderKey{}).(string)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(server.ForwardedHeader, a.srv.Config().NodeName)
		},
		Transport: a.forwardTransport,
		// Streamed answers (event streams, blocking queries) pass through
		// as they come.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, context.Canceled) {
				return
			}
			a.log.Warn().Err(err).Str("path", r.URL.Path).Msg("forwarding to the leader failed")
			a.answeredHere(w)
			writeError(w, errorf(http.StatusInternalServerError, "forward to the leader: %v", err))
		},
	}
}

// forward sends r to the leader if this server should not answer it
// itself, and reports whether it did.
func (a *API) forward(w http.ResponseWriter, r *http.Request) bool {
	if a.forwarder == nil || a.srv.IsLeader() || answersLocally(r) {
		return false
	}
	if server.Forwarded(r) {
		// Sent here as to the leader, which this server no longer is (it
		// handed the lead over, or lost it): answering from its replica
		// would not be what the client asked for, and forwarding again
		// could loop.
		a.answeredHere(w)
		writeError(w, toError(server.ErrNotLeader))
		return true
	}
	leader := a.srv.Leader()
	if leader == "" {
		a.answeredHere(w)
		writeError(w, toError(server.ErrNoLeader))
		return true
	}
	a.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderKey{}, leader)))
	return true
}

// answersLocally reports whether any server answers r from its own state.
// ?stale is a boolean, as Nomad's parseConsistency reads it: present
// without a value or true allows a stale answer, false asks for a
// consistent one (ServeHTTP refuses any other value).
func answersLocally(r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if stale, err := boolParam(r, "stale"); err == nil && stale {
			return true
		}
	}
	for _, p := range localPrefixes {
		if strings.HasPrefix(r.URL.Path, p) {
			return true
		}
	}
	return false
}
