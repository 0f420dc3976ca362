package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/jonboulle/clockwork"

	"github.com/workqueue-dev/workqueue/auth"
)

// Every route behind a bearer token can answer 429 once its caller's
// address failed too often, and its 429 follows the document.
func TestEveryBearerRouteDocumentsTheThrottle(t *testing.T) {
	doc := loadOpenAPI(t)
	s, _ := testServer(t, func(o *Options) {
		o.FailureLimiter = auth.NewFailureLimiter(auth.LimiterOptions{Limit: 1, Clock: clockwork.NewFakeClock()})
	})
	checked := 0
	for _, rt := range s.routes() {
		op := doc.Paths.Find(rt.path).GetOperation(rt.method)
		if strings.HasPrefix(rt.path, "/webhooks/") || op.Responses.Value("401") == nil {
			continue // no bearer token here
		}
		checked++
		if op.Responses.Value("429") == nil {
			t.Errorf("%s %s takes a bearer token but does not document 429", rt.method, rt.path)
		}
	}
	if checked < 30 {
		t.Errorf("only %d routes take a bearer token by the document", checked)
	}

	for i, want := range []int{http.StatusUnauthorized, http.StatusTooManyRequests} {
		req := httptest.NewRequest("GET", "/api/v1/items", nil)
		req.Header.Set("Authorization", "Bearer wq_guess")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("guess %d: %d, want %d", i+1, rec.Code, want)
		}
		item := doc.Paths.Find("/api/v1/items")
		input := &openapi3filter.RequestValidationInput{Request: req,
			Route:   &routers.Route{Spec: doc, Path: "/api/v1/items", PathItem: item, Method: "GET", Operation: item.Get},
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
		if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: input, Status: rec.Code, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}); err != nil {
			t.Errorf("%d: the response does not follow the document: %v\n%s", rec.Code, err, rec.Body)
		}
	}
}
