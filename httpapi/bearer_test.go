package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	s, _, reader, _ := newAuthServer(t)
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		if code, body := call(s, "GET", "/api/v1/items", http.Header{"Authorization": {scheme + " " + reader}}); code != http.StatusOK {
			t.Errorf("scheme %q: %d %v, want 200", scheme, code, body)
		}
	}
}

func TestBearerCredentialsOfAnotherShapeAreRefused(t *testing.T) {
	s, _, reader, _ := newAuthServer(t)
	for _, value := range []string{
		"Basic " + reader,
		"Bearer",
		"Bearer " + reader + " extra",
		"Bearer\t" + reader,
		"Bearer:" + reader,
		"Bearer" + reader,
		reader,
	} {
		code, body := call(s, "GET", "/api/v1/items", http.Header{"Authorization": {value}})
		if code != http.StatusUnauthorized || body["code"] != "unauthorized" {
			t.Errorf("Authorization %q: %d %v, want 401 unauthorized", strings.Replace(value, reader, "<token>", 1), code, body)
		}
	}
}

func TestBearerInTwoAuthorizationHeadersIsABadRequest(t *testing.T) {
	s, log, reader, admin := newAuthServer(t)
	for name, values := range map[string][]string{
		"two valid tokens":           {"Bearer " + reader, "Bearer " + admin},
		"the same token twice":       {"Bearer " + reader, "Bearer " + reader},
		"a valid token and an empty": {"Bearer " + admin, ""},
	} {
		code, body := call(s, "GET", "/api/v1/items", http.Header{"Authorization": values})
		detail, _ := body["detail"].(string)
		if code != http.StatusBadRequest || body["code"] != "invalid" || body["status"] != float64(400) ||
			!strings.Contains(detail, "more than one Authorization header") {
			t.Errorf("%s: %d %v, want 400 naming the duplicate header", name, code, body)
		}
	}
	if got := auditText(log); !strings.Contains(got, `"more than one Authorization header"`) || strings.Contains(got, reader) {
		t.Errorf("audit should record the refusal without the token: %s", got)
	}
}
