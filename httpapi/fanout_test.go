package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/internal/testkit"
	"github.com/workqueue-dev/workqueue/store"
)

// glitchTipAlert is a GlitchTip alert naming n issues of shop/web.
func glitchTipAlert(n int) string {
	type field struct {
		Title string `json:"title"`
		Value string `json:"value"`
	}
	type attachment struct {
		Title     string  `json:"title"`
		TitleLink string  `json:"title_link"`
		Fields    []field `json:"fields"`
	}
	alert := struct {
		Text        string       `json:"text"`
		Attachments []attachment `json:"attachments"`
	}{Text: "GlitchTip Alert"}
	for i := range n {
		alert.Attachments = append(alert.Attachments, attachment{Title: fmt.Sprintf("boom %d", i),
			TitleLink: fmt.Sprintf("https://glitchtip.example/shop/issues/%d", 100+i), Fields: []field{{"Project", "web"}}})
	}
	b, _ := json.Marshal(alert)
	return string(b)
}

func TestAnIncidentDeliveryOverTheLimitIsRefusedNamingIt(t *testing.T) {
	filer := &issueFiler{}
	s, _ := testServer(t, func(o *Options) {
		links, err := cpstore.NewIncidents(testdb.ControlPlane(t, store.KindSQLite))
		if err != nil {
			t.Fatal(err)
		}
		o.Incidents, err = incident.New(links, func(string) (incident.IssueForge, bool) { return filer, true },
			[]incident.Project{{Provider: "glitchtip", Organization: "shop", Project: "web", Forge: "gitea", Repo: "team/app"}}, clockwork.NewFakeClock(), testkit.Quiet())
		if err != nil {
			t.Fatal(err)
		}
	})
	deliver := func(n int) (int, string) {
		req := httptest.NewRequest("POST", "/webhooks/incidents/glitchtip", strings.NewReader(glitchTipAlert(n)))
		req.Header.Set("X-Workqueue-Secret", "glitchtip-secret")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	status, body := deliver(MaxObservationsPerDelivery + 1)
	if want := fmt.Sprintf("at most %d observations", MaxObservationsPerDelivery); status != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
		t.Errorf("a delivery of %d observations: %d %s; want 422 naming %q", MaxObservationsPerDelivery+1, status, body, want)
	}
	status, body = deliver(MaxObservationsPerDelivery)
	var answer struct{ Results []json.RawMessage }
	if json.Unmarshal([]byte(body), &answer); status != http.StatusOK || len(answer.Results) != MaxObservationsPerDelivery {
		t.Errorf("a delivery of %d observations: %d %s; want each reconciled", MaxObservationsPerDelivery, status, body)
	}
	if filer.n.Load() != MaxObservationsPerDelivery {
		t.Errorf("%d issues filed, want %d: the refused delivery files none", filer.n.Load(), MaxObservationsPerDelivery)
	}
}

// issueFiler files issues numbered from 1, counting them.
type issueFiler struct{ n atomic.Int64 }

func (f *issueFiler) CreateIssue(_ context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	return &wq.WorkInfo{Kind: "issue", Number: f.n.Add(1), State: "open", Title: req.Title}, nil
}
