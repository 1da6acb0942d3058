package httpapi_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/httpapi"
	"github.com/drover-sched/drover/host/server"
	"github.com/drover-sched/drover/host/server/servertest"
	"github.com/rs/zerolog"
)

// The profiler answers each profile in pprof's formats on an agent with
// enable_debug, and refuses bad or unknown ones.
func TestPprof_Profiles(t *testing.T) {
	s := servertest.New(t, nil, func(c *server.Config) { c.EnableDebug = true })
	ts := httptest.NewServer(httpapi.New(s, zerolog.Nop(), nil).Handler())
	t.Cleanup(ts.Close)
	gzipped := func(b []byte) bool { return bytes.HasPrefix(b, []byte{0x1f, 0x8b}) }
	for _, tc := range []struct {
		path string
		code int
		ok   func([]byte) bool
	}{
		{"goroutine?debug=1", 200, func(b []byte) bool { return bytes.Contains(b, []byte("goroutine profile:")) }},
		{"goroutine?debug=2", 200, func(b []byte) bool {
			return bytes.Contains(b, []byte("goroutine ")) && bytes.Contains(b, []byte("[running]"))
		}},
		{"heap?gc=1", 200, gzipped},
		{"allocs", 200, gzipped},
		{"threadcreate", 200, gzipped},
		{"block", 200, gzipped},
		{"mutex", 200, gzipped},
		{"profile?seconds=1", 200, gzipped},
		{"trace?seconds=1", 200, func(b []byte) bool { return bytes.HasPrefix(b, []byte("go 1.")) }},
		{"cmdline", 200, func(b []byte) bool { return len(b) > 0 }},
		{"nope", 404, func(b []byte) bool { return bytes.Contains(b, []byte(`no profile \"nope\"`)) }},
		{"profile?seconds=0", 400, func(b []byte) bool { return bytes.Contains(b, []byte("1 to 300 seconds")) }},
		{"heap?debug=x", 400, func(b []byte) bool { return bytes.Contains(b, []byte("debug=")) }},
	} {
		resp, body := do(t, "GET", ts.URL+"/v1/agent/pprof/"+tc.path, "")
		if resp.StatusCode != tc.code || !tc.ok(body) {
			t.Errorf("GET /v1/agent/pprof/%s: %d %q, want %d", tc.path, resp.StatusCode, head(body), tc.code)
		}
	}
}

func head(b []byte) []byte {
	if len(b) > 120 {
		return b[:120]
	}
	return b
}

// Without ACLs only an agent with enable_debug serves the profiler; with
// ACLs, a token with agent write, whatever enable_debug says, as Nomad's.
func TestPprof_WhoMayProfile(t *testing.T) {
	ts, _ := newAPI(t, 0) // enable_debug off
	if resp, body := do(t, "GET", ts.URL+"/v1/agent/pprof/heap", ""); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(string(body), "Permission denied") {
		t.Fatalf("without enable_debug: %d %s, want 403", resp.StatusCode, body)
	}
	acls, _, rootSecret := newACLAPI(t, 0)
	root := withToken(t, acls.URL, rootSecret)
	reader := makeToken(t, root, "agent-read", `agent { policy = "read" }`)
	writer := makeToken(t, root, "agent-write", `agent { policy = "write" }`)
	for _, c := range []struct {
		token string
		code  int
	}{{"", 403}, {reader, 403}, {writer, 200}, {rootSecret, 200}} {
		if resp, body := doAs(t, c.token, "GET", acls.URL+"/v1/agent/pprof/goroutine?debug=1", ""); resp.StatusCode != c.code {
			t.Errorf("token %q: %d %s, want %d", c.token, resp.StatusCode, head(body), c.code)
		}
	}
}
