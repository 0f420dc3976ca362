package httpapi

import (
	"net/http"
	"strings"
)

// bearerToken reads the caller's token from the Authorization header:
// "Bearer" in any case (RFC 9110 makes auth schemes case-insensitive),
// one or more spaces, and one token without whitespace. ok is false when
// there is no such header or it holds anything else. duplicate reports two
// or more Authorization headers, which are refused outright rather than
// picking one: a proxy and the service could each read a different one.
func bearerToken(h http.Header) (token string, ok, duplicate bool) {
	values := h.Values("Authorization")
	if len(values) > 1 {
		return "", false, true
	}
	if len(values) == 0 {
		return "", false, false
	}
	scheme, rest, found := strings.Cut(values[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false, false
	}
	token = strings.TrimLeft(rest, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false, false
	}
	return token, true, false
}
