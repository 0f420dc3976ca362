package mcpserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/workqueue-dev/workqueue/client"
	"github.com/workqueue-dev/workqueue/internal/testapi"
	"github.com/workqueue-dev/workqueue/mcpserver"
)

// toolCalls is a JSON-RPC batch of n calls of list_items, as a client of
// MCP 2025-03-26 (which had batches) sends it.
func toolCalls(n int) []byte {
	calls := make([]map[string]any, n)
	for i := range calls {
		calls[i] = map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
			"params": map[string]any{"name": "list_items", "arguments": map[string]any{}}}
	}
	b, _ := json.Marshal(calls)
	return b
}

// rpcAnswer is what a test reads of a JSON-RPC response.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// checkRefusal fails unless answer is the batch refusal: code -32600, no
// id, the bound named in the message and in data.
func checkRefusal(t *testing.T, answer []byte) {
	t.Helper()
	var got rpcAnswer
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatalf("the refusal is not one JSON-RPC response: %v\n%s", err, answer)
	}
	want := fmt.Sprintf("at most %d messages", mcpserver.DefaultMaxBatch)
	if got.Error == nil || got.Error.Code != -32600 || !strings.Contains(got.Error.Message, want) ||
		got.Error.Data["max_batch"] != float64(mcpserver.DefaultMaxBatch) || string(got.ID) != "null" {
		t.Errorf("the refusal: %s; want code -32600, id null, %q and data.max_batch", answer, want)
	}
}

// checkAnswers fails unless answer is a batch of n tool results.
func checkAnswers(t *testing.T, answer []byte, n int) {
	t.Helper()
	var got []rpcAnswer
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatalf("the answer is not a batch: %v\n%.500s", err, answer)
	}
	if len(got) != n {
		t.Fatalf("%d answers, want %d", len(got), n)
	}
	for i, a := range got {
		if a.Error != nil || a.Result == nil || a.Result.IsError {
			t.Errorf("answer %d: %+v, want the tool's result", i, a)
		}
	}
}

func TestAJSONRPCBatchOverTheLimitIsRefusedOverHTTP(t *testing.T) {
	s := newService(t)
	post := func(body []byte) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.url+"/mcp", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.tokens["submit"])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	t.Run("a batch of a thousand calls is refused, naming the limit", func(t *testing.T) {
		status, body := post(toolCalls(1000))
		if status != http.StatusBadRequest {
			t.Errorf("status %d, want 400", status)
		}
		checkRefusal(t, body)
	})
	t.Run("a batch one over the limit is refused", func(t *testing.T) {
		status, body := post(toolCalls(mcpserver.DefaultMaxBatch + 1))
		if status != http.StatusBadRequest {
			t.Errorf("status %d, want 400", status)
		}
		checkRefusal(t, body)
	})
	t.Run("a batch at the limit is served", func(t *testing.T) {
		status, body := post(toolCalls(mcpserver.DefaultMaxBatch))
		if status != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", status, body)
		}
		checkAnswers(t, body, mcpserver.DefaultMaxBatch)
	})
}

func TestAJSONRPCBatchOverTheLimitIsRefusedOnStdio(t *testing.T) {
	s := newService(t)
	c, err := client.New(s.url, s.tokens["submit"])
	if err != nil {
		t.Fatal(err)
	}
	initialize := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	input := initialize + string(toolCalls(1000)) + "\n" + string(toolCalls(mcpserver.DefaultMaxBatch)) + "\n"
	var out bytes.Buffer
	if err := mcpserver.ServeIO(t.Context(), c, testapi.Types.Faces(), strings.NewReader(input), &out); err != nil {
		t.Fatal(err)
	}
	var refusals, batches int
	lines := bufio.NewScanner(&out)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		line := lines.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("[")):
			batches++
			checkAnswers(t, line, mcpserver.DefaultMaxBatch)
		case bytes.Contains(line, []byte(`"error"`)):
			refusals++
			checkRefusal(t, line)
		}
	}
	if refusals != 1 || batches != 1 {
		t.Errorf("%d refusals and %d batches answered, want the batch of a thousand refused and the one at the limit answered:\n%.2000s",
			refusals, batches, out.String())
	}
}
