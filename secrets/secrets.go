package secrets

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// MaskPrefix starts every mask: "[REDACTED:rule]".
const MaskPrefix = "[REDACTED"

// Mask is what replaces a secret found by rule.
func Mask(rule string) string { return MaskPrefix + ":" + rule + "]" }

// span is a secret found in a text: bytes [start, end) and the rule that
// found it.
type span struct {
	start, end int
	rule       string
	broad      bool
}

// find returns the secrets in s, sorted by start, overlaps merged (the
// first rule's name kept): those in s as written (flat) and those beyond
// it, decoded, joined or made visible (deep, decode.go).
func find(s string, broad bool) []span {
	if s == "" {
		return nil
	}
	out := flat(s, broad)
	out = append(out, deep(s, broad, maxLayers)...)
	if !broad {
		out = slices.DeleteFunc(out, func(sp span) bool { return sp.broad })
	}
	return merge(out)
}

// flatHook, set by tests, is told the length of every text flat scans:
// how the cost of the decoders is measured.
var flatHook func(n int)

// flat is what the rules find in s as written: the structural rules, the
// hand-written ones and the scanner's.
func flat(s string, broad bool) []span {
	if s == "" {
		return nil
	}
	if flatHook != nil {
		flatHook(len(s))
	}
	var out []span
	lower := asciiLower(s)
	for i := range rules {
		r := &rules[i]
		if r.broad && !broad || !r.applies(lower) {
			continue
		}
		text := s
		if r.fold {
			text = lower
		}
		for _, w := range r.windows(lower) {
			for _, m := range r.re.FindAllStringSubmatchIndex(text[w[0]:w[1]], -1) {
				start, end := w[0]+m[2*r.group], w[0]+m[2*r.group+1]
				if m[2*r.group] < 0 || end <= start || r.check != nil && !r.check(s[start:end]) {
					continue
				}
				out = append(out, span{start: start, end: end, rule: r.id, broad: r.broad})
			}
		}
	}
	out = append(out, secretAssignments(s, lower)...)
	out = append(out, wordRules(s, lower, broad)...)
	out = append(out, scanner(s)...)
	if !broad {
		out = slices.DeleteFunc(out, func(sp span) bool { return sp.broad })
	}
	return out
}

// scanner is gitleaks' findings in s as spans. A finding names the
// secret it matched; every occurrence of it in s is a span. A secret
// found in decoded text (base64, percent-encoded) does not occur in s as
// such: the encoded word at the finding's place is the span.
func scanner(s string) []span {
	var out []span
	lines := lineStarts(s)
	for _, f := range leakRules().find(s) {
		secret := strings.TrimSpace(f.Secret)
		if secret == "" {
			secret = strings.TrimSpace(f.Match)
		}
		found := false
		for i := 0; len(secret) >= 4 && i < len(s); {
			j := strings.Index(s[i:], secret)
			if j < 0 {
				break
			}
			out = append(out, span{start: i + j, end: i + j + len(secret), rule: f.RuleID})
			i += j + len(secret)
			found = true
		}
		if found || f.StartLine < 0 || f.StartLine >= len(lines) {
			continue
		}
		at := min(lines[f.StartLine]+max(f.StartColumn-1, 0), len(s))
		if start, end := encodedWord(s, at); end > start {
			out = append(out, span{start: start, end: end, rule: f.RuleID})
		}
	}
	return out
}

// lineStarts is the byte offset of each line of s.
func lineStarts(s string) []int {
	starts := []int{0}
	for i := range len(s) {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// encodedWord is the run of base64, hex and percent-encoding characters
// around byte at of s.
func encodedWord(s string, at int) (int, int) {
	in := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("+/=_-%", c) >= 0
	}
	start, end := at, at
	for start > 0 && in(s[start-1]) {
		start--
	}
	for end < len(s) && in(s[end]) {
		end++
	}
	return start, end
}

func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			last.broad = last.broad && sp.broad
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Text returns s with every secret found replaced by its mask. A mask is
// never found again, so Text(Text(s)) == Text(s).
func Text(s string) string {
	// A mask can join what surrounds it into a new match (a key block
	// whose header a first pass split): redact until nothing changes.
	for range 4 {
		out := redactOnce(s)
		if out == s {
			break
		}
		s = out
	}
	return s
}

// redactOnce is one pass of Text.
func redactOnce(s string) string {
	spans := find(s, true)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp.start])
		b.WriteString(Mask(sp.rule))
		at = sp.end
	}
	b.WriteString(s[at:])
	return b.String()
}

// Contains reports whether s holds a secret Text would remove.
func Contains(s string) bool { return len(find(s, true)) > 0 }

// IsSecretName reports whether a JSON member or field named name holds a
// secret whatever its value (password, token, api_key, authorization,
// key, auth, ssh_key, signing_key, session, bearer, cookie, ...).
func IsSecretName(name string) bool { return secretName.MatchString(name) }

// JSON returns doc with every string (member names included) redacted as
// Text does, and the value of every member whose name says secret
// (IsSecretName) replaced by a mask whole, whatever it is: a string, a
// number, an array or an object. doc must be valid JSON.
func JSON(doc json.RawMessage) (json.RawMessage, error) {
	if len(doc) == 0 {
		return doc, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(Value(v))
}

// Value redacts a decoded JSON value (as JSON does), in place where it
// can.
func Value(v any) any {
	switch v := v.(type) {
	case string:
		return Text(v)
	case []any:
		for i := range v {
			v[i] = Value(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			name := Text(k)
			if IsSecretName(k) {
				out[name] = Mask("secret-name")
				continue
			}
			out[name] = Value(x)
		}
		return out
	}
	return v
}

// Finding is a secret found in a file by Scan: where, and by which rule;
// never the secret itself.
type Finding struct {
	Rule   string `json:"rule"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in bytes
}

// Find returns the secrets in text, any text a caller would have the
// service send or store (a file's content, a title, a description, a
// commit message, a label, a branch name, a path, a comment), by line and
// column: the scanner's rules and the structural ones, without the broad
// rules that flag a word only for looking random (a refusal follows a
// finding; a checkpoint merely loses a word). It looks beyond the text as
// written: through base64 (standard or URL-safe, padded or not), hex,
// percent-encoding, HTML entities and backslash escapes, nested up to
// five layers and mixed; across words cut by line ends and string
// concatenations; with invisible characters and NUL bytes removed; and at
// private keys without their BEGIN line. A finding in decoded text is
// placed where its encoding starts. Its cost is linear in the text's
// length, whatever the text.
func Find(text string) []Finding {
	lines := lineStarts(text)
	var out []Finding
	for _, sp := range find(text, false) {
		line, _ := slices.BinarySearch(lines, sp.start+1)
		out = append(out, Finding{Rule: sp.rule, Line: line, Column: sp.start - lines[line-1] + 1})
	}
	return out
}

// Scan returns the secrets in content, a file of a change about to be
// pushed, as Find does. Every content is scanned, text or not: whether a
// file counts as text is the caller's judgement, and no shape of content
// (a NUL byte anywhere, invalid UTF-8, UTF-16) turns scanning off.
func Scan(content []byte) []Finding { return Find(string(content)) }
