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
			s.problem(w, r, http.StatusRequestEntityTooLarge, wq.EINVALID, "body is larger than "+strconv.Itoa(webhook.MaxBodyBytes)+" bytes", nil)
			return
		}
		s.problem(w, r, http.StatusBadRequest, wq.EINVALID, "body: "+err.Error(), nil)
		return
	}
	got, err := s.webhooks.Receive(r.Context(), r.PathValue("forge"), r.Header, body)
	if wq.ErrorCode(err) == wq.EINVALID {
		s.problem(w, r, http.StatusBadRequest, wq.EINVALID, wq.ErrorMessage(err), nil) // a malformed delivery is a 400
		return
	}
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, got)
}
