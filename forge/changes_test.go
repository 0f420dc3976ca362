package forge_test

import (
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Content reaches a forge only on create and update: on a delete or a
// chmod both forges drop it, on a move they do not apply it alike.
func TestContentIsRefusedOnEveryActionButCreateAndUpdate(t *testing.T) {
	content := []byte("x")
	for _, ch := range []wq.FileChange{
		{Action: "move", Path: "b", PreviousPath: "a", Content: content},
		{Action: "move", Path: "b", PreviousPath: "a", Content: []byte{}},
		{Action: "delete", Path: "a", Content: content},
		{Action: "chmod", Path: "a", Content: content},
	} {
		if err := forge.CheckChanges("test", []wq.FileChange{ch}); !wq.IsForgeError(err, wq.ForgePermanent) {
			t.Errorf("%s with content: %v, want a permanent refusal", ch.Action, err)
		}
	}
	for _, ch := range []wq.FileChange{
		{Action: "create", Path: "a", Content: content},
		{Action: "update", Path: "a", Content: []byte{}},
		{Action: "move", Path: "b", PreviousPath: "a"},
		{Action: "delete", Path: "a"},
	} {
		if err := forge.CheckChanges("test", []wq.FileChange{ch}); err != nil {
			t.Errorf("%s: %v", ch.Action, err)
		}
	}
}
