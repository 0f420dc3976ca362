package secrets

import (
	"math"
	"regexp"
	"slices"
	"strings"
)

// rule is one of the service's own structural rules: the shapes a
// scanner's rule set does not know because they are about structure (a
// name that says secret, a URL's userinfo, a header line, a key block) or
// because agents paste them in forms a vendor's rule does not expect
// (upper-cased, glued to a word). group is the capture group holding the
// secret (0: the whole match). broad rules find text that may be a
// secret without any sign of one (a bare high-entropy word): they redact
// what is stored, but never refuse a change (Scan leaves them out).
type rule struct {
	id    string
	re    *regexp.Regexp
	group int
	broad bool
	// check, when set, must hold for the secret, or the match is not one
	// (an entropy test for the bare shapes).
	check func(string) bool
	// keywords prefilter the rule: it runs only on text whose lower case
	// holds one of them (none: always; a rule with a cheaper test of its
	// own, see runs, sets want instead).
	keywords []string
	want     func(lower string) bool
	// whole rules scan the whole text once a keyword is found: their
	// matches can be longer than a window (a key block).
	whole bool
	// fold says the rule matches case-insensitively: it runs on the
	// text's ASCII lower case (same offsets), compiled from its pattern
	// in lower case, because Go's regexp with (?i) costs several times
	// more per byte than without.
	fold bool
}

// init compiles every (?i) rule as a fold rule.
func init() {
	for i := range rules {
		r := &rules[i]
		src := r.re.String()
		flags, rest, ok := strings.Cut(src, ")")
		if !strings.HasPrefix(src, "(?") || !ok || !strings.Contains(flags, "i") || strings.ContainsAny(flags, ":") {
			continue
		}
		flags = strings.ReplaceAll(flags, "i", "")
		prefix := ""
		if flags != "(?" {
			prefix = flags + ")"
		}
		r.re, r.fold = regexp.MustCompile(prefix+lowerLiterals(rest)), true
	}
}

// lowerLiterals lowers the ASCII letters of a pattern that are not an
// escape's (\S stays \S).
func lowerLiterals(pattern string) string {
	b := []byte(pattern)
	for i := range b {
		if i > 0 && b[i-1] == '\\' && (i < 2 || b[i-2] != '\\') {
			continue
		}
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// asciiLower is s with its ASCII letters lowered: the same bytes at the
// same offsets otherwise, so that a fold rule's matches are spans of s.
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// secretWord is what a name ends with when its value is a secret,
// whatever the value looks like.
const secretWord = `(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|secret[_-]?key|` +
	`encryption[_-]?key|signing[_-]?key|ssh[_-]?key|client[_-]key[_-]data|key[_-]base|credentials?|dsn|auth|cookie|session|bearer|sig)`

// secretName matches a JSON member or header name whose value is a
// secret: one that is, or ends with, a secret word (token, x-api-key,
// client-key-data, SECRET_KEY, auth), and the bare names key and
// passphrase-like words. It is anchored at both ends.
var secretName = regexp.MustCompile(`(?i)^(?:[a-z0-9_.-]*[_.-])?` + secretWord + `$|^(?i:key)$|^(?i)[a-z0-9_.-]*[_-]key$`)

func re(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// rules are the structural rules, most specific first.
var rules = []rule{
	// Key blocks: PEM private keys (RSA, EC, OpenSSH, encrypted), PGP
	// private key blocks, terminated or cut off; PuTTY key files.
	{id: "private-key", re: re(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`), keywords: []string{"private key"}, whole: true},
	// A key block's END line alone: what is left of a key whose BEGIN
	// line was cut off (its body is found by its DER: decode.go).
	{id: "private-key", re: re(`-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----`), keywords: []string{"private key"}},
	{id: "putty-key", re: re(`(?s)PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:\s*[0-9A-Fa-f]+|\z)`), keywords: []string{"putty-user-key-file"}, whole: true},
	// Credentials in URLs: scheme://user:pass@host, scheme://:pass@host,
	// scheme://token@host, passwords holding / or @ (up to the last @
	// before the host), Sentry DSNs.
	{id: "url-credentials", re: re(`(?i)[a-z][a-z0-9+.-]*://([^\s@/?#]*:[^\s]*|[^\s@/?#:]+)@`), group: 1, keywords: []string{"://"}},
	// Header lines whose value is a credential whatever it looks like.
	{id: "authorization-header", re: re(`(?i)(?:proxy-)?authorization\s*[:=]\s*([^\r\n]+)`), group: 1, keywords: []string{"authorization"}},
	{id: "cookie-header", re: re(`(?im)(?:^|[\s"'{,])(?:set-)?cookie\s*:\s*([^\r\n]+)`), group: 1, keywords: []string{"cookie"}},
	{id: "bearer", re: re(`(?i)\b(?:bearer|basic)\s+([A-Za-z0-9\-._~+/]{8,}=*)`), group: 1, keywords: []string{"bearer", "basic"}},
	{id: "token-scheme", re: re(`(?i)\btoken\s+([A-Za-z0-9\-._~+/]{16,}=*)`), group: 1, keywords: []string{"token"}},
	// Command lines: curl -u user:pw, --password x, --password=x, mysql -pX,
	// netrc's "password x".
	{id: "command-user", re: re(`(?:\s|^)(?:-u|--user)(?:\s+|=)[^\s:]+:(\S+)`), group: 1, keywords: []string{"-u", "--user"}},
	{id: "command-password", re: re(`(?i)(?:\s|^)--?[a-z-]*pass(?:word|wd|phrase)?(?:\s+|=)([^\s-]\S*)`), group: 1, keywords: []string{"-pass", "password", "passwd", "passphrase"}},
	{id: "command-short-password", re: re(`(?i)\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p([^\s-]\S*)`), group: 1, keywords: []string{"mysql", "mariadb"}},
	{id: "netrc-password", re: re(`(?im)(?:\b(?:machine|default)\b[^\n]*?\bpassword|^\s*password)\s+([^\s:=]\S*)`), group: 1, keywords: []string{"password"}},
	// Name = value and name: value, in shell, YAML, INI, JSON and code,
	// whose name ends with a secret word (SECRET_KEY=, secret_key_base:,
	// passphrase:, client-key-data:, "auth": "…").
	// (secretAssignments, by hand: see there.)
	// Vendor tokens by their documented prefixes, in any case and glued to
	// a word, beside the scanner's own rules for them.
	{id: "gitlab-token", re: re(`(?i)gl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent|soat|ffct|wt|sst)-[0-9A-Za-z_\-]{16,}`), keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-", "gloas-", "glcbt-", "glft-", "glimt-", "glagent-", "glsoat-", "glffct-", "glwt-", "glsst-"}},
	{id: "gitlab-runner-registration-token", re: re(`(?i)GR1348941[0-9A-Za-z_\-]{20,}`), keywords: []string{"gr1348941"}},
	{id: "github-token", re: re(`(?i)gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}`), keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{id: "sentry-token", re: re(`(?i)sntry[su]_[A-Za-z0-9+/=_]{20,}`), keywords: []string{"sntrys_", "sntryu_"}},
	{id: "slack-token", re: re(`(?i)xox[abposre]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}`), keywords: []string{"xox", "xapp-"}},
	{id: "slack-webhook", re: re(`(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,}`), keywords: []string{"hooks.slack.com"}},
	{id: "stripe-key", re: re(`(?i)(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{20,}`), keywords: []string{"_live_", "_test_", "whsec_"}},
	{id: "google-api-key", re: re(`AIza[0-9A-Za-z_\-]{30,}`), keywords: []string{"aiza"}},
	{id: "anthropic-key", re: re(`(?i)sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{20,}`), keywords: []string{"sk-ant-"}},
	{id: "openai-key", re: re(`(?i)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), keywords: []string{"sk-"}},
	{id: "huggingface-token", re: re(`(?i)hf_[A-Za-z0-9]{20,}`), keywords: []string{"hf_"}},
	{id: "digitalocean-token", re: re(`(?i)do[por]_v1_[0-9a-f]{40,}`), keywords: []string{"_v1_"}},
	{id: "sendgrid-key", re: re(`SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}`), keywords: []string{"sg."}},
	{id: "npm-token", re: re(`(?i)npm_[A-Za-z0-9]{30,}`), keywords: []string{"npm_"}},
	{id: "pypi-token", re: re(`pypi-AgE[A-Za-z0-9_\-]{20,}`), keywords: []string{"pypi-age"}},
	{id: "vault-token", re: re(`(?i)hv[sbr]\.[A-Za-z0-9_\-]{20,}`), keywords: []string{"hvs.", "hvb.", "hvr."}},
	{id: "azure-storage-key", re: re(`(?i)AccountKey=([A-Za-z0-9+/]{40,}={0,2})`), group: 1, keywords: []string{"accountkey="}},
	{id: "azure-sas-signature", re: re(`(?i)[?&]sig=([A-Za-z0-9%+/=]{16,})`), group: 1, keywords: []string{"sig="}},
	{id: "aws-access-key-id", re: re(`(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}`), keywords: []string{"akia", "asia", "abia", "acca"}},
	{id: "jwt", re: re(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), keywords: []string{"eyj"}},
	// (labelled hex tokens and bare keys: wordRules, by hand.)
}

// keyLike reports whether w looks like a random key rather than a word, a
// path or a commit id: upper and lower case letters and digits, and not
// hexadecimal.
func keyLike(w string) bool {
	var upper, lower, digit bool
	for _, r := range w {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	return upper && lower && digit && strings.Trim(strings.ToLower(w), "0123456789abcdef") != "" && strings.Count(w, "/") < 4
}

// Character classes for runs.
const (
	hexClass = "0123456789abcdef"
	b64Class = "abcdefghijklmnopqrstuvwxyz0123456789+/"
)

// hasRun reports whether lower holds n bytes in a row of class (lower
// case): the cheap test before a rule for a bare word of that alphabet.
func hasRun(lower, class string, n int) bool {
	run := 0
	for i := range len(lower) {
		if strings.IndexByte(class, lower[i]) >= 0 {
			if run++; run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// applies reports whether r may find anything in a text whose lower case
// is lower.
func (r *rule) applies(lower string) bool {
	if r.want != nil {
		return r.want(lower)
	}
	if len(r.keywords) == 0 {
		return true
	}
	for _, k := range r.keywords {
		if strings.Contains(lower, k) {
			return true
		}
	}
	return false
}

// Around a keyword, a rule looks this far back and ahead: a name, a
// separator and a value, a URL's scheme and userinfo.
const (
	windowBefore = 96
	windowAfter  = 640
)

// windows are the parts of a text (its lower case given) that r scans:
// the whole text for a rule without keywords or with a test of its own,
// and for one whose matches may be long (a key block); else the spans
// around each keyword, merged. A regexp over a window costs what the
// window is long, not what the text is: prose that names a password once
// is scanned once, around that word.
func (r *rule) windows(lower string) [][2]int {
	if len(r.keywords) == 0 || r.whole || len(lower) <= windowBefore+windowAfter {
		return [][2]int{{0, len(lower)}}
	}
	var out [][2]int
	for _, k := range r.keywords {
		for i := 0; i < len(lower); {
			j := strings.Index(lower[i:], k)
			if j < 0 {
				break
			}
			at := i + j
			out = append(out, [2]int{max(at-windowBefore, 0), min(at+len(k)+windowAfter, len(lower))})
			i = at + len(k)
		}
	}
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	merged := out[:0]
	for _, w := range out {
		if n := len(merged); n > 0 && w[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], w[1])
			continue
		}
		merged = append(merged, w)
	}
	return merged
}

// secretSuffixes are the endings of a name, with '_' and '-' removed and
// in lower case, whose value is a secret whatever it looks like.
var secretSuffixes = []string{"password", "passwd", "passphrase", "pass", "pwd", "secret", "token", "apikey", "accesskey",
	"privatekey", "secretkey", "encryptionkey", "signingkey", "sshkey", "clientkeydata", "keybase", "credential", "credentials",
	"dsn", "auth", "cookie", "session", "bearer", "sig"}

// secretAssignments finds name = value and name: value, in shell, YAML,
// INI, JSON and code, whose name ends with a secret word (SECRET_KEY=,
// secret_key_base:, passphrase:, client-key-data:, "auth": "…",
// password := "…"), and returns the values' spans (a quoted value with
// its quotes). It is written by hand: as a regexp (a name class, a
// two-dozen-word alternation, case folding) it was half of all the
// time redaction took, on text that merely said "passed".
func secretAssignments(s, lower string) []span {
	var out []span
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != ':' && c != '=' {
			continue
		}
		// The name before the separator: [A-Za-z0-9_.-]+, then an
		// optional closing quote and blanks.
		j := i
		for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
			j--
		}
		if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
			j--
		}
		end := j
		for j > 0 && nameByte(s[j-1]) {
			j--
		}
		if j == end || !secretSuffix(lower[j:end]) {
			continue
		}
		// The value after it: past := or =>, blanks, then a quoted
		// string or a bare word.
		k := i + 1
		if k < len(s) && (c == ':' && s[k] == '=' || c == '=' && s[k] == '>') {
			k++
		} else if c == ':' && k < len(s) && !strings.ContainsRune(" \t\"'", rune(s[k])) {
			continue // "token:alice", "auth:x" name a thing (an identity, a scheme), they assign nothing
		}
		for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
			k++
		}
		if k >= len(s) {
			continue
		}
		start := k
		if q := s[k]; q == '"' || q == '\'' {
			e := strings.IndexAny(s[k+1:], string(q)+"\r\n")
			if e < 0 || s[k+1+e] != q {
				continue
			}
			k += e + 2
		} else {
			for k < len(s) && !strings.ContainsRune(" \t\r\n,;&})]\"'[", rune(s[k])) {
				k++
			}
		}
		if k > start {
			// A value that does not look like a key (a template, a word,
			// an id, a few characters) is still masked when stored, but
			// is no reason to refuse a change: broad.
			out = append(out, span{start: start, end: k, rule: "secret-assignment", broad: !keyValue(strings.Trim(s[start:k], "\"'"))})
			i = k - 1
		}
	}
	return out
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// secretSuffix reports whether a name (in lower case) ends with a secret
// word, '_' and '-' aside.
func secretSuffix(name string) bool {
	for _, w := range secretSuffixes {
		if endsWithIgnoring(name, w) {
			return true
		}
	}
	return false
}

// endsWithIgnoring reports whether name ends with word once its '_' and
// '-' are dropped.
func endsWithIgnoring(name, word string) bool {
	i, j := len(name)-1, len(word)-1
	for ; j >= 0; i-- {
		if i < 0 {
			return false
		}
		switch c := name[i]; {
		case c == '_' || c == '-':
		case c == word[j]:
			j--
		default:
			return false
		}
	}
	return true
}

// hexLabels are the words that, shortly before a 40-hex word on its line,
// say it is a credential (a Gitea token labelled any way); a commit id is
// not labelled so.
var hexLabels = []string{"token", "secret", "key", "auth", "password", "passwd", "credential", "bearer", "gitea"}

// wordRules finds the bare words of s that are secrets by their shape
// and surroundings: a 40-hex word with a credential's label up to 30
// bytes before it on its line, and, when broad, a 40-character word of
// base64's alphabet that looks random (keyLike: an AWS secret access
// key). Written by hand as one pass over the words: as regexps they
// scanned the whole text from every byte.
func wordRules(s, lower string, broad bool) []span {
	var out []span
	in := func(c byte) bool { return nameByte(c) && c != '.' && c != '-' && c != '_' || c == '+' || c == '/' }
	for i := 0; i < len(s); {
		if !in(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && in(s[j]) {
			j++
		}
		if word := s[i:j]; len(word) == 40 && (i == 0 || s[i-1] != '=') {
			switch {
			case isHex(lower[i:j]) && labelled(lower, i):
				out = append(out, span{start: i, end: j, rule: "labelled-hex-token"})
			case broad && keyLike(word):
				out = append(out, span{start: i, end: j, rule: "bare-secret-key", broad: true})
			}
		}
		i = j
	}
	return out
}

func isHex(w string) bool { return strings.Trim(w, "0123456789abcdef") == "" }

// labelled reports whether one of hexLabels ends within 30 bytes before
// at, on the same line.
func labelled(lower string, at int) bool {
	from := max(at-30-len("credential"), 0)
	if nl := strings.LastIndexByte(lower[from:at], '\n'); nl >= 0 {
		from += nl + 1
	}
	before := lower[from:at]
	if m := strings.LastIndex(before, "[redacted"); m >= 0 {
		// A mask's rule name ("aws-access-key-id") labels nothing: what
		// follows it is read as if the mask were not there.
		if end := strings.IndexByte(before[m:], ']'); end >= 0 {
			before = before[m+end+1:]
		}
	}
	for _, l := range hexLabels {
		if k := strings.LastIndex(before, l); k >= 0 && len(before)-(k+len(l)) <= 30 {
			return true
		}
	}
	return false
}

// keyValue reports whether an assigned value looks like a key or a
// password rather than a placeholder: at least 8 bytes, no template or
// variable syntax (${{ }}, {{ }}, $VAR, <value>, %s), not a UUID, not one
// word of lowercase letters, and of some variety (at least 3 bits of
// entropy per byte).
func keyValue(v string) bool {
	switch {
	case len(v) < 8 || strings.ContainsAny(v, "${}<>% ") || isUUID(v):
		return false
	case strings.Trim(v, "abcdefghijklmnopqrstuvwxyz") == "":
		return false
	}
	return entropy(v) >= 3
}

func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i, c := range []byte(v) {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
			return false
		}
	}
	return true
}

// entropy is v's Shannon entropy in bits per byte.
func entropy(v string) float64 {
	var counts [256]int
	for i := range len(v) {
		counts[v[i]]++
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h
}
