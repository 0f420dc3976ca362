package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/webhook"
)

// receiveWebhook answers a forge's delivery. It is authenticated by the
// delivery's signature or token, not by a bearer token, and answers 2xx
// only once the event is committed.
func (s *Server) receiveWebhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhook.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.problem(w, r, http.StatusRequestEntityTooLarge, wq.EINVALID, "body is larger than "+strconv.Itoa(webhook.MaxBodyBytes)+" bytes")
			return
		}
		s.problem(w, r, http.StatusBadRequest, wq.EINVALID, "body: "+err.Error())
		return
	}
	got, err := s.webhooks.Receive(r.Context(), r.PathValue("forge"), r.Header, body)
	if err != nil {
		s.errorAs(w, r, err, webhookStatus)
		return
	}
	writeJSON(w, http.StatusOK, got)
}

// webhookStatus is statusOf, but a malformed delivery is a 400: it is the
// forge's request that is bad, not a document a caller chose.
func webhookStatus(code string) int {
	if code == wq.EINVALID {
		return http.StatusBadRequest
	}
	return statusOf(code)
}
