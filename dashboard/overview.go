package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/auth"
)

// The first page (issue 55) pictures the last hour: the backlog (items
// not yet finished), the throughput (items finished each minute) and
// the latency (how long the items that finished took, from submission
// to their end). It reads them from the items themselves, their
// created_at and finished_at, through the same scoped list as the items
// page: so it is right from the first minute after a restart, the same
// on every instance, holds a person narrowed to some projects to theirs,
// and costs nothing while nobody looks (DESIGN: sizes are counted when
// asked, never by a background loop). The charts are SVG drawn here;
// a small script of the dashboard's own (static/refresh.js) fetches the
// picture again every pictureRefresh without reloading the page.

const (
	// pictureMinutes is how far back the picture reaches.
	pictureMinutes = 60
	// pictureRefresh is how often an open first page fetches its
	// picture again, unless Options.PictureRefresh says otherwise.
	pictureRefresh = 30 * time.Second
)

// pictureEvery is how often, in seconds, the first page fetches its
// picture again.
func (d *Dashboard) pictureEvery() int {
	if d.o.PictureRefresh > 0 {
		return max(1, int(d.o.PictureRefresh/time.Second))
	}
	return int(pictureRefresh / time.Second)
}

// picture is what the first page draws.
type picture struct {
	From, To time.Time
	// Backlog, Throughput and Latency are the three charts.
	Backlog, Throughput, Latency chart
	// Now: the backlog now, what finished in the hour (and how many of
	// those failed), the median time they took.
	ActiveNow, FinishedHour, FailedHour int
	MedianLatency                       time.Duration
	// Partial: a list read hit its bound (the newest MaxListLimit items
	// of a phase), so older items are left out of the counts.
	Partial bool
	// Empty: nothing was submitted or finished in the hour and nothing
	// is active.
	Empty bool
}

// chart is one small SVG chart: a line or bars over pictureMinutes
// minutes, in a viewBox of chartWidth × chartHeight.
type chart struct {
	Title, Unit string
	Max         string // the top of the scale, in words
	Line        string // polyline points; "" for none
	Area        string // the polygon under the line; "" for none
	Bars        []bar
	Dots        []dot
	Baseline    float64
}

type bar struct {
	X, Y, W, H float64
	Class      string
	Label      string // what a hover says
}

type dot struct {
	X, Y  float64
	Label string
}

const (
	chartWidth  = 360.0
	chartHeight = 120.0
	chartLeft   = 4.0
	chartTop    = 6.0
	chartBottom = 104.0 // the baseline; the minutes' labels go under it
)

// x is where minute i (0 the oldest, pictureMinutes-1 the newest) is
// drawn.
func chartX(i float64) float64 {
	return chartLeft + (chartWidth-2*chartLeft)*i/float64(pictureMinutes)
}

// chartY is where v is drawn on a scale whose top is max.
func chartY(v, max float64) float64 {
	if max <= 0 {
		return chartBottom
	}
	return chartBottom - (chartBottom-chartTop)*v/max
}

// niceMax rounds a chart's top up to 1, 2 or 5 times a power of ten, so
// that the scale reads as a round number.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	step := 1.0
	for step*10 <= v {
		step *= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*step {
			return m * step
		}
	}
	return 10 * step
}

// readPicture reads the items of the last hour the caller may see and
// draws the picture at now.
func (d *Dashboard) readPicture(ctx context.Context, caller *auth.Caller, now time.Time) (*picture, error) {
	to := now.Truncate(time.Minute).Add(time.Minute)
	from := to.Add(-pictureMinutes * time.Minute)
	p := &picture{From: from, To: to}
	var items []*api.Item
	for _, phase := range []wq.Phase{wq.PhaseActive, wq.PhaseCompleted, wq.PhaseFailed, wq.PhaseCancelled} {
		list, next, err := d.o.Items.List(ctx, caller, wq.ItemFilter{Phase: phase, Limit: wq.MaxListLimit})
		if err != nil {
			return nil, fmt.Errorf("read the %s items: %w", phase, err)
		}
		p.Partial = p.Partial || next != ""
		items = append(items, list...)
	}
	return drawPicture(p, items, now), nil
}

// drawPicture fills p from items at now.
func drawPicture(p *picture, items []*api.Item, now time.Time) *picture {
	var backlog [pictureMinutes]int  // unfinished at the end of each minute
	var finished [pictureMinutes]int // finished in each minute
	var failed [pictureMinutes]int   // of those, failed
	var took [pictureMinutes][]time.Duration
	var all []time.Duration
	minute := func(t time.Time) int { return int(t.Sub(p.From) / time.Minute) }
	for _, it := range items {
		if it.Phase == wq.PhaseActive {
			p.ActiveNow++
		}
		for i := range pictureMinutes {
			end := p.From.Add(time.Duration(i+1) * time.Minute)
			if end.After(now) {
				end = now
			}
			if !it.CreatedAt.After(end) && (it.FinishedAt == nil || it.FinishedAt.After(end)) {
				backlog[i]++
			}
		}
		if it.FinishedAt == nil || it.FinishedAt.Before(p.From) || it.FinishedAt.After(now) {
			continue
		}
		i := minute(*it.FinishedAt)
		if i < 0 || i >= pictureMinutes {
			continue
		}
		finished[i]++
		p.FinishedHour++
		if it.Phase == wq.PhaseFailed {
			failed[i]++
			p.FailedHour++
		}
		if it.Phase == wq.PhaseCompleted {
			d := it.FinishedAt.Sub(it.CreatedAt)
			took[i] = append(took[i], d)
			all = append(all, d)
		}
	}
	p.MedianLatency = median(all)
	p.Empty = p.ActiveNow == 0 && p.FinishedHour == 0 && slices.Max(backlog[:]) == 0

	// The backlog: a line over the minutes, the area under it filled.
	top := niceMax(float64(slices.Max(backlog[:])))
	p.Backlog = chart{Title: "Backlog", Unit: "items not finished", Max: fmt.Sprintf("%g", top), Baseline: chartBottom}
	var pts []string
	for i, n := range backlog {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", chartX(float64(i)+1), chartY(float64(n), top)))
	}
	p.Backlog.Line = strings.Join(pts, " ")
	p.Backlog.Area = fmt.Sprintf("%.1f,%.1f %s %.1f,%.1f", chartX(1), chartBottom, p.Backlog.Line, chartX(pictureMinutes), chartBottom)

	// The throughput: a bar a minute, its failed part in red.
	top = niceMax(float64(slices.Max(finished[:])))
	p.Throughput = chart{Title: "Throughput", Unit: "items finished a minute", Max: fmt.Sprintf("%g", top), Baseline: chartBottom}
	w := (chartWidth-2*chartLeft)/pictureMinutes - 1
	for i := range pictureMinutes {
		if finished[i] == 0 {
			continue
		}
		at := p.From.Add(time.Duration(i) * time.Minute).UTC().Format("15:04")
		ok := finished[i] - failed[i]
		y := chartY(float64(ok), top)
		if ok > 0 {
			p.Throughput.Bars = append(p.Throughput.Bars, bar{X: chartX(float64(i)), Y: y, W: w, H: chartBottom - y, Class: "ok",
				Label: fmt.Sprintf("%s UTC: %d finished", at, ok)})
		}
		if failed[i] > 0 {
			fy := chartY(float64(finished[i]), top)
			p.Throughput.Bars = append(p.Throughput.Bars, bar{X: chartX(float64(i)), Y: fy, W: w, H: y - fy, Class: "bad",
				Label: fmt.Sprintf("%s UTC: %d failed", at, failed[i])})
		}
	}

	// The latency: the median time the items completed in each minute
	// took, a dot a minute with a line through them.
	var medians [pictureMinutes]time.Duration
	var most time.Duration
	for i := range pictureMinutes {
		medians[i] = median(took[i])
		most = max(most, medians[i])
	}
	unit, scale := "min", float64(time.Minute)
	if most < 2*time.Minute {
		unit, scale = "s", float64(time.Second)
	}
	top = niceMax(float64(most) / scale)
	p.Latency = chart{Title: "Latency", Unit: "median time from submission to completion", Max: fmt.Sprintf("%g %s", top, unit), Baseline: chartBottom}
	pts = nil
	for i := range pictureMinutes {
		if len(took[i]) == 0 {
			continue
		}
		x, y := chartX(float64(i)+0.5), chartY(float64(medians[i])/scale, top)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		p.Latency.Dots = append(p.Latency.Dots, dot{X: x, Y: y, Label: fmt.Sprintf("%s UTC: %d completed, median %s",
			p.From.Add(time.Duration(i)*time.Minute).UTC().Format("15:04"), len(took[i]), strings.ReplaceAll(duration(medians[i]), "\u00a0", " "))})
	}
	if len(pts) > 1 {
		p.Latency.Line = strings.Join(pts, " ")
	}
	return p
}

// median is the middle of ds; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type overviewPage struct {
	Picture *picture
	// CanRead: the person may list items; without it there is no
	// picture of them.
	CanRead bool
	// RefreshEvery is how often, in seconds, the picture is fetched again.
	RefreshEvery int
}

func (d *Dashboard) overviewPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := overviewPage{CanRead: s.caller.Can(auth.Read) || s.caller.Can(auth.Agent), RefreshEvery: d.pictureEvery()}
	if p.CanRead {
		var err error
		if p.Picture, err = d.readPicture(r.Context(), s.caller, d.o.Clock.Now()); err != nil {
			d.fail(w, r, s, err)
			return
		}
	}
	d.render(w, r, s, http.StatusOK, "overview", p)
}

// overviewPicture answers the picture alone, the fragment the first
// page's script swaps in.
func (d *Dashboard) overviewPicture(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.caller.Can(auth.Read) && !s.caller.Can(auth.Agent) {
		d.fail(w, r, s, wq.Errorf(wq.EFORBIDDEN, "%s may not list items: the %q or %q permission is required", s.caller.Identity, auth.Read, auth.Agent))
		return
	}
	pic, err := d.readPicture(r.Context(), s.caller, d.o.Clock.Now())
	if err != nil {
		d.fail(w, r, s, err)
		return
	}
	d.renderFragment(w, r, "overview", "picture", view{Now: d.o.Clock.Now(), Page: overviewPage{Picture: pic, CanRead: true,
		RefreshEvery: d.pictureEvery()}})
}

// renderFragment executes one template of a page, without the layout:
// a part of a page that a script fetches again.
func (d *Dashboard) renderFragment(w http.ResponseWriter, _ *http.Request, page, name string, v view) {
	var buf strings.Builder
	if err := d.pages[page].ExecuteTemplate(&buf, name, v); err != nil {
		id := randomString()[:16]
		d.log.Error("render fragment", "request_id", id, "page", page, "fragment", name, "err", err)
		http.Error(w, "internal error (request id "+id+")", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(buf.String()))
}
