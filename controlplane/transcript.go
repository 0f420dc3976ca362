package controlplane

import (
	"encoding/json"
	"regexp"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// ReasonTranscript refuses a field holding a conversation: checkpoints,
// sessions and leases hold resume state, never transcripts (hard rule 5
// of seed 003's #660).
const ReasonTranscript = "transcript_not_allowed"

// turn is a line opening a chat turn: "Human:", "Assistant:", "User:",
// "### Assistant", "<|im_start|>user".
var turn = regexp.MustCompile(`(?im)^\s*(?:#{1,4}\s*)?(human|user|assistant|ai|model|claude|chatgpt|gpt|bot)\s*:|<\|im_start\|>\s*(user|assistant|system)`)

// textTranscript reports whether s reads as a conversation: turns of
// both sides, at least two in all.
func textTranscript(s string) bool {
	if len(s) < 16 {
		return false
	}
	asked, answered, turns := false, false, 0
	for _, m := range turn.FindAllStringSubmatch(s, -1) {
		who := strings.ToLower(m[1] + m[2])
		switch who {
		case "human", "user":
			asked = true
		case "system":
		default:
			answered = true
		}
		turns++
	}
	return turns >= 2 && asked && answered
}

// jsonTranscript reports whether a decoded JSON value holds a
// conversation at any depth: an array of two or more messages (objects
// with a role and a content, text or parts), or a string that reads as
// one.
func jsonTranscript(v any) bool {
	switch v := v.(type) {
	case string:
		return textTranscript(v)
	case []any:
		messages := 0
		for _, x := range v {
			if m, ok := x.(map[string]any); ok && isMessage(m) {
				messages++
			}
			if jsonTranscript(x) {
				return true
			}
		}
		return messages >= 2
	case map[string]any:
		for _, x := range v {
			if jsonTranscript(x) {
				return true
			}
		}
	}
	return false
}

// isMessage reports whether m is a chat message: a role (or author, or
// speaker) and what was said.
func isMessage(m map[string]any) bool {
	role := false
	for _, k := range []string{"role", "author", "speaker", "from"} {
		if _, ok := m[k].(string); ok {
			role = true
		}
	}
	if !role {
		return false
	}
	for _, k := range []string{"content", "text", "parts", "message", "value"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// refuseTranscript refuses, naming field, a JSON document or (doc nil) a
// text that holds a conversation.
func refuseTranscript(field string, doc json.RawMessage) error {
	var v any
	if json.Unmarshal(doc, &v) != nil || !jsonTranscript(v) {
		return nil
	}
	return transcriptRefusal(field)
}

// refuseTranscriptText refuses, naming field, a text that reads as a
// conversation.
func refuseTranscriptText(field, s string) error {
	if !textTranscript(s) {
		return nil
	}
	return transcriptRefusal(field)
}

func transcriptRefusal(field string) error {
	return &wq.Error{Code: wq.EINVALID, Reason: ReasonTranscript, Message: ReasonTranscript + ": " + field +
		": holds a conversation (chat turns or role/content messages); a checkpoint holds resume state, never a transcript: " +
		"say what was done and what to do next instead"}
}
