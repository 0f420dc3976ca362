package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/config"
)

// defaultAuditDir is where serve without a config file archives audit
// entries, beside its database in the working directory.
const defaultAuditDir = "workqueue-audit"

// openAudit builds the configured audit sinks (DDR-28) and starts the
// archives among them, which closeAudit flushes. A sink's later failure
// never stops the service; only a configuration that cannot be used
// (an s3 credential unset) refuses the start.
func (m *Main) openAudit() (wq.AuditSink, error) {
	a := m.Config.Audit
	counts := m.AuditMetrics
	if counts == nil && m.Metrics != nil { // a nil *metrics.Metrics in the interface would not be nil
		counts = m.Metrics
	}
	var sinks audit.Multi
	for i, s := range a.Sinks {
		field := fmt.Sprintf("audit.sinks[%d]", i)
		var store audit.ObjectStore
		switch s.Kind {
		case config.AuditLog:
			sinks = append(sinks, audit.NewLogSink(m.Log))
			continue
		case config.AuditDir:
			store = audit.DirStore{Root: s.Path}
		case config.AuditS3:
			access, secret, err := s.Credentials(field)
			if err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
			if store, err = audit.NewS3Store(audit.S3Options{Endpoint: s.Endpoint, Bucket: s.Bucket, Region: s.Region,
				AccessKey: access, SecretKey: secret, Insecure: s.Insecure}); err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
		default:
			return nil, fmt.Errorf("%s: unknown kind %q", field, s.Kind) // Validate refuses it first
		}
		archive := audit.NewArchive(store, audit.ArchiveOptions{Name: s.Kind, Prefix: s.Prefix, Instance: m.Config.AuditInstance(),
			BatchBytes: a.BatchBytes, BatchInterval: time.Duration(a.BatchInterval),
			BufferEntries: a.BufferEntries, BufferBytes: a.BufferBytes,
			Clock: m.Clock, Log: m.Log, Metrics: counts})
		archive.Start()
		m.archives = append(m.archives, archive)
		m.Log.Info("audit archive", "sink", s.Kind, "instance", archive.Instance(), "prefix", s.Prefix)
		sinks = append(sinks, archive)
	}
	if len(sinks) == 1 {
		return sinks[0], nil
	}
	return sinks, nil
}

// closeAudit writes what the archives hold, after the engine has stopped
// (its last entries included), within a bound so that an unreachable
// bucket cannot hold up shutdown for long.
func (m *Main) closeAudit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, a := range m.archives {
		if err := a.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
