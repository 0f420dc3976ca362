package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The SDK's stdio transport ends the session as soon as its input ends,
// dropping the answers of requests still being handled: `printf
// '<initialize>\n' | workqueue mcp` printed nothing (issue 29). A client
// that writes its requests and closes its end (a script, a pipe) is
// owed every answer. drainingInput holds the end of the input back
// until every request read has been answered, as the answers are seen
// written by answerTracker.

// inFlight is the ids of the requests read and not yet answered.
type inFlight struct {
	mu      sync.Mutex
	ids     map[string]bool
	changed chan struct{} // closed, and replaced, at every answer
}

func newInFlight() *inFlight {
	return &inFlight{ids: map[string]bool{}, changed: make(chan struct{})}
}

// rpcMessage is what the tracking reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// messages decodes one line as a message or a batch of them; a line that
// is neither yields none (the SDK answers it with a parse error, which
// answers no request id).
func messages(line []byte) []rpcMessage {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var batch []rpcMessage
		if json.Unmarshal(line, &batch) == nil {
			return batch
		}
		return nil
	}
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []rpcMessage{m}
}

// idKey is a request id as a comparable key: 1 and 1.0 are one id, as
// are the same string in any JSON escaping.
func idKey(raw json.RawMessage) (string, bool) {
	var id any
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil || id == nil {
		return "", false
	}
	return fmt.Sprintf("%T:%v", id, id), true
}

// read notes the requests of a line read from the client; a
// cancellation takes its request off, since the SDK answers that no
// more.
func (f *inFlight) read(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range messages(line) {
		switch {
		case m.Method == "notifications/cancelled":
			if key, ok := idKey(m.Params.RequestID); ok {
				delete(f.ids, key)
			}
		case m.Method != "":
			if key, ok := idKey(m.ID); ok {
				f.ids[key] = true
			}
		}
	}
	f.signal()
}

// written takes off the requests a line written to the client answers.
func (f *inFlight) written(line []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range messages(line) {
		if m.Method != "" || (m.Result == nil && m.Error == nil) {
			continue // the server's own request or notification
		}
		if key, ok := idKey(m.ID); ok {
			delete(f.ids, key)
		}
	}
	f.signal()
}

// abandon forgets every request: their answers cannot be delivered.
func (f *inFlight) abandon() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.ids)
	f.signal()
}

func (f *inFlight) signal() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// wait returns once no request is in flight, or ctx is done.
func (f *inFlight) wait(ctx context.Context) {
	for {
		f.mu.Lock()
		n, changed := len(f.ids), f.changed
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// drainingInput is the client's input, a line at a time, whose end is
// reported only once every request read has been answered. A line that
// is a batch of more than maxBatch messages never reaches the SDK: it is
// answered on out with a JSON-RPC error naming the bound.
type drainingInput struct {
	ctx      context.Context
	in       *bufio.Reader
	inFlight *inFlight
	maxBatch int
	out      *answerTracker
	pending  []byte
}

func (d *drainingInput) Read(p []byte) (int, error) {
	for len(d.pending) == 0 {
		line, err := d.in.ReadBytes('\n')
		if n, isBatch := batchLen(line, d.maxBatch); d.maxBatch > 0 && isBatch && n > d.maxBatch {
			if _, werr := d.out.Write(append(batchRefusal(d.maxBatch), '\n')); werr != nil {
				return 0, werr
			}
			line = nil
			if err == nil {
				continue
			}
		}
		if len(line) > 0 {
			d.inFlight.read(line)
			d.pending = line
		} else if errors.Is(err, io.EOF) {
			d.inFlight.wait(d.ctx)
			return 0, io.EOF
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, d.pending)
	d.pending = d.pending[n:]
	return n, nil
}

func (d *drainingInput) Close() error { return nil }

// answerTracker is the client's output; it notes the answers written,
// a line at a time. Writes are serialised: the SDK writes a message in
// one call, and drainingInput writes its refusals beside them.
type answerTracker struct {
	mu       sync.Mutex
	out      io.Writer
	inFlight *inFlight
	partial  []byte
}

func (a *answerTracker) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, err := a.out.Write(p)
	if err != nil {
		a.inFlight.abandon() // nobody reads the answers any more
	}
	a.partial = append(a.partial, p[:n]...)
	for {
		i := bytes.IndexByte(a.partial, '\n')
		if i < 0 {
			break
		}
		a.inFlight.written(a.partial[:i])
		a.partial = a.partial[i+1:]
	}
	return n, err
}

func (a *answerTracker) Close() error { return nil }
