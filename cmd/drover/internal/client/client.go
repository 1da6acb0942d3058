// Package client is the CLI's HTTP client for the Drover API.
package client

import (
	"bytes"
	"context"
	"encoding/json"
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
}

// New returns a client for the agent at address (http://host:port).
func New(address string) (*Client, error) {
	if !strings.Contains(address, "://") {
		address = "http://" + address
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("invalid address %q", address)
	}
	return &Client{base: strings.TrimRight(u.String(), "/"), http: &http.Client{Timeout: 6 * time.Minute}}, nil
}

// APIError is an error the API answered with.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("API error (%d): %s", e.Status, e.Message) }

// Do sends a request with an optional JSON body and decodes the JSON answer
// into out (unless out is nil). It returns the X-Nomad-Index header.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) (uint64, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot reach the Drover agent at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return 0, &APIError{Status: resp.StatusCode, Message: msg}
	}
	var index uint64
	fmt.Sscan(resp.Header.Get("X-Nomad-Index"), &index)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return index, fmt.Errorf("decode %s %s: %w", method, path, err)
		}
	}
	return index, nil
}

// Get is Do with GET.
func (c *Client) Get(ctx context.Context, path string, out any) (uint64, error) {
	return c.Do(ctx, http.MethodGet, path, nil, out)
}

// Put is Do with PUT.
func (c *Client) Put(ctx context.Context, path string, in, out any) (uint64, error) {
	return c.Do(ctx, http.MethodPut, path, in, out)
}

// Delete is Do with DELETE.
func (c *Client) Delete(ctx context.Context, path string, out any) (uint64, error) {
	return c.Do(ctx, http.MethodDelete, path, nil, out)
}
