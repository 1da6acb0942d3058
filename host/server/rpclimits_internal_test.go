package server

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/host/tlsutil/tlstest"
	"github.com/drover-sched/drover/internal/testlog"
	"github.com/rs/zerolog"
)

// Generous: on a loaded machine a step may take seconds; the tests
// assert what happens, not how soon.
const limitsTestWait = 15 * time.Second

// startLimitedMux serves the RPC port's mux on a loopback port with
// limits; its warnings go to logs.
func startLimitedMux(t *testing.T, tlsc *tlsutil.TLS, limits rpcLimits, logs *testlog.Buffer) (*rpcMux, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newRPCMux(ln, ln.Addr(), "s1", func() string { return "" }, tlsc, limits, zerolog.New(logs))
	t.Cleanup(m.close)
	return m, ln.Addr().String()
}

// dialFrom connects to addr from the local IP from ("" for any) and
// sends first, if any.
func dialFrom(t *testing.T, from, addr string, first ...byte) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{Timeout: limitsTestWait}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Close() })
	if len(first) > 0 {
		if _, err := c.Write(first); err != nil {
			t.Fatal(err)
		}
	}
	return c, nil
}

// acceptHTTP is the next connection the mux routes to its HTTP side.
func acceptHTTP(t *testing.T, m *rpcMux) net.Conn {
	t.Helper()
	select {
	case c := <-m.http.conns:
		t.Cleanup(func() { _ = c.Close() })
		return c
	case <-time.After(limitsTestWait):
		t.Fatal("the mux routed no connection")
		return nil
	}
}

// assertClosedByServer fails unless the server closes c: a read ends in
// EOF or a reset, not in the test's own deadline.
func assertClosedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limitsTestWait))
	var b [1]byte
	_, err := c.Read(b[:])
	if err == nil {
		t.Fatalf("%s: the server sent data instead of closing", what)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: still open after %s", what, limitsTestWait)
	}
}

// waitForLog waits for text in logs, and reports whether it came.
func waitForLog(logs *testlog.Buffer, text string) bool {
	for deadline := time.Now().Add(limitsTestWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(logs.String(), text) {
			return true
		}
	}
	return false
}

// rpc_max_conns_per_client: an IP address holding the limit has its next
// connection closed (and a warning logged), other addresses are not
// affected, and once one of its connections closes it is served again.
func TestRPCMux_MaxConnsPerClient(t *testing.T) {
	logs := &testlog.Buffer{}
	m, addr := startLimitedMux(t, nil, rpcLimits{maxConnsPerClient: 2}, logs)
	var held []net.Conn
	for range 2 {
		if _, err := dialFrom(t, "", addr, rpcHTTP); err != nil {
			t.Fatal(err)
		}
		held = append(held, acceptHTTP(t, m))
	}
	third, err := dialFrom(t, "", addr, rpcHTTP)
	if err != nil {
		t.Fatal(err)
	}
	assertClosedByServer(t, third, "a third connection from 127.0.0.1")
	const refusal = "refused an RPC connection: its IP address already holds as many as the limits block's rpc_max_conns_per_client allows"
	waitForLog(logs, refusal) // logged just after the close
	if e := logs.Entries(t, refusal); len(e) != 1 || e[0]["client_ip"] != "127.0.0.1" || e[0]["rpc_max_conns_per_client"] != "2" {
		t.Errorf("warnings: %v\nlog:\n%s", e, logs)
	}

	// Counted per IP: another loopback address still gets in (Linux routes
	// all of 127/8 to lo; elsewhere it may not be usable).
	if _, err := dialFrom(t, "127.0.0.2", addr, rpcHTTP); err == nil {
		acceptHTTP(t, m)
	} else {
		t.Logf("no second loopback address here (%v): per-IP counting not checked", err)
	}

	// The server side closes one (as the HTTP server or raft would): a
	// new connection from 127.0.0.1 is served again.
	_ = held[0].Close()
	if _, err := dialFrom(t, "", addr, rpcHTTP); err != nil {
		t.Fatal(err)
	}
	acceptHTTP(t, m)
}

// rpc_handshake_timeout: a connection that sends nothing is closed once
// the timeout has passed; one that said what it is in time keeps its
// connection however long it then stays quiet.
func TestRPCMux_HandshakeTimeout(t *testing.T) {
	m, addr := startLimitedMux(t, nil, rpcLimits{handshakeTimeout: 100 * time.Millisecond}, &testlog.Buffer{})
	silent, err := dialFrom(t, "", addr)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := dialFrom(t, "", addr, rpcHTTP)
	if err != nil {
		t.Fatal(err)
	}
	served := acceptHTTP(t, m)
	assertClosedByServer(t, silent, "a connection that sent nothing")

	// Well past the handshake timeout, the routed connection still reads.
	time.Sleep(300 * time.Millisecond)
	if _, err := prompt.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = served.SetReadDeadline(time.Now().Add(limitsTestWait))
	var b [1]byte
	if _, err := served.Read(b[:]); err != nil || b[0] != 'x' {
		t.Fatalf("the routed connection: %q, %v", b[0], err)
	}
}

// With TLS on the RPC port, a connection that starts TLS (0x04) but never
// sends its ClientHello is closed by the handshake timeout too.
func TestRPCMux_HandshakeTimeoutBoundsTLS(t *testing.T) {
	f := tlstest.Write(t, "global")
	tlsc, err := tlsutil.Load(tlsutil.Config{RPC: true, CAFile: f.CA, CertFile: f.ServerCert, KeyFile: f.ServerKey,
		VerifyServerHostname: true}, "global")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	_, addr := startLimitedMux(t, tlsc, rpcLimits{handshakeTimeout: 100 * time.Millisecond}, logs)
	stalled, err := dialFrom(t, "", addr, rpcTLS)
	if err != nil {
		t.Fatal(err)
	}
	assertClosedByServer(t, stalled, "a TLS connection that sent no ClientHello")
	// Its refusal is the failed-handshake warning (a timeout).
	if !waitForLog(logs, "TLS handshake failed") {
		t.Errorf("no failed-handshake warning:\n%s", logs)
	}
}

// The limits are configuration: negative values are refused.
func TestConfig_ValidateLimits(t *testing.T) {
	for _, c := range []func(*Config){
		func(c *Config) { c.RPCHandshakeTimeout = -time.Second },
		func(c *Config) { c.RPCMaxConnsPerClient = -1 },
	} {
		cfg := DefaultConfig()
		cfg.Dev = true
		c(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%+v: accepted", cfg)
		}
	}
	cfg := DefaultConfig()
	if cfg.RPCHandshakeTimeout != 5*time.Second || cfg.RPCMaxConnsPerClient != 100 {
		t.Errorf("defaults: %s, %d", cfg.RPCHandshakeTimeout, cfg.RPCMaxConnsPerClient)
	}
	cfg.Dev, cfg.RPCHandshakeTimeout, cfg.RPCMaxConnsPerClient = true, 0, 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("0 (no limit): %v", err)
	}
}

// The cluster's servers are not refused past the limit: a follower's
// forwarded long polls would otherwise use it up and then refuse its raft
// connections. Others still are.
func TestRPCMux_MaxConnsPerClientSparesServers(t *testing.T) {
	logs := &testlog.Buffer{}
	var server atomic.Bool // whether 127.0.0.1 is a server's address
	server.Store(true)
	m, addr := startLimitedMux(t, nil, rpcLimits{maxConnsPerClient: 1, server: func(ip string) bool {
		return ip == "127.0.0.1" && server.Load()
	}}, logs)
	for range 3 {
		if _, err := dialFrom(t, "", addr, rpcHTTP); err != nil {
			t.Fatal(err)
		}
		acceptHTTP(t, m)
	}
	server.Store(false)
	next, err := dialFrom(t, "", addr, rpcHTTP)
	if err != nil {
		t.Fatal(err)
	}
	assertClosedByServer(t, next, "a connection past the limit from an address no server has")
}
