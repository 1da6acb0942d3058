package tlsutil_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover-sched/drover/host/tlsutil"
	"github.com/drover-sched/drover/host/tlsutil/tlstest"
)

// Load refuses settings that cannot work, each problem naming the setting
// and the file at fault, before the agent starts anything.
func TestLoad_Refuses(t *testing.T) {
	f := tlstest.Write(t, "global")
	notPEM := filepath.Join(f.Dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := tlsutil.Config{RPC: true, CAFile: f.CA, CertFile: f.ServerCert, KeyFile: f.ServerKey, VerifyServerHostname: true}
	cases := []struct {
		name   string
		modify func(*tlsutil.Config)
		region string
		want   string
	}{
		{"no certificate", func(c *tlsutil.Config) { c.CertFile = "" }, "global", "cert_file and key_file are needed"},
		{"RPC without a CA", func(c *tlsutil.Config) { c.CAFile = "" }, "global", "ca_file is needed"},
		{"client verification without HTTPS", func(c *tlsutil.Config) { c.VerifyHTTPSClient = true }, "global", "verify_https_client needs http = true"},
		{"upgrade mode without RPC", func(c *tlsutil.Config) { c.RPC, c.HTTP, c.RPCUpgradeMode = false, true, true }, "global", "rpc_upgrade_mode needs rpc = true"},
		{"upgrade mode alone", func(c *tlsutil.Config) { *c = tlsutil.Config{RPCUpgradeMode: true} }, "global", "need http or rpc"},
		{"missing key", func(c *tlsutil.Config) { c.KeyFile = filepath.Join(f.Dir, "nope.pem") }, "global", "key_file " + filepath.Join(f.Dir, "nope.pem")},
		{"key of another certificate", func(c *tlsutil.Config) { c.KeyFile = f.ClientKey }, "global", "private key does not match"},
		{"CA file without a certificate", func(c *tlsutil.Config) { c.CAFile = notPEM }, "global", "ca_file " + notPEM + " holds no PEM certificate"},
		{"a client's certificate as a server's", func(c *tlsutil.Config) { c.CertFile, c.KeyFile = f.ClientCert, f.ClientKey }, "global",
			"is not a server's certificate of region global"},
		{"a server's certificate of another region", func(*tlsutil.Config) {}, "eu", "is not a server's certificate of region eu"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := server
			c.modify(&cfg)
			if _, err := tlsutil.Load(cfg, c.region); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
	if tl, err := tlsutil.Load(tlsutil.Config{}, "global"); tl != nil || err != nil {
		t.Fatalf("TLS off: %v, %v", tl, err)
	}
}

// handshake runs a TLS handshake between a server and a client
// configuration over loopback TCP (whose buffers let either side fail
// while the other writes) and returns the errors of both sides.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			errc <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		errc <- tls.Server(c, server).Handshake()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Client(c, client)
	cerr := tc.Handshake()
	if cerr == nil {
		// In TLS 1.3 the server checks the client's certificate after the
		// client has finished: a read sees its verdict.
		_, cerr = tc.Read(make([]byte, 1))
		if errors.Is(cerr, io.EOF) || errors.Is(cerr, os.ErrDeadlineExceeded) {
			cerr = nil
		}
	}
	_ = c.Close()
	return errors.Join(cerr, <-errc)
}

// Servers speak mutual TLS on the RPC port: each side needs a certificate
// the CA signed, and, with verify_server_hostname, a server's.
func TestRPC_MutualTLS(t *testing.T) {
	f := tlstest.Write(t, "global")
	load := func(cert, key string, verify bool) *tlsutil.TLS {
		t.Helper()
		tl, err := tlsutil.Load(tlsutil.Config{RPC: true, CAFile: f.CA, CertFile: cert, KeyFile: key, VerifyServerHostname: verify}, "global")
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	server := load(f.ServerCert, f.ServerKey, true)
	if err := handshake(t, server.RPCServer(), server.RPCClient()); err != nil {
		t.Fatalf("server to server: %v", err)
	}
	client := load(f.ClientCert, f.ClientKey, false)
	if err := handshake(t, server.RPCServer(), client.RPCClient()); err == nil || !strings.Contains(err.Error(), "not a server's certificate") {
		t.Fatalf("a client's certificate to a server checking names: %v", err)
	}
	if err := handshake(t, client.RPCServer(), server.RPCClient()); err == nil || !strings.Contains(err.Error(), "server.global.nomad") {
		t.Fatalf("a server checking names, to a client's certificate: %v", err)
	}
	if err := handshake(t, client.RPCServer(), client.RPCClient()); err != nil {
		t.Fatalf("without verify_server_hostname any certificate the CA signed will do: %v", err)
	}
	rogue := load(f.RogueCert, f.RogueKey, false)
	if err := handshake(t, server.RPCServer(), rogue.RPCClient()); err == nil {
		t.Fatal("another CA's certificate was taken")
	}
	if err := handshake(t, rogue.RPCServer(), server.RPCClient()); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("a server of another CA: %v", err)
	}
}
