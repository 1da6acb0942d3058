package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
)

type operatorAPICommand struct{ *meta }

func (c *operatorAPICommand) Synopsis() string { return "Query Drover's HTTP API" }

func (c *operatorAPICommand) Help() string {
	return strings.TrimSpace(`
Usage: drover operator api [options] <path>

  Sends one request to Drover's HTTP API, as curl would, with the CLI's
  address, ACL token (X-Nomad-Token), namespace, region and TLS options,
  and prints the answer's body, as nomad operator api does. It exits 1
  when the answer's status is 400 or more.

  The path is an API path (/v1/jobs), or a URL with or without its scheme
  (localhost:4646/v1/jobs, https://localhost:4646/v1/jobs): without a
  host, -address's is used; without a scheme, https if a TLS option is
  set, else -address's scheme.
` + apiOptions + `

API options:

  -X=METHOD        The request's method (default: POST with a body, else
                   GET).
  -H='Key: Value'  A header to send; may be given several times. It wins
                   over the ones the options set (X-Nomad-Token).
  -d=DATA          The request's body: the data itself, @FILE to read a
                   file, or - to read standard input. Without -d, data piped
                   to standard input is sent, as Nomad's.
  -filter=EXPR     A filter expression, sent as ?filter=.
  -region=REGION   The region, sent as ?region= (default: $DROVER_REGION,
                   else $NOMAD_REGION).
  -dryrun          Print the equivalent curl command instead of sending
                   the request. A token from the environment is printed as
                   the variable's name, one given with -token as itself.
  -verbose         Print the request's and the answer's status line and
                   headers to standard error, as curl --verbose.`)
}

// headerList collects -H options.
type headerList struct{ h http.Header }

func (l *headerList) String() string { return "" }

func (l *headerList) Set(v string) error {
	k, val, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("headers must be in the form 'Key: Value' but found: %q", v)
	}
	l.h.Add(strings.TrimSpace(k), strings.TrimSpace(val))
	return nil
}

func (c *operatorAPICommand) Run(args []string) int {
	fs := c.flags("operator api", false)
	method := fs.String("X", "", "")
	headers := &headerList{h: http.Header{}}
	fs.Var(headers, "H", "")
	data := fs.String("d", "", "")
	filter := fs.String("filter", "", "")
	region := fs.String("region", cmpEnv("DROVER_REGION", "NOMAD_REGION"), "")
	dryrun := fs.Bool("dryrun", false, "")
	verbose := fs.Bool("verbose", false, "")
	if !c.parse(fs, args, c.Help()) {
		return exitError
	}
	if fs.NArg() != 1 {
		if fs.NArg() == 0 {
			c.ui.Error("A path or URL is required")
		} else {
			c.ui.Error(fmt.Sprintf("operator api accepts exactly 1 argument, but %d arguments were found", fs.NArg()))
		}
		return exitError
	}
	say := func(string, ...any) {}
	if *verbose {
		say = func(format string, a ...any) { c.ui.Warn(fmt.Sprintf(format, a...)) }
	}

	var body []byte
	hasBody := false
	isSet := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { isSet[f.Name] = true })
	switch {
	case isSet["d"]:
		b, err := c.readDataSource(*data)
		if err != nil {
			return c.errorf("reading -d: %v", err)
		}
		body, hasBody = b, true
	case c.stdinPiped():
		say("* Reading request body from stdin.")
		b, err := io.ReadAll(c.stdin())
		if err != nil {
			return c.errorf("reading stdin: %v", err)
		}
		// Nothing piped is no body, not an empty POST.
		body, hasBody = b, len(b) > 0
	}
	if *method == "" {
		*method = http.MethodGet
		if hasBody {
			*method = http.MethodPost
		}
	}
	*method = strings.ToUpper(*method)

	u, err := c.apiURL(fs.Arg(0))
	if err != nil {
		return c.errorf("turning path into URL: %v", err)
	}
	q := u.Query()
	if *filter != "" {
		q.Set("filter", *filter)
	}
	if q.Get("region") == "" && *region != "" {
		q.Set("region", *region)
	}
	if q.Get("namespace") == "" && c.namespace != "" {
		q.Set("namespace", c.namespace)
	}
	u.RawQuery = q.Encode()

	token := strings.TrimSpace(c.token.value)
	if *dryrun {
		c.ui.Output(c.curl(*method, u, headers.h, *data, isSet["d"], hasBody, *verbose))
		return exitOK
	}

	tlsc, err := c.tls.config()
	if err != nil {
		return c.errorf("%v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsc
	hc := &http.Client{Transport: tr}

	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(bg, *method, u.String(), rd)
	if err != nil {
		return c.errorf("making request: %v", err)
	}
	req.Header = headers.h
	if req.Header.Get(client.TokenHeader) == "" && token != "" {
		req.Header.Set(client.TokenHeader, token)
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		req.SetBasicAuth(u.User.Username(), pass)
	}
	say("> %s %s", *method, redactURL(u))
	for _, k := range sortedKeys(req.Header) {
		for _, v := range req.Header[k] {
			if k == client.TokenHeader {
				v = "<redacted>"
			}
			say("> %s: %s", k, v)
		}
	}
	say("* Sending request and receiving response...")
	resp, err := hc.Do(req)
	if err != nil {
		return c.errorf("performing request: %v", err)
	}
	defer resp.Body.Close()
	say("< %s %s", resp.Proto, resp.Status)
	for _, k := range sortedKeys(resp.Header) {
		for _, v := range resp.Header[k] {
			say("< %s: %s", k, v)
		}
	}
	if n, err := io.Copy(c.out, resp.Body); err != nil {
		return c.errorf("reading response after %d bytes: %v", n, err)
	}
	if len(resp.Trailer) > 0 {
		say("* Trailer Headers")
		for _, k := range sortedKeys(resp.Trailer) {
			for _, v := range resp.Trailer[k] {
				say("< %s: %s", k, v)
			}
		}
	}
	if resp.StatusCode >= 400 {
		c.ui.Error(fmt.Sprintf("Error: the API answered %s", resp.Status))
		return exitError
	}
	return exitOK
}

// cmpEnv is the first of the environment variables that is set.
func cmpEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// stdinPiped reports whether standard input is data piped or redirected
// to the command rather than a terminal: Nomad's operator api sends it.
func (m *meta) stdinPiped() bool {
	if m.in != nil {
		return true
	}
	st, err := os.Stdin.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice == 0
}

// apiURL turns operator api's path argument into a URL, as Nomad's
// pathToURL: a path alone is -address's; a host without a scheme gets
// https when a TLS option is set, else -address's scheme.
func (m *meta) apiURL(path string) (*url.URL, error) {
	addr := m.address
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	conf, err := url.Parse(addr)
	if err != nil || conf.Host == "" {
		return nil, fmt.Errorf("invalid address %q", m.address)
	}
	if !strings.HasPrefix(path, "http://") && !strings.HasPrefix(path, "https://") {
		scheme := conf.Scheme
		if t := m.tls; t.caCert.value != "" || t.clientCert.value != "" || t.serverName.value != "" || t.skipVerify.value != "" {
			scheme = "https"
		}
		path = scheme + "://" + path
	}
	u, err := url.Parse(path)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		u.Host = conf.Host
	}
	return u, nil
}

// redactURL is u without its password, for -verbose.
func redactURL(u *url.URL) string { return u.Redacted() }

// curl is the curl command that sends what operator api would, as
// Nomad's -dryrun prints it: a token from the environment by its
// variable's name, one given with -token as itself.
func (c *operatorAPICommand) curl(method string, u *url.URL, headers http.Header, data string, dataSet, hasBody, verbose bool) string {
	parts := []string{"curl"}
	if verbose {
		parts = append(parts, "--verbose")
	}
	parts = append(parts, "-X "+method)
	switch {
	case dataSet && data != "-":
		parts = append(parts, "--data-binary "+shellQuote(data))
	case hasBody || (dataSet && data == "-"):
		parts = append(parts, "--data-binary @-")
	}
	t := c.tls
	if v := t.caCert.value; v != "" {
		parts = append(parts, "--cacert "+shellQuote(v))
	}
	if v := t.clientCert.value; v != "" {
		parts = append(parts, "--cert "+shellQuote(v))
	}
	if v := t.clientKey.value; v != "" {
		parts = append(parts, "--key "+shellQuote(v))
	}
	if v := t.serverName.value; v != "" {
		// curl takes the name to check from the URL: the URL names the
		// server, and --connect-to the address to reach it at.
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			host, port = u.Host, map[string]string{"https": "443", "http": "80"}[u.Scheme]
		}
		u = &url.URL{Scheme: u.Scheme, User: u.User, Host: net.JoinHostPort(v, port), Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}
		parts = append(parts, fmt.Sprintf("--connect-to %s", shellQuote(v+":"+port+":"+host+":"+port)))
	}
	if v := t.skipVerify.value; v == "1" || strings.EqualFold(v, "true") {
		parts = append(parts, "--insecure")
	}
	for _, k := range sortedKeys(headers) {
		for _, v := range headers[k] {
			parts = append(parts, "-H "+shellQuote(k+": "+v))
		}
	}
	if headers.Get(client.TokenHeader) == "" {
		switch tok := c.token; {
		case tok.value == "":
		case tok.from == "-token":
			parts = append(parts, "-H "+shellQuote(client.TokenHeader+": "+strings.TrimSpace(tok.value)))
		default:
			parts = append(parts, fmt.Sprintf(`-H "%s: ${%s}"`, client.TokenHeader, tok.from))
		}
	}
	parts = append(parts, shellQuote(u.String()))
	return strings.Join(parts, " \\\n  ")
}
