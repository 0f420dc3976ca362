package secrets

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
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
// first rule's name kept).
func find(s string, broad bool) []span {
	if s == "" {
		return nil
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
	out = append(out, encoded(s, broad)...)
	if !broad {
		out = slices.DeleteFunc(out, func(sp span) bool { return sp.broad })
	}
	return merge(out)
}

// encoded is the words of s that decode (base64, percent-encoding) to
// text holding a secret by the structural rules (the scanner decodes for
// its own): the whole encoded word is the span. One layer of each
// encoding is looked through, and within it one more.
func encoded(s string, broad bool) []span {
	return encodedAt(s, broad, 2)
}

func encodedAt(s string, broad bool, depth int) []span {
	if depth == 0 {
		return nil
	}
	var out []span
	for _, m := range encodedWords(s) {
		word := s[m[0]:m[1]]
		for _, text := range decodings(word) {
			if hasStructural(text, false) || leakRules().any(text) || len(encodedAt(text, false, depth-1)) > 0 {
				out = append(out, span{start: m[0], end: m[1], rule: "encoded-secret"})
				break
			}
		}
	}
	return out
}

// encodedWords are the words of s that may hide a secret under an
// encoding: runs of base64's alphabets (standard or URL-safe) of at
// least 16 characters, and words holding a percent escape.
func encodedWords(s string) [][2]int {
	var out [][2]int
	b64 := func(c byte) bool { return nameByte(c) && c != '.' || c == '+' || c == '/' || c == '=' }
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '<' || c == '>' {
			i++
			continue
		}
		j := i
		for j < len(s) && !strings.ContainsRune(" \t\n\r\"'<>", rune(s[j])) {
			j++
		}
		word := s[i:j]
		if strings.Contains(word, "%") {
			out = append(out, [2]int{i, j})
		} else {
			for k := i; k < j; {
				if !b64(s[k]) {
					k++
					continue
				}
				e := k
				for e < j && b64(s[e]) {
					e++
				}
				if e-k >= 16 {
					out = append(out, [2]int{k, e})
				}
				k = e
			}
		}
		i = j
	}
	return out
}

// decodings are the texts word decodes to, as base64 or percent-encoding,
// that are printable text.
func decodings(word string) []string {
	var out []string
	if strings.Contains(word, "%") {
		if t, err := url.PathUnescape(word); err == nil && t != word {
			out = append(out, t)
		}
	}
	trimmed := strings.TrimRight(word, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(trimmed); err == nil && printable(b) {
			out = append(out, string(b))
			break
		}
	}
	return out
}

// printable reports whether b is UTF-8 text without control characters
// but line ends and tabs.
func printable(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < ' ' && r != '\n' && r != '\r' && r != '\t' || r == 0x7f || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// hasStructural reports whether one of the structural rules, or the
// scanner, finds a secret in s.
func hasStructural(s string, broad bool) bool {
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
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			start, end := m[2*r.group], m[2*r.group+1]
			if start >= 0 && end > start && (r.check == nil || r.check(s[start:end])) {
				return true
			}
		}
	}
	for _, sp := range append(secretAssignments(s, lower), wordRules(s, lower, broad)...) {
		if broad || !sp.broad {
			return true
		}
	}
	return false
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

// Scan returns the secrets in content, a file of a change about to be
// pushed, by line and column: the scanner's rules and the structural
// ones, without the broad rules that flag a word only for looking random
// (a change is refused on a finding; a checkpoint merely loses a word).
// Every content is scanned, text or not: whether a file counts as text
// is the caller's judgement, and no shape of content (a NUL byte, invalid
// UTF-8) turns scanning off.
func Scan(content []byte) []Finding {
	s := string(content)
	lines := lineStarts(s)
	var out []Finding
	for _, sp := range find(s, false) {
		line, _ := slices.BinarySearch(lines, sp.start+1)
		out = append(out, Finding{Rule: sp.rule, Line: line, Column: sp.start - lines[line-1] + 1})
	}
	return out
}
