package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/cptype"
	"github.com/workqueue-dev/workqueue/internal/secretcorpus"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// Secrets are never stored (issue 26): every sample of the corpus (240
// shapes of eight classes) planted in every field an agent writes (a
// session's name and capabilities, each text and JSON field of a
// checkpoint at any depth, a lease's worktree path, the gate's head)
// comes back from no API and is found in no table, on SQLite and
// PostgreSQL.
func TestNoPlantedSecretIsStored(t *testing.T) {
	testdb.EachKindInTurn(t, func(t *testing.T, kind string) {
		agentTok, agentHash, _ := auth.NewToken()
		dbURL := testdb.URL(t, kind)
		if kind == "sqlite" {
			dbURL = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
		}
		w := startAPI(t, "", func(c *config.Config) {
			c.Database = dbURL
			c.Auth.Tokens = append(c.Auth.Tokens, config.Token{Name: "agent", SHA256: agentHash, Permissions: []string{"agent"}})
			c.ControlPlane.SyncInterval = config.Duration(time.Hour)
		})
		ctx := context.Background()
		agent, _ := client.New(w.base, agentTok)
		corpus := secretcorpus.Corpus(42, 3)
		for i, s := range corpus {
			plant := func(label string) string { return label + ": " + s.Text }
			deep := json.RawMessage(mustJSON(t, map[string]any{"a": []any{map[string]any{"b": map[string]any{"note": s.Text}}}, "free": s.Text, "Authorization": s.Text}))
			name := strings.ReplaceAll(plant("name"), "\n", " ")
			if len(name) > 200 { // a name is one line of at most 200 bytes: a key block goes in the capabilities only
				name = s.Shape
			}
			sess, err := agent.RegisterSession(ctx, cptype.RoleAuthor, name, deep)
			if err != nil {
				// A refusal stores nothing: that holds too. But the
				// service should take a name that merely holds a secret.
				t.Fatalf("sample %d (%s/%s): register: %v", i, s.Class, s.Shape, err)
			}
			c := cptype.Checkpoint{SessionID: sess.ID, Forge: "gitea", Repo: w.repo, WorkKind: cptype.KindIssue, WorkNumber: int64(i + 1),
				ProviderIdentity: plant("provider"), WorktreePath: "/work/" + s.Shape, WorkflowStage: "implement",
				LastCompletedAction: plant("last"), CurrentOperation: plant("current"), Blocker: plant("blocker"),
				NextValidAction: plant("next"), RecoveryInstructions: plant("recovery"), Status: "active",
				Evidence: deep, PendingMutation: deep, Capabilities: deep}
			if _, err := agent.WriteCheckpoint(ctx, c, false); err != nil {
				t.Fatalf("sample %d (%s/%s): checkpoint: %v", i, s.Class, s.Shape, err)
			}
			if err := agent.Call(ctx, "POST", "/api/v1/gate", nil, map[string]any{"session_id": sess.ID, "assignment_id": "none",
				"action": "push", "live_head_sha": s.Text}, nil); err == nil {
				t.Errorf("sample %d: the gate took a live_head_sha that is no commit id", i)
			}
		}
		// Nothing comes back from the API...
		var got strings.Builder
		for _, path := range []string{"/api/v1/sessions", "/api/v1/checkpoints", "/api/v1/leases?all=true", "/api/v1/events"} {
			status, _, _ := w.do("GET", path, agentTok, nil)
			if status == http.StatusNotFound {
				continue
			}
			var out json.RawMessage
			if err := agent.Call(ctx, "GET", strings.Split(path, "?")[0], nil, nil, &out); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			got.Write(out)
		}
		// ... and nothing is in the database.
		stored := dump(t, kind, dbURL)
		for _, s := range corpus {
			for where, text := range map[string]string{"the API": unescape(got.String()), "the database": stored} {
				if strings.Contains(text, s.Secret) {
					t.Errorf("%s/%s: %q found in %s", s.Class, s.Shape, s.Secret, where)
				}
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unescape is text with JSON's string escapes read back, so that a
// secret escaped in an answer (\u0026, \/) is still found.
func unescape(s string) string {
	var b strings.Builder
	dec := json.NewDecoder(strings.NewReader(s))
	for {
		var v any
		if dec.Decode(&v) != nil {
			break
		}
		b.WriteString(decodedStrings(v))
	}
	return s + "\n" + b.String()
}

func decodedStrings(v any) string {
	switch v := v.(type) {
	case string:
		return v + "\n"
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(decodedStrings(x))
		}
		return b.String()
	case map[string]any:
		var b strings.Builder
		for k, x := range v {
			b.WriteString(k + "\n" + decodedStrings(x))
		}
		return b.String()
	}
	return ""
}

// dump is everything the database holds, as text: the SQLite file and its
// write-ahead log as they are on disk, or every row of every table of the
// test's own PostgreSQL schema (other tests' come and go meanwhile).
func dump(t *testing.T, kind, url string) string {
	t.Helper()
	if kind == "sqlite" {
		path := strings.TrimPrefix(url, "sqlite://")
		var b strings.Builder
		for _, f := range []string{path, path + "-wal"} {
			data, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			b.Write(data)
		}
		return b.String()
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		var text *string
		if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT string_agg(t::text, E'\n') FROM %s t`, table)).Scan(&text); err != nil {
			t.Fatal(err)
		}
		if text != nil {
			b.WriteString(*text + "\n")
		}
	}
	if b.Len() == 0 {
		t.Fatal("the database dump is empty")
	}
	return b.String()
}

// Push protection end to end on the real Gitea (issue 26): a change whose
// file holds a secret is refused 422 with its findings and nothing
// reaches the forge; the same file in a project that opted out is
// committed.
func TestAChangeHoldingASecretNeverReachesTheForge(t *testing.T) {
	token := "glpat-" + "Zq8RtYuIoP1aSdFgHjKl"
	file := []map[string]any{{"action": "create", "file_path": "ci/deploy.env", "content": "STAGE=prod\nGITLAB_TOKEN=" + token + "\n"}}
	for _, optOut := range []bool{false, true} {
		w := startAPI(t, "", func(c *config.Config) { c.Projects[0].AllowSecrets = optOut; c.Projects[0].AutoMerge = false })
		status, out, _ := w.do("POST", "/api/v1/items", w.tokens["submit"], w.submission("workqueue/leak", file...))
		raw, _ := json.Marshal(out)
		if !optOut {
			if status != http.StatusUnprocessableEntity || !strings.Contains(string(raw), "secret_detected") || !strings.Contains(string(raw), "line 2") ||
				strings.Contains(string(raw), token) {
				t.Fatalf("a change holding a token: %d %s", status, raw)
			}
			c, owner, name := w.giteaClient()
			if _, resp, err := c.GetRepoBranch(owner, name, "workqueue/leak"); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("the refused change's branch exists on Gitea: %v", err)
			}
			continue
		}
		if status != http.StatusCreated {
			t.Fatalf("the opted-out project's change: %d %s", status, raw)
		}
		if _, number := w.waitPR(out["id"].(string)); number == 0 {
			t.Fatal("the opted-out project's change has no pull request")
		}
		c, owner, name := w.giteaClient()
		content, _, err := c.GetFile(owner, name, "workqueue/leak", "ci/deploy.env")
		if err != nil || !strings.Contains(string(content), token) {
			t.Errorf("the committed file: %q, %v", content, err)
		}
	}
}
