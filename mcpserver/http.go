package mcpserver

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/client"
)

// HTTPOptions configure HTTPHandler.
type HTTPOptions struct {
	// Log receives the transport's own errors (nil: none are logged).
	Log *slog.Logger
	// MaxRequestBytes bounds a request's body (0: the SDK's 4 MiB); a
	// submission as large as the REST API takes needs its bound and the
	// JSON-RPC envelope.
	MaxRequestBytes int64
	// MaxBatch bounds the messages of one JSON-RPC batch (0:
	// DefaultMaxBatch); a larger batch is refused whole, with a JSON-RPC
	// error naming the bound.
	MaxBatch int
	// Faces are the item types whose submit tools the server offers
	// (their registrations').
	Faces []wq.ItemFace
}

// HTTPHandler serves the tools over MCP's Streamable HTTP transport for
// api, the service's own HTTP handler: each tool call is served by api in
// process, as the REST call it makes, with the Authorization header of
// the HTTP request that carried the call. So a call is authorized
// exactly as that REST call would be, per tool, whatever let the request
// through to this handler.
//
// The handler is stateless: it keeps no MCP session between requests, so
// any of several serve processes behind one address answers any request,
// and a client cannot make it hold memory. Without sessions there is no
// stream for the server to speak first on: GET and DELETE answer 405, as
// the transport specifies. Answers are JSON, not event streams: every
// tool answers once. A JSON-RPC batch of more than MaxBatch messages is
// answered 400 with a JSON-RPC error naming the bound, none of its calls
// made.
func HTTPHandler(api http.Handler, opts HTTPOptions) http.Handler {
	server := New(InProcess(api), opts.Faces)
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = defaultMaxRequestBytes
	}
	return limitBatches(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              opts.Log,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
		// The SDK refuses requests to a loopback listener whose Host is
		// not loopback, against DNS rebinding of unauthenticated local
		// servers. Every request here carries a bearer token, which a
		// rebinding page cannot have (the REST API beside it has no such
		// check either), and the check would refuse every request that a
		// reverse proxy on the same host forwards with the public name.
		DisableLocalhostProtection: true,
	}), opts.MaxBatch, opts.MaxRequestBytes)
}

// InProcess is Clients for HTTPHandler: a client whose requests api
// serves in this process, carrying the Authorization header of the HTTP
// request that carried the tool call (none outside HTTP: then the API
// answers 401).
func InProcess(api http.Handler) Clients {
	return func(_ context.Context, req *mcp.CallToolRequest) (*client.Client, error) {
		var authorization []string
		if req.Extra != nil {
			authorization = req.Extra.Header.Values("Authorization")
		}
		return &client.Client{BaseURL: "http://workqueue.in-process",
			HTTP: &http.Client{Transport: &inProcess{handler: api, authorization: authorization}}}, nil
	}
}

// inProcess is an http.RoundTripper that serves each request with
// handler, with authorization as its Authorization header.
type inProcess struct {
	handler       http.Handler
	authorization []string
}

func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	r := req.Clone(req.Context())
	r.Header.Del("Authorization")
	for _, v := range t.authorization {
		r.Header.Add("Authorization", v)
	}
	if r.Body == nil {
		r.Body = http.NoBody // as a server's request always has one
	}
	r.RequestURI = r.URL.RequestURI()
	w := &bufferedResponse{header: http.Header{}}
	t.handler.ServeHTTP(w, r)
	return w.response(req), nil
}

// bufferedResponse is an http.ResponseWriter keeping the answer for
// RoundTrip to return.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferedResponse) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

func (w *bufferedResponse) response(req *http.Request) *http.Response {
	w.WriteHeader(http.StatusOK)
	return &http.Response{Status: strconv.Itoa(w.status) + " " + http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req}
}
