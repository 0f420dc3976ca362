package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/example"
)

// runCLI runs a command line as main does and returns its stdout,
// stderr and exit status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestExitCodeOfEachErrorKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"no error", nil, exitOK},
		{"a failed item", itemFailedError{&api.Item{ID: "x", Phase: "failed"}}, exitFailed},
		{"a check's problems", exitError{code: exitFailed}, exitFailed},
		{"a usage mistake", usageErrorf("--output: bad"), exitUsage},
		{"a refused submission", &client.Error{Status: 422, Problem: api.Problem{Code: wq.EINVALID}}, exitFailed},
		{"a refused token", &client.Error{Status: 401, Problem: api.Problem{Code: wq.EUNAUTHORIZED}}, exitTransport},
		{"a forbidden call", &client.Error{Status: 403, Problem: api.Problem{Code: wq.EFORBIDDEN}}, exitTransport},
		{"an unreachable server", fmt.Errorf("list: %w", &url.Error{Op: "Get", URL: "http://x", Err: errors.New("connection refused")}), exitTransport},
		{"anything else", errors.New("boom"), exitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestExitCodesOfTheCommandLine(t *testing.T) {
	t.Setenv("WORKQUEUE_TOKEN", "")
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"an unknown command is a usage error", []string{"nonsense"}, exitUsage},
		{"an unknown flag is a usage error", []string{"items", "list", "--no-such-flag"}, exitUsage},
		{"a missing argument is a usage error", []string{"items", "show"}, exitUsage},
		{"an unknown output format is a usage error", []string{"items", "list", "--token", "t", "-o", "xml"}, exitUsage},
		{"no token is an auth error", []string{"items", "list"}, exitTransport},
		{"an unreachable server is a transport error", []string{"items", "list", "--token", "t", "--server", "http://127.0.0.1:1"}, exitTransport},
		{"a file that cannot be read is a failure, not a transport error",
			[]string{"items", "submit", "-f", "/nonexistent/change.yaml", "--token", "t", "--server", "http://127.0.0.1:1"}, exitFailed},
		{"a bad --claim-batch is a usage error", []string{"bench", "engine", "--claim-batch", "0"}, exitUsage},
		{"version is fine", []string{"version"}, exitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.args...)
			if code != tc.want {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.want, stderr)
			}
		})
	}
}

func TestOutputErrorsAreProblemJSONOnStderrInJSONMode(t *testing.T) {
	t.Setenv("WORKQUEUE_TOKEN", "")
	stdout, stderr, code := runCLI(t, "items", "list", "-o", "json", "--token", "t", "--server", "http://127.0.0.1:1")
	if code != exitTransport || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	var p api.Problem
	if err := json.Unmarshal([]byte(stderr), &p); err != nil || p.Code != wq.EUNAVAILABLE || p.Detail == "" {
		t.Errorf("stderr %q is not a problem document with code unavailable: %v", stderr, err)
	}
	_, stderr, _ = runCLI(t, "items", "list", "--token", "t", "--server", "http://127.0.0.1:1")
	if !strings.HasPrefix(stderr, "workqueue: ") {
		t.Errorf("in table mode stderr is %q, want a line for people", stderr)
	}
}

// startExampleAPI is a server that processes example items slowly enough
// to be cancelled.
func startExampleAPI(t *testing.T) *apiWorld {
	return startAPI(t, "", func(c *config.Config) {
		c.HandledTypes = []string{"example"}
		example.In(c).StepDelay = config.Duration(50 * time.Millisecond)
	})
}

func writeSubmission(t *testing.T, doc string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "item.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestOutputFormatsParseAndQuietPrintsIDs(t *testing.T) {
	w := startExampleAPI(t)
	srv := []string{"--server", w.base, "--token", w.tokens["submit"]}
	file := writeSubmission(t, "item_type: example\nsteps: 1\n")
	out, stderr, code := runCLI(t, append([]string{"items", "submit", "-f", file, "-q"}, srv...)...)
	id := strings.TrimSpace(out)
	if code != 0 || id == "" || strings.ContainsAny(id, " \n") {
		t.Fatalf("submit -q: exit %d, %q, %s", code, out, stderr)
	}
	for _, format := range []string{"json", "yaml", "table"} {
		out, stderr, code := runCLI(t, append([]string{"items", "list", "-o", format}, srv...)...)
		if code != 0 {
			t.Fatalf("list -o %s: exit %d: %s", format, code, stderr)
		}
		var page struct {
			Items []api.Item `json:"items" yaml:"items"`
		}
		switch format {
		case "json":
			if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Items) != 1 || page.Items[0].ID != id {
				t.Errorf("-o json: %v\n%s", err, out)
			}
		case "yaml":
			var doc struct {
				Items []map[string]any `yaml:"items"`
			}
			if err := yaml.Unmarshal([]byte(out), &doc); err != nil || len(doc.Items) != 1 || doc.Items[0]["id"] != id {
				t.Errorf("-o yaml: %v\n%s", err, out)
			}
		case "table":
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID TYPE PHASE PROJECT TITLE MR ATTEMPTS CREATED" || !strings.HasPrefix(lines[1], id) {
				t.Errorf("-o table:\n%s", out)
			}
		}
	}
	out, _, _ = runCLI(t, append([]string{"items", "list", "-q"}, srv...)...)
	if out != id+"\n" {
		t.Errorf("list -q = %q, want the id alone", out)
	}
}

func TestSubmitWaitExitsZeroWhenCompletedAndOneWhenCancelled(t *testing.T) {
	w := startExampleAPI(t)
	srv := []string{"--server", w.base, "--token", w.tokens["submit"]}
	out, stderr, code := runCLI(t, append([]string{"items", "submit", "--wait", "--interval", "100ms", "-o", "json",
		"-f", writeSubmission(t, "item_type: example\nsteps: 2\n")}, srv...)...)
	if code != exitOK {
		t.Fatalf("submit --wait of an item that completes: exit %d\n%s%s", code, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last api.Item
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Phase != "completed" {
		t.Errorf("the last line is not the completed item: %v\n%s", err, out)
	}

	out, stderr, code = runCLI(t, append([]string{"items", "submit", "-q", "-f", writeSubmission(t, "item_type: example\nsteps: 1000\n")}, srv...)...)
	if code != exitOK {
		t.Fatalf("submit: exit %d %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	if _, stderr, code := runCLI(t, "items", "cancel", id, "--server", w.base, "--token", w.tokens["retry"]); code != exitOK {
		t.Fatalf("cancel: exit %d %s", code, stderr)
	}
	_, stderr, code = runCLI(t, append([]string{"items", "watch", id, "--interval", "100ms", "-o", "json"}, srv...)...)
	var p api.Problem
	if code != exitFailed || json.Unmarshal([]byte(stderr), &p) != nil || p.Reason != "cancelled" {
		t.Errorf("watch of a cancelled item: exit %d, stderr %q; want 1 and a problem with reason cancelled", code, stderr)
	}
}

func TestWhoamiSaysWhoTheTokenIs(t *testing.T) {
	w := startExampleAPI(t)
	out, stderr, code := runCLI(t, "whoami", "--server", w.base, "--token", w.tokens["submit"], "-o", "json")
	var me client.Me
	if code != 0 || json.Unmarshal([]byte(out), &me) != nil || me.Identity != "token:submit-bot" {
		t.Fatalf("whoami: exit %d, %q %s", code, out, stderr)
	}
	out, _, _ = runCLI(t, "whoami", "--server", w.base, "--token", w.tokens["submit"])
	if !strings.HasPrefix(out, "token:submit-bot (") || !strings.Contains(out, "submit") {
		t.Errorf("whoami table:\n%s", out)
	}
	_, _, code = runCLI(t, "whoami", "--server", w.base, "--token", "not-a-token")
	if code != exitTransport {
		t.Errorf("whoami with a refused token: exit %d, want %d", code, exitTransport)
	}
}

func TestOutputOfLocalCommandsParsesInEveryFormat(t *testing.T) {
	for _, args := range [][]string{
		{"version"},
		{"token", "create", "ci-bot", "--permissions", "submit,read"},
	} {
		out, stderr, code := runCLI(t, append(args, "-o", "json")...)
		var doc map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc) == 0 {
			t.Errorf("%v -o json: exit %d, %q %s", args, code, out, stderr)
		}
		out, _, code = runCLI(t, append(args, "-o", "yaml")...)
		var ydoc map[string]any
		if code != 0 || yaml.Unmarshal([]byte(out), &ydoc) != nil || len(ydoc) != len(doc) {
			t.Errorf("%v -o yaml: exit %d, %q", args, code, out)
		}
		if _, _, code := runCLI(t, append(args, "-o", "xml")...); code != exitUsage {
			t.Errorf("%v -o xml: exit %d, want %d", args, code, exitUsage)
		}
	}
	out, _, _ := runCLI(t, "token", "create", "ci-bot", "-o", "json")
	var tok struct {
		Token string `json:"token"`
		Entry struct {
			SHA256 string `json:"sha256"`
		} `json:"entry"`
	}
	if json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" || len(tok.Entry.SHA256) != 64 {
		t.Errorf("token create -o json: %s", out)
	}
}

func TestSubmitFileOfTheWrongShapeIsSaidInTheFilesTerms(t *testing.T) {
	file := writeSubmission(t, "- item_type: example\n")
	_, stderr, code := runCLI(t, "items", "submit", "-f", file, "--token", "t", "--server", "http://127.0.0.1:1")
	if code != exitFailed || !strings.Contains(stderr, "want an object of fields (item_type: …), got a list") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	for _, goWords := range []string{"unmarshal", "!!", "map[string]"} {
		if strings.Contains(stderr, goWords) {
			t.Errorf("the error names Go's %q: %s", goWords, stderr)
		}
	}
}

func TestWatchRetriesAServerThatIsRestarting(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(api.Item{ID: "it-1", ItemType: "example", Phase: "active"})
		case 2: // the service draining before its restart
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3: // a proxy while the service is down
			w.WriteHeader(http.StatusBadGateway)
		default:
			json.NewEncoder(w).Encode(api.Item{ID: "it-1", ItemType: "example", Phase: "completed"})
		}
	}))
	defer srv.Close()
	out, stderr, code := runCLI(t, "items", "watch", "it-1", "--interval", "100ms", "--server", srv.URL, "--token", "t")
	if code != exitOK || calls.Load() != 4 || !strings.Contains(out, "completed") {
		t.Errorf("exit %d after %d calls:\n%s%s", code, calls.Load(), out, stderr)
	}
	if strings.Count(stderr, "retrying in") != 2 {
		t.Errorf("stderr should say each retry:\n%s", stderr)
	}

	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(api.Problem{Status: 401, Code: wq.EUNAUTHORIZED, Detail: "bad token"})
	}))
	defer refused.Close()
	if _, _, code := runCLI(t, "items", "watch", "it-1", "--interval", "100ms", "--server", refused.URL, "--token", "t"); code != exitTransport {
		t.Errorf("a refused token: exit %d, want %d without retrying", code, exitTransport)
	}
}

func TestSubmitThenCompleteItemIDsAndPhases(t *testing.T) {
	w := startExampleAPI(t)
	file := writeSubmission(t, "item_type: example\nsteps: 1000\n")
	out, stderr, code := runCLI(t, "items", "submit", "-q", "-f", file, "--server", w.base, "--token", w.tokens["submit"])
	id := strings.TrimSpace(out)
	if code != 0 {
		t.Fatalf("submit: %d %s", code, stderr)
	}
	out, _, _ = runCLI(t, "__complete", "items", "cancel", "--server", w.base, "--token", w.tokens["read"], "")
	if !strings.Contains(out, id+"\texample active") {
		t.Errorf("completion of cancel's ID lacks the active item %s:\n%s", id, out)
	}
	out, _, _ = runCLI(t, "__complete", "items", "retry", "--server", w.base, "--token", w.tokens["read"], "")
	if strings.Contains(out, id) {
		t.Errorf("retry completes an active item:\n%s", out)
	}
	out, _, _ = runCLI(t, "__complete", "items", "list", "--phase", "")
	if !strings.Contains(out, "cancelled\n") || !strings.Contains(out, "active\n") {
		t.Errorf("completion of --phase:\n%s", out)
	}
}

func TestExitUsageSaysABadFlagValueWithoutGoNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"items", "list", "--limit", "many"}, `--limit: want a whole number, got "many"`},
		{[]string{"items", "watch", "x", "--interval", "5"}, `--interval: want a duration such as 30s or 5m, got "5"`},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "strconv") || strings.Contains(stderr, "time.") {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

func TestOutputOfItemsListFiltersByProjectAndTitleGlobs(t *testing.T) {
	w := startAPI(t, "", func(c *config.Config) { c.HandledTypes = nil }) // they only queue
	owner, _, _ := strings.Cut(w.repo, "/")
	ids := map[string]string{}
	for i, title := range []string{"Bump deps", "Fix a typo", "Bump Go"} {
		file := writeSubmission(t, fmt.Sprintf(`item_type: mr
forge: gitea
project: %s
source_branch: workqueue/glob-%d
target_branch: main
title: %s
file_actions: [{action: create, file_path: f%d.txt, content: "x\n"}]
`, w.repo, i, title, i))
		out, stderr, code := runCLI(t, "items", "submit", "-q", "-f", file, "--server", w.base, "--token", w.tokens["submit"])
		if code != 0 {
			t.Fatalf("submit %q: %d %s", title, code, stderr)
		}
		ids[title] = strings.TrimSpace(out)
	}
	list := func(args ...string) []string {
		t.Helper()
		out, stderr, code := runCLI(t, append([]string{"items", "list", "-q", "--server", w.base, "--token", w.tokens["read"]}, args...)...)
		if code != 0 {
			t.Fatalf("list %v: %d %s", args, code, stderr)
		}
		return strings.Fields(out)
	}
	if got := list("--title", "Bump*"); !slices.Equal(got, []string{ids["Bump Go"], ids["Bump deps"]}) {
		t.Errorf("--title 'Bump*' = %v, want the two bumps, newest first", got)
	}
	if got := list("--project", owner+"/*"); len(got) != 3 {
		t.Errorf("--project '%s/*' = %v, want all three", owner, got)
	}
	out, _, _ := runCLI(t, "items", "list", "--server", w.base, "--token", w.tokens["read"])
	if !strings.Contains(out, "gitea:"+w.repo) || !strings.Contains(out, "Fix a typo") {
		t.Errorf("the table lacks the project or the title:\n%s", out)
	}
	if got := list("--project", "nobody/**"); len(got) != 0 {
		t.Errorf("--project 'nobody/**' = %v, want none", got)
	}
	if got := list("--project", owner+"/*", "--title", "*typo*"); !slices.Equal(got, []string{ids["Fix a typo"]}) {
		t.Errorf("both globs = %v", got)
	}
	out, _, _ = runCLI(t, "items", "list", "-o", "json", "--limit", "1", "--title", "Bump*", "--server", w.base, "--token", w.tokens["read"])
	var page struct {
		Items      []api.Item `json:"items"`
		NextCursor string     `json:"next_cursor"`
	}
	if json.Unmarshal([]byte(out), &page) != nil || len(page.Items) != 1 || page.NextCursor != ids["Bump Go"] {
		t.Fatalf("--limit 1: %s", out)
	}
	if got := list("--title", "Bump*", "--cursor", page.NextCursor); !slices.Equal(got, []string{ids["Bump deps"]}) {
		t.Errorf("the next page = %v, want the older bump", got)
	}
}
