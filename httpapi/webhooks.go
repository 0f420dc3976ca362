package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/api"
	"github.com/workqueue-dev/workqueue/forge"
)

// receiveWebhook answers a forge's delivery. It is authenticated by the
// delivery's signature or token, not by a bearer token, and answers 2xx
// only once the event is committed.
//
// Nobody vouches for the sender before its body is read, so the body is
// admitted as every unauthenticated one is (readPublicBody): the
// headers are checked first (GitLab's token: a wrong one is refused
// before a byte of the body is read), then the body is read under the
// forge's own small budget and deadline, apart from authenticated
// callers' bodies.
func (s *Server) receiveWebhook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("forge")
	if err := s.webhooks.VerifyHeader(name, r.Header); err != nil {
		s.errorAs(w, r, err, webhookStatus)
		return
	}
	body, release, ok := s.readPublicBody(w, r, "webhooks "+name, WebhookBytesInFlight, forge.MaxBodyBytes, http.StatusBadRequest)
	if !ok {
		return
	}
	defer release()
	got, err := s.webhooks.Receive(r.Context(), name, r.Header, body)
	if err != nil {
		s.errorAs(w, r, err, webhookStatus)
		return
	}
	writeJSON(w, http.StatusOK, got)
}

// webhookStatus is api.StatusOf, but a malformed delivery is a 400: it is the
// forge's request that is bad, not a document a caller chose.
func webhookStatus(code string) int {
	if code == wq.EINVALID {
		return http.StatusBadRequest
	}
	return api.StatusOf(code)
}

// readBody reads a body of at most max bytes. A larger one is answered
// 413, one that cannot be read with status (422 for a call of the API,
// 400 for a delivery).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, max int64, status int) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err == nil {
		return body, true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.problem(w, r, http.StatusRequestEntityTooLarge, wq.EINVALID, "body is larger than "+strconv.FormatInt(max, 10)+" bytes")
	} else {
		s.problem(w, r, status, wq.EINVALID, "body: "+err.Error())
	}
	return nil, false
}
