package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/webhook"
)

const giteaMerged = `{"action":"closed","number":3,"pull_request":{"number":3,"merged":true,"state":"closed",
 "updated_at":"2026-03-04T05:06:07Z","head":{"ref":"wq/a","sha":"abc"}},"repository":{"full_name":"o/r"}}`

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func giteaHeaders(sig, event string) http.Header {
	h := http.Header{}
	h.Set("X-Gitea-Signature", sig)
	h.Set("X-Gitea-Event", event)
	h.Set("X-Gitea-Delivery", "6f0c1b2a-0000-4000-8000-000000000001")
	return h
}

func TestGiteaDeliveryIsVerifiedThenRead(t *testing.T) {
	d, err := webhook.Parse(wq.ForgeGitea, "s3cret", giteaHeaders(sign("s3cret", giteaMerged), "pull_request"), []byte(giteaMerged))
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != webhook.GiteaPullRequest || d.Project != "o/r" || d.Number != 3 || d.SourceBranch != "wq/a" ||
		!d.EventTS.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) || d.DeliveryID == "" {
		t.Errorf("delivery %+v", d)
	}
}

func TestBadSignaturesAndTokensAreUnauthorized(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, secret string
		h            http.Header
	}{
		"gitea wrong signature":    {wq.ForgeGitea, "s3cret", giteaHeaders(sign("other", giteaMerged), "pull_request")},
		"gitea missing signature":  {wq.ForgeGitea, "s3cret", giteaHeaders("", "pull_request")},
		"gitea signature of other": {wq.ForgeGitea, "s3cret", giteaHeaders(sign("s3cret", giteaMerged+" "), "pull_request")},
		"no secret configured":     {wq.ForgeGitea, "", giteaHeaders(sign("", giteaMerged), "pull_request")},
		"gitlab wrong token":       {wq.ForgeGitLab, "s3cret", http.Header{"X-Gitlab-Token": {"nope"}}},
		"gitlab missing token":     {wq.ForgeGitLab, "s3cret", http.Header{}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := webhook.Parse(tc.kind, tc.secret, tc.h, []byte(giteaMerged)); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
				t.Errorf("err %v, want unauthorized", err)
			}
		})
	}
}

func TestMalformedDeliveriesAreInvalid(t *testing.T) {
	for name, body := range map[string]string{
		"not json":        `{"action":`,
		"no pull request": `{"action":"closed","repository":{"full_name":"o/r"}}`,
		"no repository":   `{"action":"closed","pull_request":{"number":3}}`,
		"number zero":     `{"action":"closed","pull_request":{"number":0},"repository":{"full_name":"o/r"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := webhook.Parse(wq.ForgeGitea, "k", giteaHeaders(sign("k", body), "pull_request"), []byte(body)); wq.ErrorCode(err) != wq.EINVALID {
				t.Errorf("err %v, want invalid", err)
			}
		})
	}
	h := giteaHeaders(sign("k", giteaMerged), "pull_request")
	h.Del("X-Gitea-Delivery")
	if _, err := webhook.Parse(wq.ForgeGitea, "k", h, []byte(giteaMerged)); wq.ErrorCode(err) != wq.EINVALID {
		t.Errorf("no delivery id: %v", err)
	}
}

func TestUnusedEventsAreAcknowledgedAndIgnored(t *testing.T) {
	d, err := webhook.Parse(wq.ForgeGitea, "k", giteaHeaders(sign("k", `{"ref":"main"}`), "push"), []byte(`{"ref":"main"}`))
	if err != nil || d != nil {
		t.Errorf("push: %+v, %v; want ignored", d, err)
	}
}

func TestGitLabMergeRequestHook(t *testing.T) {
	body := `{"object_kind":"merge_request","project":{"path_with_namespace":"g/sub/p"},
	 "object_attributes":{"iid":9,"action":"merge","state":"merged","source_branch":"wq/x","updated_at":"2026-03-04 05:06:07 UTC"}}`
	h := http.Header{"X-Gitlab-Token": {"k"}, "X-Gitlab-Event": {"Merge Request Hook"}, "X-Gitlab-Event-Uuid": {"u-1"}}
	d, err := webhook.Parse(wq.ForgeGitLab, "k", h, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if d.EventType != webhook.GitLabMergeRequest || d.Project != "g/sub/p" || d.Number != 9 || d.SourceBranch != "wq/x" ||
		!d.EventTS.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) || d.DeliveryID != "u-1" {
		t.Errorf("delivery %+v", d)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("gitea", "pull_request", giteaMerged)
	f.Add("gitlab", "Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":1}}`)
	f.Fuzz(func(t *testing.T, kind, event, body string) {
		h := giteaHeaders(sign("k", body), event)
		h.Set("X-Gitlab-Token", "k")
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Event-UUID", "u")
		d, err := webhook.Parse(kind, "k", h, []byte(body))
		if err == nil && d != nil && (d.Number <= 0 || d.Project == "" || d.DeliveryID == "") {
			t.Fatalf("accepted an unusable delivery: %+v", d)
		}
	})
}
