package main

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/drover-sched/drover/cmd/drover/internal/client"
	"github.com/hashicorp/cap/oidc"
	"github.com/hashicorp/cap/util"
	"github.com/hashicorp/nomad/api"
)

// drover login, as Nomad's (command/login.go): trades a sign-in with an
// auth method for an ACL token. A JWT method takes a JWT the user has
// (-login-token); an OIDC method sends the user's browser to the
// provider, which sends it back with a code to a server the command runs
// on this machine for the time of the login.

const (
	defaultOIDCCallbackAddr = "localhost:4649"
	// oidcCallbackPath is where the provider sends the browser back to,
	// as Nomad's: the auth method's AllowedRedirectURIs must hold
	// http://<-oidc-callback-addr>/oidc/callback.
	oidcCallbackPath = "/oidc/callback"
	// defaultOIDCTimeout is how long the command waits for the browser to
	// come back: time to type a password and pass a second factor.
	defaultOIDCTimeout = 5 * time.Minute
)

type loginCommand struct{ *meta }

func (c *loginCommand) Synopsis() string { return "Login to Drover using an auth method" }

func (c *loginCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover login [options]

  Logs in with an ACL auth method and prints the ACL token the login
  makes, its secret ID included: export it as NOMAD_TOKEN or pass it with
  -token to the other commands. The token holds what the method's binding
  rules grant the claims of the login, and expires after the method's
  MaxTokenTTL.

  With a JWT method, the JWT given with -login-token is traded for the
  token (PUT /v1/acl/login).

  With an OIDC method, the command serves the provider's redirect on
  -oidc-callback-addr, prints the URL of the provider's sign-in page to
  standard error and, when a person is at a terminal with a desktop,
  opens it in a browser. Once the sign-in sends the browser back, the
  login completes (PUT /v1/acl/oidc/auth-url, then complete-auth). The
  method's AllowedRedirectURIs must hold
  http://<oidc-callback-addr>/oidc/callback.
` + noNamespaceOptions + `

Login options:

  -method=NAME     The auth method to log in with (default: the one marked
                   default, as acl auth-method list shows).
  -type=TYPE       OIDC or JWT: how to log in (default: the method's type).
  -login-token=JWT The JWT to trade for a token (JWT methods).
  -oidc-callback-addr=ADDR
                   Where to serve the OIDC provider's redirect, as
                   host:port (default: localhost:4649).
  -oidc-timeout=DURATION
                   How long to wait for the browser to come back from the
                   OIDC provider (default: 5m). Ctrl-C stops waiting.` + formatOptions)
}

func (c *loginCommand) Run(args []string) int {
	fs := c.flags("login", true)
	methodName := fs.String("method", "", "")
	typ := fs.String("type", "", "")
	loginToken := fs.String("login-token", "", "")
	callbackAddr := fs.String("oidc-callback-addr", defaultOIDCCallbackAddr, "")
	timeout := fs.Duration("oidc-timeout", defaultOIDCTimeout, "")
	tmpl := fs.String("t", "", "")
	cl, ok := c.noArgsNoNamespace(fs, args, c.Help())
	if !ok || !c.checkJSONOrTemplate(*tmpl) {
		return exitError
	}
	loginType := strings.ToUpper(*typ)
	if loginType != "" && loginType != api.ACLAuthMethodTypeOIDC && loginType != api.ACLAuthMethodTypeJWT {
		return c.errorf("-type %q is neither OIDC nor JWT", *typ)
	}
	if *timeout <= 0 {
		return c.errorf("-oidc-timeout %s is not a positive duration", *timeout)
	}
	// The list is open, as Nomad's: it names the default method and each
	// method's type to a user who has no token yet.
	var methods []*api.ACLAuthMethodListStub
	if _, err := cl.Get(bg, "/v1/acl/auth-methods", &methods); err != nil {
		return c.errorf("listing ACL auth methods: %v", err)
	}
	i := slices.IndexFunc(methods, func(m *api.ACLAuthMethodListStub) bool {
		if *methodName == "" {
			return m.Default
		}
		return m.Name == *methodName
	})
	switch {
	case i < 0 && *methodName == "":
		return c.errorf("Must specify an auth method name with -method, no default found")
	case i < 0:
		return c.errorf("ACL auth method %q not found", *methodName)
	}
	method := methods[i]
	loginType = cmp.Or(loginType, method.Type)

	ctx, stop := signal.NotifyContext(bg, os.Interrupt)
	defer stop()
	var (
		token *api.ACLToken
		err   error
	)
	switch loginType {
	case api.ACLAuthMethodTypeJWT:
		if *loginToken == "" {
			return c.errorf("A JWT login needs the JWT: give it with -login-token")
		}
		token, err = loginJWT(ctx, cl, method.Name, *loginToken)
	case api.ACLAuthMethodTypeOIDC:
		token, err = c.loginOIDC(ctx, cl, method.Name, *callbackAddr, *timeout)
	default:
		return c.errorf("ACL auth method %q is of type %q, which drover login does not know", method.Name, method.Type)
	}
	if err != nil {
		return c.errorf("logging in with ACL auth method %q: %v", method.Name, err)
	}
	if code, printed := c.printJSONOrTemplate(*tmpl, token); printed {
		return code
	}
	c.ui.Output(fmt.Sprintf("Successfully logged in via %s and %s\n", loginType, method.Name))
	c.printACLToken(token)
	return exitOK
}

// loginJWT trades a JWT for a token with the JWT auth method.
func loginJWT(ctx context.Context, cl *client.Client, method, jwt string) (*api.ACLToken, error) {
	var token api.ACLToken
	if _, err := cl.Put(ctx, "/v1/acl/login", &api.ACLLoginRequest{AuthMethodName: method, LoginToken: jwt}, &token); err != nil {
		return nil, err
	}
	return &token, nil
}

// loginOIDC logs in with the OIDC auth method: it serves the callback on
// addr, asks the agent for the provider's URL, has the user visit it and
// waits for the browser to come back with a state and a code (for at most
// timeout, or until ctx ends: Ctrl-C), which complete the login.
func (c *loginCommand) loginOIDC(ctx context.Context, cl *client.Client, method, addr string, timeout time.Duration) (*api.ACLToken, error) {
	// The client's nonce ties the provider's ID token to this command: a
	// code another client's login obtained does not complete this one.
	nonce, err := oidc.NewID()
	if err != nil {
		return nil, err
	}
	// Listening first refuses a busy address before the user signs in;
	// connections wait in the backlog until the server serves below.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving the OIDC callback: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + addr + oidcCallbackPath
	var start api.ACLOIDCAuthURLResponse
	if _, err := cl.Put(ctx, "/v1/acl/oidc/auth-url", &api.ACLOIDCAuthURLRequest{AuthMethodName: method,
		RedirectURI: redirect, ClientNonce: nonce}, &start); err != nil {
		return nil, err
	}
	authURL, err := url.Parse(start.AuthURL)
	if err != nil {
		return nil, fmt.Errorf("the agent's OIDC auth URL %q: %w", start.AuthURL, err)
	}
	state := authURL.Query().Get("state")
	if state == "" {
		// Without it the callback could not tell the provider's redirect
		// from any request carrying a code.
		return nil, fmt.Errorf("the agent's OIDC auth URL %q has no state", start.AuthURL)
	}
	back := make(chan oidcCallback, 1)
	mux := http.NewServeMux()
	mux.Handle("GET "+oidcCallbackPath, &oidcCallbackHandler{state: state, back: back})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once the login is over
	defer func() {
		// Shutdown, not Close: the callback's page is still on its way to
		// the browser when the wait ends.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()

	c.ui.Warn(fmt.Sprintf("Complete the login at the OIDC provider's page:\n\n    %s\n\n"+
		"Waiting for it to send the browser back to %s (Ctrl-C stops) ...", start.AuthURL, redirect))
	if c.desktopAtTerminal() {
		if err := util.OpenURL(start.AuthURL); err != nil {
			c.ui.Warn(fmt.Sprintf("Could not open a browser (%v): visit the URL above.\n", err))
		}
	}

	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cb oidcCallback
	select {
	case cb = <-back:
	case <-wait.Done():
		if ctx.Err() != nil {
			return nil, errors.New("interrupted before the OIDC provider sent the browser back")
		}
		return nil, fmt.Errorf("the OIDC provider did not send the browser back to %s within %s", redirect, timeout)
	}
	if cb.err != nil {
		return nil, cb.err
	}
	var token api.ACLToken
	if _, err := cl.Put(ctx, "/v1/acl/oidc/complete-auth", &api.ACLOIDCCompleteAuthRequest{AuthMethodName: method,
		ClientNonce: nonce, State: cb.state, Code: cb.code, RedirectURI: redirect}, &token); err != nil {
		return nil, err
	}
	return &token, nil
}

// desktopAtTerminal reports whether the login may open a browser: a
// person reads standard output and, but on macOS and Windows, a graphical
// session runs (without one, xdg-open falls back to a text browser that
// would fight the command for the terminal).
func (m *meta) desktopAtTerminal() bool {
	if !m.outIsTerminal() {
		return false
	}
	switch runtime.GOOS {
	case "darwin", "windows":
		return true
	}
	return os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}

// oidcCallback is what the provider sent the browser back with.
type oidcCallback struct {
	state, code string
	err         error // the provider's error response
}

// oidcCallbackHandler serves the provider's redirect: the first request
// that carries the state of the login's auth URL ends the wait, with its
// code or the provider's error. A request with another state (another
// login's, or a page that is not the provider) is refused and the wait
// goes on.
type oidcCallbackHandler struct {
	state string // the auth URL's, never ""
	back  chan<- oidcCallback
}

func (h *oidcCallbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(h.state)) != 1 {
		http.Error(w, "This is not the redirect of the login drover login waits for.", http.StatusBadRequest)
		return
	}
	cb := oidcCallback{state: q.Get("state"), code: q.Get("code")}
	page := "Signed in via your OIDC provider. You can close this window: drover login completes the login in the terminal.\n"
	if e := q.Get("error"); e != "" {
		reason := strings.TrimSpace(e + " " + q.Get("error_description"))
		cb.err = fmt.Errorf("the OIDC provider refused the sign-in: %s", reason)
		page = "The OIDC provider refused the sign-in: " + reason + "\n"
	}
	select {
	case h.back <- cb:
	default: // the wait has its answer already
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, page)
}
