package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"regexp"
	"strings"

	"github.com/drover-sched/drover/host/tlsutil"
)

// The files drover tls writes, as Nomad's names them in the current
// directory.
const (
	caCertFile = "nomad-agent-ca.pem"
	caKeyFile  = "nomad-agent-ca-key.pem"
	// tlsDomain is the only domain certificates are made for: the agent
	// checks servers' certificates for server.<region>.nomad.
	tlsDomain = "nomad"
)

// tlsGroupHelp is drover tls's help, with Nomad's examples.
const tlsGroupHelp = `Usage: drover tls <subcommand> <subcommand> [options]

  Makes a certificate authority and the certificates it signs, to secure a
  cluster with the agent configuration's tls block, as nomad tls does:

      $ drover tls ca create
      $ drover tls cert create -server
      $ drover tls cert create -client
      $ drover tls cert create -cli`

type tlsCACreateCommand struct{ *meta }

func (c *tlsCACreateCommand) Synopsis() string { return "Create a certificate authority for Drover" }

func (c *tlsCACreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover tls ca create [options]

  Creates a certificate authority: its certificate, nomad-agent-ca.pem, and
  its key, nomad-agent-ca-key.pem (mode 0600), in the current directory,
  as nomad tls ca create names them. Files already there are not
  overwritten: the command fails instead. Keep the key safe: whoever holds
  it can make a server's certificate.

CA create options:

  -common-name=NAME  Common name of the CA (default "Nomad Agent CA").
  -days=N            Days the CA is valid for (default 1825, five years).
  -domain=DOMAIN     Only "nomad", the default: Drover checks certificates
                     for <role>.<region>.nomad.`)
}

func (c *tlsCACreateCommand) Run(args []string) int {
	fs := newLocalFlags("tls ca create")
	commonName := fs.String("common-name", "Nomad Agent CA", "")
	days := fs.Int("days", 1825, "")
	domain := fs.String("domain", tlsDomain, "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	switch {
	case *domain != tlsDomain:
		return c.errorf("-domain %q: Drover makes certificates for the domain %q only", *domain, tlsDomain)
	case *days <= 0:
		return c.errorf("-days must be a positive number of days")
	case strings.TrimSpace(*commonName) == "":
		return c.errorf("-common-name must not be empty")
	}
	ca, err := tlsutil.NewCA(*commonName, *days, c.clock())
	if err != nil {
		return c.errorf("create the CA: %v", err)
	}
	key, err := ca.KeyPEM()
	if err != nil {
		return c.errorf("encode the CA's key: %v", err)
	}
	if err := writeNew(newFile{caCertFile, ca.CertPEM(), 0o644}, newFile{caKeyFile, key, 0o600}); err != nil {
		return c.errorf("%v", err)
	}
	c.ui.Output("==> CA certificate saved to: " + caCertFile)
	c.ui.Output("==> CA certificate key saved to: " + caKeyFile)
	return exitOK
}

type tlsCertCreateCommand struct{ *meta }

func (c *tlsCertCreateCommand) Synopsis() string { return "Create a new TLS certificate" }

func (c *tlsCertCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover tls cert create [options]

  Creates a certificate and its key, signed by the CA that drover tls ca
  create made, for a server (-server), a client (-client) or the CLI
  (-cli), in the current directory as nomad tls cert create names them:
  <region>-<role>-nomad.pem and <region>-<role>-nomad-key.pem (mode 0600).
  Files already there are not overwritten: the command fails instead.

  The certificate is valid for <role>.<region>.nomad, localhost and
  127.0.0.1, for server and client authentication. With
  verify_server_hostname, servers take part in the cluster only with a
  server's certificate of their region: keep those as safe as the CA's
  key. A client or CLI certificate reaches an agent with
  verify_https_client.

Certificate create options:

  -server, -client, -cli
                     The role the certificate is for (one of them).
  -region=REGION     The region (default "global").
  -days=N            Days the certificate is valid for (default 365).
  -ca=FILE           The CA's certificate (default nomad-agent-ca.pem).
  -key=FILE          The CA's key (default nomad-agent-ca-key.pem).
  -additional-dnsname=NAME
                     Another DNS name the certificate is valid for; repeat
                     for each.
  -additional-ipaddress=IP
                     Another IP address the certificate is valid for;
                     repeat for each.
  -domain=DOMAIN     Only "nomad", the default.`)
}

// regionName is what a region must be to name a certificate
// (<role>.<region>.nomad) and its files.
var regionName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)

func (c *tlsCertCreateCommand) Run(args []string) int {
	fs := newLocalFlags("tls cert create")
	server := fs.Bool("server", false, "")
	client := fs.Bool("client", false, "")
	cli := fs.Bool("cli", false, "")
	region := fs.String("region", "global", "")
	days := fs.Int("days", 365, "")
	caFile := fs.String("ca", caCertFile, "")
	keyFile := fs.String("key", caKeyFile, "")
	domain := fs.String("domain", tlsDomain, "")
	var dnsNames, ipAddrs stringList
	fs.Var(&dnsNames, "additional-dnsname", "")
	fs.Var(&ipAddrs, "additional-ipaddress", "")
	if !c.parse(fs, args, c.Help()) || !c.args(fs, 0, 0, "no arguments") {
		return exitError
	}
	var kind string
	roles := 0
	for _, k := range []struct {
		set  bool
		name string
	}{{*server, "server"}, {*client, "client"}, {*cli, "cli"}} {
		if k.set {
			kind = k.name
			roles++
		}
	}
	switch {
	case roles != 1:
		return c.errorf("please provide one of -server, -client or -cli")
	case *domain != tlsDomain:
		return c.errorf("-domain %q: Drover makes certificates for the domain %q only", *domain, tlsDomain)
	case !regionName.MatchString(*region):
		return c.errorf("-region %q: a region in a certificate's name is letters, digits and hyphens", *region)
	case *days <= 0:
		return c.errorf("-days must be a positive number of days")
	}
	req := tlsutil.CertRequest{Kind: kind, Region: *region, Days: *days}
	for _, d := range dnsNames {
		if d = strings.TrimSpace(d); d != "" {
			req.DNSNames = append(req.DNSNames, d)
		}
	}
	for _, s := range ipAddrs {
		ip := net.ParseIP(strings.TrimSpace(s))
		if ip == nil {
			return c.errorf("-additional-ipaddress %q is not an IP address", s)
		}
		req.IPs = append(req.IPs, ip)
	}
	prefix := fmt.Sprintf("%s-%s-%s", *region, kind, tlsDomain)
	certFile, keyOut := prefix+".pem", prefix+"-key.pem"
	// Refused before the CA is read, as Nomad does, so that a second run
	// says what is in the way.
	for _, f := range []string{certFile, keyOut} {
		if _, err := os.Lstat(f); err == nil {
			return c.errorf("%s already exists: not overwritten", f)
		}
	}
	certPEM, err := os.ReadFile(*caFile)
	if err != nil {
		return c.errorf("the CA's certificate (-ca): %v", err)
	}
	keyPEM, err := os.ReadFile(*keyFile)
	if err != nil {
		return c.errorf("the CA's key (-key): %v", err)
	}
	ca, err := tlsutil.ParseCA(certPEM, keyPEM)
	if err != nil {
		return c.errorf("the CA in %s and %s: %v", *caFile, *keyFile, err)
	}
	cert, key, err := ca.Sign(req, c.clock())
	if err != nil {
		return c.errorf("sign the certificate: %v", err)
	}
	if kind == "server" {
		c.ui.Warn(`==> WARNING: a server's certificate lets its holder take part in the
    cluster as a server and read all of its state. Give it only to
    servers, and keep it as safe as the CA's key.`)
	}
	c.ui.Info("==> Using CA file " + *caFile + " and CA key " + *keyFile)
	if err := writeNew(newFile{certFile, cert, 0o644}, newFile{keyOut, key, 0o600}); err != nil {
		return c.errorf("%v", err)
	}
	role := map[string]string{"server": "Server", "client": "Client", "cli": "CLI"}[kind]
	c.ui.Output("==> " + role + " certificate saved to " + certFile)
	c.ui.Output("==> " + role + " certificate key saved to " + keyOut)
	return exitOK
}

// newLocalFlags is a flag set for a command that does not talk to an
// agent (no -address, no TLS options).
func newLocalFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// newFile is a file writeNew writes.
type newFile struct {
	path string
	data []byte
	mode os.FileMode
}

// writeNew writes files that must not exist yet: if one does, none is
// written (a CA's key or a certificate is never replaced by mistake), and
// a write that fails leaves none behind.
func writeNew(files ...newFile) (err error) {
	var created []*os.File
	defer func() {
		if err != nil {
			for _, f := range created {
				_ = f.Close()
				_ = os.Remove(f.Name())
			}
		}
	}()
	for _, nf := range files {
		// O_EXCL: made here or refused, even if another run races this one.
		f, err := os.OpenFile(nf.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, nf.mode)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists: not overwritten", nf.path)
		}
		if err != nil {
			return err
		}
		created = append(created, f)
	}
	for i, nf := range files {
		f := created[i]
		if _, err := f.Write(nf.data); err != nil {
			return fmt.Errorf("write %s: %w", nf.path, err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", nf.path, err)
		}
	}
	for _, f := range created {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", f.Name(), err)
		}
	}
	return nil
}
