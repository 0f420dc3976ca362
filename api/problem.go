package api

import (
	"net/http"

	wq "github.com/workqueue-dev/workqueue"
)

// Problem is an RFC 9457 problem document, the body of every error
// answer. Code is the application error code (wq.EINVALID, …) and is
// stable; Refusal is set when a submission was refused, naming the
// action, path or field and the rule; RequestID is set on internal errors,
// to find the log line that says more.
type Problem struct {
	Type    string      `json:"type"`
	Title   string      `json:"title"`
	Status  int         `json:"status"`
	Detail  string      `json:"detail"`
	Code    string      `json:"code"`
	Refusal *wq.Refusal `json:"refusal,omitempty"` // the first of Refusals
	// Refusals are every refusal of a refused submission, in action
	// order, so that a caller fixes them all in one go.
	Refusals  []*wq.Refusal `json:"refusals,omitempty"`
	Reason    string        `json:"reason,omitempty"` // a stable refinement of code (wait_foreign_active, ...)
	RequestID string        `json:"request_id,omitempty"`
}

// Err is the problem as the application error it stands for: the
// *wq.Refusal when there is one, else a *wq.Error with its code and
// detail, so that a client tests wq.ErrorCode as the server did.
func (p *Problem) Err() error {
	if len(p.Refusals) > 0 {
		return wq.Refusals(p.Refusals)
	}
	if p.Refusal != nil {
		return p.Refusal
	}
	code := p.Code
	if code == "" {
		code = wq.EINTERNAL
	}
	msg := p.Detail
	if p.RequestID != "" {
		msg += " (request " + p.RequestID + ")"
	}
	return &wq.Error{Code: code, Message: msg, Reason: p.Reason}
}

// statusByCode maps application error codes to HTTP statuses: the one
// table every answer of the API (and every page of the dashboard) is
// given its status by.
var statusByCode = map[string]int{
	wq.EINVALID:      http.StatusUnprocessableEntity,
	wq.ENOTFOUND:     http.StatusNotFound,
	wq.ECONFLICT:     http.StatusConflict,
	wq.EUNAUTHORIZED: http.StatusUnauthorized,
	wq.EFORBIDDEN:    http.StatusForbidden,
	wq.EUNAVAILABLE:  http.StatusServiceUnavailable,
	wq.EINTERNAL:     http.StatusInternalServerError,
}

// StatusOf is the HTTP status of an application error code (wq.EINVALID,
// …): 500 for a code the table does not know, never 0.
func StatusOf(code string) int {
	if status, ok := statusByCode[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}
