package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/api"
)

// stoppedServer is the URL of a loopback port nothing listens on.
func stoppedServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// A client command against a server that is not running says what
// happened and what to check, in words, with exit status 3; Go's
// "dial tcp … connection refused" comes only with --verbose (issue 55).
func TestAStoppedServerIsReportedInWordsWithWhatToCheck(t *testing.T) {
	t.Setenv("WORKQUEUE_URL", "")
	t.Setenv("WORKQUEUE_TOKEN", "")
	server := stoppedServer(t)
	for _, args := range [][]string{
		{"whoami"}, {"items", "list"}, {"items", "show", "01abc"}, {"sessions", "list"}, {"leases", "list"}, {"work", "list"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(t, append(args, "--server", server, "--token", "t")...)
			headline, _, _ := strings.Cut(stderr, "\n")
			if code != exitTransport || headline != "workqueue: cannot reach the workqueue server at "+server+": the connection was refused (nothing listens there)" {
				t.Errorf("exit %d, headline %q, want %d and what happened in words:\n%s", code, headline, exitTransport, stderr)
			}
			for _, want := range []string{"check: is 'workqueue serve' running there", "--server", "WORKQUEUE_URL", "--verbose"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "dial tcp") {
				t.Errorf("Go's error chain without --verbose:\n%s", stderr)
			}

			_, stderr, code = runCLI(t, append(args, "--server", server, "--token", "t", "--verbose")...)
			headline, rest, _ := strings.Cut(stderr, "\n")
			if code != exitTransport || strings.Contains(headline, "dial tcp") || !strings.Contains(rest, "detail: ") || !strings.Contains(rest, "connection refused") {
				t.Errorf("with --verbose: exit %d, want the chain after the headline as its detail:\n%s", code, stderr)
			}
		})
	}
}

// With -o json the problem document's detail is the same words.
func TestAStoppedServerIsAProblemDocumentInWordsWithJSONOutput(t *testing.T) {
	server := stoppedServer(t)
	_, stderr, code := runCLI(t, "items", "list", "-o", "json", "--server", server, "--token", "t")
	var p api.Problem
	if err := json.Unmarshal([]byte(stderr), &p); err != nil || code != exitTransport {
		t.Fatalf("exit %d, stderr not one problem document (%v):\n%s", code, err, stderr)
	}
	if !strings.HasPrefix(p.Detail, "cannot reach the workqueue server at "+server) || strings.Contains(p.Detail, "dial tcp") {
		t.Errorf("detail %q, want words", p.Detail)
	}
}

// A host name that does not resolve is said as such.
func TestAServerWhoseNameDoesNotResolveIsReportedInWords(t *testing.T) {
	_, stderr, code := runCLI(t, "whoami", "--server", "http://workqueue.invalid:8080", "--token", "t")
	headline, _, _ := strings.Cut(stderr, "\n")
	if code != exitTransport || !strings.HasPrefix(headline, "workqueue: cannot reach the workqueue server at http://workqueue.invalid:8080: the host name \"workqueue.invalid\"") {
		t.Errorf("exit %d, headline %q:\n%s", code, headline, stderr)
	}
}

// items watch of an item that failed says its error once: the last
// progress line gives the phase, the error line what went wrong (issue
// 55: a missing target branch was printed twice).
func TestWatchSaysAFailedItemsErrorOnce(t *testing.T) {
	const why = `ensure_mr: the target branch "nope" does not exist on owner/repo`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(api.Item{ID: "it-1", ItemType: "mr", Phase: "failed", Attempts: 1, Error: why})
	}))
	defer srv.Close()
	for _, args := range [][]string{{"items", "watch", "it-1"}, {"items", "show", "it-1"}} {
		out, stderr, _ := runCLI(t, append(args, "--server", srv.URL, "--token", "t")...)
		if n := strings.Count(out+stderr, `the target branch "nope" does not exist on owner/repo`); n != 1 {
			t.Errorf("%s says the error %d times, want once:\n%s%s", args, n, out, stderr)
		}
		if strings.Contains(out+stderr, `\"nope\"`) {
			t.Errorf("%s quotes the error inside a string:\n%s%s", args, out, stderr)
		}
	}
}

// workqueue mcp started on a terminal says on stderr what it is and how
// an MCP client is configured to use it, and still serves: stdout has
// only MCP's answers.
func TestMCPOnATerminalSaysWhatItIsAndStillServes(t *testing.T) {
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"tty","version":"1"}}}` + "\n"
	runMCP := func(terminal bool) (stdout, stderr string) {
		saved := stdinIsTerminal
		stdinIsTerminal = func(io.Reader) bool { return terminal }
		defer func() { stdinIsTerminal = saved }()
		var out, errOut strings.Builder
		root := newRootCommand(&out, &errOut)
		root.SetIn(strings.NewReader(initialize))
		root.SetArgs([]string{"mcp", "--server", "http://127.0.0.1:1", "--token", "t"})
		if _, err := root.ExecuteContextC(context.Background()); err != nil {
			t.Fatalf("mcp: %v\n%s", err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	stdout, stderr := runMCP(true)
	for _, want := range []string{"MCP server for an AI agent", "standard input and output", `"mcpServers"`, `"args": ["mcp"]`, "WORKQUEUE_TOKEN", "http://127.0.0.1:1/mcp"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the notice does not say %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, `"id":1`) || !strings.Contains(stdout, `"result"`) || strings.Contains(stdout, "mcpServers") {
		t.Errorf("stdout is not only MCP's answer to initialize:\n%s", stdout)
	}
	if _, stderr := runMCP(false); stderr != "" {
		t.Errorf("not on a terminal, mcp wrote to stderr:\n%s", stderr)
	}
}

// An empty list says why it is empty and what to do next, in tables;
// -o json stays the API's empty list.
func TestEmptyListsSayWhyAndWhatToDoNext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		key := strings.TrimPrefix(r.URL.Path, "/api/v1/")
		json.NewEncoder(w).Encode(map[string]any{key: []any{}})
	}))
	defer srv.Close()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"items", "list"}, []string{"no items: nothing has been submitted", "next: submit a change with 'workqueue items submit'"}},
		{[]string{"items", "list", "--phase", "failed"}, []string{"no items match these filters", "next: 'workqueue items list' lists every item"}},
		{[]string{"sessions", "list"}, []string{"no sessions", "next: an agent starts one with 'workqueue sessions register --role author'"}},
		{[]string{"leases", "list"}, []string{"no active leases", "--all", "next: a session takes work with 'workqueue allocate --session ID --apply'"}},
		{[]string{"leases", "list", "--session", "s1"}, []string{"no leases match --session or --work"}},
		{[]string{"work", "list"}, []string{"no work: the inventory is empty", "next: configure control_plane.repos"}},
		{[]string{"work", "list", "--repo", "o/r"}, []string{"no work matches these filters"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, stderr, code := runCLI(t, append(tc.args, "--server", srv.URL, "--token", "t")...)
			if code != exitOK {
				t.Fatalf("exit %d:\n%s%s", code, out, stderr)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("the empty list does not say %q:\n%s", want, out)
				}
			}
			out, _, _ = runCLI(t, append(tc.args, "-o", "json", "--server", srv.URL, "--token", "t")...)
			if strings.Contains(out, "next:") || !json.Valid([]byte(out)) {
				t.Errorf("-o json is not the API's JSON:\n%s", out)
			}
		})
	}
}
