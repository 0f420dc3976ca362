package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	wq "github.com/workqueue-dev/workqueue"
	cp "github.com/workqueue-dev/workqueue/controlplane"
	"github.com/workqueue-dev/workqueue/dashboard"
	"github.com/workqueue-dev/workqueue/forgecheck"
)

// pageProblems is what a page of the dashboard must not have, as a
// person at a 1280 px window sees it (issue 55, point 6), checked in the
// browser on the page as rendered: a horizontal scroll; a time or date
// broken over two lines; a form control without a label (a visible
// <label> around it or for it, or an aria-label); text whose contrast
// with the background behind it is under 4.5:1 (WCAG AA for body text,
// the relative luminance formula of WCAG 2); a link or button that the
// keyboard cannot reach (a negative tabindex, or disabled without a
// reason). Each problem is one line naming the element.
const pageProblems = `(() => {
  const problems = [];
  const name = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") +
    ' "' + (el.innerText || el.value || "").trim().slice(0, 40) + '"';
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    let widest = null;
    for (const el of document.querySelectorAll("body *")) {
      const r = el.getBoundingClientRect();
      if (r.right > doc.clientWidth + 1 && (!widest || r.width < widest.getBoundingClientRect().width)) widest = el;
    }
    problems.push("scrolls sideways: " + doc.scrollWidth + " px wide in a " + doc.clientWidth + " px window" +
      (widest ? ", past the edge: " + name(widest) : ""));
  }
  for (const el of document.querySelectorAll("time")) {
    if (el.getClientRects().length > 1) problems.push("a time wraps: " + name(el));
  }
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    const labelled = el.closest("label") || (el.id && document.querySelector('label[for="' + el.id + '"]')) ||
      el.getAttribute("aria-label") || el.getAttribute("aria-labelledby");
    if (!labelled) problems.push("a form control has no label: " + name(el));
  }
  const rgb = s => { const m = s.match(/[\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; };
  const lum = c => {
    const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = el => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length < 4 || c[3] > 0.5) return c;
    }
    return [255, 255, 255];
  };
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim() !== "");
    if (!own || el.getClientRects().length === 0) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden") continue;
    const fg = rgb(style.color), bg = background(el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 4.5) problems.push("contrast " + ratio.toFixed(2) + ":1 under 4.5:1 (" + style.color + " on rgb(" + bg.slice(0, 3).join(", ") + ")): " + name(el));
  }
  for (const el of document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea, summary")) {
    if (el.tabIndex < 0 || el.disabled) problems.push("the keyboard cannot reach: " + name(el));
  }
  return problems;
})()`

// checkPage fails the test with every problem of pageProblems the page
// the browser shows has, naming the page.
func checkPage(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if problems := value(t, ctx, "check "+page, chromedp.Evaluate[[]string](pageProblems)); len(problems) > 0 {
		t.Errorf("%s:\n  %s", page, strings.Join(problems, "\n  "))
	}
}

// tabTo presses Tab until the element matching selector has the focus,
// and fails the test if it never does: an action a person reaches with
// the keyboard alone.
func tabTo(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	for range 200 {
		if value(t, ctx, "read the focus", chromedp.Evaluate[bool](`document.activeElement && document.activeElement.matches(`+jsString(selector)+`)`)) {
			return
		}
		run(t, ctx, "press Tab", chromedp.KeyEvent("\t"))
	}
	t.Fatalf("200 presses of Tab never reach %s", selector)
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Every page of the dashboard, with realistic content, fits a 1280 px
// window without a sideways scroll, keeps its times on one line, labels
// every form control, has text at a contrast of 4.5:1 at least, and lets
// the keyboard reach its actions (issue 55, point 6).
func TestEveryPageFitsA1280PixelWindowAndPassesAccessibilityBasics(t *testing.T) {
	// The Forges page with a finding of each kind, its meanings long as
	// the real ones are.
	checks := forgeChecks{
		reports: []forgecheck.Report{{Forge: "gl", Kind: "gitlab", Version: "17.5.0-ee", VersionStatus: "supported",
			VersionMessage: "gitlab 17.5.0-ee (at least 17.0.0)", Projects: []forgecheck.ProjectReport{{Project: "group/subgroup/a-rather-long-project-name",
				Settings: []wq.ProjectSetting{{Name: "reset_approvals_on_push", Value: "false", Known: true, Safe: false,
					Meaning: "an approval survives a push, so a change a person never saw can merge on an approval given to an earlier head; turn on Reset approvals on push in the project's merge request settings"}}}}}},
		hooks: []forgecheck.HookStatus{{Forge: "gl", Project: "group/subgroup/a-rather-long-project-name", Outcome: forgecheck.HookBroken,
			Problems: []wq.WebhookProblem{wq.WebhookDisabled}, CheckedAt: start}},
	}
	w := newWorldWith(t, func(o *dashboard.Options) { o.Forges = checks })
	w.controlPlane()
	for range 3 {
		w.submit(2)
	}
	failed := w.submit(1)
	w.audited(failed)
	w.fail(failed, longError)
	// Ended leases and a cancelled item: their grey pills too.
	w.api("POST", "/api/v1/items/"+w.submit(1)+"/cancel", w.tokens["admin"], nil, nil)
	w.clock.Advance(time.Hour)
	if _, err := w.cps.ExpireLeases(w.ctx, cp.Caller{Identity: "token:admin", Admin: true}); err != nil {
		t.Fatal(err)
	}

	ctx := browser(t)
	run(t, ctx, "open the login page", chromedp.Navigate(w.base+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")))
	checkPage(t, ctx, "the login page")
	tabTo(t, ctx, "#login button[type=submit]")
	browserLogin(t, ctx, w.base, w.tokens["admin"])

	for _, page := range []struct{ path, ready, action string }{
		{"/ui/", "picture", `header nav a[href="/ui/items"]`},
		{"/ui/items", "items", "#bulk-retry"},
		{"/ui/items?phase=failed&q=protected", "items", "form.filters button[type=submit]"},
		{"/ui/items/" + failed, "timeline", "#retry"},
		{"/ui/sessions", "sessions", `#sessions a[href^="/ui/allocations?session="]`},
		{"/ui/work", "work", "a.work-link"},
		{"/ui/leases?all=true", "leases", "a.session-link"},
		{"/ui/allocations", "allocations", "a.work-link"},
		{"/ui/forges", "forge-hooks", `header nav a[href="/ui/items"]`},
		{"/ui/queues", "", `header nav a[href="/ui/items"]`},
		{"/ui/nothing-here", "", `a[href="/ui/items"]`},
	} {
		ready := chromedp.WaitVisible(chromedp.CSS("main"))
		if page.ready != "" {
			ready = chromedp.WaitVisible(chromedp.ID(page.ready))
		}
		run(t, ctx, "open "+page.path, chromedp.Navigate(w.base+page.path), ready)
		checkPage(t, ctx, page.path)
		tabTo(t, ctx, page.action)
	}
	run(t, ctx, "ask to retry the failed items", chromedp.Navigate(w.base+"/ui/items?phase=failed"),
		chromedp.WaitVisible(chromedp.ID("bulk-retry")), chromedp.Click(chromedp.ID("bulk-retry")), chromedp.WaitVisible(chromedp.ID("bulk-question")))
	checkPage(t, ctx, "the bulk retry's confirmation")
	tabTo(t, ctx, "#confirm")
}

// The checks of pageProblems find what they look for: a page made wide,
// a wrapped time, an unlabelled input, grey on grey and an unreachable
// button are each reported.
func TestThePageChecksFindEachProblemTheyLookFor(t *testing.T) {
	w := newWorld(t, "")
	ctx := browser(t)
	run(t, ctx, "open the login page", chromedp.Navigate(w.base+"/ui/login"), chromedp.WaitVisible(chromedp.ID("token")))
	// Styles are set through the CSSOM: the Content-Security-Policy
	// ignores style attributes.
	value(t, ctx, "spoil the page", chromedp.Evaluate[bool](`(() => {
		const add = (tag, text, style) => {
			const el = document.createElement(tag);
			el.textContent = text;
			Object.assign(el.style, style);
			document.querySelector("main").appendChild(el);
			return el;
		};
		add("div", "wide", {width: "2000px"});
		const p = add("p", "", {width: "3em"});
		const time = document.createElement("time");
		time.textContent = "2026-03-02 10:00:00 UTC";
		time.style.whiteSpace = "normal";
		p.appendChild(time);
		add("input", "", {});
		add("p", "grey on grey", {color: "#bbb", background: "#ccc"});
		add("button", "unreachable", {}).tabIndex = -1;
		return true;
	})()`))
	problems := strings.Join(value(t, ctx, "check the spoilt page", chromedp.Evaluate[[]string](pageProblems)), "\n")
	for _, want := range []string{"scrolls sideways", "a time wraps", "a form control has no label", "grey on grey", "the keyboard cannot reach"} {
		if !strings.Contains(problems, want) {
			t.Errorf("the checks do not report %q:\n%s", want, problems)
		}
	}
}
