// Package client is the CLI's HTTP client for the Drover API: JSON in and
// out, Nomad's index and token headers, and API errors as values.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client talks to one agent.
type Client struct {
	base string
	http *http.Client
	// Namespace is added to every request as ?namespace= when set.
	Namespace string
	// Token is the secret ID of the ACL token every request carries, as
	// Nomad's X-Nomad-Token header, when set.
	Token string
}

// TokenHeader is the header that carries the ACL token's secret ID.
const TokenHeader = "X-Nomad-Token"

// New returns a client for the agent at address (http://host:port,
// https://host:port, or host:port for http). tlsc, if not nil, configures
// its HTTPS connections: the CA to trust, a certificate to show.
func New(address string, tlsc *tls.Config) (*Client, error) {
	if !strings.Contains(address, "://") {
		address = "http://" + address
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("invalid address %q", address)
	}
	c := &http.Client{Timeout: 11 * time.Minute}
	if tlsc != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsc
		c.Transport = tr
	}
	return &Client{base: strings.TrimRight(u.String(), "/"), http: c}, nil
}

// Address is the agent's base URL.
func (c *Client) Address() string { return c.base }

// APIError is an error the API answered with.
type APIError struct {
	Status  int
	Message string
	// Hint says what the user may do about it, if anything (a 403 to a
	// request that carried no token: give one).
	Hint string
	// Body is the answer's body (its first MiB), for the errors that carry
	// data: a variable's check-and-set conflict (409) holds the variable
	// as it is.
	Body []byte
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("API error (%d): %s", e.Status, e.Message)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// NoTokenHint is the hint a 403 gets when the request carried no token.
const NoTokenHint = "no ACL token was given: set -token, or NOMAD_TOKEN or DROVER_TOKEN in the environment"

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// Meta is what the API says about an answer.
type Meta struct {
	// Index is the X-Nomad-Index header: the state index the answer
	// reflects, for a blocking query that waits for the next change.
	Index uint64
	// NextToken is the X-Nomad-NextToken header: the next page's token.
	NextToken string
	// Server is the X-Drover-Server header: the name of the server that
	// answered (a follower names the leader it forwarded the request to).
	Server string
}

// ServerHeader is the header that names the server that answered.
const ServerHeader = "X-Drover-Server"

// Do sends a request with an optional JSON body and decodes the JSON answer
// into out (unless out is nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) (*Meta, error) {
	meta, raw, err := c.do(ctx, method, path, in)
	if err != nil {
		return meta, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return meta, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return meta, nil
}

// GetRaw is a GET whose answer is returned as is (not JSON).
func (c *Client) GetRaw(ctx context.Context, path string) ([]byte, error) {
	_, raw, err := c.do(ctx, http.MethodGet, path, nil)
	return raw, err
}

func (c *Client) do(ctx context.Context, method, path string, in any) (*Meta, []byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, method, path, body, in != nil)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	meta := &Meta{NextToken: resp.Header.Get("X-Nomad-NextToken"), Server: resp.Header.Get(ServerHeader)}
	fmt.Sscan(resp.Header.Get("X-Nomad-Index"), &meta.Index)
	return meta, raw, nil
}

// Stream sends body as is and returns the answer's body to read as it
// comes (operator snapshots); the caller closes it.
func (c *Client) Stream(ctx context.Context, method, path string, body io.Reader) (io.ReadCloser, error) {
	resp, err := c.send(ctx, method, path, body, false)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// send sends a request; an answer other than 2xx becomes an *APIError.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader, isJSON bool) (*http.Response, error) {
	if c.Namespace != "" && !strings.Contains(path, "namespace=") {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "namespace=" + url.QueryEscape(c.Namespace)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if isJSON {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set(TokenHeader, c.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the Drover agent at %s: %w%s", c.base, err, tlsHint(err))
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		apiErr := &APIError{Status: resp.StatusCode, Message: msg, Body: raw}
		if resp.StatusCode == http.StatusForbidden && c.Token == "" {
			apiErr.Hint = NoTokenHint
		}
		return nil, apiErr
	}
	return resp, nil
}

// Get is Do with GET.
func (c *Client) Get(ctx context.Context, path string, out any) (*Meta, error) {
	return c.Do(ctx, http.MethodGet, path, nil, out)
}

// Put is Do with PUT.
func (c *Client) Put(ctx context.Context, path string, in, out any) (*Meta, error) {
	return c.Do(ctx, http.MethodPut, path, in, out)
}

// Post is Do with POST.
func (c *Client) Post(ctx context.Context, path string, in, out any) (*Meta, error) {
	return c.Do(ctx, http.MethodPost, path, in, out)
}

// Delete is Do with DELETE.
func (c *Client) Delete(ctx context.Context, path string, out any) (*Meta, error) {
	return c.Do(ctx, http.MethodDelete, path, nil, out)
}

// ErrAmbiguous is returned by Resolve when a prefix matches several IDs.
var ErrAmbiguous = errors.New("prefix matches more than one object")

// Resolve finds the one object whose ID starts with prefix: list is the
// listing path (/v1/evaluations, /v1/nodes, ...) and ids extracts the IDs
// of a listing. An exact match wins; several matches are ErrAmbiguous,
// with the matches listed.
func (c *Client) Resolve(ctx context.Context, list, prefix string, decode func([]byte) ([]string, error)) (string, error) {
	var raw json.RawMessage
	if _, err := c.Get(ctx, list+"?prefix="+url.QueryEscape(prefix), &raw); err != nil {
		return "", err
	}
	ids, err := decode(raw)
	if err != nil {
		return "", err
	}
	switch {
	case len(ids) == 0:
		return "", &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no object with ID prefix %q", prefix)}
	case len(ids) == 1:
		return ids[0], nil
	}
	for _, id := range ids {
		if id == prefix {
			return id, nil
		}
	}
	return "", fmt.Errorf("%w: %q matches %s", ErrAmbiguous, prefix, strings.Join(ids, ", "))
}

// tlsHint says which of the CLI's TLS options fits a failed handshake.
func tlsHint(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
	)
	switch {
	case errors.As(err, &unknownCA):
		return " (-ca-cert names the CA that signed the agent's certificate)"
	case errors.As(err, &hostname):
		return " (-tls-server-name names a name the agent's certificate is valid for)"
	}
	return ""
}
