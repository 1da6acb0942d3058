package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/agent"
	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/host/tlsutil/tlstest"
	"github.com/drover-sched/drover/runtime/wasm/wasmtest"
	"github.com/rs/zerolog"
)

// Generous: on a loaded machine a step may take seconds; these tests
// assert what happens, not how soon.
const limitsWait = 15 * time.Second

// startLimitedAgent starts a dev agent without nodes, with the service
// plugin, modified by modify.
func startLimitedAgent(t *testing.T, modify func(*agent.Config)) *agent.Agent {
	t.Helper()
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 0, "127.0.0.1:0", dir
	cfg.Server.NumWorkers = 1
	modify(&cfg)
	a, err := agent.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a
}

// rawGet sends GET path on a new connection to the agent at base and
// reads the response; the connection stays open (keep-alive).
func rawGet(t *testing.T, base, path string) (net.Conn, *http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), limitsWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(limitsWait))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: drover\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Time{})
	return &bufferedConn{c, br}, resp, string(body)
}

// bufferedConn reads through the reader that read its response.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// assertServerCloses fails unless the server closes c within wait.
func assertServerCloses(t *testing.T, c net.Conn, wait time.Duration, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	n, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: still open after %s", what, wait)
	}
	if n > 0 {
		t.Fatalf("%s: the server sent %d more bytes", what, n)
	}
}

// http_max_conns_per_client: with two connections open from 127.0.0.1, a
// third gets Nomad's 429 and is closed; once one of the two closes, the
// address is served again.
func TestAgent_HTTPMaxConnsPerClient(t *testing.T) {
	a := startLimitedAgent(t, func(c *agent.Config) { c.HTTPMaxConnsPerClient = 2 })
	var held []net.Conn
	for range 2 {
		c, resp, body := rawGet(t, a.Addr(), "/v1/agent/self")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("within the limit: %s %s", resp.Status, body)
		}
		held = append(held, c)
	}
	third, resp, body := rawGet(t, a.Addr(), "/v1/agent/self")
	if resp.StatusCode != http.StatusTooManyRequests || body != "Your IP is issuing too many concurrent connections, please rate limit your calls\n" {
		t.Fatalf("over the limit: %s %q", resp.Status, body)
	}
	assertServerCloses(t, third, limitsWait, "the connection answered 429")

	// The connections held still work.
	if _, err := io.WriteString(held[1], "GET /v1/status/leader HTTP/1.1\r\nHost: drover\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = held[1].SetReadDeadline(time.Now().Add(limitsWait))
	if resp, err := http.ReadResponse(held[1].(*bufferedConn).r, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a held connection: %v %v", resp, err)
	}

	// The server sees one close when it reads its end: until then the
	// address may still be at its limit.
	_ = held[0].Close()
	for deadline := time.Now().Add(limitsWait); ; time.Sleep(50 * time.Millisecond) {
		c, resp, body := rawGet(t, a.Addr(), "/v1/agent/self")
		if resp.StatusCode == http.StatusOK {
			_ = c.Close()
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after one closed: %s %s", resp.Status, body)
		}
	}
}

// 0 turns the limit off.
func TestAgent_HTTPMaxConnsPerClientZeroIsNoLimit(t *testing.T) {
	a := startLimitedAgent(t, func(c *agent.Config) { c.HTTPMaxConnsPerClient = 0 })
	for i := range 5 {
		if _, resp, body := rawGet(t, a.Addr(), "/v1/status/leader"); resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d: %s %s", i+1, resp.Status, body)
		}
	}
}

// https_handshake_timeout: a connection to the HTTPS API that never
// starts its handshake is closed after the timeout; one that has made a
// request keeps its connection, idle, past it.
func TestAgent_HTTPSHandshakeTimeout(t *testing.T) {
	certs := tlstest.Write(t, "global")
	a := startLimitedAgent(t, func(c *agent.Config) {
		c.HTTPSHandshakeTimeout = 100 * time.Millisecond
		c.TLS = tlsutil.Config{HTTP: true, CAFile: certs.CA, CertFile: certs.ServerCert, KeyFile: certs.ServerKey}
	})
	host := strings.TrimPrefix(a.Addr(), "https://")
	silent, err := net.DialTimeout("tcp", host, limitsWait)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	// The HTTP server's own ReadHeaderTimeout (10s) would close it too:
	// well before that, but still 80 times the timeout.
	assertServerCloses(t, silent, 8*time.Second, "a connection that sent nothing")

	client := httpsClient(t, certs.CA, "", "")
	var reused []bool
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { reused = append(reused, info.Reused) }})
	for i := range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.Addr()+"/v1/status/leader", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i+1, resp.Status)
		}
		if resp.TLS == nil {
			t.Fatal("not TLS")
		}
		time.Sleep(300 * time.Millisecond) // idle, past the handshake timeout
	}
	if len(reused) != 2 || !reused[1] {
		t.Errorf("the second request did not reuse the first's connection: %v", reused)
	}
}

// A bad limit is refused before the agent starts.
func TestAgent_NegativeLimitsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		modify func(*agent.Config)
		want   string
	}{
		{func(c *agent.Config) { c.HTTPMaxConnsPerClient = -1 }, "http_max_conns_per_client"},
		{func(c *agent.Config) { c.HTTPSHandshakeTimeout = -time.Second }, "https_handshake_timeout"},
		{func(c *agent.Config) { c.Server.RPCMaxConnsPerClient = -1 }, "rpc_max_conns_per_client"},
		{func(c *agent.Config) { c.Server.RPCHandshakeTimeout = -time.Second }, "rpc_handshake_timeout"},
	} {
		cfg := agent.DefaultConfig()
		cfg.Dev, cfg.HTTPAddr, cfg.PluginDir = true, "127.0.0.1:0", t.TempDir()
		tc.modify(&cfg)
		a, err := agent.New(cfg, zerolog.Nop())
		if err == nil {
			_ = a.Shutdown(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// /v1/agent/self gives the limits and the ACL settings as Nomad's does
// (Nomad's UI reads config.ACL.Enabled to show its ACL pages).
func TestAgentSelf_LimitsAndACL(t *testing.T) {
	a := startLimitedAgent(t, func(c *agent.Config) {
		c.HTTPMaxConnsPerClient = 7
		c.Server.RPCHandshakeTimeout = 3 * time.Second
	})
	c, resp, body := rawGet(t, a.Addr(), "/v1/agent/self")
	_ = c.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/agent/self: %d %s", resp.StatusCode, body)
	}
	var self struct {
		Config struct {
			ACL    struct{ Enabled bool }
			Limits struct {
				HTTPMaxConnsPerClient int
				RPCHandshakeTimeout   string
			}
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(body), &self); err != nil {
		t.Fatal(err)
	}
	if self.Config.ACL.Enabled || self.Config.Limits.HTTPMaxConnsPerClient != 7 || self.Config.Limits.RPCHandshakeTimeout != "3s" {
		t.Fatalf("agent self config: %+v", self.Config)
	}
}
