package dashboard

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
)

// The picture of the last hour counts from the items' own times: the
// backlog at the end of each minute, what finished in each minute (the
// failed apart), and the median time completed items took.
func TestThePictureCountsBacklogThroughputAndLatencyFromTheItems(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	at := func(min int) *time.Time {
		v := now.Truncate(time.Minute).Add(time.Duration(min) * time.Minute)
		return &v
	}
	items := []*api.Item{
		{Phase: wq.PhaseActive, CreatedAt: *at(-120)},                          // waiting since before the hour
		{Phase: wq.PhaseActive, CreatedAt: *at(-5)},                            // submitted five minutes ago
		{Phase: wq.PhaseCompleted, CreatedAt: *at(-30), FinishedAt: at(-20)},   // took 10 min
		{Phase: wq.PhaseCompleted, CreatedAt: *at(-22), FinishedAt: at(-20)},   // took 2 min, the same minute
		{Phase: wq.PhaseFailed, CreatedAt: *at(-10), FinishedAt: at(-3)},       // failed
		{Phase: wq.PhaseCompleted, CreatedAt: *at(-300), FinishedAt: at(-200)}, // before the hour: not counted
	}
	from := now.Truncate(time.Minute).Add(time.Minute - pictureMinutes*time.Minute)
	p := drawPicture(&picture{From: from, To: from.Add(pictureMinutes * time.Minute)}, items, now)
	if p.ActiveNow != 2 || p.FinishedHour != 3 || p.FailedHour != 1 {
		t.Errorf("now %d, finished %d (failed %d); want 2, 3 (1)", p.ActiveNow, p.FinishedHour, p.FailedHour)
	}
	if p.MedianLatency != 6*time.Minute {
		t.Errorf("median latency %v, want 6m (of 10m and 2m)", p.MedianLatency)
	}
	if len(p.Throughput.Bars) != 2 || p.Throughput.Bars[1].Class != "bad" {
		t.Errorf("throughput bars %+v, want one completed minute and one failed", p.Throughput.Bars)
	}
	if len(p.Latency.Dots) != 1 {
		t.Errorf("latency dots %+v, want one minute with completions", p.Latency.Dots)
	}
	if p.Backlog.Max != "5" {
		t.Errorf("the backlog's scale tops at %s, want 5 (its most, 4, rounded up)", p.Backlog.Max)
	}
	if p.Empty {
		t.Error("a busy hour is drawn as empty")
	}
	if q := drawPicture(&picture{From: from}, nil, now); !q.Empty {
		t.Error("an hour without items is not said to be empty")
	}
}

func TestChartScalesEndOnRoundNumbers(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 1: 1, 3: 5, 7: 10, 12: 20, 180: 200, 501: 1000} {
		if got := niceMax(v); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", v, got, want)
		}
	}
}
