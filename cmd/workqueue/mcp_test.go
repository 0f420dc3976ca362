package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mcpserver/mcptest"
	"github.com/workqueue-dev/workqueue/store"
)

// serveMCP runs a workqueue serve on SQLite with three tokens: agent
// (permission agent), reader (read) and ops (admin). It returns the
// server's URL, the tokens by name, and the control plane's store.
func serveMCP(t *testing.T) (string, map[string]string, cp.Store) {
	t.Helper()
	dbURL := testdb.URL(t, store.KindSQLite)
	cfg := config.Default()
	cfg.Listen, cfg.Database = "127.0.0.1:0", dbURL
	tokens := map[string]string{}
	for name, perm := range map[string]string{"agent": "agent", "reader": "read", "ops": "admin"} {
		tok, hash, _ := auth.NewToken()
		tokens[name] = tok
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, config.Token{Name: name, SHA256: hash, Permissions: []string{perm}})
	}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return "http://" + m.Addr(), tokens, testdb.ControlPlaneURL(t, dbURL)
}

// stdioSession runs `workqueue mcp` with args in this process, its
// standard input and output piped to an MCP client session. When the
// test ends the session is closed, and the command must then end
// without an error.
func stdioSession(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	agentOut, commandIn := io.Pipe()
	agentIn, commandOut := io.Pipe()
	var stderr bytes.Buffer
	cmd := newRootCommand(commandOut, &stderr)
	cmd.SetIn(agentOut)
	cmd.SetArgs(append([]string{"mcp"}, args...))
	done := make(chan error, 1)
	go func() {
		done <- cmd.ExecuteContext(context.Background())
		commandOut.Close()
	}()
	t.Cleanup(func() { // after the session's close, which ends the command's input
		if err := <-done; err != nil {
			t.Errorf("workqueue mcp: %v\n%s", err, stderr.String())
		}
	})
	return mcptest.Connect(t, &mcp.IOTransport{Reader: agentIn, Writer: commandIn})
}

// /mcp of a real serve: a bearer token at the door (401 without one or
// with a bad one), the tools `workqueue mcp` serves on stdio, each call
// authorized as its REST call with the request's token (a read-only
// token may neither start a session nor submit, and nothing is written),
// and a lifecycle refusal answered as a tool error naming its reason.
func TestMCPOverHTTPOfServeAuthorizesEachCallAsItsRESTCall(t *testing.T) {
	base, tokens, work := serveMCP(t)
	for name, authorization := range map[string]string{"no token": "", "a bad token": "Bearer not-a-token"} {
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d, WWW-Authenticate %q; want 401 with a challenge", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}

	agent := mcptest.OverHTTP(t, base+"/mcp", tokens["agent"])
	overStdio := stdioSession(t, "--server", base, "--token", tokens["agent"])
	if diff := cmp.Diff(mcptest.ToolNames(t, overStdio), mcptest.ToolNames(t, agent)); diff != "" {
		t.Errorf("tools over HTTP (-stdio +http):\n%s", diff)
	}

	reader := mcptest.OverHTTP(t, base+"/mcp", tokens["reader"])
	if text := mcptest.Refused(t, reader, "start_session", map[string]any{"role": "author"}); !strings.Contains(text, "code forbidden (HTTP 403)") {
		t.Errorf("start_session with a read-only token: %q", text)
	}
	submission := map[string]any{"item_type": "mr", "forge": "gitea", "project": "team/app", "source_branch": "workqueue/a", "target_branch": "main",
		"title": "T", "file_actions": []any{map[string]any{"action": "create", "file_path": "a.txt", "content": "a\n"}}}
	if text := mcptest.Refused(t, reader, "submit_change", submission); !strings.Contains(text, "code forbidden (HTTP 403)") {
		t.Errorf("submit_change with a read-only token: %q", text)
	}
	ops, err := client.New(base, tokens["ops"])
	if err != nil {
		t.Fatal(err)
	}
	var sessions struct{ Sessions []cp.SessionView }
	if err := ops.Call(t.Context(), http.MethodGet, "/api/v1/sessions", nil, nil, &sessions); err != nil || len(sessions.Sessions) != 0 {
		t.Errorf("sessions after the refused start: %+v, %v; want none", sessions.Sessions, err)
	}
	var items api.ItemPage
	if err := ops.Call(t.Context(), http.MethodGet, "/api/v1/items", nil, nil, &items); err != nil || len(items.Items) != 0 {
		t.Errorf("items after the refused submission: %+v, %v; want none", items.Items, err)
	}

	// One session holds the only issue's lease; another's release of it
	// is refused by reason, and the lease stays with its holder.
	now := time.Now()
	if err := work.UpsertWork(t.Context(), []cp.Work{{ID: "w1", State: cp.StateOpen, Title: "the only one", UpdatedAt: now,
		WorkKey: cp.WorkKey{Forge: "gitea", Repo: "o/r", Kind: cp.KindIssue, Number: 1}}}, now); err != nil {
		t.Fatal(err)
	}
	holder := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author", "name": "holder"})
	other := mcptest.Call[cp.SessionView](t, agent, "start_session", map[string]any{"role": "author", "name": "other"})
	a := mcptest.Call[cp.Allocation](t, agent, "allocate_work", map[string]any{"session_id": holder.ID, "apply": true})
	if a.Outcome != cp.OutcomeAssigned || a.Lease == nil {
		t.Fatalf("allocate_work: %+v", a)
	}
	if text := mcptest.Refused(t, agent, "release_lease", map[string]any{"lease_id": a.Lease.ID, "session_id": other.ID}); !strings.Contains(text, "reason not_owner") {
		t.Errorf("release by a session that does not hold the lease: %q, want reason not_owner", text)
	}
	if l := mcptest.Call[cp.LeaseView](t, agent, "inspect_lease", map[string]any{"lease_id": a.Lease.ID}); l.State != cp.LeaseActive || l.SessionID != holder.ID {
		t.Errorf("the lease after the refused release: %+v", l)
	}
}

// `workqueue mcp` over stdio: the tools on a pipe, each call made on the
// server with the given token; without a token it does not start.
func TestMCPCommandServesTheToolsOnStdio(t *testing.T) {
	base, tokens, _ := serveMCP(t)
	if _, err := runCommand(t, "mcp", "--server", base, "--token", ""); err == nil || !strings.Contains(err.Error(), "no API token") {
		t.Errorf("without a token: %v", err)
	}
	cs := stdioSession(t, "--server", base, "--token", tokens["agent"])
	if names := mcptest.ToolNames(t, cs); len(names) != 26 {
		t.Errorf("tools: %v", names)
	}
	if sess := mcptest.Call[cp.SessionView](t, cs, "start_session", map[string]any{"role": "merger"}); sess.Identity != "token:agent" || sess.Role != cp.RoleMerger {
		t.Errorf("start_session over stdio: %+v", sess)
	}
	if text := mcptest.Refused(t, cs, "end_session", map[string]any{"session_id": "no-such-session"}); !strings.Contains(text, "(HTTP 404)") {
		t.Errorf("end_session of an unknown session: %q", text)
	}
}

// A client that writes its requests and closes its end of the pipe gets
// every answer (issue 29, trap 3): the built binary answers each request
// read before its input ended, a tool call on the server included, and
// then exits 0.
func TestMCPCommandAnswersEveryRequestReadBeforeItsInputEnds(t *testing.T) {
	base, tokens, _ := serveMCP(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n"
	stdout, stderr, code := runBinary(t, nil, initialize, "mcp", "--server", base, "--token", tokens["agent"])
	if code != 0 || !strings.Contains(stdout, `"id":1,"result"`) {
		t.Errorf("initialize alone: exit %d, answered %q\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = runBinary(t, nil, initialize+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n"+
		`{"jsonrpc":"2.0","id":"items","method":"tools/call","params":{"name":"list_items","arguments":{}}}`+"\n",
		"mcp", "--server", base, "--token", tokens["agent"])
	if code != 0 {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Result == nil {
			t.Errorf("not an answer: %q (%v)", line, err)
			continue
		}
		answered[fmt.Sprint(m.ID)] = true
	}
	if diff := cmp.Diff(map[string]bool{"1": true, "2": true, "items": true}, answered); diff != "" {
		t.Errorf("answered (-want +got):\n%s", diff)
	}
}
