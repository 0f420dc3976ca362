package config

import (
	"net"
)

// Metrics configures the Prometheus exposition (GET /metrics, issue 15).
type Metrics struct {
	// Enabled serves /metrics and collects the metrics (default true).
	// Off, nothing is measured and /metrics is not served.
	Enabled bool `yaml:"enabled"`
	// Listen, when set, is a second address (host:port) serving only
	// /metrics, without authentication, for a scraper that holds no
	// token; keep it on loopback or a network only scrapers reach. The
	// main listener serves /metrics either way, to callers with the
	// "metrics" permission.
	Listen string `yaml:"listen"`
}

func (c Config) validateMetrics(bad func(field, format string, args ...any)) {
	m := c.Metrics
	if m.Listen == "" {
		return
	}
	if !m.Enabled {
		bad("metrics.listen", "set while metrics.enabled is false")
	}
	if _, port, err := net.SplitHostPort(m.Listen); err != nil || port == "" {
		bad("metrics.listen", "want host:port, such as 127.0.0.1:9090, got %q", m.Listen)
	} else if m.Listen == c.Listen {
		bad("metrics.listen", "must differ from listen (%s): the main listener serves /metrics already, behind the \"metrics\" permission", c.Listen)
	}
}
