package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/internal/testbrowser"
	"github.com/workqueue-dev/workqueue/internal/testdb"
)

// browser starts a headless Chromium of its own (its own cookies) and
// returns a context driving its first tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testbrowser.Path(t)),
		chromedp.NoSandbox, // tests run as root in CI, where Chromium's sandbox will not start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
		chromedp.Flag("hide-scrollbars", true),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// run runs browser steps, failing the test with what was being done and
// the page it was on.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		failAt(t, ctx, what, err)
	}
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		failAt(t, ctx, what, err)
	}
	return v
}

func failAt(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	shot, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	url, _ := chromedp.Run(shot, chromedp.Location())
	body, _ := chromedp.Run(shot, chromedp.Text(chromedp.CSS("body")))
	t.Fatalf("%s: %v\nat %s:\n%s", what, err, url, body)
}

func text(t *testing.T, ctx context.Context, id string) string {
	t.Helper()
	return value(t, ctx, "read #"+id, chromedp.Text(chromedp.ID(id)))
}

// browserLogin logs in through the login page as a person does.
func browserLogin(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	run(t, ctx, "log in",
		chromedp.Navigate(base+"/ui/items"), // not logged in: sent to the login page
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Submit(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("items")),
	)
}

// moments are the entries of an item page's timeline, each one line of
// text as a person reads it.
func moments(t *testing.T, ctx context.Context) []string {
	t.Helper()
	return value(t, ctx, "read the timeline", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#timeline > li")].map(li => li.innerText.replace(/\s+/g, " ").trim())`))
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	writeScreenshot(t, name, value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100)))
}

// The acceptance test of issue 15: a person logs in with a token, finds a
// submitted item, opens it, retries a failed one and sees it active; a
// read-only token pressing retry gets a 403 page.
func TestDashboardInChromium(t *testing.T) {
	w := newWorld(t, "")
	w.controlPlane()
	w.submit(3)
	submitted := w.submit(2)
	failed := w.submit(4)
	w.fail(failed, "ensure: the forge refused the push: 403 Forbidden (protected branch)")
	stillFailed := w.submit(1)
	w.fail(stillFailed, "executor: permanent error")

	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["operator"])

	list := text(t, ctx, "items")
	for _, id := range []string{submitted, failed} {
		if !strings.Contains(list, id) {
			t.Errorf("the items list does not show item %s:\n%s", id, list)
		}
	}
	screenshot(t, ctx, "items")

	run(t, ctx, "filter the list to failed items",
		chromedp.SetValue(chromedp.CSS(`select[name="phase"]`), "failed"),
		chromedp.Submit(chromedp.CSS(`form.filters`)),
		chromedp.WaitVisible(chromedp.CSS(`#items a[href="/ui/items/`+failed+`"]`)),
	)
	list = text(t, ctx, "items")
	if strings.Contains(list, submitted) {
		t.Errorf("the list filtered to failed items shows the active item %s", submitted)
	}

	run(t, ctx, "open the failed item",
		chromedp.Click(chromedp.CSS(`#items a[href="/ui/items/`+failed+`"]`)),
		chromedp.WaitVisible(chromedp.ID("phase")),
	)
	phase, errText := text(t, ctx, "phase"), text(t, ctx, "error")
	if phase != string(wq.PhaseFailed) || !strings.Contains(errText, "protected branch") {
		t.Fatalf("the failed item's page shows phase %q and error %q", phase, errText)
	}
	dims := text(t, ctx, "dimensions")
	if !strings.Contains(dims, "needs_step") {
		t.Errorf("the item page does not show the item's dimensions:\n%s", dims)
	}
	screenshot(t, ctx, "item")

	run(t, ctx, "press retry",
		chromedp.Click(chromedp.ID("retry")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	)
	phase = text(t, ctx, "phase")
	if phase != string(wq.PhaseActive) {
		t.Errorf("after retry the page shows phase %q, want active", phase)
	}
	if got := w.phase(failed); got != wq.PhaseActive {
		t.Errorf("after retry the item is %s in the store, want active", got)
	}
	trail := strings.Join(moments(t, ctx), "\n")
	if !strings.Contains(trail, "Retried by token:operator") {
		t.Errorf("the audit trail does not show the retry by token:operator:\n%s", trail)
	}

	// The session cookie is out of reach of scripts.
	cookies := value(t, ctx, "read document.cookie", chromedp.Evaluate[string](`document.cookie`))
	if strings.Contains(cookies, "wq_session") {
		t.Errorf("a script reads the session cookie: %q", cookies)
	}
	jar, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range jar.Cookies {
		found = found || c.Name == "wq_session"
		if c.Name == "wq_session" && (!c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict) {
			t.Errorf("the session cookie is not HttpOnly and SameSite=Strict: %+v", c)
		}
	}
	if !found {
		t.Error("the browser holds no session cookie")
	}

	// The control plane's sessions, for an admin.
	run(t, ctx, "log out", chromedp.Click(chromedp.CSS(`header .who button`)), chromedp.WaitVisible(chromedp.ID("token")))
	browserLogin(t, ctx, w.base, w.tokens["admin"])
	run(t, ctx, "open the sessions page",
		chromedp.Click(chromedp.CSS(`header nav a[href="/ui/sessions"]`)),
		chromedp.WaitVisible(chromedp.ID("sessions")),
	)
	sessions := text(t, ctx, "sessions")
	if !strings.Contains(sessions, "author-1") || !strings.Contains(sessions, "reviewer-1") {
		t.Errorf("the sessions page does not show both sessions:\n%s", sessions)
	}
	screenshot(t, ctx, "sessions")

	// A read-only token: no retry button, and a retry posted anyway (a
	// page kept from before, a hand-made form) is a 403 page.
	run(t, ctx, "log out", chromedp.Click(chromedp.CSS(`header .who button`)), chromedp.WaitVisible(chromedp.ID("token")))
	browserLogin(t, ctx, w.base, w.tokens["reader"])
	run(t, ctx, "open the other failed item as a reader",
		chromedp.Navigate(w.base+"/ui/items/"+stillFailed),
		chromedp.WaitVisible(chromedp.ID("phase")),
	)
	buttons := value(t, ctx, "count the action buttons", chromedp.Evaluate[int](`document.querySelectorAll("#retry, #cancel").length`))
	if buttons != 0 {
		t.Errorf("a read-only token sees %d retry/cancel buttons, want none", buttons)
	}
	value(t, ctx, "make a retry form", chromedp.Evaluate[bool](`(() => {
			const f = document.createElement("form");
			f.method = "post";
			f.action = "/ui/items/`+stillFailed+`/retry";
			const csrf = document.querySelector('header input[name="csrf"]').cloneNode();
			f.appendChild(csrf);
			const b = document.createElement("button");
			b.id = "retry";
			b.type = "submit";
			f.appendChild(b);
			document.body.appendChild(f);
			return true;
		})()`))
	run(t, ctx, "press retry as a reader",
		chromedp.Click(chromedp.ID("retry")),
		chromedp.WaitVisible(chromedp.CSS("h1.status-403")),
	)
	heading := value(t, ctx, "read the heading", chromedp.Text(chromedp.CSS("h1")))
	problem := value(t, ctx, "read the problem", chromedp.Text(chromedp.CSS("p.problem")))
	if !strings.Contains(heading, "403") || !strings.Contains(problem, "retry") {
		t.Errorf("a reader pressing retry sees %q: %q, want a 403 page naming the retry permission", heading, problem)
	}
	if got := w.phase(stillFailed); got != wq.PhaseFailed {
		t.Errorf("a reader's retry changed the item to %s", got)
	}
}

// A person who opens the service's own address in a browser lands on
// the dashboard's login page, not a JSON 404 (issue 29, trap 6).
func TestBrowserOpeningTheServiceAddressLandsOnTheDashboard(t *testing.T) {
	w := newWorld(t, "")
	ctx := browser(t)
	run(t, ctx, "open the service's address",
		chromedp.Navigate(w.base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
	)
	if url := value(t, ctx, "read the address", chromedp.Location()); url != w.base+"/ui/login" && !strings.HasPrefix(url, w.base+"/ui/") {
		t.Errorf("opening %s/ ends at %s, want the dashboard", w.base, url)
	}
}

// A finished item's page shows nothing left to do, though its needs_*
// rows still hold what they held when it stopped; an active item's page
// shows what is to do (issue 29, trap 7).
func TestAFinishedItemsPageShowsNothingLeftToDo(t *testing.T) {
	w := newWorld(t, "")
	active, completed := w.submit(2), w.submit(2)
	w.complete(completed)
	var raw struct {
		Dimensions []struct{ Dimension, Status string }
	}
	w.api("GET", "/api/v1/items/"+completed, w.tokens["admin"], nil, &raw)
	if len(raw.Dimensions) == 0 || raw.Dimensions[0].Status != wq.StatusTrue {
		t.Fatalf("the completed item's rows are %+v; the test needs one still true", raw.Dimensions)
	}
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["operator"])
	run(t, ctx, "open the completed item",
		chromedp.Navigate(w.base+"/ui/items/"+completed), chromedp.WaitVisible(chromedp.ID("phase")))
	if dims := text(t, ctx, "dimensions"); strings.Contains(dims, "needs_") || !strings.Contains(dims, "Nothing left to do") {
		t.Errorf("the completed item's page shows %q, want nothing left to do", dims)
	}
	run(t, ctx, "open the active item",
		chromedp.Navigate(w.base+"/ui/items/"+active), chromedp.WaitVisible(chromedp.ID("phase")))
	if dims := text(t, ctx, "dimensions"); !strings.Contains(dims, "needs_step") {
		t.Errorf("the active item's page shows %q, want its needs_step", dims)
	}
}

// An item's page shows its whole history after a restart and on another
// instance (issue 29, trap 8): what one instance audited (the
// submission, the failure's retry by token:operator) is kept in the
// database, and a second instance on that database, started after the
// first wrote it, shows it on the item's page.
func TestAnItemsHistorySurvivesARestartAndIsTheSameOnEveryInstance(t *testing.T) {
	dbURL := testdb.URL(t, "sqlite")
	first := newWorldOn(t, dbURL, func(*dashboard.Options) {})
	id := first.submit(2)
	first.fail(id, "executor: permanent error")
	first.api("POST", "/api/v1/items/"+id+"/retry", first.tokens["operator"], nil, nil)
	first.history.Flush(first.ctx) // as its Run does when serve stops

	second := newWorldOn(t, dbURL, func(*dashboard.Options) {})
	ctx := browser(t)
	browserLogin(t, ctx, second.base, second.tokens["reader"])
	run(t, ctx, "open the item on the second instance",
		chromedp.Navigate(second.base+"/ui/items/"+id), chromedp.WaitVisible(chromedp.ID("timeline")))
	trail := strings.Join(moments(t, ctx), "\n")
	for _, want := range []string{"Submitted by token:admin", "Retried by token:operator"} {
		if !strings.Contains(trail, want) {
			t.Errorf("the second instance's page of the item lacks %q:\n%s", want, trail)
		}
	}
	if hint := text(t, ctx, "trail-hint"); !strings.Contains(hint, "same on every instance") {
		t.Errorf("the page says %q of its trail", hint)
	}
}

// A short item id in the address opens the item's page at its full id
// (issue 29, trap 11).
func TestAShortItemIDOpensTheItemsPage(t *testing.T) {
	w := newWorld(t, "")
	other, id := w.submit(1), w.submit(2)
	n := 0
	for n < len(id) && id[n] == other[n] {
		n++
	}
	short := strings.TrimSuffix(id[:max(n+1, 4)], "-")
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["reader"])
	run(t, ctx, "open the item by its short id",
		chromedp.Navigate(w.base+"/ui/items/"+short), chromedp.WaitVisible(chromedp.ID("phase")))
	if url := value(t, ctx, "read the address", chromedp.Location()); url != w.base+"/ui/items/"+id {
		t.Errorf("/ui/items/%s ends at %s, want the item's page at its full id %s", short, url, id)
	}
}

// The items page as users of River UI and asynqmon expect it (issue 29,
// trap 11): a title column, a text search, and a page showing active
// items that reloads itself (a meta refresh: the pages have no script).
func TestTheItemsPageSearchesTextAndReloadsWhileItemsAreActive(t *testing.T) {
	w := newWorld(t, "")
	active := w.submit(2)
	failed := w.submit(1)
	w.fail(failed, "ensure: the forge refused the push: 403 Forbidden (protected branch)")
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["reader"])
	headers := value(t, ctx, "read the column headers", chromedp.Text(chromedp.CSS("#items thead")))
	if !strings.Contains(headers, "Title") {
		t.Errorf("the items list has no title column: %q", headers)
	}
	refresh := func() string {
		return value(t, ctx, "read the refresh", chromedp.Evaluate[string](
			`(document.querySelector('meta[http-equiv="refresh"]') || {content: ""}).content`))
	}
	if got := refresh(); got != "10" {
		t.Errorf("a page showing an active item reloads every %q seconds, want 10", got)
	}
	run(t, ctx, "search for the error's text",
		chromedp.SendKeys(chromedp.CSS(`input[name="q"]`), "PROTECTED branch"),
		chromedp.Submit(chromedp.CSS(`form.filters`)),
		chromedp.WaitVisible(chromedp.ID("searched")),
	)
	list := text(t, ctx, "items")
	if !strings.Contains(list, failed) || strings.Contains(list, active) {
		t.Errorf("searching for the failed item's error shows:\n%s\nwant %s alone", list, failed)
	}
	if got := refresh(); got != "" {
		t.Errorf("a page showing no active item reloads every %q seconds, want never", got)
	}
}

// Bulk retry from the filtered list (issue 29, trap 11): the list's
// button asks to confirm with the count of items it will retry, and
// confirming retries exactly those, saying how many.
func TestBulkRetryOfTheFilteredListConfirmsTheCountThenRetriesThem(t *testing.T) {
	w := newWorld(t, "")
	active := w.submit(1)
	var failed []string
	for range 3 {
		id := w.submit(1)
		w.fail(id, "executor: permanent error")
		failed = append(failed, id)
	}
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["operator"])
	run(t, ctx, "filter to failed items and press bulk retry",
		chromedp.Navigate(w.base+"/ui/items?phase=failed"),
		chromedp.WaitVisible(chromedp.ID("bulk-retry")),
		chromedp.Click(chromedp.ID("bulk-retry")),
		chromedp.WaitVisible(chromedp.ID("bulk-question")),
	)
	if q := text(t, ctx, "bulk-question"); q != "Retry 3 items?" {
		t.Errorf("the confirmation asks %q, want \"Retry 3 items?\"", q)
	}
	for _, id := range failed {
		if got := w.phase(id); got != wq.PhaseFailed {
			t.Errorf("item %s is %s before the confirmation, want failed", id, got)
		}
	}
	run(t, ctx, "confirm", chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("done")))
	if done := text(t, ctx, "done"); !strings.Contains(done, "retried 3 of 3 items") {
		t.Errorf("after confirming the page says %q", done)
	}
	for _, id := range failed {
		if got := w.phase(id); got != wq.PhaseActive {
			t.Errorf("item %s is %s after the bulk retry, want active", id, got)
		}
	}
	if got := w.phase(active); got != wq.PhaseActive {
		t.Errorf("the active item outside the filter is %s", got)
	}
	if url := value(t, ctx, "read the address", chromedp.Location()); !strings.Contains(url, "phase=failed") {
		t.Errorf("after the bulk retry the list is %s, want the filtered list", url)
	}
	// A reader sees no bulk buttons.
	run(t, ctx, "log out", chromedp.Click(chromedp.CSS(`header .who button`)), chromedp.WaitVisible(chromedp.ID("token")))
	browserLogin(t, ctx, w.base, w.tokens["reader"])
	if n := value(t, ctx, "count the bulk buttons", chromedp.Evaluate[int](`document.querySelectorAll("#bulk-retry, #bulk-cancel").length`)); n != 0 {
		t.Errorf("a reader sees %d bulk buttons", n)
	}
}
