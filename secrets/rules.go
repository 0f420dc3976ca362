package secrets

import (
	"regexp"
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
	{id: "private-key", re: re(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)},
	{id: "putty-key", re: re(`(?s)PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:\s*[0-9A-Fa-f]+|\z)`)},
	// Credentials in URLs: scheme://user:pass@host, scheme://:pass@host,
	// scheme://token@host, passwords holding / or @ (up to the last @
	// before the host), Sentry DSNs.
	{id: "url-credentials", re: re(`(?i)[a-z][a-z0-9+.-]*://([^\s@/?#]*:[^\s]*|[^\s@/?#:]+)@`), group: 1},
	// Header lines whose value is a credential whatever it looks like.
	{id: "authorization-header", re: re(`(?i)(?:proxy-)?authorization\s*[:=]\s*([^\r\n]+)`), group: 1},
	{id: "cookie-header", re: re(`(?im)(?:^|[\s"'{,])(?:set-)?cookie\s*:\s*([^\r\n]+)`), group: 1},
	{id: "bearer", re: re(`(?i)\b(?:bearer|basic)\s+([A-Za-z0-9\-._~+/]{8,}=*)`), group: 1},
	{id: "token-scheme", re: re(`(?i)\btoken\s+([A-Za-z0-9\-._~+/]{16,}=*)`), group: 1},
	// Command lines: curl -u user:pw, --password x, --password=x, mysql -pX,
	// netrc's "password x".
	{id: "command-user", re: re(`(?:\s|^)(?:-u|--user)(?:\s+|=)[^\s:]+:(\S+)`), group: 1},
	{id: "command-password", re: re(`(?i)(?:\s|^)--?[a-z-]*pass(?:word|wd|phrase)?(?:\s+|=)([^\s-]\S*)`), group: 1},
	{id: "command-short-password", re: re(`(?i)\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p([^\s-]\S*)`), group: 1},
	{id: "netrc-password", re: re(`(?im)(?:\b(?:machine|default)\b[^\n]*?\bpassword|^\s*password)\s+([^\s:=]\S*)`), group: 1},
	// Name = value and name: value, in shell, YAML, INI, JSON and code,
	// whose name ends with a secret word (SECRET_KEY=, secret_key_base:,
	// passphrase:, client-key-data:, "auth": "…").
	{id: "secret-assignment", re: re(`(?i)[A-Za-z0-9_.-]*` + secretWord + `["']?\s*(?::|=|:=|=>)\s*("[^"\r\n]*"|'[^'\r\n]*'|[^\s,;&})\]"'\[]+)`), group: 1},
	// Vendor tokens by their documented prefixes, in any case and glued to
	// a word, beside the scanner's own rules for them.
	{id: "gitlab-token", re: re(`(?i)gl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent|soat|ffct|wt|sst)-[0-9A-Za-z_\-]{16,}`)},
	{id: "gitlab-runner-registration-token", re: re(`(?i)GR1348941[0-9A-Za-z_\-]{20,}`)},
	{id: "github-token", re: re(`(?i)gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}`)},
	{id: "sentry-token", re: re(`(?i)sntry[su]_[A-Za-z0-9+/=_]{20,}`)},
	{id: "slack-token", re: re(`(?i)xox[abposre]-[0-9A-Za-z-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}`)},
	{id: "slack-webhook", re: re(`(?i)hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]{20,}`)},
	{id: "stripe-key", re: re(`(?i)(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|whsec_[0-9A-Za-z]{20,}`)},
	{id: "google-api-key", re: re(`AIza[0-9A-Za-z_\-]{30,}`)},
	{id: "anthropic-key", re: re(`(?i)sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{20,}`)},
	{id: "openai-key", re: re(`(?i)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`)},
	{id: "huggingface-token", re: re(`(?i)hf_[A-Za-z0-9]{20,}`)},
	{id: "digitalocean-token", re: re(`(?i)do[por]_v1_[0-9a-f]{40,}`)},
	{id: "sendgrid-key", re: re(`SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}`)},
	{id: "npm-token", re: re(`(?i)npm_[A-Za-z0-9]{30,}`)},
	{id: "pypi-token", re: re(`pypi-AgE[A-Za-z0-9_\-]{20,}`)},
	{id: "vault-token", re: re(`(?i)hv[sbr]\.[A-Za-z0-9_\-]{20,}`)},
	{id: "azure-storage-key", re: re(`(?i)AccountKey=([A-Za-z0-9+/]{40,}={0,2})`), group: 1},
	{id: "azure-sas-signature", re: re(`(?i)[?&]sig=([A-Za-z0-9%+/=]{16,})`), group: 1},
	{id: "aws-access-key-id", re: re(`(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}`)},
	{id: "jwt", re: re(`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	// A 40-hex token near a word that says credential (a Gitea token
	// labelled any way): a commit id is not labelled so.
	{id: "labelled-hex-token", re: re(`(?i)(?:token|secret|key|auth|passw(?:or)?d|credential|bearer|gitea)[^0-9a-f\n]{0,30}\b([0-9a-f]{40})\b`), group: 1},
	// Bare words that look like keys: an AWS secret access key (40 of
	// base64's alphabet, mixed case and digits, not hex). Broad: redacted
	// when stored, never a reason to refuse a change.
	{id: "bare-secret-key", re: re(`(?:^|[^A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?:$|[^A-Za-z0-9/+=])`), group: 1, broad: true, check: keyLike},
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
