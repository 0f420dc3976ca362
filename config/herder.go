package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/workqueue-dev/workqueue/herder"
)

// Herder configures the CI job retry herder (DDR-47): the rules by which
// a failed CI job is recognised as having failed for a known transient
// reason, and how often and how soon it is retried. The matchers are
// given inline or in matchers_file, not both; with neither the herder is
// off. See package herder for the rules' meaning.
type Herder struct {
	// Matchers are the rules, inline.
	Matchers []herder.Matcher `yaml:"matchers,omitempty"`
	// MatchersFile is a YAML rules document (matchers, and optionally
	// retry_delays and retry_limit), read at start. A relative path is
	// taken from the working directory, as every path of this file is.
	MatchersFile string `yaml:"matchers_file,omitempty"`
	// RetryDelays are the waits before the first, second, ... retry of a
	// job whose matcher sets none; unset, a retry is immediate.
	RetryDelays []herder.Duration `yaml:"retry_delays,omitempty"`
	// RetryLimit is how many times a job is retried when its matcher
	// sets no limit; unset, herder.DefaultRetryLimit.
	RetryLimit *int `yaml:"retry_limit,omitempty"`
}

// Enabled reports whether any matchers are configured.
func (h Herder) Enabled() bool { return len(h.Matchers) > 0 || h.MatchersFile != "" }

// Rules returns the section's rules: the inline matchers, or those of
// matchers_file, with the section's retry defaults. Errors name their
// field under "herder".
func (h Herder) Rules() (herder.Rules, error) {
	var errs []error
	rules := h.rules(func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	})
	if len(errs) > 0 {
		return herder.Rules{}, errors.Join(errs...)
	}
	return rules, nil
}

// Compile returns the herder the section configures, nil when it is off.
// Errors name their field under "herder".
func (h Herder) Compile() (*herder.Herder, error) {
	if !h.Enabled() {
		return nil, nil
	}
	var errs []error
	compiled := h.compile(func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return compiled, nil
}

// Validate checks the section, reading matchers_file, and returns every
// problem, each naming its field ("herder.matchers[2].messages[1]").
func (h Herder) Validate() error {
	var errs []error
	h.validate(func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	})
	return errors.Join(errs...)
}

// validate is Config.Validate's part for the herder section.
func (h Herder) validate(bad func(field, format string, args ...any)) {
	if !h.Enabled() {
		if h.RetryLimit != nil {
			bad("herder.retry_limit", "set, but no matchers or matchers_file are")
		}
		if len(h.RetryDelays) > 0 {
			bad("herder.retry_delays", "set, but no matchers or matchers_file are")
		}
		return
	}
	h.compile(bad)
}

// compile builds the herder, reporting each problem to bad; the result is
// nil when there was one.
func (h Herder) compile(bad func(field, format string, args ...any)) *herder.Herder {
	failed := false
	rules := h.rules(func(field, format string, args ...any) {
		failed = true
		bad(field, format, args...)
	})
	if failed {
		return nil
	}
	compiled, err := rules.Compile()
	if err != nil {
		h.report(err, h.fromFile, bad)
		return nil
	}
	return compiled
}

// fromFile reports whether a rules field's value came from matchers_file:
// the matchers do when it is set, and a retry default does when the
// section does not set its own (rules refuses it set in both).
func (h Herder) fromFile(field string) bool {
	switch {
	case h.MatchersFile == "":
		return false
	case strings.HasPrefix(field, "retry_limit"):
		return h.RetryLimit == nil
	case strings.HasPrefix(field, "retry_delays"):
		return len(h.RetryDelays) == 0
	default:
		return true
	}
}

// report passes the problems of a herder error to bad, naming each by
// its field: an inline one under "herder.", one of matchers_file as
// "herder.matchers_file" with the file and the field within it.
func (h Herder) report(err error, inFile func(field string) bool, bad func(field, format string, args ...any)) {
	fes := herder.FieldErrors(err)
	if len(fes) == 0 {
		bad("herder", "%v", err)
		return
	}
	for _, fe := range fes {
		if inFile(fe.Field) {
			bad("herder.matchers_file", "%s: %s: %s", h.MatchersFile, fe.Field, fe.Problem)
		} else {
			bad("herder."+fe.Field, "%s", fe.Problem)
		}
	}
}

// rules gathers the section's rules, reporting each problem to bad.
func (h Herder) rules(bad func(field, format string, args ...any)) herder.Rules {
	if len(h.Matchers) > 0 && h.MatchersFile != "" {
		bad("herder", "set at most one of matchers and matchers_file")
		return herder.Rules{}
	}
	rules := herder.Rules{Matchers: h.Matchers, RetryDelays: h.RetryDelays, RetryLimit: h.RetryLimit}
	if h.MatchersFile == "" {
		return rules
	}
	body, err := readHerderFile(h.MatchersFile)
	if err != nil {
		bad("herder.matchers_file", "%v", err)
		return herder.Rules{}
	}
	fromFile, err := herder.Parse(body)
	if err != nil {
		h.report(err, func(string) bool { return true }, bad)
		return herder.Rules{}
	}
	rules.Matchers = fromFile.Matchers
	// A default set in both places would leave a reader guessing which
	// one holds.
	if fromFile.RetryLimit != nil {
		if h.RetryLimit != nil {
			bad("herder.retry_limit", "also set in matchers_file %s; set it in one place", h.MatchersFile)
		}
		rules.RetryLimit = fromFile.RetryLimit
	}
	if len(fromFile.RetryDelays) > 0 {
		if len(h.RetryDelays) > 0 {
			bad("herder.retry_delays", "also set in matchers_file %s; set them in one place", h.MatchersFile)
		}
		rules.RetryDelays = fromFile.RetryDelays
	}
	return rules
}

func readHerderFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(body) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileSize)
	}
	return body, nil
}
