package metrics

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	wq "github.com/workqueue-dev/workqueue"
)

// countEvery bounds how often a scrape reads the store: scrapes within
// it see the last counts. countTimeout bounds one read.
const (
	countEvery   = 15 * time.Second
	countTimeout = 5 * time.Second
)

// ControlPlaneCounts are the control plane's sizes at one time.
type ControlPlaneCounts struct {
	ActiveSessions int64
	LeasesByState  map[string]int64
}

var (
	itemsDesc = prometheus.NewDesc("workqueue_items",
		"Items by type and phase.", []string{"item_type", "phase"}, nil)
	backlogDesc = prometheus.NewDesc("workqueue_items_actionable",
		"Active items flagged actionable and not backing off: the backlog the workers have to take, by item type.",
		[]string{"item_type"}, nil)
	oldestDesc = prometheus.NewDesc("workqueue_items_oldest_actionable_age_seconds",
		"Age of the oldest actionable item since its last write, by item type.", []string{"item_type"}, nil)
	sessionsDesc = prometheus.NewDesc("workqueue_cp_sessions_active",
		"Control plane agent sessions not ended.", nil, nil)
	leasesDesc = prometheus.NewDesc("workqueue_cp_leases",
		"Control plane leases by state (active, released, expired, abandoned, reclaimed).", []string{"state"}, nil)
)

// WatchItems reports the queue's sizes (workqueue_items,
// workqueue_items_actionable, workqueue_items_oldest_actionable_age_seconds)
// from counter, read at scrape time at most every 15 seconds; now is the
// clock the ages are measured with (nil: time.Now).
func (m *Metrics) WatchItems(counter wq.ItemCounter, now func() time.Time, log *slog.Logger) {
	if m == nil || counter == nil {
		return
	}
	if now == nil {
		now = time.Now
	}
	m.reg.MustRegister(&cachedCollector[wq.ItemCounts]{
		descs: []*prometheus.Desc{itemsDesc, backlogDesc, oldestDesc},
		read:  func(ctx context.Context) (wq.ItemCounts, error) { return counter.CountItems(ctx, now()) },
		emit: func(c wq.ItemCounts, ch chan<- prometheus.Metric) {
			// Counts name only what exists: every known type (and every
			// type with items) is reported in every phase and in the
			// backlog, at zero where there is nothing, so that an alert
			// on them has a series to fire on.
			types := m.knownItemTypes()
			phases := map[[2]string]int64{}
			for _, p := range c.Phases {
				phases[[2]string{p.ItemType, string(p.Phase)}] += p.Count
				if !slices.Contains(types, p.ItemType) {
					types = append(types, p.ItemType)
				}
			}
			backlog := map[string]wq.ActionableCount{}
			for _, a := range c.Actionable {
				backlog[a.ItemType] = a
				if !slices.Contains(types, a.ItemType) {
					types = append(types, a.ItemType)
				}
			}
			t := now()
			for _, typ := range types {
				for _, phase := range []wq.Phase{wq.PhaseActive, wq.PhaseCompleted, wq.PhaseFailed, wq.PhaseCancelled} {
					ch <- prometheus.MustNewConstMetric(itemsDesc, prometheus.GaugeValue, float64(phases[[2]string{typ, string(phase)}]), typ, string(phase))
				}
				a, ok := backlog[typ]
				age := 0.0
				if ok {
					age = max(t.Sub(a.Oldest), 0).Seconds()
				}
				ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(a.Count), typ)
				ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age, typ)
			}
		},
		failed: func() { m.storeErrors.WithLabelValues("items").Inc() },
		log:    log,
	})
}

// WatchControlPlane reports the control plane's sessions and leases
// (workqueue_cp_sessions_active, workqueue_cp_leases) from count, read at
// scrape time at most every 15 seconds.
func (m *Metrics) WatchControlPlane(count func(ctx context.Context) (ControlPlaneCounts, error), log *slog.Logger) {
	if m == nil || count == nil {
		return
	}
	m.reg.MustRegister(&cachedCollector[ControlPlaneCounts]{
		descs: []*prometheus.Desc{sessionsDesc, leasesDesc},
		read:  count,
		emit: func(c ControlPlaneCounts, ch chan<- prometheus.Metric) {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(c.ActiveSessions))
			// Every known state (ControlPlane), at zero where no lease
			// is in it, and any other the store counted.
			states := m.knownLeaseStates()
			for state := range c.LeasesByState {
				if !slices.Contains(states, state) {
					states = append(states, state)
				}
			}
			for _, state := range states {
				ch <- prometheus.MustNewConstMetric(leasesDesc, prometheus.GaugeValue, float64(c.LeasesByState[state]), state)
			}
		},
		failed: func() { m.storeErrors.WithLabelValues("control_plane").Inc() },
		log:    log,
	})
}

// cachedCollector reads a value at scrape time, at most every countEvery,
// and keeps the last value it read when a read fails: a slow or broken
// database never makes a scrape slow or empty.
type cachedCollector[T any] struct {
	descs  []*prometheus.Desc
	read   func(ctx context.Context) (T, error)
	emit   func(T, chan<- prometheus.Metric)
	failed func()
	log    *slog.Logger

	mu     sync.Mutex
	last   T
	have   bool
	readAt time.Time
}

func (c *cachedCollector[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *cachedCollector[T]) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.have || time.Since(c.readAt) >= countEvery {
		ctx, cancel := context.WithTimeout(context.Background(), countTimeout)
		v, err := c.read(ctx)
		cancel()
		c.readAt = time.Now() // a failure waits as long as a success: no retry storm on a sick database
		if err != nil {
			c.failed()
			if c.log != nil {
				c.log.Warn("metrics: reading counts from the store failed; reporting the last ones", "err", err)
			}
		} else {
			c.last, c.have = v, true
		}
	}
	if c.have {
		c.emit(c.last, ch)
	}
}
