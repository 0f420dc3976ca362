package dashboard

import (
	"fmt"
	"html/template"
	"time"
)

// Times on the dashboard are said relative to now ("4 min ago"), with
// the absolute time in UTC on hover and in the element's datetime, and
// never wrap mid-string (issue 55): a person scans ages, and checks the
// exact time when they need it.

// absolute is a time as the dashboard writes it in full: UTC to the
// second, its space non-breaking.
func absolute(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02\u00a015:04:05\u00a0UTC")
}

// relative says t from now: "just now", "4 min ago", "in 2 h", "3 days
// ago".
func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 45*time.Second:
		if future {
			return "in a few seconds"
		}
		return "just now"
	case d < 90*time.Minute:
		s = fmt.Sprintf("%d\u00a0min", int((d + 30*time.Second).Minutes()))
	case d < 36*time.Hour:
		s = fmt.Sprintf("%d\u00a0h", int((d + 30*time.Minute).Hours()))
	default:
		s = fmt.Sprintf("%d\u00a0days", int((d+12*time.Hour).Hours()/24))
	}
	if future {
		return "in\u00a0" + s
	}
	return s + "\u00a0ago"
}

// timeElement is a <time> element saying t relative to now, with the
// absolute time as its title and datetime; "" for no time.
func timeElement(now time.Time, v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return ""
	}
	// Every piece is made here from a time: nothing in it comes from a
	// caller, so it needs no escaping.
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`,
		t.UTC().Format(time.RFC3339), absolute(t), relative(t, now)))
}

// duration says how long d is, roughly: "12 min", "3 h".
func duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d\u00a0s", int(d.Seconds()))
	case d < 90*time.Minute:
		return fmt.Sprintf("%d\u00a0min", int(d.Minutes()))
	case d < 36*time.Hour:
		return fmt.Sprintf("%.1f\u00a0h", d.Hours())
	}
	return fmt.Sprintf("%d\u00a0days", int(d.Hours()/24))
}
