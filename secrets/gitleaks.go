package secrets

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// This file runs gitleaks' default rule set (its config package: about
// 200 vendor rules, each a regexp with keywords, an entropy floor and
// allowlists) without gitleaks' detect package. The detector links a
// tail of packages this service never calls (archive readers for 7z,
// rar, xz, brotli and zstd, terminal styling, template helpers: 8 MB of
// binary, 4 MB of every process's resident memory, even a process that
// never scans), and it compiles all of its rules up front and builds a
// keyword trie, 6 MB that stay live and 30 MB allocated to get there.
// Here each rule is translated by gitleaks' own config code, alone and
// only once a text holds one of its keywords, so a process holds the
// rules its texts have needed. What a finding is follows detect's
// DetectString on a text without a path or commit (its detectRule):
// TestTheRuleSetFindsWhatGitleaksFinds checks it against the detector
// itself, rule by rule. One difference is deliberate: a "gitleaks:allow"
// on the line does not excuse a secret, since the text comes from the
// caller the redaction is there to distrust.

// leak is what a rule found: the rule, the secret (the rule's secret
// group, else its first non-empty group, else the match), the match, and
// where the match starts (line from 0, column from 1, as gitleaks counts).
type leak struct {
	RuleID, Secret, Match  string
	StartLine, StartColumn int
}

// leakRule is one rule of the set, translated on first use.
type leakRule struct {
	id       string
	keywords []int // into the set's keyword index; none: the rule runs on every text
	rule     func() (config.Rule, error)
}

type leakSet struct {
	rules    []*leakRule
	global   []*config.Allowlist // the allowlists of every rule
	keywords keywordIndex
}

// leakRules is the rule set, read once. The generic-api-key rule is left
// out: the structural secret-assignment rule covers its ground, at a
// fraction of its cost on prose.
var leakRules = sync.OnceValue(func() *leakSet {
	s, err := loadLeakRules(config.DefaultConfig, "generic-api-key")
	if err != nil {
		panic("secrets: gitleaks' default rules do not load: " + err.Error())
	}
	return s
})

// loadLeakRules reads a gitleaks configuration (TOML) as gitleaks does,
// through a viper of its own, and translates its global allowlists; each
// rule keeps its own part of the configuration, with the allowlists that
// target it, for translating when it is first needed. A rule with
// required rules (a composite rule) is refused: detectRule's proximity
// matching is not done here.
func loadLeakRules(toml string, leaveOut ...string) (*leakSet, error) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(toml)); err != nil {
		return nil, err
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, err
	}
	if vc.Extend.Path != "" || vc.Extend.URL != "" || vc.Extend.UseDefault {
		return nil, fmt.Errorf("extend is not supported")
	}
	global := vc
	global.Rules = nil
	global.Allowlists = nil
	targeted := map[string][]int{}
	for i, a := range vc.Allowlists {
		if len(a.TargetRules) == 0 {
			global.Allowlists = append(global.Allowlists, a)
		}
		for _, id := range a.TargetRules {
			targeted[id] = append(targeted[id], i)
		}
	}
	g, err := global.Translate()
	if err != nil {
		return nil, err
	}
	for _, a := range g.Allowlists {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("[[allowlists]]: %w", err)
		}
	}
	set := &leakSet{global: g.Allowlists}
	seen := map[string]bool{}
	for i := range vc.Rules {
		vr := vc.Rules[i]
		if seen[vr.ID] {
			return nil, fmt.Errorf("rule %s: defined twice", vr.ID)
		}
		seen[vr.ID] = true
		if len(vr.Required) > 0 {
			return nil, fmt.Errorf("rule %s: required rules are not supported", vr.ID)
		}
		if slices.Contains(leaveOut, vr.ID) {
			continue
		}
		one := config.ViperConfig{Rules: vc.Rules[i : i+1 : i+1]}
		for _, j := range targeted[vr.ID] {
			a := *vc.Allowlists[j]
			a.TargetRules = []string{vr.ID}
			one.Allowlists = append(one.Allowlists, &a)
		}
		r := &leakRule{id: vr.ID}
		for _, k := range vr.Keywords {
			r.keywords = append(r.keywords, set.keywords.add(strings.ToLower(k)))
		}
		r.rule = sync.OnceValues(func() (config.Rule, error) {
			c, err := one.Translate()
			if err != nil {
				return config.Rule{}, err
			}
			return c.Rules[vr.ID], nil
		})
		set.rules = append(set.rules, r)
	}
	delete(targeted, "")
	for id := range targeted {
		if !seen[id] {
			return nil, fmt.Errorf("[[allowlists]] target rule %s does not exist", id)
		}
	}
	return set, nil
}

// find returns what the rules find in s.
func (l *leakSet) find(s string) []leak {
	return l.scan(s, false)
}

// any reports whether a rule finds something in s.
func (l *leakSet) any(s string) bool {
	return len(l.scan(s, true)) > 0
}

func (l *leakSet) scan(s string, first bool) []leak {
	if s == "" {
		return nil
	}
	present := l.keywords.in(strings.ToLower(s))
	var (
		out   []leak
		lines []int // the offsets of s's line ends, once a rule matches
	)
	for _, lr := range l.rules {
		if !lr.applies(present) {
			continue
		}
		r, err := lr.rule()
		if err != nil {
			panic("secrets: gitleaks rule " + lr.id + " does not translate: " + err.Error())
		}
		if r.SkipReport {
			continue
		}
		if r.Path != nil {
			// A text has no path: a rule bound to paths finds nothing in
			// it, unless its path pattern matches the empty path.
			if !r.Path.MatchString("") {
				continue
			}
			if r.Regex == nil {
				out = append(out, leak{RuleID: r.RuleID, Match: "file detected: "})
				continue
			}
		}
		if r.Regex == nil {
			continue
		}
		matches := r.Regex.FindAllStringIndex(s, -1)
		if len(matches) > 0 && lines == nil {
			lines = lineEnds(s)
		}
		for _, m := range matches {
			match := strings.Trim(s[m[0]:m[1]], "\n")
			start, end := m[0], m[0]+len(match)
			line, column, text := matchLine(s, lines, start, end)
			f := leak{RuleID: r.RuleID, Secret: match, Match: match, StartLine: line, StartColumn: column}
			if groups := r.Regex.FindStringSubmatch(match); len(groups) >= 2 {
				if r.SecretGroup > 0 {
					if len(groups) <= r.SecretGroup {
						continue
					}
					f.Secret = groups[r.SecretGroup]
				} else {
					for _, g := range groups[1:] {
						if g != "" {
							f.Secret = g
							break
						}
					}
				}
			}
			if r.Entropy != 0 && shannon(f.Secret) <= r.Entropy {
				continue
			}
			if allowed(l.global, f, text) || allowed(r.Allowlists, f, text) {
				continue
			}
			out = append(out, f)
			if first {
				return out
			}
		}
	}
	return dropGeneric(out)
}

// applies reports whether the rule runs on a text holding the keywords
// present says: one of its keywords, or it has none.
func (r *leakRule) applies(present []bool) bool {
	if len(r.keywords) == 0 {
		return true
	}
	for _, k := range r.keywords {
		if present[k] {
			return true
		}
	}
	return false
}

// keywordIndex finds which of a set of keywords a text holds in one pass
// over it, where a strings.Contains per keyword (some 300) made the
// prefilter cost more than the rules it saves: a bit per pair of leading
// bytes says whether a keyword may start at a position, and only there
// are the keywords of that pair compared. It is 8 KiB and a small map,
// where gitleaks' keyword trie holds 2.7 MB.
type keywordIndex struct {
	words  []string
	pairs  [1 << 16 / 64]uint64 // bit p: some keyword starts with the two bytes p
	byPair map[uint16][]int
	short  []int // keywords of one byte
}

// add indexes a keyword (once) and returns its index.
func (x *keywordIndex) add(word string) int {
	if i := slices.Index(x.words, word); i >= 0 {
		return i
	}
	i := len(x.words)
	x.words = append(x.words, word)
	if len(word) < 2 {
		x.short = append(x.short, i)
		return i
	}
	p := uint16(word[0])<<8 | uint16(word[1])
	x.pairs[p/64] |= 1 << (p % 64)
	if x.byPair == nil {
		x.byPair = map[uint16][]int{}
	}
	x.byPair[p] = append(x.byPair[p], i)
	return i
}

// in says, keyword by keyword, whether text holds it.
func (x *keywordIndex) in(text string) []bool {
	present := make([]bool, len(x.words))
	for _, i := range x.short {
		present[i] = strings.Contains(text, x.words[i])
	}
	for at := 0; at+1 < len(text); at++ {
		p := uint16(text[at])<<8 | uint16(text[at+1])
		if x.pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, i := range x.byPair[p] {
			if !present[i] && strings.HasPrefix(text[at:], x.words[i]) {
				present[i] = true
			}
		}
	}
	return present
}

// lineEnds is the offset of each '\n' of s; a text without one has its
// end for a line end, as gitleaks counts.
func lineEnds(s string) []int {
	var ends []int
	for i := range len(s) {
		if s[i] == '\n' {
			ends = append(ends, i)
		}
	}
	if len(ends) == 0 {
		ends = []int{len(s)}
	}
	return ends
}

// matchLine is where a match [start, end) of s is, as gitleaks' detector
// places it: its line (from 0) and column (from 1), and the text its
// "line" allowlists test. That text starts at the line end before the
// match (so it holds that '\n'); on a last line without an end of its
// own, it starts at the text's start.
func matchLine(s string, ends []int, start, end int) (line, column int, text string) {
	prev, from, to, set := 0, 0, 0, false
	for i, e := range ends {
		if prev <= start && start < e {
			set, line, column, from, to = true, i, start-prev+1, prev, e
		}
		if prev < end && end <= e {
			to = e
		}
		prev = e
	}
	if set {
		return line, column, s[from:max(to, end)]
	}
	to = end
	for to < len(s) && s[to] != '\n' && s[to] != '\r' {
		to++
	}
	return len(ends), start - prev + 1, s[:to]
}

// allowed reports whether one of the allowlists excuses f, as gitleaks'
// checkFindingAllowed does for a text without a path or commit: an OR
// list by its regexes (on the secret, the match or the line) or its stop
// words (in the secret); an AND list only if every check it has holds,
// and a check of a path or a commit never holds here.
func allowed(lists []*config.Allowlist, f leak, line string) bool {
	for _, a := range lists {
		target := f.Secret
		switch a.RegexTarget {
		case "match":
			target = f.Match
		case "line":
			target = line
		}
		regex := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(f.Secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			all := len(a.Commits) == 0 && len(a.Paths) == 0
			if len(a.Regexes) > 0 {
				all = all && regex
			}
			if len(a.StopWords) > 0 {
				all = all && stop
			}
			if all {
				return true
			}
			continue
		}
		if regex || stop {
			return true
		}
	}
	return false
}

// dropGeneric leaves out a finding of a "generic" rule that another
// rule's finding on the same line holds, as gitleaks' filter does.
func dropGeneric(found []leak) []leak {
	out := found[:0:0]
	for _, f := range found {
		if strings.Contains(strings.ToLower(f.RuleID), "generic") && coveredByNonGeneric(f, found) {
			continue
		}
		out = append(out, f)
	}
	return out
}

func coveredByNonGeneric(f leak, found []leak) bool {
	for _, o := range found {
		if o.StartLine == f.StartLine && o.RuleID != f.RuleID && strings.Contains(o.Secret, f.Secret) &&
			!strings.Contains(strings.ToLower(o.RuleID), "generic") {
			return true
		}
	}
	return false
}

// shannon is the Shannon entropy of s in bits per character (rune).
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	for _, c := range s {
		counts[c]++
	}
	var h float64
	inv := 1 / float64(len(s))
	for _, n := range counts {
		p := float64(n) * inv
		h -= p * math.Log2(p)
	}
	return h
}
