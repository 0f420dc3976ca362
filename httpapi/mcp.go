package httpapi

import (
	"net/http"
)

// mcpRoutes are the methods of MCP's Streamable HTTP transport: POST
// carries the messages, GET and DELETE are the server's stream and a
// session's end; h answers each as it serves them. Beside them, the
// OAuth protected-resource metadata of /mcp (RFC 9728), at the document
// root and at its path-suffixed address, which MCP hosts look for first.
func (s *Server) mcpRoutes() []route {
	if s.mcp == nil {
		return nil
	}
	serve := s.authenticated("", s.mcp.ServeHTTP)
	return []route{{"POST", "/mcp", serve}, {"GET", "/mcp", serve}, {"DELETE", "/mcp", serve},
		{"GET", protectedResourcePath, s.protectedResource}, {"GET", protectedResourcePath + "/mcp", s.protectedResource}}
}

// protectedResourcePath is where RFC 9728 puts a resource's metadata.
const protectedResourcePath = "/.well-known/oauth-protected-resource"

// protectedResource answers the OAuth protected-resource metadata of
// /mcp (RFC 9728): a resource that takes bearer tokens in the
// Authorization header. It names no authorization server on purpose:
// tokens are workqueue's own or a platform's (CI OIDC, cluster logins),
// obtained outside any OAuth flow, so a host that reads this shows that a
// token is to be configured instead of starting an interactive login that
// could not succeed.
func (s *Server) protectedResource(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=3600")
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.baseURL(r) + "/mcp",
		"resource_name":            "workqueue",
		"bearer_methods_supported": []string{"header"},
		"authorization_servers":    []string{},
		"resource_documentation":   s.baseURL(r) + "/api/v1/openapi.json",
	})
}

// baseURL is public_url, or the scheme and host r came to.
func (s *Server) baseURL(r *http.Request) string {
	if s.publicURL != "" {
		return s.publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// bearerChallenge is the WWW-Authenticate challenge of a 401 on r, with
// error code (as RFC 6750 names it) unless "". On /mcp it names the
// protected-resource metadata (RFC 9728 resource_metadata), which MCP
// hosts read before deciding how to get a token.
func (s *Server) bearerChallenge(r *http.Request, code string) string {
	c := `Bearer realm="workqueue"`
	if code != "" {
		c += `, error="` + code + `"`
	}
	if s.mcp != nil && r.URL.Path == "/mcp" {
		c += `, resource_metadata="` + s.baseURL(r) + protectedResourcePath + `/mcp"`
	}
	return c
}
