package forge

import (
	wq "github.com/workqueue-dev/workqueue"
)

// CheckChanges refuses, before any call, a commit whose changes carry
// content that a forge would ignore or apply differently from the other:
// content is for create and update only. A delete or a chmod with content
// would be dropped by both forges; a move with content is written by
// GitLab's Commits API and not applied as given by Gitea's ChangeFiles
// rename, so what reached the forge would differ from what was inspected
// and recorded. The mr type refuses these at inspection; this keeps an
// item stored before that rule, or any other caller of an adapter, from
// pushing them. op names the call ("gitea: commit o/r").
func CheckChanges(op string, changes []wq.FileChange) error {
	for _, ch := range changes {
		if ch.Content != nil && ch.Action != "create" && ch.Action != "update" {
			return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op,
				Message: ch.Action + " " + ch.Path + " carries content: only create and update write content"}
		}
	}
	return nil
}
