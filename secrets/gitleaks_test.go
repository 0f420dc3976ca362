package secrets

import (
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
)

// gitleaksReference is gitleaks' own detector on its default rules, as
// leakRules runs them: no decoding passes, generic-api-key left out, and
// "gitleaks:allow" not honoured. The test links it; the service does not.
func gitleaksReference(t testing.TB) *detect.Detector {
	t.Helper()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	d.MaxDecodeDepth = 0
	d.IgnoreGitleaksAllow = true
	delete(d.Config.Rules, "generic-api-key")
	return d
}

func leakKey(id, secret, match string, line, column int) string {
	return fmt.Sprintf("%s|%q|%q|%d:%d", id, secret, match, line, column)
}

func referenceLeaks(d *detect.Detector, s string) []string {
	var out []string
	for _, f := range d.DetectString(s) {
		out = append(out, leakKey(f.RuleID, f.Secret, f.Match, f.StartLine, f.StartColumn))
	}
	slices.Sort(out)
	return out
}

func ourLeaks(s string) []string {
	var out []string
	for _, f := range leakRules().find(s) {
		out = append(out, leakKey(f.RuleID, f.Secret, f.Match, f.StartLine, f.StartColumn))
	}
	slices.Sort(out)
	return out
}

// Every rule of gitleaks' set, on texts its own pattern generates (with
// and without its keywords, on a line of their own or among others, in
// high and low entropy, near the stop words and allowlisted values),
// finds exactly what gitleaks' detector finds: the same rules, secrets,
// matches and places.
func TestTheRuleSetFindsWhatGitleaksFinds(t *testing.T) {
	ref := gitleaksReference(t)
	r := rand.New(rand.NewPCG(31, 7))
	perRule := 40
	if testing.Short() {
		perRule = 8
	}
	checked, found := 0, 0
	var stopWords []string
	for _, a := range leakRules().global {
		stopWords = append(stopWords, a.StopWords...)
	}
	slices.Sort(stopWords)
	for _, lr := range leakRules().rules {
		rule, err := lr.rule()
		if err != nil {
			t.Fatalf("%s: %v", lr.id, err)
		}
		if rule.Regex == nil {
			continue
		}
		re, err := syntax.Parse(rule.Regex.String(), syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", lr.id, err)
		}
		for i := range perRule {
			sample := generate(r, re, i%3 == 2)
			if i%4 == 3 && len(stopWords) > 0 {
				// A stop word over the sample's middle: an allowlisted
				// secret, or no match at all.
				w := stopWords[r.IntN(len(stopWords))]
				if mid := len(sample) / 2; mid+len(w) <= len(sample) {
					sample = sample[:mid] + w + sample[mid+len(w):]
				}
			}
			var text string
			switch i % 5 {
			case 0:
				text = sample
			case 1:
				text = "config:\n  " + sample + "\nnext line"
			case 2:
				text = "first line\r\nsecond " + sample
			case 3:
				text = sample + " and again\n" + sample + "\n"
			case 4:
				text = "token: example " + sample + " # " + strings.ToUpper(sample)
			}
			want, got := referenceLeaks(ref, text), ourLeaks(text)
			checked++
			if len(want) > 0 {
				found++
			}
			if !slices.Equal(want, got) {
				t.Errorf("%s on %q:\n gitleaks %v\n     ours %v", lr.id, text, want, got)
			}
		}
	}
	// The samples must reach the findings, not only the misses.
	if found < checked/3 {
		t.Errorf("only %d of %d texts had a finding: the samples do not exercise the rules", found, checked)
	}
	t.Logf("%d texts over %d rules, %d with findings", checked, len(leakRules().rules), found)
}

// A "gitleaks:allow" on the line does not excuse a secret: the text is
// the caller's, and so would be the comment.
func TestAnAllowCommentDoesNotHideASecret(t *testing.T) {
	secret := "ghp_" + strings.Repeat("aB3dE5fG7h", 3) + "123456"
	text := "token = " + secret + " # gitleaks:allow"
	if leaks := leakRules().find(text); len(leaks) == 0 {
		t.Fatalf("no finding in %q", text)
	}
	if out := Text(text); strings.Contains(out, secret) {
		t.Errorf("Text(%q) = %q: the secret survives", text, out)
	}
}

// A rule is translated only once a text holds one of its keywords: a
// process holds the rules its texts needed, not all two hundred.
func TestARuleIsTranslatedOnlyWhenATextNeedsIt(t *testing.T) {
	set, err := loadLeakRules(ruleSetTOML)
	if err != nil {
		t.Fatal(err)
	}
	translated := map[string]bool{}
	for _, lr := range set.rules {
		inner := lr.rule
		lr.rule = func() (config.Rule, error) { translated[lr.id] = true; return inner() }
	}
	if got := set.find("nothing to see here"); len(got) != 0 {
		t.Fatalf("found %v in a text without keywords", got)
	}
	if len(translated) != 0 {
		t.Errorf("translated %v for a text that holds no keyword", translated)
	}
	got := set.find("token abc_0123456789abcdef")
	if len(got) != 1 || got[0].RuleID != "abc" || got[0].Secret != "0123456789abcdef" {
		t.Errorf("find = %+v, want one abc finding of 0123456789abcdef", got)
	}
	if !translated["abc"] || translated["xyz"] {
		t.Errorf("translated %v, want abc alone", translated)
	}
	if got := set.find("xyz_12345678"); len(got) != 1 {
		t.Errorf("find(xyz_12345678) = %+v, want one finding", got)
	}
	// The global allowlist's stop word, the entropy floor, the rule's own
	// allowlist and a global one that targets the rule excuse.
	for _, text := range []string{"abc_0123456789example", "abc_0000000000000000", "abc_allowedallowed12", "xyz_01234567"} {
		if got := set.find(text); len(got) != 0 {
			t.Errorf("find(%q) = %+v, want it excused", text, got)
		}
	}
}

// ruleSetTOML is a small gitleaks configuration: a global allowlist, a
// rule with an entropy floor and an allowlist of its own, one targeted
// by a global allowlist, and one a text never names.
const ruleSetTOML = `
title = "test"
[allowlist]
stopwords = ["example"]

[[rules]]
id = "abc"
regex = '''abc_([0-9a-z]{16,20})'''
entropy = 2.0
keywords = ["ABC_"]
[[rules.allowlists]]
regexes = ['''^allowed''']

[[rules]]
id = "xyz"
regex = '''xyz_[0-9]{8}'''
keywords = ["xyz_"]

[[allowlists]]
targetRules = ["xyz"]
regexes = ['''^xyz_0''']
`

func TestARuleSetWithWhatThisRunnerDoesNotDoIsRefused(t *testing.T) {
	for name, toml := range map[string]string{
		"required":       "[[rules]]\nid = \"a\"\nregex = 'a'\n[[rules.required]]\nid = \"b\"\n[[rules]]\nid = \"b\"\nregex = 'b'\n",
		"extend":         "[extend]\nuseDefault = true\n",
		"twice":          "[[rules]]\nid = \"a\"\nregex = 'a'\n[[rules]]\nid = \"a\"\nregex = 'b'\n",
		"unknown target": "[[rules]]\nid = \"a\"\nregex = 'a'\n[[allowlists]]\ntargetRules = [\"zz\"]\nregexes = ['x']\n",
	} {
		if _, err := loadLeakRules(toml); err == nil {
			t.Errorf("%s: loaded, want an error", name)
		}
	}
}

// generate returns a random text that re's syntax describes (bounded
// repeats, random branches, letters of either case where the pattern
// folds case); low draws each class's first character, for texts whose
// entropy is too low to be a secret.
func generate(r *rand.Rand, re *syntax.Regexp, low bool) string {
	var b strings.Builder
	gen(r, re, &b, low)
	return b.String()
}

func gen(r *rand.Rand, re *syntax.Regexp, b *strings.Builder, low bool) {
	repeat := func(lo, hi int) {
		if hi < 0 || hi > lo+8 {
			hi = lo + 8
		}
		for range lo + r.IntN(hi-lo+1) {
			gen(r, re.Sub[0], b, low)
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && r.IntN(2) == 0 {
				c = unicode.SimpleFold(c)
			}
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		i := r.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], re.Rune[i+1]
		if hi > 0x7e && lo <= 0x7e {
			hi = 0x7e
		}
		if hi-lo > 200 {
			hi = lo + 200
		}
		if low {
			b.WriteRune(lo)
			return
		}
		b.WriteRune(lo + rune(r.IntN(int(hi-lo)+1)))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(byte('!' + r.IntN(94)))
	case syntax.OpCapture:
		gen(r, re.Sub[0], b, low)
	case syntax.OpStar:
		repeat(0, -1)
	case syntax.OpPlus:
		repeat(1, -1)
	case syntax.OpQuest:
		repeat(0, 1)
	case syntax.OpRepeat:
		repeat(re.Min, re.Max)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			gen(r, sub, b, low)
		}
	case syntax.OpAlternate:
		gen(r, re.Sub[r.IntN(len(re.Sub))], b, low)
	}
}

// targetsTOML has allowlists of every target and condition, which
// gitleaks' default rules use only in rules leakRules leaves out.
const targetsTOML = `
title = "targets"
[[rules]]
id = "mt"
regex = '''mt_([0-9a-f]{6})'''
keywords = ["mt_"]
[[rules.allowlists]]
regexTarget = "match"
regexes = ['''^mt_0''']

[[rules]]
id = "ln"
regex = '''ln_[0-9]{6}'''
keywords = ["ln_"]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''skip-me''']

[[rules]]
id = "and"
regex = '''and_[0-9]{6}'''
keywords = ["and_"]
[[rules.allowlists]]
condition = "AND"
regexes = ['''7$''']
stopwords = ["and_1"]

[[rules]]
id = "andpath"
regex = '''ap_[0-9]{6}'''
keywords = ["ap_"]
[[rules.allowlists]]
condition = "AND"
paths = ['''.*''']
regexes = ['''.''']
`

// The allowlists' targets (the match, the line the detector places a
// match on, the secret) and their AND condition act as in gitleaks'
// detector, on texts where the line is the first, a middle or a last one
// with and without a line end.
func TestAllowlistTargetsActAsGitleaks(t *testing.T) {
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(targetsTOML)); err != nil {
		t.Fatal(err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		t.Fatal(err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		t.Fatal(err)
	}
	ref := detect.NewDetector(cfg)
	ref.IgnoreGitleaksAllow = true
	set, err := loadLeakRules(targetsTOML)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"mt_0abcde", "mt_1abcde", "x mt_0abcde mt_1abcde",
		"ln_123456", "skip-me ln_123456", "skip-me\nln_123456", "skip-me\nln_123456\n", "a\nskip-me ln_123456\nb",
		"skip-me\r\nln_123456", "ln_123456\nskip-me", "one\ntwo ln_123456 skip-me\nthree",
		"and_123457", "and_123456", "and_223457", "ap_123456",
	}
	for _, text := range texts {
		var got []string
		for _, f := range set.find(text) {
			got = append(got, leakKey(f.RuleID, f.Secret, f.Match, f.StartLine, f.StartColumn))
		}
		slices.Sort(got)
		if want := referenceLeaks(ref, text); !slices.Equal(want, got) {
			t.Errorf("%q:\n gitleaks %v\n     ours %v", text, want, got)
		}
	}
}

// The keyword index says a text holds a keyword exactly when
// strings.Contains does, for every keyword of the rule set.
func FuzzKeywordIndex(f *testing.F) {
	for _, seed := range []string{"", "a", "ghp_", "xoxb-1 akia", "sk_live_\x00\xff", "-----begin", "pypi-ag"} {
		f.Add(seed)
	}
	x := &leakRules().keywords
	f.Fuzz(func(t *testing.T, text string) {
		present := x.in(text)
		for i, w := range x.words {
			if present[i] != strings.Contains(text, w) {
				t.Fatalf("keyword %q in %q: index says %v", w, text, present[i])
			}
		}
	})
}
