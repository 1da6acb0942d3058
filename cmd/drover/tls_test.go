package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/tlsutil"
)

// drv runs the CLI in this process and returns its exit code and output.
func drv(args ...string) (int, string) {
	var out bytes.Buffer
	code := run(args, &out, &out)
	return code, out.String()
}

// tls ca create and tls cert create -server make, in the current
// directory and under Nomad's names, what an agent's tls block takes
// with verify_server_hostname for region global; the keys are the
// owner's only.
func TestTLS_CreateCAAndServerCert(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range [][]string{
		{"tls", "ca", "create"},
		{"tls", "cert", "create", "-server", "-additional-dnsname", "drover.example.com", "-additional-ipaddress", "10.0.0.7"},
	} {
		if code, out := drv(args...); code != 0 {
			t.Fatalf("drover %s exited %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	cfg := tlsutil.Config{HTTP: true, RPC: true, VerifyServerHostname: true, VerifyHTTPSClient: true,
		CAFile:   filepath.Join(dir, "nomad-agent-ca.pem"),
		CertFile: filepath.Join(dir, "global-server-nomad.pem"), KeyFile: filepath.Join(dir, "global-server-nomad-key.pem")}
	if _, err := tlsutil.Load(cfg, "global"); err != nil {
		t.Fatalf("the tls block refuses what drover tls made: %v", err)
	}
	if _, err := tlsutil.Load(cfg, "west"); err == nil {
		t.Fatal("a server certificate of region global serves region west")
	}
	for _, f := range []string{"nomad-agent-ca-key.pem", "global-server-nomad-key.pem"} {
		if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", f, err, st.Mode().Perm())
		}
	}
	raw, _ := os.ReadFile("global-server-nomad.pem")
	b, _ := pem.Decode(raw)
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cert.DNSNames, "drover.example.com") || len(cert.IPAddresses) != 2 {
		t.Errorf("additional names not in the certificate: %v %v", cert.DNSNames, cert.IPAddresses)
	}
}

// Neither command overwrites a file: a second run fails, naming it, and
// leaves what is there.
func TestTLS_CreateRefusesToOverwrite(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"tls", "ca", "create"},
		{"tls", "cert", "create", "-client"},
	} {
		if code, out := drv(args...); code != 0 {
			t.Fatalf("drover %s exited %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
	read := func() map[string][]byte {
		files := map[string][]byte{}
		entries, _ := os.ReadDir(".")
		for _, e := range entries {
			files[e.Name()], _ = os.ReadFile(e.Name())
		}
		return files
	}
	before := read()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"CA", []string{"tls", "ca", "create"}, "nomad-agent-ca.pem already exists"},
		{"client certificate", []string{"tls", "cert", "create", "-client"}, "global-client-nomad.pem already exists"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := drv(tc.args...)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 and %q:\n%s", code, tc.want, out)
			}
		})
	}
	after := read()
	if len(after) != len(before) {
		t.Fatalf("files before %d, after %d", len(before), len(after))
	}
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s was changed", name)
		}
	}

	// A CA key in the way stops the CA's certificate being written too.
	t.Chdir(t.TempDir())
	if err := os.WriteFile("nomad-agent-ca-key.pem", []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := drv("tls", "ca", "create"); code != 1 || !strings.Contains(out, "nomad-agent-ca-key.pem already exists") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, err := os.Stat("nomad-agent-ca.pem"); err == nil {
		t.Fatal("the CA's certificate was written beside a key that is not its")
	}
}

// What tls cert create cannot make is refused with a reason, and nothing
// is written.
func TestTLS_CertCreateRefuses(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, out := drv("tls", "ca", "create"); code != 0 {
		t.Fatalf("tls ca create: %d\n%s", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no role", nil, "one of -server, -client or -cli"},
		{"two roles", []string{"-server", "-cli"}, "one of -server, -client or -cli"},
		{"another domain", []string{"-server", "-domain", "consul"}, `-domain "consul"`},
		{"a region that cannot be in a name", []string{"-server", "-region", "../x"}, `-region "../x"`},
		{"no days", []string{"-server", "-days", "0"}, "-days"},
		{"not an IP", []string{"-server", "-additional-ipaddress", "10.0.0"}, `-additional-ipaddress "10.0.0"`},
		{"no CA there", []string{"-server", "-ca", "missing.pem"}, "missing.pem"},
		{"a certificate as the CA", []string{"-server", "-key", "nomad-agent-ca.pem"}, "nomad-agent-ca.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := drv(append([]string{"tls", "cert", "create"}, tc.args...)...)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, want 1 and %q:\n%s", code, tc.want, out)
			}
		})
	}
	entries, _ := os.ReadDir(".")
	if len(entries) != 2 {
		t.Fatalf("%d files, want the CA's 2", len(entries))
	}
	if code, out := drv("tls", "ca", "create", "-domain", "consul"); code != 1 || !strings.Contains(out, `-domain "consul"`) {
		t.Fatalf("tls ca create -domain consul: %d\n%s", code, out)
	}
}
