package controlplane

import (
	"strings"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
)

// maxWorktreePath bounds the worktree path a session reports: a path,
// not a document.
const maxWorktreePath = 1024

// ValidateSHA refuses, naming field, a value that is not a commit id (40
// or 64 lowercase hexadecimal digits, SHA-1 or SHA-256); "" passes (not
// given).
func ValidateSHA(field, sha string) error {
	if sha == "" {
		return nil
	}
	if (len(sha) != 40 && len(sha) != 64) || strings.Trim(sha, "0123456789abcdef") != "" {
		return wq.Errorf(wq.EINVALID, "%s: want a commit id (40 or 64 lowercase hex digits), got %q", field, clip(sha))
	}
	return nil
}

// validateText refuses, naming field, text over max bytes, invalid
// UTF-8 or holding control characters.
func validateText(field, v string, max int) error {
	switch {
	case len(v) > max:
		return wq.Errorf(wq.EINVALID, "%s: at most %d bytes, got %d", field, max, len(v))
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return wq.Errorf(wq.EINVALID, "%s: want one line of UTF-8 text", field)
	}
	return nil
}

// clip shortens v for an error message.
func clip(v string) string {
	if len(v) > 80 {
		return v[:80] + "…"
	}
	return v
}
