package herder_test

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/herder"
)

// FuzzParse feeds arbitrary documents to Parse and Compile. Neither may
// panic; every problem they report must be a *FieldError naming a field;
// rules that compile must match without panicking, read the log at most
// once, and survive a round trip through YAML (the config's start-up log
// prints them so).
func FuzzParse(f *testing.F) {
	f.Add([]byte(ckiRules), "ERROR: Job failed: exit code 137\n", "script_failure")
	f.Add([]byte("matchers:\n  - {name: a, messages: ['/x{2,3}$/'], tail_lines: 1}\n"), "xx\n", "")
	f.Add([]byte("matchers: [{name: a, matchers: [{name: b, job_name: /^b/}]}]\nretry_delays: [1s]\n"), "", "runner_system_failure")
	f.Add([]byte("a: &x [*x]\n"), "", "")
	f.Add([]byte("matchers: [&m {name: a, failure_reason: x}, *m]\n"), "", "x")
	f.Fuzz(func(t *testing.T, doc []byte, log, reason string) {
		rules, err := herder.Parse(doc)
		if err != nil {
			requireFieldErrors(t, "Parse", err)
			return
		}
		h, err := rules.Compile()
		if err != nil {
			requireFieldErrors(t, "Compile", err)
			return
		}
		calls := 0
		job := wq.CIJob{Name: "build x86_64", Status: wq.CIJobFailed, FailureReason: reason, Retries: len(log) % 5}
		v, err := h.Match(job, func() (string, error) { calls++; return log, nil })
		if err != nil {
			t.Fatalf("Match: %v", err)
		}
		if calls > 1 || v.TraceRead != (calls == 1) {
			t.Fatalf("trace called %d times, TraceRead %v", calls, v.TraceRead)
		}
		if v.Retry && (!v.Matched || job.Retries >= v.RetryLimit) || v.Delay < 0 || (!v.Retry && v.Delay != 0) {
			t.Fatalf("inconsistent verdict %+v for %d retries", v, job.Retries)
		}
		if v.Why == "" {
			t.Fatal("verdict without a reason")
		}
		out, err := yaml.Marshal(rules)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		again, err := herder.Parse(out)
		if err != nil {
			t.Fatalf("Parse of marshalled rules %q: %v", out, err)
		}
		h2, err := again.Compile()
		if err != nil {
			t.Fatalf("Compile of marshalled rules %q: %v", out, err)
		}
		v2, err := h2.Match(job, func() (string, error) { return log, nil })
		if err != nil || v2 != v {
			t.Fatalf("marshalled rules decide %+v, %v; the original %+v", v2, err, v)
		}
	})
}

func requireFieldErrors(t *testing.T, op string, err error) {
	t.Helper()
	fes := herder.FieldErrors(err)
	if len(fes) == 0 {
		t.Fatalf("%s: error without a field: %v", op, err)
	}
	for _, fe := range fes {
		if fe.Field == "" || fe.Problem == "" {
			t.Fatalf("%s: field error %#v lacks a field or a problem", op, fe)
		}
	}
	var fe *herder.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("%s: errors.As finds no *FieldError in %v", op, err)
	}
}
