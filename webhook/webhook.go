// Package webhook verifies and reads forge webhook deliveries. It is pure:
// headers and the raw body in, a Delivery out. The signature (Gitea) or
// token (GitLab) is checked before the body is parsed at all.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Event types handed to item types' handlers.
const (
	GiteaPullRequest   = "pull_request"  // Gitea's pull_request family
	GitLabMergeRequest = "merge_request" // GitLab's Merge Request Hook
)

// MaxBodyBytes bounds a delivery's body.
const MaxBodyBytes = 1 << 20

// Delivery is a verified delivery, reduced to what resolution needs; Body
// keeps the raw payload for the item type's handler.
type Delivery struct {
	DeliveryID   string
	EventType    string
	Project      string
	Number       int64 // merge request number
	SourceBranch string
	EventTS      time.Time
	Body         json.RawMessage
}

// Parse verifies and reads a delivery from a forge of the given kind. It
// returns EUNAUTHORIZED if the signature or token does not match (or no
// secret is configured), EINVALID for a malformed delivery, and a nil
// Delivery for a valid delivery of an event workqueue does not use.
func Parse(kind, secret string, h http.Header, body []byte) (*Delivery, error) {
	if secret == "" {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "no webhook secret is configured for this forge")
	}
	switch kind {
	case wq.ForgeGitea:
		return parseGitea(secret, h, body)
	case wq.ForgeGitLab:
		return parseGitLab(secret, h, body)
	}
	return nil, wq.Errorf(wq.EINVALID, "unknown forge kind %q", kind)
}

func parseGitea(secret string, h http.Header, body []byte) (*Delivery, error) {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	got := strings.ToLower(strings.TrimSpace(h.Get("X-Gitea-Signature")))
	if !hmac.Equal([]byte(want), []byte(got)) {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Gitea-Signature does not match the body")
	}
	id := h.Get("X-Gitea-Delivery")
	if id == "" || len(id) > 200 {
		return nil, wq.Errorf(wq.EINVALID, "X-Gitea-Delivery: missing or too long")
	}
	if h.Get("X-Gitea-Event") != "pull_request" {
		return nil, nil
	}
	var p struct {
		Action      string `json:"action"`
		Number      int64  `json:"number"`
		PullRequest *struct {
			Number    int64      `json:"number"`
			UpdatedAt *time.Time `json:"updated_at"`
			Head      struct {
				Ref string `json:"ref"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, wq.Errorf(wq.EINVALID, "body: %v", err)
	}
	if p.PullRequest == nil || p.Repository.FullName == "" || p.PullRequest.Number <= 0 {
		return nil, wq.Errorf(wq.EINVALID, "body: a pull_request event needs pull_request.number and repository.full_name")
	}
	d := &Delivery{DeliveryID: id, EventType: GiteaPullRequest, Project: p.Repository.FullName, Number: p.PullRequest.Number,
		SourceBranch: p.PullRequest.Head.Ref, Body: body}
	if p.PullRequest.UpdatedAt != nil {
		d.EventTS = p.PullRequest.UpdatedAt.UTC()
	}
	return d, nil
}

func parseGitLab(secret string, h http.Header, body []byte) (*Delivery, error) {
	got := h.Get("X-Gitlab-Token")
	if subtle.ConstantTimeCompare([]byte(secret), []byte(got)) != 1 {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "X-Gitlab-Token does not match")
	}
	id := h.Get("X-Gitlab-Event-UUID")
	if id == "" || len(id) > 200 {
		return nil, wq.Errorf(wq.EINVALID, "X-Gitlab-Event-UUID: missing or too long")
	}
	if h.Get("X-Gitlab-Event") != "Merge Request Hook" {
		return nil, nil
	}
	var p struct {
		ObjectKind string `json:"object_kind"`
		Project    struct {
			PathWithNamespace string `json:"path_with_namespace"`
		} `json:"project"`
		Attrs *struct {
			IID          int64      `json:"iid"`
			SourceBranch string     `json:"source_branch"`
			UpdatedAt    gitlabTime `json:"updated_at"`
		} `json:"object_attributes"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, wq.Errorf(wq.EINVALID, "body: %v", err)
	}
	if p.ObjectKind != "merge_request" || p.Attrs == nil || p.Attrs.IID <= 0 || p.Project.PathWithNamespace == "" {
		return nil, wq.Errorf(wq.EINVALID, "body: a merge request event needs object_attributes.iid and project.path_with_namespace")
	}
	return &Delivery{DeliveryID: id, EventType: GitLabMergeRequest, Project: p.Project.PathWithNamespace, Number: p.Attrs.IID,
		SourceBranch: p.Attrs.SourceBranch, EventTS: time.Time(p.Attrs.UpdatedAt), Body: body}, nil
}

// gitlabTime reads GitLab's webhook timestamps: RFC 3339, or the older
// "2006-01-02 15:04:05 UTC".
type gitlabTime time.Time

func (t *gitlabTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return nil // absent or odd: no event time, the stale guard is skipped
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = gitlabTime(v.UTC())
			return nil
		}
	}
	return nil
}
