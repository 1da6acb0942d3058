package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strconv"
)

// tlsOptionsHelp documents the TLS options every API command takes.
const tlsOptionsHelp = `

TLS options, for an https:// address (each flag defaults to the variable
named, or to the same with NOMAD_ for DROVER_, as Nomad's CLI reads it):

  -ca-cert=FILE    CA certificate to check the agent's against
                   ($DROVER_CACERT; default: the system's CAs).
  -client-cert=FILE, -client-key=FILE
                   Certificate and key to show an agent that asks for one
                   (verify_https_client) ($DROVER_CLIENT_CERT,
                   $DROVER_CLIENT_KEY).
  -tls-server-name=NAME
                   Name the agent's certificate must be valid for
                   ($DROVER_TLS_SERVER_NAME; default: the address's host).
  -tls-skip-verify Do not check the agent's certificate: for tests only
                   ($DROVER_SKIP_VERIFY=true).`

// tlsOptions are the CLI's TLS options, as Nomad's: -ca-cert,
// -client-cert, -client-key, -tls-server-name and -tls-skip-verify, each
// defaulting to its environment variable (Drover's name, else Nomad's, as
// DROVER_VAR_ wins over NOMAD_VAR_).
type tlsOptions struct {
	caCert, clientCert, clientKey, serverName, skipVerify option
}

// option is a TLS option's value and where it came from, so that an error
// names what the user set (the flag or the environment variable).
type option struct {
	flag, value, from string
	isBool            bool
}

func (o *option) String() string { return o.value }

func (o *option) Set(v string) error {
	if o.isBool {
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
	}
	o.value, o.from = v, "-"+o.flag
	return nil
}

// IsBoolFlag lets -tls-skip-verify stand alone, without =true.
func (o *option) IsBoolFlag() bool { return o.isBool }

// register adds the options to fs, with their defaults from the
// environment.
func (t *tlsOptions) register(fs *flag.FlagSet) {
	for _, o := range []struct {
		opt       *option
		flag, env string
		isBool    bool
	}{
		{&t.caCert, "ca-cert", "CACERT", false},
		{&t.clientCert, "client-cert", "CLIENT_CERT", false},
		{&t.clientKey, "client-key", "CLIENT_KEY", false},
		{&t.serverName, "tls-server-name", "TLS_SERVER_NAME", false},
		{&t.skipVerify, "tls-skip-verify", "SKIP_VERIFY", true},
	} {
		*o.opt = option{flag: o.flag, isBool: o.isBool}
		for _, prefix := range []string{"DROVER_", "NOMAD_"} {
			if v := os.Getenv(prefix + o.env); v != "" {
				o.opt.value, o.opt.from = v, prefix+o.env
				break
			}
		}
		fs.Var(o.opt, o.flag, "")
	}
}

// config is the TLS configuration the options give, nil if none is set
// (Go's defaults: the system's CAs, no client certificate).
func (t *tlsOptions) config() (*tls.Config, error) {
	if t.caCert.value == "" && t.clientCert.value == "" && t.clientKey.value == "" &&
		t.serverName.value == "" && t.skipVerify.value == "" {
		return nil, nil
	}
	c := &tls.Config{ServerName: t.serverName.value}
	if v := t.skipVerify.value; v != "" {
		skip, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not true or false", t.skipVerify.from, v)
		}
		c.InsecureSkipVerify = skip
	}
	if f := t.caCert.value; f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.caCert.from, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", t.caCert.from, f)
		}
	}
	cert, key := t.clientCert, t.clientKey
	switch {
	case cert.value != "" && key.value == "":
		return nil, fmt.Errorf("%s is set but not its key (-client-key, DROVER_CLIENT_KEY or NOMAD_CLIENT_KEY)", cert.from)
	case cert.value == "" && key.value != "":
		return nil, fmt.Errorf("%s is set but not its certificate (-client-cert, DROVER_CLIENT_CERT or NOMAD_CLIENT_CERT)", key.from)
	case cert.value != "":
		pair, err := tls.LoadX509KeyPair(cert.value, key.value)
		if err != nil {
			return nil, fmt.Errorf("%s %s and %s %s: %w", cert.from, cert.value, key.from, key.value, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

var _ flag.Value = (*option)(nil)
