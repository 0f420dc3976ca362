package herder

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Verdict is what the herder decided about one failed job.
type Verdict struct {
	// Matched reports whether a matcher fired.
	Matched bool
	// Matcher is the path of names of the matcher that fired
	// ("infra/runner-system-failure"); "" when none did.
	Matcher string
	// Description is that matcher's description, or its nearest
	// ancestor's.
	Description string
	// Why says in words why the matcher fired and what follows, or why
	// none did ("no matcher's failure_reason matches script_failure").
	Why string
	// TraceRead reports whether the job's log was fetched.
	TraceRead bool
	// RetryLimit is the firing matcher's retry_limit.
	RetryLimit int
	// Retry reports whether the job should be retried: a matcher fired
	// and job.Retries < RetryLimit.
	Retry bool
	// Delay is how long after the job finished to retry it; 0 when Retry
	// is false.
	Delay time.Duration
}

// Match runs the rules over a failed job. trace returns the job's log (its
// end is enough: see tail_lines); Match calls it at most once, and only
// when a matcher whose job_name and failure_reason hold has messages to
// look for. A nil trace is an error only if it is needed. The error is
// trace's, wrapped; the verdict is then no match.
func (h *Herder) Match(job wq.CIJob, trace func() (string, error)) (Verdict, error) {
	if h == nil || len(h.leaves) == 0 {
		return Verdict{Why: "no matchers are configured"}, nil
	}
	if job.Status != wq.CIJobFailed {
		return Verdict{Why: fmt.Sprintf("the job is %s, not failed", orNone(job.Status))}, nil
	}
	var (
		log    *jobLog
		misses []miss
	)
	for _, lf := range h.leaves {
		var why []string
		if m, ok := lf.cheapChecks(job, &why); !ok {
			misses = append(misses, m)
			continue
		}
		if lf.needsTrace() && log == nil {
			if trace == nil {
				return Verdict{Why: "the job's log is needed but cannot be read"}, fmt.Errorf("match job %d: matcher %s needs the log and no trace function was given", job.ID, lf.path)
			}
			text, err := trace()
			if err != nil {
				return Verdict{Why: "reading the job's log failed"}, fmt.Errorf("match job %d: read log: %w", job.ID, err)
			}
			log = newJobLog(text)
		}
		if m, ok := lf.messageChecks(log, &why); !ok {
			misses = append(misses, m)
			continue
		}
		v := Verdict{
			Matched:     true,
			Matcher:     lf.path,
			Description: lf.description,
			TraceRead:   log != nil,
			RetryLimit:  lf.retryLimit,
		}
		v.Delay, v.Retry = lf.delay(job.Retries)
		why = append(why, lf.retryWords(job.Retries, v.Delay))
		v.Why = strings.Join(why, "; ")
		return v, nil
	}
	return Verdict{Why: explainMisses(job, misses), TraceRead: log != nil}, nil
}

// Delay returns how long after job finished a retry of it is due, by the
// first matcher whose job_name and failure_reason hold, without reading
// the log: a failed-job webhook computes the job's not_before from it.
// ok is false when no matcher could fire, or when that matcher's retry
// limit is reached. Match may later pick a different matcher, one whose
// messages the log contains; its Verdict.Delay then rules.
func (h *Herder) Delay(job wq.CIJob) (delay time.Duration, ok bool) {
	if h == nil || job.Status != wq.CIJobFailed {
		return 0, false
	}
	for _, lf := range h.leaves {
		var why []string
		if _, pass := lf.cheapChecks(job, &why); pass {
			return lf.delay(job.Retries)
		}
	}
	return 0, false
}

// miss records why a leaf did not fire: the field whose condition failed
// and a phrase saying how.
type miss struct {
	path, field, detail string
}

// cheapChecks checks every level's job_name and failure_reason, root
// first, adding a phrase to why for each that holds.
func (lf leaf) cheapChecks(job wq.CIJob, why *[]string) (miss, bool) {
	for _, lv := range lf.levels {
		if lv.jobName != nil {
			if !lv.jobName.equals(job.Name) {
				return miss{lf.path, "job_name", fmt.Sprintf("job_name %s does not match %q", lv.jobName.describe(), job.Name)}, false
			}
			*why = append(*why, fmt.Sprintf("job %q matches job_name %s", job.Name, lv.jobName.describe()))
		}
		if lv.failureReason != nil {
			if !lv.failureReason.equals(job.FailureReason) {
				return miss{lf.path, "failure_reason", fmt.Sprintf("failure_reason %s does not match %s", lv.failureReason.describe(), orNone(job.FailureReason))}, false
			}
			*why = append(*why, fmt.Sprintf("failure_reason %s matches %s", job.FailureReason, lv.failureReason.describe()))
		}
	}
	return miss{}, true
}

func (lf leaf) needsTrace() bool {
	for _, lv := range lf.levels {
		if len(lv.messages) > 0 {
			return true
		}
	}
	return false
}

// messageChecks checks every level's messages within that level's
// window; log is nil only when no level has messages.
func (lf leaf) messageChecks(log *jobLog, why *[]string) (miss, bool) {
	for _, lv := range lf.levels {
		if len(lv.messages) == 0 {
			continue
		}
		window := log.tail(lv.tailLines)
		where, verb := "the log", "contains"
		if lv.tailLines > 0 {
			where, verb = fmt.Sprintf("the log's last %d lines", lv.tailLines), "contain"
		}
		found := false
		for _, p := range lv.messages {
			if p.occursIn(window) {
				*why = append(*why, fmt.Sprintf("%s %s %s", where, verb, p.describe()))
				found = true
				break
			}
		}
		if !found {
			return miss{lf.path, "messages", fmt.Sprintf("none of its %d messages occur in %s", len(lv.messages), where)}, false
		}
	}
	return miss{}, true
}

// delay is the wait before retry number retries+1, and whether that
// retry is allowed at all.
func (lf leaf) delay(retries int) (time.Duration, bool) {
	if retries < 0 {
		retries = 0
	}
	if retries >= lf.retryLimit {
		return 0, false
	}
	if len(lf.retryDelays) == 0 {
		return 0, true
	}
	return lf.retryDelays[min(retries, len(lf.retryDelays)-1)], true
}

func (lf leaf) retryWords(retries int, delay time.Duration) string {
	switch {
	case lf.retryLimit == 0:
		return "retry_limit is 0: not retried"
	case retries >= lf.retryLimit:
		return fmt.Sprintf("already retried %d times, the limit is %d: not retried", retries, lf.retryLimit)
	case delay == 0:
		return fmt.Sprintf("retry %d of %d at once", retries+1, lf.retryLimit)
	default:
		return fmt.Sprintf("retry %d of %d after %s", retries+1, lf.retryLimit, delay)
	}
}

// explainMisses says why no matcher fired: in one phrase when every
// matcher failed on the same field, else matcher by matcher.
func explainMisses(job wq.CIJob, misses []miss) string {
	same := true
	for _, m := range misses[1:] {
		same = same && m.field == misses[0].field
	}
	if same {
		switch misses[0].field {
		case "job_name":
			return fmt.Sprintf("no matcher's job_name matches %q", job.Name)
		case "failure_reason":
			return fmt.Sprintf("no matcher's failure_reason matches %s", orNone(job.FailureReason))
		case "messages":
			return "no matcher's messages occur in the job's log"
		}
	}
	parts := make([]string, len(misses))
	for i, m := range misses {
		parts[i] = m.path + ": " + m.detail
	}
	return "no matcher fired: " + strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// jobLog is a job's log made ready for matching, with its windows cached.
type jobLog struct {
	text    string
	windows map[int]string
}

// terminalNoise is what a CI log holds for the terminal's sake and a
// person reading it rendered never sees: colour and erase escapes (CSI
// sequences) and GitLab's collapsible-section markers.
var terminalNoise = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|section_(?:start|end):[0-9]+:[^\r\n]*\r`)

func newJobLog(text string) *jobLog {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = terminalNoise.ReplaceAllString(text, "")
	return &jobLog{text: text, windows: map[int]string{}}
}

// tail returns the log's last n lines, all of it when n is 0. A trailing
// line break ends the last line; it does not begin an empty one.
func (l *jobLog) tail(n int) string {
	if n <= 0 {
		return l.text
	}
	if w, ok := l.windows[n]; ok {
		return w
	}
	text := strings.TrimSuffix(l.text, "\n")
	end := len(text)
	for range n {
		i := strings.LastIndexByte(text[:end], '\n')
		if i < 0 {
			end = -1
			break
		}
		end = i
	}
	w := text[end+1:]
	l.windows[n] = w
	return w
}
