// Package tlstest writes certificates for tests: a CA, and certificates
// it signs for servers, clients and the CLI, as `drover tls` makes them.
package tlstest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/tlsutil"
)

// Files are the paths of what Write wrote.
type Files struct {
	Dir string
	CA  string // the CA's certificate
	// Server's certificate and key are valid for server.<region>.nomad.
	ServerCert, ServerKey string
	// Client's are valid for client.<region>.nomad: signed by the CA, but
	// no server's.
	ClientCert, ClientKey string
	// Rogue's are a server's, signed by another CA.
	RogueCert, RogueKey string
}

// Write makes a CA and certificates for region in a temporary directory.
func Write(t testing.TB, region string) Files {
	t.Helper()
	dir := t.TempDir()
	now := time.Now()
	ca, err := tlsutil.NewCA("Drover test CA", 1, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlsutil.NewCA("Another CA", 1, now)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{Dir: dir, CA: filepath.Join(dir, "ca.pem")}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ca.pem", ca.CertPEM())
	sign := func(ca *tlsutil.CA, kind, name string) (string, string) {
		cert, key, err := ca.Sign(tlsutil.CertRequest{Kind: kind, Region: region, Days: 1}, now)
		if err != nil {
			t.Fatal(err)
		}
		return write(name+".pem", cert), write(name+"-key.pem", key)
	}
	f.ServerCert, f.ServerKey = sign(ca, "server", "server")
	f.ClientCert, f.ClientKey = sign(ca, "client", "client")
	f.RogueCert, f.RogueKey = sign(other, "server", "rogue")
	return f
}
