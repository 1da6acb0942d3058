// Package tlsutil builds the TLS configurations of an agent from its tls
// settings, as Nomad's tls block gives them: HTTPS for the API (mutual if
// verify_https_client), and mutual TLS between servers on the RPC port,
// where each side's certificate must be signed by the cluster's CA and,
// with verify_server_hostname, be a server's of the region
// (server.<region>.nomad, the name Nomad's `tls cert create -server`
// gives, so Nomad's certificates serve Drover too).
package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// Config is an agent's tls settings (Nomad's names in the comments).
type Config struct {
	HTTP bool // http: the API serves HTTPS
	RPC  bool // rpc: servers speak mutual TLS to each other

	CAFile   string // ca_file: the CA that signs the cluster's certificates
	CertFile string // cert_file: this agent's certificate (PEM)
	KeyFile  string // key_file: its private key (PEM)

	// VerifyServerHostname (verify_server_hostname): a server's
	// certificate must be valid for server.<region>.nomad, so that a
	// certificate the CA signed for a client or the CLI cannot take part
	// in raft.
	VerifyServerHostname bool
	// VerifyHTTPSClient (verify_https_client): HTTPS clients must show a
	// certificate the CA signed.
	VerifyHTTPSClient bool
	// RPCUpgradeMode (rpc_upgrade_mode): while a cluster moves to TLS, its
	// servers take plaintext RPC connections too.
	RPCUpgradeMode bool
	// MinVersion (tls_min_version: "tls12", "tls13") is the oldest TLS
	// version taken; 0 means TLS 1.2.
	MinVersion uint16
	// CipherSuites (tls_cipher_suites) are the TLS 1.2 suites offered;
	// none means Go's defaults.
	CipherSuites []uint16
}

// Enabled reports whether any TLS is on.
func (c Config) Enabled() bool { return c.HTTP || c.RPC }

// ParseVersion reads a tls_min_version ("tls12", "tls13"; Nomad also
// names tls10 and tls11, which Drover refuses as unsafe).
func ParseVersion(s string) (uint16, error) {
	switch s {
	case "", "tls12":
		return tls.VersionTLS12, nil
	case "tls13":
		return tls.VersionTLS13, nil
	case "tls10", "tls11":
		return 0, fmt.Errorf("%q is no longer safe; use tls12 or tls13", s)
	}
	return 0, fmt.Errorf("%q is not tls12 or tls13", s)
}

// ParseCipherSuites reads a tls_cipher_suites list (comma-separated
// names, as Go and Nomad name them: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256).
// Suites Go counts as insecure are refused.
func ParseCipherSuites(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []uint16
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(tls.CipherSuites(), func(cs *tls.CipherSuite) bool { return cs.Name == name })
		if i < 0 {
			if slices.ContainsFunc(tls.InsecureCipherSuites(), func(cs *tls.CipherSuite) bool { return cs.Name == name }) {
				return nil, fmt.Errorf("%q is an insecure cipher suite", name)
			}
			return nil, fmt.Errorf("%q is not a cipher suite Go knows", name)
		}
		out = append(out, tls.CipherSuites()[i].ID)
	}
	return out, nil
}

// ServerName is the name a server's certificate must be valid for with
// verify_server_hostname: server.<region>.nomad, as in Nomad.
func ServerName(region string) string { return "server." + region + ".nomad" }

// TLS is an agent's loaded TLS material. Reload reads its files again
// (SIGHUP): the configurations it gives take the new certificates for
// every new connection.
type TLS struct {
	cfg    Config
	region string
	mat    atomic.Pointer[material]
}

// material is what the files hold.
type material struct {
	cert tls.Certificate
	ca   *x509.CertPool
}

// Load checks the settings and reads the files. A problem names the
// setting, and the file when one is at fault. It returns nil, nil when
// TLS is off.
func Load(c Config, region string) (*TLS, error) {
	if !c.Enabled() {
		if c.VerifyHTTPSClient || c.RPCUpgradeMode {
			return nil, errors.New("tls: verify_https_client and rpc_upgrade_mode need http or rpc")
		}
		return nil, nil
	}
	switch {
	case c.CertFile == "" || c.KeyFile == "":
		return nil, errors.New("tls: cert_file and key_file are needed for TLS")
	case c.CAFile == "" && (c.RPC || c.VerifyHTTPSClient):
		return nil, errors.New("tls: ca_file is needed: RPC and verify_https_client check certificates against it")
	case c.VerifyHTTPSClient && !c.HTTP:
		return nil, errors.New("tls: verify_https_client needs http = true")
	case c.RPCUpgradeMode && !c.RPC:
		return nil, errors.New("tls: rpc_upgrade_mode needs rpc = true")
	}
	t := &TLS{cfg: c, region: region}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// Reload reads the files again, as Load does; when they hold what Load
// would refuse, it keeps what it had and says why.
func (t *TLS) Reload() error {
	c := t.cfg
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return fmt.Errorf("tls: cert_file %s and key_file %s: %w", c.CertFile, c.KeyFile, err)
	}
	m := &material{cert: cert}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return fmt.Errorf("tls: ca_file: %w", err)
		}
		m.ca = x509.NewCertPool()
		if !m.ca.AppendCertsFromPEM(pem) {
			return fmt.Errorf("tls: ca_file %s holds no PEM certificate", c.CAFile)
		}
	}
	if c.RPC && c.VerifyServerHostname {
		// A server that would refuse itself is refused.
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return fmt.Errorf("tls: cert_file %s: %w", c.CertFile, err)
		}
		if err := leaf.VerifyHostname(ServerName(t.region)); err != nil {
			return fmt.Errorf("tls: cert_file %s is not a server's certificate of region %s (verify_server_hostname): %w",
				c.CertFile, t.region, err)
		}
	}
	t.mat.Store(m)
	return nil
}

// base is what every configuration shares, with the current material.
func (t *TLS) base() (*tls.Config, *material) {
	m := t.mat.Load()
	minVersion := t.cfg.MinVersion
	if minVersion == 0 {
		minVersion = tls.VersionTLS12
	}
	return &tls.Config{MinVersion: minVersion, CipherSuites: t.cfg.CipherSuites, Certificates: []tls.Certificate{m.cert}}, m
}

// serving is a server's configuration that takes the material current
// at each handshake (config builds it).
func serving(config func() *tls.Config) *tls.Config {
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return config(), nil }}
}

// RPCServer is the configuration of the RPC port's TLS connections: the
// other side must show a certificate the CA signed (a server's, with
// verify_server_hostname). Nil when RPC is not TLS.
func (t *TLS) RPCServer() *tls.Config {
	if t == nil || !t.cfg.RPC {
		return nil
	}
	return serving(t.rpcServer)
}

func (t *TLS) rpcServer() *tls.Config {
	c, m := t.base()
	c.ClientAuth = tls.RequireAndVerifyClientCert
	c.ClientCAs = m.ca
	if t.cfg.VerifyServerHostname {
		name := ServerName(t.region)
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: no certificate")
			}
			if err := cs.PeerCertificates[0].VerifyHostname(name); err != nil {
				return fmt.Errorf("tls: not a server's certificate: %w", err)
			}
			return nil
		}
	}
	return c
}

// RPCClient is the configuration of a connection to another server, with
// the material current now: the server must show a certificate the CA
// signed, valid for server.<region>.nomad with verify_server_hostname
// (the address is not checked without it, as in Nomad). Nil when RPC is
// not TLS.
func (t *TLS) RPCClient() *tls.Config {
	if t == nil || !t.cfg.RPC {
		return nil
	}
	c, m := t.base()
	c.RootCAs = m.ca
	if t.cfg.VerifyServerHostname {
		c.ServerName = ServerName(t.region)
		return c
	}
	// The chain is checked here instead of by crypto/tls, which would
	// also check the address.
	c.InsecureSkipVerify = true
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		return verifyChain(cs.PeerCertificates, m.ca)
	}
	return c
}

// RPCUpgradeMode reports whether the RPC port also takes plaintext.
func (t *TLS) RPCUpgradeMode() bool { return t != nil && t.cfg.RPCUpgradeMode }

// HTTPServer is the configuration of the API's HTTPS, asking clients
// for a certificate the CA signed with verify_https_client. Nil when the
// API is plain HTTP.
func (t *TLS) HTTPServer() *tls.Config {
	if t == nil || !t.cfg.HTTP {
		return nil
	}
	return serving(func() *tls.Config {
		c, m := t.base()
		if t.cfg.VerifyHTTPSClient {
			c.ClientAuth = tls.RequireAndVerifyClientCert
			c.ClientCAs = m.ca
		}
		return c
	})
}

// verifyChain checks that certs are a chain from roots, whatever names the
// leaf holds.
func verifyChain(certs []*x509.Certificate, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return errors.New("tls: no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}
