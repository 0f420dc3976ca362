package herder

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// maxRetryLimit bounds retry_limit: a job that failed a hundred times
// for one reason is not failing transiently.
const maxRetryLimit = 100

// pattern is a compiled job_name, failure_reason or message: a literal,
// or a regular expression when its source was written /between slashes/.
type pattern struct {
	source string
	re     *regexp.Regexp // nil for a literal
}

// compilePattern reads source; it refuses the empty pattern and the empty
// regex, which would match every job.
func compilePattern(source string) (pattern, error) {
	if source == "" {
		return pattern{}, errors.New("must not be empty")
	}
	if len(source) >= 2 && strings.HasPrefix(source, "/") && strings.HasSuffix(source, "/") {
		expr := source[1 : len(source)-1]
		if expr == "" {
			return pattern{}, errors.New("the empty regex // matches everything")
		}
		// Checked as written, so that an error quotes the author's
		// expression, then compiled multi-line, so that ^ and $ anchor at
		// the log's line breaks.
		if _, err := regexp.Compile(expr); err != nil {
			return pattern{}, fmt.Errorf("invalid regex %s: %v", source, err)
		}
		re, err := regexp.Compile("(?m)" + expr)
		if err != nil {
			return pattern{}, fmt.Errorf("invalid regex %s: %v", source, err)
		}
		return pattern{source: source, re: re}, nil
	}
	return pattern{source: source}, nil
}

// equals reports whether a single value (a job name, a failure reason)
// matches: a literal must equal it whole, a regex need only match in it.
func (p pattern) equals(value string) bool {
	if p.re != nil {
		return p.re.MatchString(value)
	}
	return value == p.source
}

// occursIn reports whether the pattern occurs anywhere in text.
func (p pattern) occursIn(text string) bool {
	if p.re != nil {
		return p.re.MatchString(text)
	}
	return strings.Contains(text, p.source)
}

// describe writes the pattern for a person: a regex as written, a
// literal quoted.
func (p pattern) describe() string {
	if p.re != nil {
		return p.source
	}
	return fmt.Sprintf("%q", p.source)
}

// level is the conditions one matcher of a path adds.
type level struct {
	jobName       *pattern
	failureReason *pattern
	messages      []pattern
	tailLines     int
}

// leaf is a matcher that can fire: its path's conditions, root first,
// and its effective settings.
type leaf struct {
	path        string
	description string
	levels      []level
	retryLimit  int
	retryDelays []time.Duration
}

// Herder is a compiled, validated rules tree. It is immutable and safe
// for concurrent use. A nil *Herder matches nothing (the herder is off).
type Herder struct {
	leaves []leaf
}

// settings are what a matcher inherits from its ancestors.
type settings struct {
	description string
	tailLines   int
	retryLimit  int
	retryDelays []time.Duration
	levels      []level
	path        string
	conditions  bool // some ancestor sets a condition
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Compile validates the rules and returns the Herder that applies them.
// The error joins every problem found, each a *FieldError naming its
// field ("matchers[2].matchers[0].messages[1]"); see FieldErrors.
func (r Rules) Compile() (*Herder, error) {
	c := compiler{}
	top := settings{retryLimit: DefaultRetryLimit}
	if r.RetryLimit != nil {
		top.retryLimit = c.retryLimit("retry_limit", *r.RetryLimit)
	}
	if len(r.RetryDelays) > 0 {
		top.retryDelays = c.retryDelays("retry_delays", r.RetryDelays)
	}
	c.matchers("matchers", r.Matchers, top)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return &Herder{leaves: c.leaves}, nil
}

type compiler struct {
	errs   []error
	leaves []leaf
}

func (c *compiler) bad(field, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (c *compiler) retryLimit(field string, n int) int {
	if n < 0 || n > maxRetryLimit {
		c.bad(field, "must be between 0 and %d, got %d", maxRetryLimit, n)
	}
	return n
}

func (c *compiler) retryDelays(field string, ds []Duration) []time.Duration {
	out := make([]time.Duration, 0, len(ds))
	for i, d := range ds {
		if d < 0 {
			c.bad(fmt.Sprintf("%s[%d]", field, i), "must not be negative, got %s", time.Duration(d))
		}
		out = append(out, time.Duration(d))
	}
	return out
}

func (c *compiler) matchers(field string, ms []Matcher, parent settings) {
	seen := map[string]bool{}
	for i, m := range ms {
		at := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case m.Name == "":
			c.bad(at+".name", "must not be empty: the name is how a verdict says which matcher fired")
		case !namePattern.MatchString(m.Name):
			c.bad(at+".name", "want letters, digits, '.', '_' or '-', starting with a letter or digit, got %q", m.Name)
		case seen[m.Name]:
			c.bad(at+".name", "%q is used by an earlier sibling", m.Name)
		}
		seen[m.Name] = true
		c.matcher(at, m, parent)
	}
}

func (c *compiler) matcher(at string, m Matcher, parent settings) {
	s := parent
	s.levels = append([]level(nil), parent.levels...)
	s.path = m.Name
	if parent.path != "" {
		s.path = parent.path + "/" + m.Name
	}
	if m.Description != "" {
		s.description = m.Description
	}
	if m.TailLines != nil {
		if *m.TailLines < 0 {
			c.bad(at+".tail_lines", "must not be negative, got %d", *m.TailLines)
		}
		s.tailLines = *m.TailLines
	}
	if m.RetryLimit != nil {
		s.retryLimit = c.retryLimit(at+".retry_limit", *m.RetryLimit)
	}
	if len(m.RetryDelays) > 0 {
		s.retryDelays = c.retryDelays(at+".retry_delays", m.RetryDelays)
	}
	lv := level{tailLines: s.tailLines}
	if m.JobName != "" {
		lv.jobName = c.pattern(at+".job_name", m.JobName)
	}
	if m.FailureReason != "" {
		lv.failureReason = c.pattern(at+".failure_reason", m.FailureReason)
	}
	for i, msg := range m.Messages {
		if p := c.pattern(fmt.Sprintf("%s.messages[%d]", at, i), msg); p != nil {
			lv.messages = append(lv.messages, *p)
		}
	}
	if m.JobName != "" || m.FailureReason != "" || len(m.Messages) > 0 {
		s.conditions = true
	}
	s.levels = append(s.levels, lv)
	if len(m.Matchers) > 0 {
		c.matchers(at+".matchers", m.Matchers, s)
		return
	}
	if !s.conditions {
		c.bad(at, "matches every failed job: set job_name, failure_reason or messages here or in a parent")
	}
	c.leaves = append(c.leaves, leaf{
		path:        s.path,
		description: s.description,
		levels:      s.levels,
		retryLimit:  s.retryLimit,
		retryDelays: s.retryDelays,
	})
}

func (c *compiler) pattern(field, source string) *pattern {
	p, err := compilePattern(source)
	if err != nil {
		c.bad(field, "%v", err)
		return nil
	}
	return &p
}
