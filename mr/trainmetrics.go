package mr

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Train outcomes of workqueue_train_cars_total.
const (
	TrainMerged  = "merged"  // a car merged, at a head its CI passed on top of the cars ahead
	TrainEjected = "ejected" // a car broke its batch and left
	TrainRebuilt = "rebuilt" // a car was built again on the car ahead (or the target)
)

// TrainMetrics are the merge trains' metrics, by configured forge: what
// the cars did, how long a merged car waited, and how many cars the
// trains hold as this instance last saw them. Every series of a forge it
// is made for exists from the first scrape, at zero.
type TrainMetrics struct {
	outcomes *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	cars     *prometheus.GaugeVec

	mu     sync.Mutex
	trains map[[3]string]int // forge, project, target → cars last seen
}

// NewTrainMetrics registers the trains' metrics on reg, every series of
// forges at zero.
func NewTrainMetrics(reg prometheus.Registerer, forges []string) *TrainMetrics {
	m := &TrainMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_train_cars_total",
			Help: "Merge train cars by forge and outcome (merged, ejected, rebuilt)."}, []string{"forge", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_train_wait_seconds",
			Help:    "Time from a car joining its merge train to its merge, by forge.",
			Buckets: []float64{60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400}}, []string{"forge"}),
		cars: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_train_cars",
			Help: "Cars in the merge trains of a forge, as this instance last saw each train."}, []string{"forge"}),
		trains: map[[3]string]int{},
	}
	reg.MustRegister(m.outcomes, m.wait, m.cars)
	for _, f := range forges {
		for _, o := range []string{TrainMerged, TrainEjected, TrainRebuilt} {
			m.outcomes.WithLabelValues(f, o)
		}
		m.wait.WithLabelValues(f)
		m.cars.WithLabelValues(f)
	}
	return m
}

func (m *TrainMetrics) outcome(forge, outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(forge, outcome).Inc()
	}
}

func (m *TrainMetrics) merged(forge string, waited time.Duration) {
	if m != nil {
		m.outcome(forge, TrainMerged)
		m.wait.WithLabelValues(forge).Observe(waited.Seconds())
	}
}

// seen records a train's length as a ride saw it.
func (m *TrainMetrics) seen(forge, project, target string, cars int) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trains[[3]string{forge, project, target}] = cars
	sum := 0
	for k, n := range m.trains {
		if k[0] == forge {
			sum += n
		}
	}
	m.cars.WithLabelValues(forge).Set(float64(sum))
}
