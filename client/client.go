// Package client is a small Go client of workqueue's HTTP API, used by the
// workqueue command's client subcommands.
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

	"github.com/workqueue-dev/workqueue/service"
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

// Problem is an error the server answered with.
type Problem struct {
	Status  int            `json:"status"`
	Code    string         `json:"code"`
	Detail  string         `json:"detail"`
	Refusal map[string]any `json:"refusal,omitempty"`
}

func (p *Problem) Error() string {
	if p.Refusal != nil && p.Refusal["field"] != nil {
		return fmt.Sprintf("refused (HTTP %d): %v: %v: %v", p.Status, p.Refusal["field"], p.Refusal["rule"], p.Refusal["message"])
	}
	if p.Refusal != nil {
		return fmt.Sprintf("refused (HTTP %d): action %v (%q): %v", p.Status, p.Refusal["index"], p.Refusal["path"], p.Refusal["rule"])
	}
	return fmt.Sprintf("%s (HTTP %d): %s", p.Code, p.Status, p.Detail)
}

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
		p := &Problem{Status: resp.StatusCode}
		if json.Unmarshal(data, p) != nil || p.Code == "" {
			p.Code, p.Detail = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
		}
		return p
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// SubmitResult is an item with the submission's result.
type SubmitResult struct {
	Result string `json:"result"`
	service.Item
}

// Submit posts a submission (a JSON object with item_type and the type's
// fields).
func (c *Client) Submit(ctx context.Context, submission []byte) (*SubmitResult, error) {
	var out SubmitResult
	if err := c.do(ctx, http.MethodPost, "/api/v1/items", submission, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get reads one item.
func (c *Client) Get(ctx context.Context, id string) (*service.Item, error) {
	var out service.Item
	if err := c.do(ctx, http.MethodGet, "/api/v1/items/"+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List reads a page of items; query holds the filters.
func (c *Client) List(ctx context.Context, query url.Values) ([]*service.Item, string, error) {
	var out struct {
		Items      []*service.Item `json:"items"`
		NextCursor string          `json:"next_cursor"`
	}
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
func (c *Client) Retry(ctx context.Context, id string) (*service.Item, error) {
	var out service.Item
	err := c.do(ctx, http.MethodPost, "/api/v1/items/"+url.PathEscape(id)+"/retry", nil, &out)
	return &out, err
}

// Cancel cancels an active or failed item.
func (c *Client) Cancel(ctx context.Context, id string) (*service.Item, error) {
	var out service.Item
	err := c.do(ctx, http.MethodPost, "/api/v1/items/"+url.PathEscape(id)+"/cancel", nil, &out)
	return &out, err
}
