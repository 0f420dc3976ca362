package httpapi

import "net/http"

// SetMCP serves h, the MCP server's Streamable HTTP transport
// (mcpserver.HTTPHandler), at /mcp. A bearer token is required as on
// every API route, but no permission: h serves each tool call as the
// REST call it makes, with the same token, so each tool is authorized as
// that route is.
func (s *Server) SetMCP(h http.Handler) {
	s.mcp = h
	s.handle(s.mcpRoutes())
}

// mcpRoutes are the methods of MCP's Streamable HTTP transport: POST
// carries the messages, GET and DELETE are the server's stream and a
// session's end; h answers each as it serves them.
func (s *Server) mcpRoutes() []route {
	if s.mcp == nil {
		return nil
	}
	serve := s.authenticated("", s.mcp.ServeHTTP)
	return []route{{"POST", "/mcp", serve}, {"GET", "/mcp", serve}, {"DELETE", "/mcp", serve}}
}
