package dashboard_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	wq "github.com/workqueue-dev/workqueue"
)

// longError is an error as forges write them: long, with a URL and no
// spaces for a while, which must wrap inside the page, not widen it.
const longError = "ensure_mr: push to https://git.example/platform/api.git refused: " +
	"remote: GitLab: You are not allowed to push code to protected branches on this project." +
	"/refs/heads/workqueue/a-very-long-branch-name-that-an-agent-chose-without-any-spaces-in-it-at-all-0123456789abcdef"

// audited writes the trail the engine writes while an item runs and
// fails, as the engine writes it (engine/process.go), so that the page
// tells a real history.
func (w *world) audited(id string) {
	w.t.Helper()
	at := func(min int) time.Time { return start.Add(time.Duration(min) * time.Minute) }
	dim := func(status string) map[string]any {
		return map[string]any{"dimension": "needs_step", "variant": "", "status": status}
	}
	for _, e := range []wq.AuditEntry{
		{Time: at(1), EventType: wq.AuditAction, Actor: "worker-1", Trigger: map[string]any{"source": "worker", "action": "step"}},
		{Time: at(2), EventType: wq.AuditDimensionChange, Actor: "worker-1", OldState: dim(wq.StatusTrue), NewState: dim(wq.StatusFalse),
			Trigger: map[string]any{"source": "worker", "action": "step"}},
		{Time: at(3), EventType: wq.AuditWebhookStored, Actor: "forge:gitlab", Trigger: map[string]any{"source": "webhook", "event_type": "pipeline"},
			Metadata: map[string]any{"delivery_id": "d-1", "project": "platform/api", "number": 7}},
		{Time: at(4), EventType: wq.AuditActionFailed, Actor: "worker-1",
			OldState: map[string]any{"phase": "active", "attempts": 0}, NewState: map[string]any{"attempts": 1, "transient": false, "phase": "failed"},
			Trigger: map[string]any{"source": "worker", "action": "ensure_mr", "error": longError}},
		{Time: at(4), EventType: wq.AuditPhaseChange, Actor: "worker-1", OldState: map[string]any{"phase": "active"},
			NewState: map[string]any{"phase": "failed", "reason": "push_refused"}, Trigger: map[string]any{"source": "worker", "action": "ensure_mr"}},
	} {
		e.ItemID, e.ItemType = id, "example"
		w.trail.WriteAudit(w.ctx, e)
	}
}

// An item's page reads top to bottom (issue 55): its title, what it
// waits for in words, its error, and its history as a timeline of
// sentences with what changed, not JSON; times relative, the absolute
// one on hover; nothing wider than a 1280 px window, no time broken over
// two lines, and its actions reached with the keyboard.
func TestAnItemsPageReadsTopToBottomAt1280Pixels(t *testing.T) {
	w := newWorld(t, "")
	id := w.submit(2)
	w.audited(id)
	w.clock.Advance(4 * time.Minute)
	w.fail(id, longError)

	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["operator"])
	run(t, ctx, "open the failed item", chromedp.Navigate(w.base+"/ui/items/"+id), chromedp.WaitVisible(chromedp.ID("timeline")))

	if h1 := text(t, ctx, "item-title"); h1 == "" {
		t.Error("the item's page has no title")
	}
	if got := text(t, ctx, "waiting"); !strings.Contains(got, "A person") || !strings.Contains(got, "retries it") {
		t.Errorf("a failed item waits for %q, want a person's retry", got)
	}
	if got := text(t, ctx, "dimensions"); strings.Contains(got, "a missing row counts as needed") {
		t.Errorf("a failed item's steps say %q", got)
	}
	got := moments(t, ctx)
	for _, want := range []string{
		"Submitted by token:admin",
		"Ran step by worker-1",
		"step: done by worker-1 status: to do → done",
		"The forge reported a pipeline event by forge:gitlab",
		"Action ensure_mr failed: the item failed by worker-1",
		"Became failed (push_refused) by worker-1 phase: active → failed",
	} {
		if !slicesContainsPart(got, want) {
			t.Errorf("the timeline has no entry %q:\n  %s", want, strings.Join(got, "\n  "))
		}
	}
	if trail := strings.Join(got, "\n"); strings.Contains(trail, "{") || strings.Contains(trail, `":`) {
		t.Errorf("the timeline shows JSON:\n%s", trail)
	}
	if order := strings.Join(got, "\n"); strings.Index(order, "Submitted") > strings.Index(order, "Became failed") {
		t.Errorf("the timeline is not oldest first:\n%s", order)
	}
	hover := value(t, ctx, "read a time's title", chromedp.Evaluate[string](`document.querySelector("#timeline time").title`))
	if !strings.HasSuffix(hover, "UTC") || !strings.HasPrefix(hover, "2026-03-02") {
		t.Errorf("a time's hover text is %q, want the absolute time in UTC", hover)
	}
	checkPage(t, ctx, "the failed item's page")
	tabTo(t, ctx, "#retry")
	screenshot(t, ctx, "item")
}

// slicesContainsPart reports whether some entry contains part.
func slicesContainsPart(entries []string, part string) bool {
	for _, e := range entries {
		if strings.Contains(e, part) {
			return true
		}
	}
	return false
}

// The control plane's pages name work as people do (issue 55):
// repository, number and kind with a link to the forge, the title, and
// the session holding it by name and identity, with ages, instead of the
// ends of ids.
func TestTheLeasesAndAllocationsPagesNameWorkAndItsHolders(t *testing.T) {
	w := newWorld(t, "")
	w.controlPlane()
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["admin"])
	for _, page := range []string{"leases", "allocations"} {
		run(t, ctx, "open "+page, chromedp.Navigate(w.base+"/ui/"+page), chromedp.WaitVisible(chromedp.ID(page)))
		table := text(t, ctx, page)
		for _, want := range []string{"platform/api #7 (issue)", "Retry webhooks that time out", "author-1", "token:agent"} {
			if !strings.Contains(table, want) {
				t.Errorf("/ui/%s does not name %q:\n%s", page, want, table)
			}
		}
		if strings.Contains(table, "…") {
			t.Errorf("/ui/%s still shows ends of ids:\n%s", page, table)
		}
		links := value(t, ctx, "read the work's links", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#`+page+` a.work-link")].map(a => a.href)`))
		if !slices.Contains(links, "https://gitea.example/platform/api/issues/7") {
			t.Errorf("/ui/%s links the work to %q, want the issue's page on the forge", page, links)
		}
		checkPage(t, ctx, "/ui/"+page)
		screenshot(t, ctx, page)
	}
	run(t, ctx, "open the leases", chromedp.Navigate(w.base+"/ui/leases"), chromedp.WaitVisible(chromedp.ID("leases")))
	if age := text(t, ctx, "leases"); !strings.Contains(age, "min") && !strings.Contains(age, "just now") {
		t.Errorf("the leases page shows no ages:\n%s", age)
	}
}

// Bulk retry and cancel are offered only where they would act on
// something, with the count (issue 55): a list of active items offers
// no retry, a list of completed ones neither.
func TestBulkActionsAreOfferedOnlyWhereSomethingMatches(t *testing.T) {
	w := newWorld(t, "")
	w.submit(1)
	done := w.submit(1)
	w.complete(done)
	c := browserClient(t)
	login(t, c, w.base, w.tokens["operator"])
	for _, tc := range []struct {
		query, want, not string
	}{
		{"", `Cancel the 1 active or failed item these filters match`, `id="bulk-retry"`},
		{"?phase=completed", "", `class="bulk"`},
	} {
		status, page := get(t, c, w.base+"/ui/items"+tc.query)
		if status != http.StatusOK {
			t.Fatalf("/ui/items%s: %d", tc.query, status)
		}
		if tc.want != "" && !strings.Contains(page, tc.want) {
			t.Errorf("/ui/items%s does not offer %q", tc.query, tc.want)
		}
		if strings.Contains(page, tc.not) {
			t.Errorf("/ui/items%s offers %s where nothing matches", tc.query, tc.not)
		}
	}
}

// Every empty page says why it is empty and what to do next (issue 55,
// point 4), and an instance that processes no item type says so on its
// items pages.
func TestEmptyPagesSayWhyAndWhatToDoNext(t *testing.T) {
	w := newWorld(t, "")
	w.items.HandledHere = nil
	c := browserClient(t)
	login(t, c, w.base, w.tokens["admin"])
	for path, want := range map[string]string{
		"/ui/items":              "nothing has been submitted. Submit a change with <code>workqueue items submit</code>",
		"/ui/items?phase=failed": "No items match these filters.",
		"/ui/sessions":           "an agent starts one with <code>workqueue sessions register",
		"/ui/work":               "The inventory is empty: it fills from the forge's webhooks",
		"/ui/leases":             "No work is held now",
		"/ui/leases?all=true":    "No lease was ever taken",
		"/ui/allocations":        "Nothing logged yet: the log starts when an agent session asks for work",
	} {
		status, page := get(t, c, w.base+path)
		if status != http.StatusOK || !strings.Contains(page, want) {
			t.Errorf("%s (%d) does not say %q", path, status, want)
		}
	}
	if _, page := get(t, c, w.base+"/ui/items"); !strings.Contains(page, "This instance processes nothing: configure <code>handled_types</code>") {
		t.Error("an instance with no handled_types does not say it processes nothing")
	}
	w.items.HandledHere = []string{"example"}
	if _, page := get(t, c, w.base+"/ui/items"); strings.Contains(page, "processes nothing") {
		t.Error("an instance that handles example items says it processes nothing")
	}
}
