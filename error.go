package workqueue

import (
	"errors"
	"fmt"
	"time"
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
	// Reason, when set, refines the code with a stable word a caller can
	// branch on (wait_foreign_active, not_owner, ...).
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Refusal is a submission refused by inspection or validation, naming
// what was refused: the file action (Index, Path) or the member (Field),
// and the rule. Its code is EINVALID; the API shows it whole.
type Refusal struct {
	Index   int    `json:"index"` // the action's index in the submission; -1 when no action is concerned
	Path    string `json:"path"`  // the offending path as submitted
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Field names the refused member of the submission (source_branch,
	// file_actions[1].file_path) when the refusal is about a field rather
	// than a path's shape; empty for inspection refusals.
	Field string `json:"field,omitempty"`
}

func (r *Refusal) Error() string {
	if r.Field != "" {
		return fmt.Sprintf("%s: %s: %s", r.Field, r.Rule, r.Message)
	}
	return fmt.Sprintf("action %d (%q): %s: %s", r.Index, r.Path, r.Rule, r.Message)
}

// Refusals are every refusal of one submission, in order: the API shows
// them all at once, so that a caller fixes them in one go. errors.As
// finds the first as a *Refusal. It is never empty.
type Refusals []*Refusal

func (rs Refusals) Error() string {
	if len(rs) == 1 {
		return rs[0].Error()
	}
	return fmt.Sprintf("%s (and %d more refusals)", rs[0].Error(), len(rs)-1)
}

// As makes errors.As find the first refusal as a *Refusal.
func (rs Refusals) As(target any) bool {
	if p, ok := target.(**Refusal); ok && len(rs) > 0 {
		*p = rs[0]
		return true
	}
	return false
}

// ErrorCode returns the code of the first *Error in err's chain (EINVALID
// for a *Refusal), EINTERNAL for any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	code, _ := describe(err)
	return code
}

// ErrorReason returns the Reason of the first *Error in err's chain, or
// "" when it has none.
func ErrorReason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// ErrorMessage returns the caller-safe message of err: the message of its
// *Error or *Refusal, or "internal error" for anything else.
func ErrorMessage(err error) string {
	_, msg := describe(err)
	return msg
}

// describe is the code and the caller-safe message of err.
func describe(err error) (code, message string) {
	var e *Error
	var r *Refusal
	var rs Refusals
	switch {
	case err == nil:
		return "", ""
	case errors.As(err, &e):
		return e.Code, e.Message
	case errors.As(err, &rs):
		return EINVALID, rs.Error()
	case errors.As(err, &r):
		return EINVALID, r.Error()
	}
	return EINTERNAL, "internal error"
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

// ErrSuperseded is returned by an executor's write (Store.ApplyChange with
// Change.SeenRevision) when work was enqueued for the item after the
// executor loaded it: a resubmission, a retry or an event. Nothing was
// written; the newer request wins and the loop decides again on the new
// state (see docs/DESIGN.md, "Executor writes are fenced by revision").
var ErrSuperseded = &Error{Code: ECONFLICT, Message: "superseded by newer work"}

// ErrTransient marks an executor error that is expected to go away on its
// own (the forge or the database is unreachable, overloaded or rate
// limiting): the engine backs off without counting an attempt, and fails
// the item only after it failed this way continuously for the configured
// give-up time. Wrap it as ErrPermanent.
var ErrTransient = errors.New("transient failure")

// IsTransient reports whether err is expected to pass on its own: marked
// with ErrTransient, a forge error of kind ForgeTransient or
// ForgeRateLimited, or an EUNAVAILABLE error. A permanent mark wins.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrPermanent) {
		return false
	}
	if errors.Is(err, ErrTransient) || ErrorCode(err) == EUNAVAILABLE {
		return true
	}
	kind, ok := ForgeErrorOf(err)
	return ok && (kind == ForgeTransient || kind == ForgeRateLimited)
}

// RetryAfterOf returns how long the forge asked the caller to wait (a
// Retry-After header), or 0.
func RetryAfterOf(err error) time.Duration {
	var fe *ForgeError
	if errors.As(err, &fe) {
		return fe.RetryAfter
	}
	return 0
}
