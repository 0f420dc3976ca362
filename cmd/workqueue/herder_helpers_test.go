package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/herder"
	"github.com/workqueue-dev/workqueue/internal/eventually"
	"github.com/workqueue-dev/workqueue/mr"
)

// Helpers shared by the herder's end-to-end tests, whichever forge runs
// the CI (herder_gitea_test.go, herder_gitlab_test.go): the herder
// section they serve with, and readers of what the service decided, as
// its API and its status note show it.

// herderRunnerFailure is the log line of a runner hiccup, the transient
// failure the tests' one matcher recognises.
const herderRunnerFailure = "ERROR: Job failed: runner system failure"

// herderUnknownFailure is a log line no matcher recognises: a real test
// failure, which a retry would not fix.
const herderUnknownFailure = "--- FAIL: TestParse"

// herderMatcherName is the name of the tests' one matcher.
const herderMatcherName = "runner-system-failure"

// herderSection is a herder configuration with one matcher for
// herderRunnerFailure, retry_delays delays and retry_limit limit.
func herderSection(limit int, delays ...time.Duration) config.Herder {
	h := config.Herder{
		Matchers: []herder.Matcher{{Name: herderMatcherName, Description: "the runner failed, not the job",
			Messages: []string{herderRunnerFailure}}},
		RetryLimit: &limit,
	}
	for _, d := range delays {
		h.RetryDelays = append(h.RetryDelays, herder.Duration(d))
	}
	return h
}

// herderCIRetry reads needs_ci_retry of an item as GET /api/v1/items/{id}
// shows it; ok is false when the item has no such row (no job failed).
func herderCIRetry(t testing.TB, item map[string]any) (d mr.CIRetryDetail, status string, ok bool) {
	t.Helper()
	dims, _ := item["dimensions"].([]any)
	for _, x := range dims {
		m, _ := x.(map[string]any)
		if m["dimension"] != mr.DimCIRetry {
			continue
		}
		status, _ = m["status"].(string)
		if raw, found := m["detail"]; found && raw != nil {
			b, _ := json.Marshal(raw)
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatalf("needs_ci_retry's detail %s: %v", b, err)
			}
		}
		return d, status, true
	}
	return d, "", false
}

// herderDecisions are the decisions recorded on an item, oldest first.
func herderDecisions(t testing.TB, item map[string]any) []mr.CIDecision {
	t.Helper()
	d, _, _ := herderCIRetry(t, item)
	return d.Decisions
}

// herderDecided is a waitItem condition: the item has at least n
// decisions.
func herderDecided(t testing.TB, n int) func(map[string]any) bool {
	return func(it map[string]any) bool { return len(herderDecisions(t, it)) >= n }
}

// herderNoteRow is the status note's row for the CI retries: made
// retries, and the last decision. The note escapes a table cell's pipes
// and angle brackets; the tests' names and reasons hold no secret, so
// nothing else of the note's escaping applies.
func herderNoteRow(made int, last mr.CIDecision) string {
	esc := strings.NewReplacer("\r", " ", "\n", " ", "|", "\\|", "<", "&lt;", ">", "&gt;")
	return fmt.Sprintf("| CI retries | %d made; last: job %s (%d) %s: %s |", made, esc.Replace(last.Name), last.JobID,
		esc.Replace(last.Outcome), esc.Replace(last.Why))
}

// herderStays checks that cond holds, every eventually.Interval, for d:
// what must not happen (a rerun after a decision not to) has had the
// time to, within reason. It fails at the first look where cond does
// not hold.
func herderStays(t testing.TB, d time.Duration, what string, cond func() (ok bool, state any)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(eventually.Interval) {
		if ok, state := cond(); !ok {
			t.Fatalf("%s: no longer so (now: %v)", what, state)
		}
	}
}
