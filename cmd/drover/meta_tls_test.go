package main

import (
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover-sched/drover/host/tlsutil/tlstest"
)

// tlsEnv are the TLS options' environment variables, cleared for each
// case so that the test's environment does not leak in.
var tlsEnv = []string{"CACERT", "CLIENT_CERT", "CLIENT_KEY", "TLS_SERVER_NAME", "SKIP_VERIFY"}

// The TLS options come from flags, else DROVER_ variables, else NOMAD_
// ones, and a bad one is refused naming where it came from and the file.
func TestMeta_TLSOptions(t *testing.T) {
	certs := tlstest.Write(t, "global")
	missing := filepath.Join(certs.Dir, "missing.pem")
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		check func(*tls.Config) bool // for a case without an error
		err   []string               // what the error names
	}{
		{name: "none", check: func(c *tls.Config) bool { return c == nil }},
		{name: "CA and client certificate by flags",
			args:  []string{"-ca-cert", certs.CA, "-client-cert", certs.ClientCert, "-client-key", certs.ClientKey},
			check: func(c *tls.Config) bool { return c.RootCAs != nil && len(c.Certificates) == 1 }},
		{name: "the same from Nomad's variables",
			env:   map[string]string{"NOMAD_CACERT": certs.CA, "NOMAD_CLIENT_CERT": certs.ClientCert, "NOMAD_CLIENT_KEY": certs.ClientKey},
			check: func(c *tls.Config) bool { return c.RootCAs != nil && len(c.Certificates) == 1 }},
		{name: "server name and skip verify",
			env:   map[string]string{"DROVER_TLS_SERVER_NAME": "server.global.nomad", "NOMAD_SKIP_VERIFY": "true"},
			check: func(c *tls.Config) bool { return c.ServerName == "server.global.nomad" && c.InsecureSkipVerify }},
		{name: "-tls-skip-verify alone", args: []string{"-tls-skip-verify"},
			check: func(c *tls.Config) bool { return c.InsecureSkipVerify }},
		{name: "-tls-skip-verify=false wins over the variable", env: map[string]string{"DROVER_SKIP_VERIFY": "1"},
			args: []string{"-tls-skip-verify=false"}, check: func(c *tls.Config) bool { return !c.InsecureSkipVerify }},
		{name: "DROVER_ wins over NOMAD_", env: map[string]string{"DROVER_CACERT": certs.CA, "NOMAD_CACERT": missing},
			check: func(c *tls.Config) bool { return c.RootCAs != nil }},
		{name: "the flag wins over the variables", env: map[string]string{"DROVER_CACERT": missing},
			args: []string{"-ca-cert", certs.CA}, check: func(c *tls.Config) bool { return c.RootCAs != nil }},

		{name: "missing CA by flag", args: []string{"-ca-cert", missing}, err: []string{"-ca-cert", missing}},
		{name: "missing CA by Nomad's variable", env: map[string]string{"NOMAD_CACERT": missing}, err: []string{"NOMAD_CACERT", missing}},
		{name: "a key as the CA", env: map[string]string{"DROVER_CACERT": certs.ClientKey},
			err: []string{"DROVER_CACERT", certs.ClientKey, "no PEM certificate"}},
		{name: "certificate without key", args: []string{"-client-cert", certs.ClientCert}, err: []string{"-client-cert", "-client-key"}},
		{name: "key without certificate", env: map[string]string{"NOMAD_CLIENT_KEY": certs.ClientKey},
			err: []string{"NOMAD_CLIENT_KEY", "-client-cert"}},
		{name: "key of another certificate", args: []string{"-client-cert", certs.ClientCert, "-client-key", certs.ServerKey},
			err: []string{"-client-cert " + certs.ClientCert, "-client-key " + certs.ServerKey}},
		{name: "skip verify not a boolean", env: map[string]string{"NOMAD_SKIP_VERIFY": "yes"}, err: []string{"NOMAD_SKIP_VERIFY", `"yes"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, e := range tlsEnv {
				t.Setenv("DROVER_"+e, tc.env["DROVER_"+e])
				t.Setenv("NOMAD_"+e, tc.env["NOMAD_"+e])
			}
			m := &meta{}
			fs := m.flags("test", false)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			c, err := m.tls.config()
			if tc.err != nil {
				if err == nil {
					t.Fatalf("no error, want one naming %q", tc.err)
				}
				for _, want := range tc.err {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Fatalf("config %+v", c)
			}
		})
	}
}
