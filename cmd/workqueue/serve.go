package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/audit"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/httpapi"
	"github.com/workqueue-dev/workqueue/store"
)

// Main is one workqueue serve process: the store, the engine and the HTTP
// server, wired from a configuration.
type Main struct {
	Config config.Config
	Log    *slog.Logger

	Store  wq.Store
	Engine *engine.Engine
	HTTP   *http.Server

	listener  net.Listener
	served    chan error
	closeOnce sync.Once
	closeErr  error
}

// NewMain returns a process for cfg; Run starts it.
func NewMain(cfg config.Config, log *slog.Logger) *Main {
	return &Main{Config: cfg, Log: log}
}

// Run opens the store, migrates it if configured to, starts the engine and
// starts serving HTTP. It returns once everything is running; Close stops
// it.
func (m *Main) Run(ctx context.Context) error {
	m.Log.Info("starting workqueue", "config", m.Config.Redacted())
	s, err := store.Open(ctx, m.Config.Database)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	m.Store = s
	if m.Config.AutoMigrate {
		applied, err := s.Migrate(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if len(applied) > 0 {
			m.Log.Info("applied migrations", "versions", applied)
		}
	}
	if applied, latest, err := s.SchemaVersion(ctx); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	} else if applied != latest {
		return fmt.Errorf("database schema at version %d, want %d: run workqueue migrate", applied, latest)
	}

	m.Engine, err = engine.New(m.Config.Engine(), s, nil, audit.NewLogSink(m.Log), m.Log)
	if err != nil {
		return err
	}
	m.Engine.Register(example.Type(example.Options{StepDelay: time.Duration(m.Config.Example.StepDelay)}))
	if err := m.Engine.Start(ctx); err != nil {
		return err
	}

	m.listener, err = net.Listen("tcp", m.Config.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.HTTP = &http.Server{
		Handler:           httpapi.NewServer(s, m.Log),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Log.Handler(), slog.LevelWarn),
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.HTTP.Serve(m.listener) }()
	m.Log.Info("listening", "addr", m.Addr())
	return nil
}

// Addr is the address the HTTP server listens on (useful with port 0).
func (m *Main) Addr() string {
	if m.listener == nil {
		return ""
	}
	return m.listener.Addr().String()
}

// Close shuts down in order: stop taking requests, stop the engine within
// its grace period (releasing leases), close the database (DDR-36). It is
// safe to call more than once.
func (m *Main) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	var errs []error
	if m.HTTP != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.HTTP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		cancel()
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if m.Engine != nil {
		m.Engine.Stop(context.Background())
	}
	if m.Store != nil {
		if err := m.Store.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
