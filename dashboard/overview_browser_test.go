package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/internal/eventually"
)

// The first page pictures the last hour (issue 55): the backlog now,
// what finished and what failed, drawn as SVG on the server, within a
// 1280 px window, readable and labelled; and it fetches its picture
// again on its own, without reloading the page (no script from
// anywhere but the dashboard: the Content-Security-Policy holds it).
func TestTheFirstPagePicturesTheLastHourAndRefreshesWithoutAReload(t *testing.T) {
	w := newWorldWith(t, func(o *dashboard.Options) { o.PictureRefresh = time.Second })
	for i := range 6 {
		id := w.submit(1 + i%2)
		switch i % 3 {
		case 0:
			w.complete(id)
		case 1:
			w.fail(id, "executor: permanent error")
		}
		w.clock.Advance(3 * time.Minute)
	}
	ctx := browser(t)
	browserLogin(t, ctx, w.base, w.tokens["reader"])
	run(t, ctx, "open the first page", chromedp.Navigate(w.base+"/ui/"), chromedp.WaitVisible(chromedp.ID("picture")))
	for id, want := range map[string]string{"backlog-now": "2", "finished-hour": "4"} {
		if got := text(t, ctx, id); got != want {
			t.Errorf("#%s says %q, want %q", id, got, want)
		}
	}
	charts := value(t, ctx, "count the charts", chromedp.Evaluate[int](`document.querySelectorAll("#picture svg[role=img][aria-label]").length`))
	bars := value(t, ctx, "count the bars", chromedp.Evaluate[int](`document.querySelectorAll("#picture rect.bar").length`))
	if charts != 3 || bars == 0 {
		t.Errorf("the first page draws %d labelled charts with %d bars, want 3 with some", charts, bars)
	}
	checkPage(t, ctx, "the first page")
	screenshot(t, ctx, "overview")

	// Another item finishes: the picture shows it, and the page was not
	// reloaded (what a script set on it is still there).
	value(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.notReloaded = true`))
	w.complete(w.submit(1))
	eventually.True(t, 20*time.Second, "the picture shows the fifth finished item", func() (bool, any) {
		got := text(t, ctx, "finished-hour")
		return got == "5", got
	})
	if !value(t, ctx, "read the mark", chromedp.Evaluate[bool](`window.notReloaded === true`)) {
		t.Error("the page reloaded to refresh its picture")
	}
	if got := text(t, ctx, "backlog-now"); got != "2" {
		t.Errorf("after the refresh the backlog is %q, want 2", got)
	}
}

// An instance with nothing in the last hour says why its picture is
// empty and what to do.
func TestAnEmptyInstancesFirstPageSaysWhyItsPictureIsEmpty(t *testing.T) {
	w := newWorld(t, "")
	c := browserClient(t)
	login(t, c, w.base, w.tokens["reader"])
	if _, page := get(t, c, w.base+"/ui/"); !strings.Contains(page, "Nothing was submitted or finished in the last hour") {
		t.Errorf("an empty instance's first page does not say why its picture is empty:\n%s", page)
	}
}
