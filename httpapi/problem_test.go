package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/httpapi"
)

// Every error reaches the caller as a problem document with a real status,
// and the Go client turns it back into the error the server had.
func TestErrorsAreProblemsTheClientReadsBack(t *testing.T) {
	var logged bytes.Buffer
	s := httpapi.NewServer(httpapi.Options{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"a known code", wq.Errorf(wq.ECONFLICT, "taken"), http.StatusConflict, wq.ECONFLICT},
		{"a code the table does not know", &wq.Error{Code: "made_up", Message: "x"}, http.StatusInternalServerError, "made_up"},
		{"an error without a code", errors.New("disk on fire"), http.StatusInternalServerError, wq.EINTERNAL},
		{"a refusal", &wq.Refusal{Index: 1, Path: "a/../b", Rule: "path_traversal", Message: "no"}, http.StatusUnprocessableEntity, wq.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged.Reset()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.Error(w, r, tc.err) }))
			defer srv.Close()
			c, _ := client.New(srv.URL, "")
			_, err := c.Get(context.Background(), "x")
			var ce *client.Error
			if !errors.As(err, &ce) || ce.Status != tc.status || wq.ErrorCode(err) != tc.code {
				t.Fatalf("client error %v (%T), want status %d and code %q", err, err, tc.status, tc.code)
			}
			internal := tc.status == http.StatusInternalServerError
			if got := ce.Problem.RequestID; (got != "") != internal || (internal && !strings.Contains(logged.String(), "request_id="+got)) {
				t.Errorf("request id %q (internal: %v); log: %s", got, internal, logged.String())
			}
			if internal && strings.Contains(ce.Problem.Detail, "disk on fire") {
				t.Errorf("an internal error's detail reached the caller: %q", ce.Problem.Detail)
			}
			var r *wq.Refusal
			if tc.code == wq.EINVALID && (!errors.As(err, &r) || r.Rule != "path_traversal" || r.Index != 1) {
				t.Errorf("the refusal did not come back whole: %v", err)
			}
		})
	}
}

// A proxy's error page is not a problem document: the status still gives
// the client a code.
func TestTheClientReadsAStatusWithoutAProblem(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL, "")
	_, err := c.Get(context.Background(), "x")
	if wq.ErrorCode(err) != wq.EUNAVAILABLE || !strings.Contains(fmt.Sprint(err), "502") {
		t.Errorf("err %v, want unavailable naming 502", err)
	}
}
