package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/engine"
)

// The configuration's processing defaults are the engine's own: a file
// that sets nothing runs the engine as engine.DefaultConfig does (config
// links no engine, so the two are held equal here, where both meet).
func TestTheProcessingDefaultsAreTheEngines(t *testing.T) {
	got, want := engineConfig(config.Default()), engine.DefaultConfig()
	want.Heartbeat = want.Lease / 3
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("engine config from the defaults (-engine +config):\n%s", diff)
	}
}

// A file's processing section and handled_types reach the engine, an
// unset heartbeat as a third of the lease.
func TestTheProcessingSectionConfiguresTheEngine(t *testing.T) {
	w := assemble()
	cfg, err := config.Parse(strings.NewReader("handled_types: [example]\nprocessing: {workers: 3, lease: 30s}\n"), w.known())
	if err != nil {
		t.Fatal(err)
	}
	e := engineConfig(cfg)
	if e.Workers != 3 || e.Lease != 30*time.Second || e.Heartbeat != 10*time.Second || len(e.HandledTypes) != 1 || e.HandledTypes[0] != "example" {
		t.Errorf("engine config %+v", e)
	}
}

// The world names each kind, type and driver once, and what a
// configuration may name is exactly what it links.
func TestTheWorldIsWhatTheConfigurationMayName(t *testing.T) {
	w := assemble()
	k := w.known()
	if got := strings.Join(k.ForgeKinds, ","); got != "gitea,gitlab" {
		t.Errorf("forge kinds %s", got)
	}
	var types []string
	for _, t := range k.ItemTypes {
		types = append(types, t.Name)
	}
	if got := strings.Join(types, ","); got != "example,mr" {
		t.Errorf("item types %s", got)
	}
	if got := strings.Join(w.drivers.Kinds(), ","); got != "postgres,sqlite" {
		t.Errorf("drivers %s", got)
	}
}
