package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// startHTTPSAgent starts a dev agent with three nodes whose API is HTTPS
// with certs's server certificate; verifyClients turns on
// verify_https_client.
func startHTTPSAgent(t *testing.T, certs tlstest.Files, verifyClients bool) *agent.Agent {
	t.Helper()
	dir := t.TempDir()
	install(t, wasmtest.Build(t, "./plugins/service"), dir, "service.wasm")
	cfg := agent.DefaultConfig()
	cfg.Dev, cfg.DevNodes, cfg.HTTPAddr, cfg.PluginDir = true, 3, "127.0.0.1:0", dir
	cfg.Server.NumWorkers = 2
	cfg.TLS = tlsutil.Config{HTTP: true, CAFile: certs.CA, CertFile: certs.ServerCert, KeyFile: certs.ServerKey,
		VerifyHTTPSClient: verifyClients}
	a, err := agent.New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	return a
}

// httpsClient trusts the CA in caFile and shows the certificate in
// certFile, if any.
func httpsClient(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{RootCAs: x509.NewCertPool()}
	c.RootCAs.AppendCertsFromPEM(pem)
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
}

// call sends a request and decodes a 200's JSON into out (if not nil).
func call(t *testing.T, c *http.Client, method, url, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
}

// With the tls block's http on, the API is HTTPS only: a job registered
// over it is placed on the dev nodes, which say their API is TLS, as
// /v1/agent/self does; a plain-HTTP request gets no answer from the API.
func TestAgent_HTTPS_JobIsPlaced(t *testing.T) {
	certs := tlstest.Write(t, "global")
	a := startHTTPSAgent(t, certs, false)
	if !strings.HasPrefix(a.Addr(), "https://") {
		t.Fatalf("Addr() = %q, want https://", a.Addr())
	}
	c := httpsClient(t, certs.CA, "", "")

	job := `{"Job":{"ID":"web","Type":"service","Datacenters":["*"],"TaskGroups":[{"Name":"g","Count":2,
		"Tasks":[{"Name":"t","Driver":"exec","Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	var reg struct{ EvalID string }
	call(t, c, http.MethodPut, a.Addr()+"/v1/jobs", job, &reg)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var eval struct{ Status, StatusDescription string }
		call(t, c, http.MethodGet, a.Addr()+"/v1/evaluation/"+reg.EvalID, "", &eval)
		if eval.Status == "complete" {
			break
		}
		if eval.Status != "pending" || time.Now().After(deadline) {
			t.Fatalf("eval %s: %s (%s)", reg.EvalID, eval.Status, eval.StatusDescription)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var allocs []struct{ NodeID string }
	call(t, c, http.MethodGet, a.Addr()+"/v1/job/web/allocations", "", &allocs)
	if len(allocs) != 2 || allocs[0].NodeID == "" || allocs[1].NodeID == "" {
		t.Fatalf("allocations placed over HTTPS: %+v", allocs)
	}

	var node struct{ TLSEnabled bool }
	call(t, c, http.MethodGet, a.Addr()+"/v1/node/"+allocs[0].NodeID, "", &node)
	if !node.TLSEnabled {
		t.Error("a dev node of an HTTPS agent does not say TLSEnabled")
	}
	var self struct {
		Config struct{ TLSConfig struct{ EnableHTTP bool } } `json:"config"`
	}
	call(t, c, http.MethodGet, a.Addr()+"/v1/agent/self", "", &self)
	if !self.Config.TLSConfig.EnableHTTP {
		t.Error("/v1/agent/self does not say EnableHTTP")
	}

	plain := "http://" + strings.TrimPrefix(a.Addr(), "https://") + "/v1/jobs"
	resp, err := http.Get(plain)
	if err == nil {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP answered 200: %s", raw)
		}
	}
}

// With verify_https_client, a client must show a certificate the CA
// signed: one without, or with another CA's, is refused at the handshake.
func TestAgent_HTTPS_VerifyHTTPSClient(t *testing.T) {
	certs := tlstest.Write(t, "global")
	a := startHTTPSAgent(t, certs, true)
	for _, tc := range []struct {
		name        string
		cert, key   string
		wantRefused bool
	}{
		{"no certificate", "", "", true},
		{"the CA's client certificate", certs.ClientCert, certs.ClientKey, false},
		{"another CA's certificate", certs.RogueCert, certs.RogueKey, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := httpsClient(t, certs.CA, tc.cert, tc.key).Get(a.Addr() + "/v1/nodes")
			if err == nil {
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if refused := err != nil; refused != tc.wantRefused {
				t.Fatalf("err = %v, want refused %v", err, tc.wantRefused)
			}
		})
	}
}
