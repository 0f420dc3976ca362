package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/identity/idstore"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/migration"
)

// runCommand runs the CLI in process and returns what it printed.
func runCommand(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	cmd := newRootCommand(&out, &out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestMigrateTwiceOnPostgresLeavesOneSchemaVersion(t *testing.T) {
	url := testdb.URL(t, store.KindPostgres)
	out, err := runCommand(t, "migrate", "--db", url)
	if err != nil || !strings.Contains(out, "applied ") || !strings.Contains(out, "schema current") {
		t.Fatalf("first migrate: %v\n%s", err, out)
	}
	out, err = runCommand(t, "migrate", "--db", url)
	if err != nil || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("second migrate: %v\n%s", err, out)
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	total := 0
	for _, table := range []string{migration.VersionTable, migration.Chain{Component: mr.ItemType}.Table(), migration.Chain{Component: cpstore.Component}.Table(),
		migration.Chain{Component: idstore.Component}.Table()} {
		var rows, distinct, version int
		if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT version), max(version) FROM `+table).Scan(&rows, &distinct, &version); err != nil {
			t.Fatal(err)
		}
		if rows != distinct || rows != version || version < 1 {
			t.Errorf("%s has %d rows for %d versions up to %d; want one row per version", table, rows, distinct, version)
		}
		total += rows
	}
	if !strings.Contains(out, fmt.Sprintf("schema already current (%d migrations)", total)) {
		t.Errorf("second migrate reported %q, want %d migrations", out, total)
	}
}

func TestMigrateRefusesABadDatabaseURL(t *testing.T) {
	_, err := runCommand(t, "migrate", "--db", "mysql://u:hunter2@h/db")
	if err == nil || !strings.Contains(err.Error(), "database:") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v; want a database error without the password", err)
	}
}

func TestServeWithZeroConfigRunsOnSQLiteInTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ready"} {
		resp, err := http.Get("http://" + m.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || body["status"] != want {
			t.Errorf("GET %s = %d %v", path, resp.StatusCode, body)
		}
	}
	if _, err := assemble().drivers.Open(context.Background(), "sqlite:"+dir+"/workqueue.db"); err != nil {
		t.Errorf("no database in the working directory: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestTokenCreatePrintsATokenAndTheEntryThatAcceptsIt(t *testing.T) {
	out, err := runCommand(t, "token", "create", "ci-bot", "--permissions", "read,submit", "--projects", "group/app,group/libs/**")
	if err != nil {
		t.Fatal(err)
	}
	var tok, entry string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "token: "); ok {
			tok = v
		}
		if strings.HasPrefix(line, "- {") {
			entry = line
		}
	}
	cfg, err := config.Parse(strings.NewReader("auth:\n  tokens:\n  "+entry+"\n"), assemble().known())
	if err != nil {
		t.Fatalf("the printed entry does not load: %v\n%s", err, out)
	}
	s, err := auth.NewStaticTokens(cfg.StaticTokens())
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Authenticate(context.Background(), tok)
	if err != nil || !c.CanOn(auth.Submit, "group/libs/x") || c.CanOn(auth.Submit, "group/other") || c.Can(auth.Retry) {
		t.Errorf("the printed token: %+v, %v", c, err)
	}
	if _, err := runCommand(t, "token", "create", "x", "--permissions", "root"); err == nil {
		t.Error("an unknown permission was accepted")
	}
	if _, err := runCommand(t, "token", "create", "x", "--projects", "a/["); err == nil {
		t.Error("a bad project glob was accepted")
	}
}

func TestServeWithoutConfigCreatesAnAdminTokenOnce(t *testing.T) {
	t.Chdir(t.TempDir())
	start := func() (*Main, string) {
		t.Helper()
		cmd := newServeCommand(assemble())
		cmd.SetErr(io.Discard)
		cmd.ParseFlags(nil)
		cfg, err := loadConfig(cmd, assemble())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listen = "127.0.0.1:0"
		m := newServeMain(cmd, assemble(), cfg)
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(adminTokenFile)
		if err != nil {
			t.Fatalf("no admin token file: %v", err)
		}
		return m, strings.TrimSpace(string(b))
	}
	m, token := start()
	info, err := os.Stat(adminTokenFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", info.Mode().Perm(), err)
	}
	get := func(m *Main, token string) int {
		req, _ := http.NewRequest("GET", "http://"+m.Addr()+"/api/v1/items", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(m, token); code != http.StatusOK {
		t.Errorf("the admin token gets %d", code)
	}
	m.Close()
	again, sameToken := start()
	defer again.Close()
	if sameToken != token {
		t.Error("a second start made a new admin token")
	}
	if code := get(again, token); code != http.StatusOK {
		t.Errorf("after a restart the admin token gets %d", code)
	}
}

func TestHelpExplainsEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"migrate", "--help"}} {
		out, err := runCommand(t, args...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
	out, _ := runCommand(t, "serve", "--help")
	for _, flag := range []string{"--config", "--listen", "--db"} {
		if !strings.Contains(out, flag) {
			t.Errorf("serve --help does not mention %s", flag)
		}
	}
}

func TestFlagsOverrideTheConfigFile(t *testing.T) {
	file := t.TempDir() + "/wq.yaml"
	if err := os.WriteFile(file, []byte("listen: 127.0.0.1:9000\ndatabase: sqlite:from-file.db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// effective runs serve with args, capturing its configuration instead
	// of serving.
	effective := func(args ...string) (config.Config, error) {
		var got config.Config
		cmd := newServeCommand(assemble())
		cmd.RunE = func(cmd *cobra.Command, _ []string) error {
			var err error
			got, err = loadConfig(cmd, assemble())
			return err
		}
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		return got, err
	}
	got, err := effective("--config", file, "--db", "sqlite:from-flag.db", "--listen", "127.0.0.1:9001")
	if err != nil || got.Database != "sqlite:from-flag.db" || got.Listen != "127.0.0.1:9001" {
		t.Errorf("with flags: database %q listen %q (%v); want the flags' values", got.Database, got.Listen, err)
	}
	got, err = effective("--config", file)
	if err != nil || got.Database != "sqlite:from-file.db" || got.Listen != "127.0.0.1:9000" {
		t.Errorf("without flags: database %q listen %q (%v); want the file's values", got.Database, got.Listen, err)
	}
	if _, err := effective("--config", file, "--listen", "nonsense"); err == nil || !strings.Contains(err.Error(), "listen:") {
		t.Errorf("a bad --listen gave %v, want an error naming listen", err)
	}
}
