package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge/forgetest/relay"
	"github.com/workqueue-dev/workqueue/forge/gitlab/gitlabtest"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// withRelay is the shipped world plus the test-only kind, added by one
// Register line: serve, the configuration, the webhook receiver and the
// mr type name no kind.
func withRelay() *world {
	w := assemble()
	w.kinds.Register(relay.Plugin)
	return w
}

// A kind of forge added by its package and one registration line is
// configured, opened, written to and heard from like a shipped one: a
// change submitted for a relay forge becomes a merge request there, and
// the relay's own webhook of its merge completes the item at once (sweep
// and reconcile are an hour apart, so only the delivery can).
func TestAForgeKindAddedByRegistrationAloneCarriesAChangeToMerged(t *testing.T) {
	const project, secret = "g/relayed", "relay-hook-secret"
	srv := gitlabtest.New()
	t.Cleanup(srv.Close)
	srv.CreateProject(project)
	t.Setenv("WQ_TEST_RELAY_TOKEN", srv.Token)
	t.Setenv("WQ_TEST_RELAY_SECRET", secret)
	submit, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
handled_types: [mr]
processing: {sweep_interval: 1h}
mr: {reconcile_interval: 1h, empty_check_interval: 1h}
forges: [{name: rl, kind: relay, url: %q, token_env: WQ_TEST_RELAY_TOKEN, webhook_secret_env: WQ_TEST_RELAY_SECRET}]
projects: [{match: %q, forge: rl, auto_merge: false}]
auth: {tokens: [{name: submitter, sha256: %s, permissions: [submit, read]}]}
`, "sqlite://"+filepath.Join(t.TempDir(), "wq.db"), srv.URL, project, hash)
	w := withRelay()
	cfg, err := config.Parse(strings.NewReader(doc), w.known())
	if err != nil {
		t.Fatalf("config with kind relay: %v", err)
	}
	m := newMainIn(w, cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	base := "http://" + m.Addr()
	call := func(method, path string, body []byte, h http.Header) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		if h.Get("X-Relay-Event") == "" {
			req.Header.Set("Authorization", "Bearer "+submit)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	sub, _ := json.Marshal(map[string]any{"item_type": "mr", "forge": "rl", "project": project, "source_branch": "workqueue/relayed",
		"target_branch": "main", "title": "A relayed change",
		"file_actions": []map[string]any{{"action": "create", "file_path": "relayed.txt", "content": "hello\n"}}})
	status, item := call("POST", "/api/v1/items", sub, http.Header{})
	if status != http.StatusCreated {
		t.Fatalf("submit: %d %v", status, item)
	}
	id := item["id"].(string)
	var number int64
	eventually.True(t, 30*time.Second, "the relay's merge request", func() (bool, any) {
		_, it := call("GET", "/api/v1/items/"+id, nil, http.Header{})
		d, _ := it["detail"].(map[string]any)
		n, _ := d["mr_iid"].(float64)
		number = int64(n)
		if number == 0 {
			return false, it
		}
		// Settled: nothing left due, so no reconcile of ours can read the
		// merge before the delivery does (only the delivery may end it).
		dims, _ := it["dimensions"].([]any)
		for _, d := range dims {
			dim := d.(map[string]any)
			until, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(dim["pending_until"]))
			if dim["status"] == "true" && until.Before(time.Now()) {
				return false, it
			}
		}
		return true, it
	})

	srv.SetMergeRequestState(project, number, "merged") // a person merges it on the forge
	hook, _ := json.Marshal(relay.Envelope{Project: project, MergeRequest: &relay.MergeRequest{Number: number,
		SourceBranch: "workqueue/relayed", TargetBranch: "main", Action: "merge", State: "merged", UpdatedAt: time.Now().UTC()}})
	status, got := call("POST", "/webhooks/rl", hook, relay.Headers(secret, "merge_request", "relay-1", hook))
	if status != http.StatusOK || got["stored"] != float64(1) {
		_, it := call("GET", "/api/v1/items/"+id, nil, http.Header{})
		t.Fatalf("the relay's delivery: %d %v; the item: %v", status, got, it)
	}
	eventually.True(t, 30*time.Second, "completion by the relay's webhook", func() (bool, any) {
		_, it := call("GET", "/api/v1/items/"+id, nil, http.Header{})
		return it["phase"] == "completed" && it["reason"] == "merged", it
	})
}
