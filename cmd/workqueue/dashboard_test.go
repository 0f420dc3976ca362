package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/auth"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// serve mounts the dashboard where the mr status note links
// (public_url/ui/items/ID), behind the configured tokens, with the
// process's audit trail on the item's page.
func TestServeMountsTheDashboardWhereTheStatusNoteLinks(t *testing.T) {
	token, hash, _ := auth.NewToken()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "wq.db")
	cfg.HandledTypes = []string{example.Name}
	cfg.Auth.Tokens = []config.Token{{Name: "ops", SHA256: hash, Permissions: []string{"admin"}}}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	base := "http://" + m.Addr()

	req, _ := http.NewRequest("POST", base+"/api/v1/items", bytes.NewReader([]byte(`{"item_type":"example","steps":1}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var item struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&item)
	resp.Body.Close()
	if item.ID == "" {
		t.Fatalf("submit: %d", resp.StatusCode)
	}

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err = c.Get(base + "/ui/items/" + item.ID) // sent to log in, then back here
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m1 := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	m2 := regexp.MustCompile(`name="next" value="([^"]+)"`).FindSubmatch(page)
	if m1 == nil || m2 == nil {
		t.Fatalf("GET /ui/items/ID without a session did not show the login form:\n%s", page)
	}
	resp, err = c.PostForm(base+"/ui/login", url.Values{"token": {token}, "csrf": {string(m1[1])}, "next": {string(m2[1])}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/ui/items/"+item.ID {
		t.Fatalf("after logging in: %d at %s, want the item's page", resp.StatusCode, resp.Request.URL)
	}
	if !strings.Contains(string(page), item.ID) || !strings.Contains(string(page), `<span class="what">Submitted</span>`) {
		t.Errorf("the item's page does not show the item and its history (its submission):\n%s", page)
	}
}
