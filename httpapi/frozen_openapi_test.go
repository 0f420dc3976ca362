package httpapi

import (
	"strings"
	"testing"
)

// Every route behind a bearer token but GET /me and the MCP transport
// (whose tool calls are refused as their routes are) answers a frozen
// identity 403 (identity_frozen), so each documents 403.
func TestEveryBearerRouteDocumentsTheFrozenRefusal(t *testing.T) {
	doc := loadOpenAPI(t)
	s, _ := testServer(t)
	for _, rt := range s.routes() {
		op := doc.Paths.Find(rt.path).GetOperation(rt.method)
		if strings.HasPrefix(rt.path, "/webhooks/") || op.Responses.Value("401") == nil || rt.path == "/me" || rt.path == "/mcp" {
			continue // no bearer token here, or open to a frozen identity
		}
		if op.Responses.Value("403") == nil {
			t.Errorf("%s %s takes a bearer token but does not document 403 (a frozen identity's refusal)", rt.method, rt.path)
		}
	}
}
