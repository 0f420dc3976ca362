// Package mcptest holds what tests of workqueue's MCP tools share: an
// agent's MCP client session on any transport, and calls that must
// answer or must be refused.
package mcptest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect opens an MCP client session over transport, closed when the
// test ends.
func Connect(t testing.TB, transport mcp.Transport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil).Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("connect an MCP client: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// OverHTTP opens an MCP client session to the Streamable HTTP endpoint,
// every request carrying token as a bearer.
func OverHTTP(t testing.TB, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	return Connect(t, &mcp.StreamableClientTransport{Endpoint: endpoint,
		HTTPClient: &http.Client{Transport: bearer(token)}, DisableStandaloneSSE: true})
}

// bearer is an http.RoundTripper adding its token to each request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Call calls a tool that must answer, and decodes its structured answer
// into a T.
func Call[T any](t testing.TB, cs *mcp.ClientSession, tool string, args any) T {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: a tool error, want an answer: %s", tool, Text(res))
	}
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		t.Fatalf("%s: decode %s: %v", tool, b, err)
	}
	return out
}

// Refused calls a tool that must be refused with a tool error (never a
// protocol error), and returns the error's text.
func Refused(t testing.TB, cs *mcp.ClientSession, tool string, args any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error, want a tool error: %v", tool, err)
	}
	if !res.IsError {
		t.Fatalf("%s: answered %s, want a tool error", tool, Text(res))
	}
	return Text(res)
}

// Text is a result's text content.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolNames lists the tools the session is offered, sorted.
func ToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}
