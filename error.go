package workqueue

import (
	"errors"
	"fmt"
)

// Application error codes. The set is closed: every error that crosses a
// package boundary either carries one of these codes or is internal.
const (
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	ECONFLICT     = "conflict"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	EUNAVAILABLE  = "unavailable"
	EINTERNAL     = "internal"
)

// Error is the application error. Code is one of the E* constants and is
// stable; Message is safe to show to a caller.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-safe message of err: the message of its
// *Error, or "internal error" for anything else.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrLeaseLost is returned by every write made under a lease whose token no
// longer matches the item's: the lease expired and another worker claimed
// the item, or the item left the active phase. The writer must stop.
var ErrLeaseLost = &Error{Code: ECONFLICT, Message: "lease lost"}

// ErrNotClaimable is returned by a claim on an item that is leased by
// someone else or is not active.
var ErrNotClaimable = &Error{Code: ECONFLICT, Message: "item not claimable"}

// ErrPermanent marks an executor error that retrying cannot fix; the engine
// fails the item at once instead of backing off. Wrap it:
// fmt.Errorf("%w: project %s does not exist", workqueue.ErrPermanent, p).
var ErrPermanent = errors.New("permanent failure")
