package herder_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/herder"
)

// ckiRules are rules in the manner of CKI's shipped configuration: the
// transient failures GitLab CI jobs see most.
const ckiRules = `
retry_limit: 3
retry_delays: [1m, 5m, 15m]
matchers:
  - name: infra
    description: GitLab runner infrastructure failed, not the job
    matchers:
      - name: runner-system-failure
        failure_reason: runner_system_failure
      - name: timeout
        description: The job hit the runner's time limit
        messages: ['ERROR: Job failed: execution took longer than']
        tail_lines: 20
  - name: oom
    description: Killed by the kernel's OOM killer
    failure_reason: script_failure
    messages: ['ERROR: Job failed: exit code 137']
    tail_lines: 5
    retry_limit: 1
  - name: network
    description: Git could not reach the forge
    failure_reason: script_failure
    messages: ["/fatal: unable to access '[^']+': (Could not resolve host|Failed to connect)/"]
    retry_delays: [0s]
  - name: disk
    description: A build runner's disk filled up
    job_name: /^build /
    failure_reason: script_failure
    messages: [No space left on device]
    tail_lines: 50
    retry_limit: 5
    retry_delays: [10m, 30m]
`

func compile(t *testing.T, doc string) *herder.Herder {
	t.Helper()
	rules, err := herder.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	h, err := rules.Compile()
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return h
}

// logOf builds a job log: filler lines, then the given last lines.
func logOf(filler int, last ...string) string {
	var b strings.Builder
	for i := range filler {
		fmt.Fprintf(&b, "$ step %d\n", i)
	}
	for _, l := range last {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func failed(name, reason string, retries int) wq.CIJob {
	return wq.CIJob{ID: 42, Name: name, Status: wq.CIJobFailed, FailureReason: reason, Retries: retries}
}

// tracer counts the calls of a trace function.
type tracer struct {
	text  string
	err   error
	calls int
}

func (tr *tracer) trace() (string, error) {
	tr.calls++
	return tr.text, tr.err
}

// outcome is the part of a Verdict the table compares.
type outcome struct {
	Matched    bool
	Matcher    string
	Retry      bool
	RetryLimit int
	Delay      time.Duration
	TraceRead  bool
	TraceCalls int
}

func TestHerderMatch(t *testing.T) {
	t.Parallel()
	h := compile(t, ckiRules)
	tests := []struct {
		name    string
		job     wq.CIJob
		log     string
		want    outcome
		wantWhy string // a phrase Verdict.Why must contain
	}{
		{
			name:    "a runner system failure is retried without reading the log",
			job:     failed("test x86_64", "runner_system_failure", 0),
			log:     logOf(3, "anything"),
			want:    outcome{Matched: true, Matcher: "infra/runner-system-failure", Retry: true, RetryLimit: 3, Delay: time.Minute},
			wantWhy: "failure_reason runner_system_failure matches \"runner_system_failure\"",
		},
		{
			name:    "a timeout in the last lines fires whatever the failure reason",
			job:     failed("test x86_64", "job_execution_timeout", 1),
			log:     logOf(100, "ERROR: Job failed: execution took longer than 3h0m0s seconds"),
			want:    outcome{Matched: true, Matcher: "infra/timeout", Retry: true, RetryLimit: 3, Delay: 5 * time.Minute, TraceRead: true, TraceCalls: 1},
			wantWhy: "the log's last 20 lines contain \"ERROR: Job failed: execution took longer than\"",
		},
		{
			name:    "a timeout message outside the tail_lines window does not fire",
			job:     failed("test x86_64", "job_execution_timeout", 0),
			log:     logOf(0, append([]string{"ERROR: Job failed: execution took longer than 1h"}, strings.Split(strings.TrimSuffix(logOf(20), "\n"), "\n")...)...),
			want:    outcome{TraceRead: true, TraceCalls: 1},
			wantWhy: "infra/timeout: none of its 1 messages occur in the log's last 20 lines",
		},
		{
			name: "the message on the window's first line fires",
			job:  failed("test x86_64", "job_execution_timeout", 0),
			log:  logOf(0, append([]string{"ERROR: Job failed: execution took longer than 1h"}, strings.Split(strings.TrimSuffix(logOf(19), "\n"), "\n")...)...),
			want: outcome{Matched: true, Matcher: "infra/timeout", Retry: true, RetryLimit: 3, Delay: time.Minute, TraceRead: true, TraceCalls: 1},
		},
		{
			name:    "an OOM kill is retried once",
			job:     failed("test aarch64", "script_failure", 0),
			log:     logOf(50, "Killed", "ERROR: Job failed: exit code 137"),
			want:    outcome{Matched: true, Matcher: "oom", Retry: true, RetryLimit: 1, Delay: time.Minute, TraceRead: true, TraceCalls: 1},
			wantWhy: "retry 1 of 1 after 1m0s",
		},
		{
			name:    "an OOM kill already retried once is not retried again",
			job:     failed("test aarch64", "script_failure", 1),
			log:     logOf(50, "ERROR: Job failed: exit code 137"),
			want:    outcome{Matched: true, Matcher: "oom", Retry: false, RetryLimit: 1, TraceRead: true, TraceCalls: 1},
			wantWhy: "already retried 1 times, the limit is 1: not retried",
		},
		{
			name:    "a regex message matches git's unreachable forge, retried at once",
			job:     failed("prepare", "script_failure", 2),
			log:     logOf(10, "fatal: unable to access 'https://gitlab.com/redhat/kernel.git/': Could not resolve host: gitlab.com"),
			want:    outcome{Matched: true, Matcher: "network", Retry: true, RetryLimit: 3, Delay: 0, TraceRead: true, TraceCalls: 1},
			wantWhy: "the log contains /fatal: unable to access",
		},
		{
			name:    "the regex's alternatives are not literals: an other git error does not fire",
			job:     failed("prepare", "script_failure", 0),
			log:     logOf(10, "fatal: unable to access 'https://gitlab.com/x.git/': The requested URL returned error: 403"),
			want:    outcome{TraceRead: true, TraceCalls: 1},
			wantWhy: "network: none of its 1 messages occur in the log",
		},
		{
			name: "a full disk on a build job is retried, the last delay repeating",
			job:  failed("build x86_64", "script_failure", 4),
			log:  logOf(10, "cc1: fatal error: No space left on device"),
			want: outcome{Matched: true, Matcher: "disk", Retry: true, RetryLimit: 5, Delay: 30 * time.Minute, TraceRead: true, TraceCalls: 1},
		},
		{
			name:    "a full disk on a test job is not the disk matcher's: job_name must match",
			job:     failed("test x86_64", "script_failure", 0),
			log:     logOf(10, "No space left on device"),
			want:    outcome{TraceRead: true, TraceCalls: 1},
			wantWhy: "disk: job_name /^build / does not match \"test x86_64\"",
		},
		{
			name:    "a job that did not fail is not matched and its log not read",
			job:     wq.CIJob{Name: "build", Status: wq.CIJobSuccess, FailureReason: "runner_system_failure"},
			want:    outcome{},
			wantWhy: "the job is success, not failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := &tracer{text: tt.log}
			v, err := h.Match(tt.job, tr.trace)
			if err != nil {
				t.Fatal(err)
			}
			got := outcome{Matched: v.Matched, Matcher: v.Matcher, Retry: v.Retry, RetryLimit: v.RetryLimit,
				Delay: v.Delay, TraceRead: v.TraceRead, TraceCalls: tr.calls}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdict %+v (-want +got):\n%s", v, diff)
			}
			if !strings.Contains(v.Why, tt.wantWhy) {
				t.Errorf("Why = %q, want it to contain %q", v.Why, tt.wantWhy)
			}
		})
	}
}

func TestHerderDescriptionIsInheritedWhenUnset(t *testing.T) {
	t.Parallel()
	h := compile(t, ckiRules)
	v, err := h.Match(failed("test", "runner_system_failure", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "GitLab runner infrastructure failed, not the job"; v.Description != want {
		t.Errorf("Description = %q, want the parent's %q", v.Description, want)
	}
	v, err = h.Match(failed("test", "", 0), func() (string, error) { return "ERROR: Job failed: execution took longer than 1h", nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := "The job hit the runner's time limit"; v.Description != want {
		t.Errorf("Description = %q, want the child's own %q", v.Description, want)
	}
}

func TestHerderLiteralsAndRegexes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		matcher string
		job     wq.CIJob
		log     string
		want    bool
	}{
		{"a literal job_name must equal the whole name", `job_name: build`, failed("build x86_64", "", 0), "", false},
		{"a literal job_name equal to the name matches", `job_name: build x86_64`, failed("build x86_64", "", 0), "", true},
		{"a regex job_name matches anywhere in the name", `job_name: /x86_64/`, failed("build x86_64", "", 0), "", true},
		{"a literal failure_reason is not a substring match", `failure_reason: system_failure`, failed("b", "runner_system_failure", 0), "", false},
		{"a regex failure_reason may take alternatives", `failure_reason: /^(runner_system|stuck_or_timeout)_failure$/`, failed("b", "stuck_or_timeout_failure", 0), "", true},
		{"a regex failure_reason is tried on a job without one", `failure_reason: /.*/`, failed("b", "", 0), "", true},
		{"a literal message is a substring of a line", `messages: ['exit code 137']`, failed("b", "", 0), "ERROR: Job failed: exit code 137\n", true},
		{"a literal message's regex characters are literal", `messages: ['exit code 13.']`, failed("b", "", 0), "ERROR: Job failed: exit code 137\n", false},
		{"a regex message's ^ anchors at a line start", `messages: ['/^ERROR: Job failed: exit code 1[0-9]{2}$/']`, failed("b", "", 0), "one\nERROR: Job failed: exit code 137\nthree\n", true},
		{"a regex message's ^ does not match mid-line", `messages: ['/^Job failed/']`, failed("b", "", 0), "ERROR: Job failed: exit code 137\n", false},
		{"any one of the messages is enough", `messages: [nope, 'No space left on device']`, failed("b", "", 0), "write error: No space left on device\n", true},
		{"a message in colour still matches", `messages: ['ERROR: Job failed: exit code 137']`, failed("b", "", 0), "\x1b[31;1mERROR: Job failed: exit code 137\x1b[0;m\n", true},
		{"GitLab section markers are not part of a line", `messages: ['/^Cleaning up project directory/']`, failed("b", "", 0), "section_start:1700000000:cleanup_file_variables\r\x1b[0KCleaning up project directory and file based variables\r\n", true},
		{"a one-character slash is a literal, not a regex", `messages: ['/']`, failed("b", "", 0), "a/b\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := compile(t, "matchers:\n  - name: m\n    "+tt.matcher+"\n")
			v, err := h.Match(tt.job, func() (string, error) { return tt.log, nil })
			if err != nil {
				t.Fatal(err)
			}
			if v.Matched != tt.want {
				t.Errorf("Matched = %v, want %v (%s)", v.Matched, tt.want, v.Why)
			}
		})
	}
}

func TestHerderTailLines(t *testing.T) {
	t.Parallel()
	h := compile(t, `
matchers:
  - name: m
    messages: [MARK]
    tail_lines: 3
`)
	tests := []struct {
		name string
		log  string
		want bool
	}{
		{"the last line is in the window", "a\nb\nc\nMARK\n", true},
		{"the third line from the end is in the window", "a\nMARK\nb\nc\n", true},
		{"the fourth line from the end is not", "MARK\na\nb\nc\n", false},
		{"a trailing newline does not take a line of the window", "MARK\na\nb", true},
		{"CR LF line ends count as one break", "MARK\r\na\r\nb\r\nc\r\n", false},
		{"a log shorter than the window is searched whole", "MARK\n", true},
		{"an empty log holds nothing", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := h.Match(failed("b", "", 0), func() (string, error) { return tt.log, nil })
			if err != nil {
				t.Fatal(err)
			}
			if v.Matched != tt.want {
				t.Errorf("Matched = %v, want %v (%s)", v.Matched, tt.want, v.Why)
			}
		})
	}
}

func TestHerderNesting(t *testing.T) {
	t.Parallel()
	h := compile(t, `
retry_limit: 2
matchers:
  - name: build
    job_name: /^build /
    messages: ['/Job failed/']
    tail_lines: 2
    retry_delays: [3m]
    matchers:
      - name: disk
        failure_reason: script_failure
        messages: [No space left on device]
        tail_lines: 10
      - name: any-system
        failure_reason: runner_system_failure
        retry_limit: 4
`)
	tests := []struct {
		name        string
		job         wq.CIJob
		log         string
		wantMatcher string
		wantLimit   int
		wantDelay   time.Duration
	}{
		{
			name:        "a child fires when its parent's conditions hold too",
			job:         failed("build x86_64", "script_failure", 0),
			log:         logOf(0, "No space left on device", "x", "ERROR: Job failed: exit code 1"),
			wantMatcher: "build/disk", wantLimit: 2, wantDelay: 3 * time.Minute,
		},
		{
			name: "a child does not fire when its parent's job_name fails",
			job:  failed("test x86_64", "script_failure", 0),
			log:  logOf(0, "No space left on device", "x", "ERROR: Job failed: exit code 1"),
		},
		{
			name: "a child does not fire when its parent's messages are not in the parent's window",
			job:  failed("build x86_64", "script_failure", 0),
			log:  logOf(0, "No space left on device", "ERROR: Job failed: exit code 1", "x", "y"),
		},
		{
			name: "a child's messages are searched in the child's own window",
			job:  failed("build x86_64", "script_failure", 0),
			log:  logOf(0, "No space left on device", "1", "2", "3", "4", "5", "6", "7", "8", "9", "ERROR: Job failed: exit code 1"),
		},
		{
			name:        "a child's own retry_limit overrides the inherited one",
			job:         failed("build aarch64", "runner_system_failure", 3),
			log:         "ERROR: Job failed: system failure\n",
			wantMatcher: "build/any-system", wantLimit: 4, wantDelay: 3 * time.Minute,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := h.Match(tt.job, func() (string, error) { return tt.log, nil })
			if err != nil {
				t.Fatal(err)
			}
			if v.Matcher != tt.wantMatcher || v.Matched != (tt.wantMatcher != "") {
				t.Fatalf("matched %v by %q, want %q (%s)", v.Matched, v.Matcher, tt.wantMatcher, v.Why)
			}
			if tt.wantMatcher != "" && (v.RetryLimit != tt.wantLimit || v.Delay != tt.wantDelay || !v.Retry) {
				t.Errorf("retry %v, limit %d, delay %s; want a retry, limit %d, delay %s", v.Retry, v.RetryLimit, v.Delay, tt.wantLimit, tt.wantDelay)
			}
		})
	}
}

func TestHerderGroupNeverFiresItself(t *testing.T) {
	t.Parallel()
	h := compile(t, `
matchers:
  - name: infra
    failure_reason: runner_system_failure
    matchers:
      - name: docker
        messages: [Cannot connect to the Docker daemon]
`)
	v, err := h.Match(failed("b", "runner_system_failure", 0), func() (string, error) { return "something else\n", nil })
	if err != nil {
		t.Fatal(err)
	}
	if v.Matched {
		t.Errorf("the group fired as %q although its only child's messages are absent", v.Matcher)
	}
}

func TestHerderShortCircuit(t *testing.T) {
	t.Parallel()
	h := compile(t, `
matchers:
  - name: a
    failure_reason: script_failure
    messages: [first]
  - name: b
    job_name: test
    messages: [second]
  - name: c
    failure_reason: script_failure
    messages: [third]
  - name: d
    failure_reason: script_failure
    job_name: nothing-has-this-name
`)
	t.Run("the log is not read when no matcher's cheap checks pass", func(t *testing.T) {
		t.Parallel()
		tr := &tracer{text: "first second third\n"}
		v, err := h.Match(failed("build", "runner_system_failure", 0), tr.trace)
		if err != nil {
			t.Fatal(err)
		}
		if tr.calls != 0 || v.TraceRead || v.Matched {
			t.Errorf("trace called %d times, verdict %+v; want no call and no match", tr.calls, v)
		}
		if want := "no matcher fired: a: failure_reason"; !strings.Contains(v.Why, want) {
			t.Errorf("Why = %q, want it to contain %q", v.Why, want)
		}
	})
	t.Run("the log is read once however many matchers search it", func(t *testing.T) {
		t.Parallel()
		tr := &tracer{text: "third\n"}
		v, err := h.Match(failed("test", "script_failure", 0), tr.trace)
		if err != nil {
			t.Fatal(err)
		}
		if tr.calls != 1 || !v.TraceRead || v.Matcher != "c" {
			t.Errorf("trace called %d times, verdict %+v; want one call and matcher c", tr.calls, v)
		}
	})
	t.Run("the log is read once when nothing fires", func(t *testing.T) {
		t.Parallel()
		tr := &tracer{text: "nothing\n"}
		v, err := h.Match(failed("test", "script_failure", 0), tr.trace)
		if err != nil {
			t.Fatal(err)
		}
		if tr.calls != 1 || !v.TraceRead || v.Matched {
			t.Errorf("trace called %d times, verdict %+v; want one call and no match", tr.calls, v)
		}
	})
	t.Run("a matcher without messages fires before the log is read", func(t *testing.T) {
		t.Parallel()
		h := compile(t, `
matchers:
  - name: system
    failure_reason: runner_system_failure
  - name: logged
    messages: [x]
`)
		tr := &tracer{text: "x\n"}
		v, err := h.Match(failed("test", "runner_system_failure", 0), tr.trace)
		if err != nil {
			t.Fatal(err)
		}
		if tr.calls != 0 || v.Matcher != "system" {
			t.Errorf("trace called %d times, matcher %q; want no call and matcher system", tr.calls, v.Matcher)
		}
	})
	t.Run("a failure to read the log is returned, wrapped, with no match", func(t *testing.T) {
		t.Parallel()
		errGone := errors.New("trace gone")
		tr := &tracer{err: errGone}
		v, err := h.Match(failed("test", "script_failure", 0), tr.trace)
		if !errors.Is(err, errGone) || v.Matched || v.Retry {
			t.Errorf("Match = %+v, %v; want no match and an error wrapping %v", v, err, errGone)
		}
	})
	t.Run("a nil trace function is an error only when the log is needed", func(t *testing.T) {
		t.Parallel()
		if _, err := h.Match(failed("test", "script_failure", 0), nil); err == nil {
			t.Error("want an error when the log is needed and there is no trace function")
		}
		if v, err := h.Match(failed("build", "unknown_failure", 0), nil); err != nil || v.Matched {
			t.Errorf("Match = %+v, %v; want no match and no error", v, err)
		}
	})
}

func TestHerderFirstMatchWins(t *testing.T) {
	t.Parallel()
	doc := func(first, second string) string {
		return fmt.Sprintf(`
matchers:
  - name: %s
    messages: ['exit code 137']
  - name: %s
    failure_reason: script_failure
`, first, second)
	}
	job := failed("test", "script_failure", 0)
	log := func() (string, error) { return "ERROR: Job failed: exit code 137\n", nil }
	for _, order := range [][2]string{{"oom", "script"}, {"script", "oom"}} {
		v, err := compile(t, doc(order[0], order[1])).Match(job, log)
		if err != nil {
			t.Fatal(err)
		}
		if v.Matcher != order[0] {
			t.Errorf("with %s listed first, %q fired", order[0], v.Matcher)
		}
	}
}

func TestHerderRetryDelays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		delays    string
		retries   int
		wantDelay time.Duration
		wantRetry bool
	}{
		{"the first retry waits the first delay", "[30s, 5m]", 0, 30 * time.Second, true},
		{"the second retry waits the second delay", "[30s, 5m]", 1, 5 * time.Minute, true},
		{"later retries repeat the last delay", "[30s, 5m]", 3, 5 * time.Minute, true},
		{"no delays retries at once", "[]", 2, 0, true},
		{"the retry limit reached means no retry and no delay", "[30s]", 4, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := compile(t, "retry_limit: 4\nmatchers:\n  - name: m\n    failure_reason: x\n    retry_delays: "+tt.delays+"\n")
			v, err := h.Match(failed("b", "x", tt.retries), nil)
			if err != nil {
				t.Fatal(err)
			}
			if v.Delay != tt.wantDelay || v.Retry != tt.wantRetry || v.RetryLimit != 4 {
				t.Errorf("delay %s, retry %v, limit %d; want %s, %v, 4", v.Delay, v.Retry, v.RetryLimit, tt.wantDelay, tt.wantRetry)
			}
			d, ok := h.Delay(failed("b", "x", tt.retries))
			if d != tt.wantDelay || ok != tt.wantRetry {
				t.Errorf("Delay = %s, %v; want %s, %v", d, ok, tt.wantDelay, tt.wantRetry)
			}
		})
	}
	t.Run("the default retry limit is 3", func(t *testing.T) {
		t.Parallel()
		h := compile(t, "matchers:\n  - name: m\n    failure_reason: x\n")
		v, _ := h.Match(failed("b", "x", 2), nil)
		w, _ := h.Match(failed("b", "x", 3), nil)
		if v.RetryLimit != herder.DefaultRetryLimit || !v.Retry || w.Retry {
			t.Errorf("limit %d, retry after 2: %v, after 3: %v; want 3, true, false", v.RetryLimit, v.Retry, w.Retry)
		}
	})
	t.Run("retry_limit 0 never retries", func(t *testing.T) {
		t.Parallel()
		h := compile(t, "matchers:\n  - name: m\n    failure_reason: x\n    retry_limit: 0\n")
		v, _ := h.Match(failed("b", "x", 0), nil)
		if !v.Matched || v.Retry {
			t.Errorf("verdict %+v; want matched and not retried", v)
		}
	})
}

func TestHerderDelay(t *testing.T) {
	t.Parallel()
	h := compile(t, ckiRules)
	tests := []struct {
		name   string
		job    wq.CIJob
		want   time.Duration
		wantOK bool
	}{
		{"a runner system failure's delay", failed("test", "runner_system_failure", 1), 5 * time.Minute, true},
		// infra/timeout has no cheap condition, so it is the first candidate.
		{"the first candidate by cheap checks decides, not the log", failed("build x86_64", "script_failure", 0), time.Minute, true},
		{"a job that did not fail has none", wq.CIJob{Name: "b", Status: wq.CIJobCanceled}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := h.Delay(tt.job)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Delay = %s, %v; want %s, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	t.Run("no candidate means no delay", func(t *testing.T) {
		t.Parallel()
		h := compile(t, "matchers:\n  - name: m\n    failure_reason: runner_system_failure\n    retry_delays: [1m]\n")
		if d, ok := h.Delay(failed("b", "script_failure", 0)); ok || d != 0 {
			t.Errorf("Delay = %s, %v; want 0, false", d, ok)
		}
	})
}

func TestHerderWhyNamesTheCommonMiss(t *testing.T) {
	t.Parallel()
	h := compile(t, `
matchers:
  - name: system
    failure_reason: runner_system_failure
  - name: integrity
    failure_reason: data_integrity_failure
`)
	v, err := h.Match(failed("b", "script_failure", 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "no matcher's failure_reason matches script_failure"; v.Why != want {
		t.Errorf("Why = %q, want %q", v.Why, want)
	}
}

func TestHerderOff(t *testing.T) {
	t.Parallel()
	var h *herder.Herder
	v, err := h.Match(failed("b", "runner_system_failure", 0), nil)
	if err != nil || v.Matched || v.Why != "no matchers are configured" {
		t.Errorf("nil Herder: Match = %+v, %v", v, err)
	}
	if _, ok := h.Delay(failed("b", "runner_system_failure", 0)); ok {
		t.Error("nil Herder: Delay ok")
	}
	empty, err := herder.Rules{}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := empty.Match(failed("b", "runner_system_failure", 0), nil); v.Matched {
		t.Error("empty rules matched")
	}
}

func TestHerderRulesErrorsNameTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string // each a field: problem prefix one of the errors starts with
	}{
		{
			name: "an invalid regex deep in the tree",
			doc: `
matchers:
  - {name: a, failure_reason: x}
  - {name: b, failure_reason: x}
  - name: c
    matchers:
      - name: d
        messages: [fine, '/unclosed (group/']
`,
			want: []string{"matchers[2].matchers[0].messages[1]: invalid regex /unclosed (group/"},
		},
		{
			name: "an unknown key, by its path",
			doc:  "matchers:\n  - name: a\n    matchers:\n      - name: b\n        mesages: [x]\n",
			want: []string{"matchers[0].matchers[0].mesages: line 5: unknown key"},
		},
		{
			name: "an unknown top-level key",
			doc:  "retry_limt: 3\n",
			want: []string{"retry_limt: line 1: unknown key; want one of retry_delays, retry_limit, matchers"},
		},
		{
			name: "negative numbers",
			doc:  "retry_limit: -1\nmatchers:\n  - {name: a, failure_reason: x, tail_lines: -5, retry_limit: -2}\n",
			want: []string{"retry_limit: must be between 0 and 100, got -1", "matchers[0].tail_lines: must not be negative", "matchers[0].retry_limit: must be between 0 and 100, got -2"},
		},
		{
			name: "a retry limit too high",
			doc:  "matchers:\n  - {name: a, failure_reason: x, retry_limit: 1000}\n",
			want: []string{"matchers[0].retry_limit: must be between 0 and 100, got 1000"},
		},
		{
			name: "bad durations",
			doc:  "retry_delays: [5]\nmatchers:\n  - {name: a, failure_reason: x, retry_delays: [1m, soon, -1m]}\n",
			want: []string{`retry_delays[0]: line 1: want a duration such as 30s or 5m, got "5"`, `matchers[0].retry_delays[1]: line 3: want a duration such as 30s or 5m, got "soon"`},
		},
		{
			name: "a negative duration",
			doc:  "matchers:\n  - {name: a, failure_reason: x, retry_delays: [-1m]}\n",
			want: []string{"matchers[0].retry_delays[0]: must not be negative, got -1m0s"},
		},
		{
			name: "empty and ill-formed names",
			doc:  "matchers:\n  - {failure_reason: x}\n  - {name: 'a/b', failure_reason: x}\n",
			want: []string{"matchers[0].name: must not be empty", `matchers[1].name: want letters, digits`},
		},
		{
			name: "a name two siblings share",
			doc:  "matchers:\n  - {name: a, failure_reason: x}\n  - {name: a, failure_reason: y}\n",
			want: []string{`matchers[1].name: "a" is used by an earlier sibling`},
		},
		{
			name: "the same name under different parents is allowed, but not a leaf without conditions",
			doc:  "matchers:\n  - {name: p, matchers: [{name: a, failure_reason: x}]}\n  - {name: q, matchers: [{name: a}]}\n",
			want: []string{"matchers[1].matchers[0]: matches every failed job"},
		},
		{
			name: "empty patterns",
			doc:  "matchers:\n  - {name: a, job_name: '//', messages: ['']}\n",
			want: []string{"matchers[0].job_name: the empty regex // matches everything", "matchers[0].messages[0]: must not be empty"},
		},
		{
			name: "values of the wrong type",
			doc:  "matchers:\n  - {name: a, failure_reason: x, tail_lines: many, messages: x, matchers: {}}\n",
			want: []string{`matchers[0].tail_lines: line 2: want a whole number, got "many"`, "matchers[0].messages: line 2: want a list", "matchers[0].matchers: line 2: want a list"},
		},
		{
			name: "a matcher that is not a mapping",
			doc:  "matchers: [oops]\n",
			want: []string{"matchers[0]: line 1: want a mapping"},
		},
		{
			name: "a key set twice",
			doc:  "matchers:\n  - {name: a, name: b, failure_reason: x}\n",
			want: []string{"matchers[0].name: line 2: set twice"},
		},
		{
			name: "two documents",
			doc:  "matchers: []\n---\nmatchers: []\n",
			want: []string{"(document): want one YAML document, found more"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rules, err := herder.Parse([]byte(tt.doc))
			if err == nil {
				_, err = rules.Compile()
			}
			if err == nil {
				t.Fatal("no error")
			}
			var got []string
			for _, fe := range herder.FieldErrors(err) {
				got = append(got, fe.Error())
			}
			for _, w := range tt.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no error starts with %q; got:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

func TestHerderParseEmptyDocument(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "# nothing\n", "~\n"} {
		rules, err := herder.Parse([]byte(doc))
		if err != nil || len(rules.Matchers) != 0 {
			t.Errorf("Parse(%q) = %+v, %v; want no rules, no error", doc, rules, err)
		}
	}
}
