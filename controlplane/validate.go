package controlplane

import (
	"strings"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
)

// maxWorktreePath bounds the worktree path a session reports: a path,
// not a document; maxSessionName a session's name.
const (
	maxWorktreePath = 1024
	maxSessionName  = 200
)

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

// ValidateID refuses, naming field, a value that is not an id as the
// service makes them (a UUID) or a name an agent may choose for one: 1 to
// 64 of letters, digits, '.', '_', ':' and '-'. "" passes when not
// required.
func ValidateID(field, v string, required bool) error {
	switch {
	case v == "" && !required:
		return nil
	case v == "" || len(v) > 64 || strings.Trim(v, idChars) != "":
		return wq.Errorf(wq.EINVALID, "%s: want an id of 1 to 64 letters, digits, '.', '_', ':' or '-', got %q", field, clip(v))
	}
	return nil
}

const idChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"

// ValidateRepo refuses, naming field, a value that is not a repository's
// full path on a forge: group/name or deeper, of letters, digits, '.',
// '_' and '-', at most 255 bytes, no empty, '.' or '..' segment.
func ValidateRepo(field, v string) error {
	bad := len(v) == 0 || len(v) > 255 || !strings.Contains(v, "/")
	for _, seg := range strings.Split(v, "/") {
		bad = bad || seg == "" || seg == "." || seg == ".." || strings.Trim(seg, idChars) != "" || strings.Contains(seg, ":")
	}
	if bad {
		return wq.Errorf(wq.EINVALID, "%s: want a repository's full path such as group/name, got %q", field, clip(v))
	}
	return nil
}

// ValidateName refuses, naming field, a value that is not a configured
// name (a forge's): 1 to 64 of lowercase letters, digits, '_' and '-',
// starting with a letter or digit.
func ValidateName(field, v string) error {
	if v == "" || len(v) > 64 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" || v[0] == '-' || v[0] == '_' {
		return wq.Errorf(wq.EINVALID, "%s: want a name of 1 to 64 lowercase letters, digits, '_' or '-', got %q", field, clip(v))
	}
	return nil
}
