package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/tlsutil/tlstest"
)

// An agent whose tls block turns on HTTPS with verify_https_client, with
// the CA and certificates drover tls made, is driven by the CLI with its
// TLS flags or their environment variables; a wrong CA, no certificate, a
// name the certificate is not for, or plain HTTP fail, each saying why.
func TestE2E_TLS_CLIAgainstHTTPSAgent(t *testing.T) {
	bin := droverBin(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"tls", "ca", "create"},
		{"tls", "cert", "create", "-server"},
		{"tls", "cert", "create", "-cli"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("drover %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	ca, cliCert, cliKey := file("nomad-agent-ca.pem"), file("global-cli-nomad.pem"), file("global-cli-nomad-key.pem")
	conf := writeFile(t, dir, "agent.hcl", fmt.Sprintf(`tls {
  http                = true
  ca_file             = %q
  cert_file           = %q
  key_file            = %q
  verify_https_client = true
}
`, ca, file("global-server-nomad.pem"), file("global-server-nomad-key.pem")))
	hostPort := freeAddr(t)
	addr := "https://" + hostPort
	agentCmd, logs, exited := runAgentProcess(t, bin, nil, "agent", "-dev", "-dev-nodes", "3", "-http-addr", hostPort, "-log-level", "info", "-config", conf)
	waitForHTTPS(t, addr, ca, cliCert, cliKey, exited)

	// run runs the CLI with DROVER_ADDR=addr and env, none of the test's
	// own TLS variables, from the repository's root.
	run := func(t *testing.T, env []string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(name, "DROVER_") && !strings.HasPrefix(name, "NOMAD_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(append(cmd.Env, "DROVER_ADDR="+addr), env...)
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !asExit(err, &ee) {
			t.Fatalf("drover %v: %v", args, err)
		}
		if ee != nil {
			return ee.ExitCode(), string(out)
		}
		return 0, string(out)
	}
	certFlags := []string{"-ca-cert", ca, "-client-cert", cliCert, "-client-key", cliKey}
	wrongCA := tlstest.Write(t, "global").CA
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"flags", nil, certFlags, 0, "ready"},
		{"Drover's variables", []string{"DROVER_CACERT=" + ca, "DROVER_CLIENT_CERT=" + cliCert, "DROVER_CLIENT_KEY=" + cliKey}, nil, 0, "ready"},
		{"Nomad's variables", []string{"NOMAD_CACERT=" + ca, "NOMAD_CLIENT_CERT=" + cliCert, "NOMAD_CLIENT_KEY=" + cliKey}, nil, 0, "ready"},
		{"the server's name", nil, append(certFlags, "-tls-server-name", "server.global.nomad"), 0, "ready"},
		{"skip verify without the CA", nil, []string{"-tls-skip-verify", "-client-cert", cliCert, "-client-key", cliKey}, 0, "ready"},
		{"another CA", nil, []string{"-ca-cert", wrongCA, "-client-cert", cliCert, "-client-key", cliKey}, 1, "signed by unknown authority (-ca-cert"},
		{"a name the certificate is not for", nil, append(certFlags, "-tls-server-name", "client.global.nomad"), 1, "not client.global.nomad (-tls-server-name"},
		{"no client certificate", nil, []string{"-ca-cert", ca}, 1, "certificate required"},
		{"a CA file that is not there", nil, []string{"-ca-cert", file("none.pem")}, 1, "-ca-cert: open " + file("none.pem")},
		{"plain HTTP", nil, append(certFlags, "-address", "http://"+hostPort), 1, "HTTP request to an HTTPS server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := run(t, tc.env, append([]string{"node", "status"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want %d and %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}

	// Commands that monitor, stream or list servers take the same options.
	env := []string{"DROVER_CACERT=" + ca, "DROVER_CLIENT_CERT=" + cliCert, "DROVER_CLIENT_KEY=" + cliKey}
	if code, out := run(t, env, "job", "run", "examples/jobs/web.hcl"); code != 0 || !strings.Contains(out, "3 placed") {
		t.Fatalf("job run over HTTPS: %d\n%s", code, out)
	}
	if code, out := run(t, env, "server", "members"); code != 0 || !strings.Contains(out, "alive") {
		t.Fatalf("server members over HTTPS: %d\n%s", code, out)
	}
	snap := filepath.Join(t.TempDir(), "state.snap")
	if code, out := run(t, env, "operator", "snapshot", "save", snap); code != 0 {
		t.Fatalf("operator snapshot save over HTTPS: %d\n%s", code, out)
	}

	// The server's certificate rotated, as an operator does it: new files
	// in place, then SIGHUP. New connections get the new certificate; a
	// broken file keeps the one the agent has.
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", hostPort, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	hup := func(want string) {
		t.Helper()
		before := len(logs.String())
		if err := agentCmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, "the agent to reload", func() bool { return strings.Contains(logs.String()[before:], want) })
	}
	first := served()
	for _, name := range []string{"global-server-nomad.pem", "global-server-nomad-key.pem"} {
		if err := os.Remove(file(name)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "tls", "cert", "create", "-server")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("drover tls cert create -server: %v\n%s", err, out)
	}
	hup("TLS certificates read again")
	second := served()
	if second == first {
		t.Fatal("the agent serves the certificate it had before SIGHUP")
	}
	if code, out := run(t, env, "node", "status"); code != 0 {
		t.Fatalf("after the reload: %d\n%s", code, out)
	}
	if err := os.WriteFile(file("global-server-nomad.pem"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup("kept the previous TLS certificates")
	if served() != second {
		t.Fatal("a broken certificate file replaced the served certificate")
	}
}

// waitForHTTPS waits until the agent at addr lists its nodes over HTTPS.
func waitForHTTPS(t *testing.T, addr, ca, cert, key string, exited <-chan struct{}) {
	t.Helper()
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{RootCAs: x509.NewCertPool(), Certificates: []tls.Certificate{pair}}
	c.RootCAs.AppendCertsFromPEM(pem)
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: c}}
	// As startDevAgent: compiling the plugins on a cold cache takes time.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatal("agent exited before it came up") // Cleanup prints its output
		default:
		}
		if resp, err := probe.Get(addr + "/v1/nodes"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("agent did not come up at %s", addr)
}
