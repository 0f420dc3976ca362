package httpapi

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
)

// Request bodies are bounded three ways before they are decoded: each
// route caps its own body (MaxSubmitBytes for a submission, less for the
// control plane), strictjson.CheckShape caps nesting and list lengths on
// the bytes, and the bytes of all bodies being read and handled at once
// are capped (admission.go), so that many large requests at once wait
// their turn instead of each holding its decoded copy.

// MaxBodyBytesInFlight bounds the bytes of authenticated callers' large
// bodies (more than MaxSmallBody, or of unknown length) being read and
// handled at once: one submission of the largest size beside smaller
// ones. Small bodies and unauthenticated ones have budgets of their own
// (admission.go). A request whose body does not fit waits up to BodyWait
// for room, without holding up one that fits, then is answered 503 with
// Retry-After. A body being decoded costs a few times its size, so this
// is what keeps the process under its ceiling (docs/DESIGN.md, "Request
// bodies and memory").
const MaxBodyBytesInFlight = MaxSubmitBytes + MaxSubmitBytes/2

// BodyWait bounds how long an authenticated request waits for its turn
// in its identity's line, and then for room among the bodies in flight.
const BodyWait = 10 * time.Second

// hasBody reports whether a request carries a body to read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// readJSON reads an API request's JSON body of at most max bytes: a body
// must say it is JSON, with one Content-Type of application/json (or a
// +json type) and UTF-8 if it names a charset; anything else, a missing
// one included (what a browser form or a bare fetch sends), is 415. An
// empty body is returned as nil without that check. Webhooks read their
// bodies with readBody: forges say what they send in their own ways.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, max int64) ([]byte, bool) {
	if !hasBody(r) {
		return nil, true
	}
	if why := notJSON(r.Header.Values("Content-Type")); why != "" {
		w.Header().Set("Accept-Post", "application/json")
		s.writeProblem(w, problemOf(http.StatusUnsupportedMediaType, wq.EINVALID, "unsupported_media_type",
			"Content-Type: "+why+": the API reads application/json"))
		return nil, false
	}
	return s.readBody(w, r, max, http.StatusUnprocessableEntity)
}

// notJSON says why Content-Type values do not name JSON; "" when they do.
func notJSON(values []string) string {
	switch {
	case len(values) == 0:
		return "missing"
	case len(values) > 1:
		return "given " + strconv.Itoa(len(values)) + " times"
	}
	mt, params, err := mime.ParseMediaType(values[0])
	if err != nil {
		return strconv.Quote(values[0]) + " is not a media type"
	}
	if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return strconv.Quote(mt) + " is not JSON"
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return strconv.Quote(k+"="+v) + " is not a parameter JSON takes (only charset=utf-8)"
		}
	}
	return ""
}

// problemOf is a problem document with an explicit status and reason.
func problemOf(status int, code, reason, detail string) api.Problem {
	return api.Problem{Status: status, Code: code, Reason: reason, Detail: detail}
}
