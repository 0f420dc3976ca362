// Package mr is the merge-request item type (DESIGN section 6): a caller's
// file changes become one commit on a branch the service owns and a merge
// request that the service sees through to merged, closed or superseded.
//
// Its parts: the submission and Inspect, which refuses unsafe changes
// before anything is stored or any forge is called (fileaction.go,
// inspect.go, refname.go, gitfiles.go, gitconfig.go); Submit, the upsert by
// branch (submit.go); the pure decider and the executors (itemtype.go);
// the forge events it takes (events.go); its face to callers (api.go).
// Its tables and store live in mr/mrstore.
package mr
