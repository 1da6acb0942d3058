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

// atServer answers r on the server its ?server_id= names, as Nomad's
// agent endpoints do (the monitor, the profiler, the agent's self): this
// server's name (with or without its region), "leader", or another
// server's, to which it is forwarded over the servers' RPC addresses; that
// server checks the token again. Without server_id, h answers here.
// ?node_id= names a node, whose client API Drover's nodes do not serve.
func (a *API) atServer(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		q := r.URL.Query()
		if q.Get("node_id") != "" {
			return nil, errorf(http.StatusBadRequest, "node_id: Drover's nodes serve no client API; ask a server with server_id")
		}
		id := q.Get("server_id")
		c := a.srv.Config()
		if id == "" || id == c.NodeName || id == c.NodeName+"."+c.Region || id == "leader" && a.srv.IsLeader() {
			return h(w, r)
		}
		if server.Forwarded(r) || a.forwarder == nil {
			// Forwarded here for a server this one is not (its name
			// changed, or leadership moved): answering would not be
			// what was asked, and forwarding again could loop.
			return nil, errorf(http.StatusNotFound, "server_id=%q: not this server (%s)", id, c.NodeName)
		}
		addr := ""
		if id == "leader" {
			if addr = a.srv.Leader(); addr == "" {
				return nil, server.ErrNoLeader
			}
		} else {
			servers, _, err := a.srv.RaftConfiguration()
			if err != nil {
				return nil, err
			}
			names := make([]string, 0, len(servers))
			for _, sv := range servers {
				if sv.ID == id || sv.ID+"."+c.Region == id {
					addr = sv.Address
				}
				names = append(names, sv.ID)
			}
			if addr == "" {
				return nil, errorf(http.StatusNotFound, "server_id=%q: no such server (servers: %s)", id, strings.Join(names, ", "))
			}
		}
		return written(func(w http.ResponseWriter) {
			a.forwarder.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderKey{}, addr)))
		}), nil
	}
}
