// Package secrets finds secrets in what callers send, to keep them out of
// everything the service stores (session checkpoints, leases, sessions,
// events, incident titles and bodies, audit metadata: hard rules 1 and 5
// of seed 003's #660) and out of the changes it pushes (push protection,
// Scan).
//
// It combines a maintained scanner's rule set, gitleaks v8's default
// rules (about 200 vendor rules with keywords, entropy and allowlists, run
// by gitleaks.go as gitleaks' detector runs them, each compiled when a
// text first needs it; and the service's own decoding of base64 and
// percent-encoded words), with the
// service's structural rules (rules.go): secret-named members at any
// depth, URL userinfo, header lines, key = value assignments,
// command-line passwords, key blocks, and vendor prefixes in any case or
// glued to a word. Redaction keeps text readable: each secret becomes
// "[REDACTED:rule]" (Mask). It errs on the side of masking: a checkpoint
// that loses a word is recoverable, a stored token is not.
//
// Every rule also looks beyond the text as written (decode.go): through
// percent-encoding, HTML entities, backslash escapes and invisible
// characters, across words cut by line ends and string concatenations,
// into base64 and hex words down to five layers, and at private keys
// without their BEGIN line, at a cost linear in the text.
//
// Text, JSON and Value (secrets.go) redact a string, a JSON document and
// a decoded JSON value; Contains and IsSecretName say whether text holds
// a secret and whether a member's name makes its value one; Find lists
// the Findings in any text a caller sends (a field), and Scan those in a
// file of a change, text or binary.
package secrets
