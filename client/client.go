// Package client is a small Go client of workqueue's HTTP API, used by the
// workqueue command's client subcommands and by the MCP tools
// (mcpserver). It sends and reads package api's wire types, the same the
// server decodes and writes, and links nothing of the server: no store,
// engine, control plane or forge. An error answer is an *Error that
// unwraps to the application error it stands for.
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

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
)

// Client talks to one workqueue server.
type Client struct {
	BaseURL string // e.g. http://127.0.0.1:8080
	Token   string
	HTTP    *http.Client
}

// New returns a client; baseURL must be http(s)://host[:port].
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL: want http(s)://host[:port], got %q", baseURL)
	}
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 60 * time.Second}}, nil
}

// Error is an error answer of the server. It unwraps to the application
// error it stands for (api.Problem.Err): a *wq.Refusal for a refused
// submission, else a *wq.Error with the server's code, so that callers
// test wq.ErrorCode(err) as the server did.
type Error struct {
	Status  int
	Problem api.Problem
}

func (e *Error) Error() string {
	p := e.Problem
	if r := p.Refusal; r != nil {
		if r.Field != "" {
			return fmt.Sprintf("refused (HTTP %d): %s: %s: %s", e.Status, r.Field, r.Rule, r.Message)
		}
		return fmt.Sprintf("refused (HTTP %d): action %d (%q): %s: %s", e.Status, r.Index, r.Path, r.Rule, r.Message)
	}
	msg := fmt.Sprintf("%s (HTTP %d): %s", p.Code, e.Status, p.Detail)
	if p.RequestID != "" {
		msg += " (request " + p.RequestID + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Problem.Err() }

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, r)
	if err != nil {
		return err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(data, &e.Problem) != nil || e.Problem.Code == "" {
			// Not one of ours (a proxy's page): the status says what it can.
			e.Problem = api.Problem{Status: resp.StatusCode, Code: codeOfStatus(resp.StatusCode), Detail: strings.TrimSpace(string(data))}
		}
		return e
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// Submit posts a submission (a JSON object with item_type and the type's
// fields).
func (c *Client) Submit(ctx context.Context, submission []byte) (*api.Submitted, error) {
	var out api.Submitted
	if err := c.do(ctx, http.MethodPost, "/api/v1/items", submission, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one item.
func (c *Client) Get(ctx context.Context, id string) (*api.Item, error) {
	var out api.Item
	if err := c.do(ctx, http.MethodGet, "/api/v1/items/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List reads a page of items; query holds the filters.
func (c *Client) List(ctx context.Context, query url.Values) ([]*api.Item, string, error) {
	var out api.ItemPage
	path := "/api/v1/items"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, "", err
	}
	return out.Items, out.NextCursor, nil
}

// Retry retries a failed or cancelled item.
func (c *Client) Retry(ctx context.Context, id string) (*api.Item, error) {
	var out api.Item
	err := c.do(ctx, http.MethodPost, "/api/v1/items/"+url.PathEscape(id)+"/retry", nil, &out)
	return &out, err
}

// Cancel cancels an active or failed item.
func (c *Client) Cancel(ctx context.Context, id string) (*api.Item, error) {
	var out api.Item
	err := c.do(ctx, http.MethodPost, "/api/v1/items/"+url.PathEscape(id)+"/cancel", nil, &out)
	return &out, err
}

// codeOfStatus is the application code an HTTP status stands for, for an
// answer without a problem document.
func codeOfStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
		return wq.EINVALID
	case http.StatusNotFound:
		return wq.ENOTFOUND
	case http.StatusConflict:
		return wq.ECONFLICT
	case http.StatusUnauthorized:
		return wq.EUNAUTHORIZED
	case http.StatusForbidden:
		return wq.EFORBIDDEN
	case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return wq.EUNAVAILABLE
	}
	return wq.EINTERNAL
}

// Me is who the server takes the caller for (GET /me): api.Me.
type Me = api.Me

// Me asks the server who the token belongs to and what it may do.
func (c *Client) Me(ctx context.Context) (*api.Me, error) {
	var out api.Me
	if err := c.do(ctx, http.MethodGet, "/me", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
