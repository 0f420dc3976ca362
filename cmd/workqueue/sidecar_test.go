package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
	"go.yaml.in/yaml/v3"

	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/internal/testkit"
)

// The login sidecar (DDR-27) as deploy/login-sidecar ships it: a real
// oauth2-proxy with the manifest's arguments in front of serve, against a
// real OpenID Connect provider (mockoidc, which signs a person in at
// once). A browser session signs in through the proxy and reaches the
// dashboard; GET /me through it shows the identity serve's own rule maps
// the provider's access token to; the API passes the proxy unguarded and
// still wants a bearer token.
func TestTheLoginSidecar(t *testing.T) {
	bin := os.Getenv("TEST_OAUTH2_PROXY")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TEST_OAUTH2_PROXY is not set in CI: the login sidecar's test must run (use scripts/test)")
		}
		t.Skip("no oauth2-proxy: scripts/test builds one (scripts/oauth2-proxy build) and sets TEST_OAUTH2_PROXY")
	}
	provider, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { provider.Shutdown() })
	provider.QueueUser(&mockoidc.MockUser{Subject: "ada-42", Email: "ada@example.org", EmailVerified: true, PreferredUsername: "ada"})

	const header = "X-Forwarded-Access-Token"
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf(`listen: 127.0.0.1:0
database: %q
auth:
  rules:
    - name: people
      issuer: %s
      claims: {aud: %s}
      identity_claim: sub
      permissions: [read]
  proxy_access_token_header: %s
`, "sqlite://"+filepath.Join(t.TempDir(), "wq.db"), provider.Issuer(), provider.ClientID, header)), assemble().known())
	if err != nil {
		t.Fatal(err)
	}
	m := NewMain(cfg, testkit.Quiet())
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })

	// The manifest's arguments, with the test's provider and addresses,
	// and a cookie a plain-HTTP loopback browser keeps.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := listener.Addr().String()
	listener.Close()
	proxyURL := "http://" + proxyAddr
	args := []string{}
	for _, a := range sidecarArgs(t) {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--http-address":
			a = name + "=" + proxyAddr
		case "--upstream":
			a = name + "=http://" + m.Addr() + "/"
		case "--oidc-issuer-url":
			a = name + "=" + provider.Issuer()
		case "--redirect-url":
			a = name + "=" + proxyURL + "/oauth2/callback"
		case "--cookie-secure":
			a = name + "=false"
		}
		args = append(args, a)
	}
	proxy := exec.Command(bin, args...)
	proxy.Env = append(os.Environ(), "OAUTH2_PROXY_CLIENT_ID="+provider.ClientID, "OAUTH2_PROXY_CLIENT_SECRET="+provider.ClientSecret,
		"OAUTH2_PROXY_COOKIE_SECRET=0123456789abcdef0123456789abcdef")
	var logs strings.Builder
	proxy.Stdout, proxy.Stderr = &logs, &logs
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Process.Kill()
		proxy.Wait()
		if t.Failed() {
			t.Logf("oauth2-proxy's log:\n%s", logs.String())
		}
	})
	eventually.True(t, 30*time.Second, "the proxy's /ping", func() (bool, any) {
		resp, err := http.Get(proxyURL + "/ping")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := browser.Get(proxyURL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	// The API passes the proxy unguarded: serve answers, and wants a
	// bearer token.
	if status, body := get("/api/v1/items"); status != http.StatusUnauthorized || !strings.Contains(body, "unauthorized") {
		t.Fatalf("GET /api/v1/items through the proxy without a token: %d %s", status, body)
	}
	// A person's first page: the proxy signs them in with the provider,
	// and serve maps the access token it passes to the rule's identity.
	status, body := get("/me")
	if status != http.StatusOK {
		t.Fatalf("GET /me through the proxy: %d %s", status, body)
	}
	var me api.Me
	if err := json.Unmarshal([]byte(body), &me); err != nil {
		t.Fatalf("GET /me: %v: %s", err, body)
	}
	if !strings.Contains(me.Identity, "ada-42") || me.AccessToken == "" || len(me.Rules) != 1 || me.Rules[0] != "people" {
		t.Errorf("GET /me through the proxy: %+v, want ada-42's identity by the rule people, with the access token to call the API with", me)
	}
	// The same session reaches the dashboard.
	status, body = get("/ui/login/proxy")
	if status != http.StatusOK || !strings.Contains(body, "ada-42") {
		t.Errorf("the dashboard through the proxy's session: %d, with ada-42 named: %v", status, strings.Contains(body, "ada-42"))
	}
	// The access token /me gave calls the API, through the proxy too.
	req, _ := http.NewRequest("GET", proxyURL+"/api/v1/items", nil)
	req.Header.Set("Authorization", "Bearer "+me.AccessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/items with /me's access token: %d", resp.StatusCode)
	}
}

// sidecarArgs are the proxy container's arguments in
// deploy/login-sidecar/deployment.yaml.
func sidecarArgs(t *testing.T) []string {
	t.Helper()
	body, err := os.ReadFile("../../deploy/login-sidecar/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name string   `yaml:"name"`
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "oauth2-proxy" {
			return c.Args
		}
	}
	t.Fatal("deploy/login-sidecar/deployment.yaml has no oauth2-proxy container")
	return nil
}
