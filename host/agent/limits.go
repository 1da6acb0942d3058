package agent

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-connlimit"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// The limits block's HTTP half, as Nomad's: how many connections one IP
// address may hold open to the API (http_max_conns_per_client), and how
// long a new HTTPS connection may take to finish its TLS handshake and
// start its first request (https_handshake_timeout). The RPC half is the
// server's (server.Config's RPCHandshakeTimeout and RPCMaxConnsPerClient).

// tooManyConnsMsg is Nomad's answer to a connection over the limit.
const tooManyConnsMsg = "Your IP is issuing too many concurrent connections, please rate limit your calls\n"

var tooManyConnsResponse = []byte(fmt.Sprintf("HTTP/1.1 429 Too Many Requests\r\n"+
	"Content-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(tooManyConnsMsg), tooManyConnsMsg))

// The 429 is written from the HTTP server's accept loop (its ConnState
// hook), before the server reads the connection; on HTTPS writing it
// takes a TLS handshake, so it gets only a moment there, and at most
// answersPerSecond connections a second (answersBurst at once) get it at
// all, as in Nomad: the others are closed without an answer. Plaintext
// writes to a new connection's socket buffer do not wait.
const (
	tooManyWriteTLS   = 10 * time.Millisecond
	tooManyWritePlain = time.Second
	answersPerSecond  = 10
	answersBurst      = 100
)

// validateLimits refuses negative limits.
func (c Config) validateLimits() error {
	if c.HTTPSHandshakeTimeout < 0 {
		return fmt.Errorf("agent: https_handshake_timeout must not be negative, got %s", c.HTTPSHandshakeTimeout)
	}
	if c.HTTPMaxConnsPerClient < 0 {
		return fmt.Errorf("agent: http_max_conns_per_client must not be negative, got %d", c.HTTPMaxConnsPerClient)
	}
	return nil
}

// connLimits keeps the API's connections within the limits.
type connLimits struct {
	handshake time.Duration      // HTTPS only; 0: none
	limiter   *connlimit.Limiter // nil: no limit
	max       int
	answers   *rate.Limiter   // 429s written
	warn      *rate.Sometimes // warnings logged
	log       zerolog.Logger

	mu    sync.Mutex
	conns map[net.Conn]*limitedConn // those let in, until they close
}

// limitedConn is what a connection let in holds: its place in the count
// and its handshake timer.
type limitedConn struct {
	free  func()
	timer *time.Timer
}

func newConnLimits(cfg Config, https bool, log zerolog.Logger) *connLimits {
	l := &connLimits{max: cfg.HTTPMaxConnsPerClient, log: log, conns: map[net.Conn]*limitedConn{},
		answers: rate.NewLimiter(answersPerSecond, answersBurst), warn: &rate.Sometimes{First: 1, Interval: 10 * time.Second}}
	if https {
		l.handshake = cfg.HTTPSHandshakeTimeout
	}
	if l.max > 0 {
		l.limiter = connlimit.NewLimiter(connlimit.Config{MaxConnsPerClientIP: l.max})
	}
	return l
}

// connState is the http.Server's ConnState: nil when no limit is on.
func (l *connLimits) connState() func(net.Conn, http.ConnState) {
	if l.limiter == nil && l.handshake <= 0 {
		return nil
	}
	return l.track
}

func (l *connLimits) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		lc := &limitedConn{}
		if l.limiter != nil {
			free, err := l.limiter.Accept(c)
			if err != nil {
				l.refuse(c)
				return
			}
			lc.free = free
		}
		if l.handshake > 0 {
			// A timer, not a deadline: the HTTP server sets the handshake's
			// deadlines itself (from ReadHeaderTimeout), over any set here.
			lc.timer = time.AfterFunc(l.handshake, func() { _ = c.Close() })
		}
		l.mu.Lock()
		l.conns[c] = lc
		l.mu.Unlock()
	case http.StateActive:
		// The handshake is done and a request has started.
		l.mu.Lock()
		lc := l.conns[c]
		l.mu.Unlock()
		if lc != nil && lc.timer != nil {
			lc.timer.Stop()
		}
	case http.StateClosed, http.StateHijacked:
		l.mu.Lock()
		lc := l.conns[c]
		delete(l.conns, c)
		l.mu.Unlock()
		if lc == nil {
			return // refused, or never counted
		}
		if lc.timer != nil {
			lc.timer.Stop()
		}
		if lc.free != nil {
			lc.free()
		}
	}
}

// refuse answers a connection over the limit 429 when the rate of such
// answers allows, and closes it.
func (l *connLimits) refuse(c net.Conn) {
	defer c.Close()
	l.warn.Do(func() {
		l.log.Warn().Str("from", c.RemoteAddr().String()).Int("http_max_conns_per_client", l.max).
			Msg("too many concurrent connections from one IP address: answered 429 and closed (the limits block)")
	})
	if !l.answers.Allow() {
		return
	}
	wait := tooManyWritePlain
	if _, ok := c.(*tls.Conn); ok {
		wait = tooManyWriteTLS
	}
	_ = c.SetDeadline(time.Now().Add(wait))
	_, _ = c.Write(tooManyConnsResponse)
}
