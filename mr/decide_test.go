package mr_test

import (
	"testing"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/mr"
)

func TestDecidePriorityOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	done := func(names ...string) wq.Dimensions {
		d := wq.Dimensions{}
		for _, n := range names {
			d[wq.DimensionKey{Dimension: n}] = wq.Dimension{Status: wq.StatusFalse}
		}
		return d
	}
	deferred := func(d wq.Dimensions, name string, until time.Time) wq.Dimensions {
		d[wq.DimensionKey{Dimension: name}] = wq.Dimension{Status: wq.StatusTrue, PendingUntil: until}
		return d
	}
	for _, tc := range []struct {
		name  string
		phase wq.Phase
		dims  wq.Dimensions
		want  string
	}{
		{"a new item ensures its merge request first", wq.PhaseActive, wq.Dimensions{}, mr.ActEnsureMR},
		{"then checks for an empty diff", wq.PhaseActive, done(mr.DimMR), mr.ActCheckEmptyDiff},
		{"then posts the dashboard note", wq.PhaseActive, done(mr.DimMR, mr.DimEmptyCheck), mr.ActPostDashboard},
		{"then reconciles", wq.PhaseActive, done(mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard), mr.ActReconcileMR},
		{"nothing when all is done", wq.PhaseActive, done(mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard, mr.DimReconcile), ""},
		{"a deferred reconcile waits", wq.PhaseActive, deferred(done(mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard), mr.DimReconcile, now.Add(time.Minute)), ""},
		{"a due reconcile runs", wq.PhaseActive, deferred(done(mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard), mr.DimReconcile, now), mr.ActReconcileMR},
		{"a due empty check comes before a reconcile", wq.PhaseActive, deferred(done(mr.DimMR, mr.DimDashboard), mr.DimEmptyCheck, now.Add(-time.Second)), mr.ActCheckEmptyDiff},
		{"an update ensures again before anything else", wq.PhaseActive, deferred(done(mr.DimEmptyCheck, mr.DimDashboard, mr.DimReconcile), mr.DimMR, time.Time{}), mr.ActEnsureMR},
		{"a cancel comes before everything", wq.PhaseActive, deferred(wq.Dimensions{}, mr.DimClose, time.Time{}), mr.ActCloseMR},
		{"a cancel comes before pushing new content", wq.PhaseActive, deferred(deferred(done(), mr.DimMR, time.Time{}), mr.DimClose, time.Time{}), mr.ActCloseMR},
		{"a missing needs_close row asks for no cancel", wq.PhaseActive, done(mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard, mr.DimReconcile), ""},
		{"a handled cancel asks for nothing", wq.PhaseActive, done(mr.DimClose, mr.DimMR, mr.DimEmptyCheck, mr.DimDashboard, mr.DimReconcile), ""},
		{"terminal items get nothing", wq.PhaseCompleted, wq.Dimensions{}, ""},
		{"failed items get nothing", wq.PhaseFailed, wq.Dimensions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mr.Decide(&wq.Item{Phase: tc.phase, Dimensions: tc.dims}, now); got != tc.want {
				t.Errorf("Decide = %q, want %q", got, tc.want)
			}
		})
	}
}
