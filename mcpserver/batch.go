package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// DefaultMaxBatch is the most JSON-RPC messages one batch may hold, on
// /mcp and on stdio. MCP 2025-06-18 removed batches, and the SDK refuses
// them only from a client that says it speaks that version or a later
// one: a client that says nothing could send a thousand tool calls in
// one request, which ran for a quarter of a minute and slowed every
// other caller (issue 49). Older clients batch an initialize with its
// notification, or a few calls; ten is room for them.
const DefaultMaxBatch = 10

// defaultMaxRequestBytes is the SDK's own bound of a request's body.
const defaultMaxRequestBytes = 4 << 20

// batchLen reports whether body is a JSON-RPC batch (an array) and how
// many messages it holds, counting no further than limit+1. A body that
// is not well-formed JSON is left to the SDK, which answers it.
func batchLen(body []byte, limit int) (n int, isBatch bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '[' {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return 0, false
	}
	for dec.More() && n <= limit {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return n, true
		}
		n++
	}
	return n, true
}

// rpcError is a JSON-RPC error response.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// batchRefusal is the JSON-RPC error response refusing a batch over
// limit: code -32600 (invalid request), id null (the batch as a whole
// has none), the limit in the message and in data.max_batch.
func batchRefusal(limit int) []byte {
	var e rpcError
	e.JSONRPC, e.ID = "2.0", json.RawMessage("null")
	e.Error.Code = -32600
	e.Error.Message = fmt.Sprintf("batch too large: a JSON-RPC batch holds at most %d messages (max_batch); send the calls in separate requests", limit)
	e.Error.Data = map[string]any{"max_batch": limit}
	b, _ := json.Marshal(e)
	return b
}

// limitBatches refuses a POST whose body is a JSON-RPC batch of more
// than maxBatch messages, with 400 and a JSON-RPC error response (as the
// Streamable HTTP transport allows for input a server cannot accept),
// before the SDK reads a message of it. The body is read whole, under
// maxBytes as the SDK would read it, and handed on.
func limitBatches(next http.Handler, maxBatch int, maxBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooLarge.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		if n, isBatch := batchLen(body, maxBatch); isBatch && n > maxBatch {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(batchRefusal(maxBatch))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}
