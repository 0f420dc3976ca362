package cptype

// ActionRequest is a mutation a session asks the service to make on its
// behalf (POST /api/v1/actions): agents hold no forge token, so every
// write their assignment allows goes through the service, after the gate.
type ActionRequest struct {
	SessionID    string `json:"session_id"`
	AssignmentID string `json:"assignment_id"`
	Action       Action `json:"action"` // ActComment, ActReview, ActMerge or ActClose
	// Body is the comment's or the review's text.
	Body string `json:"body,omitempty"`
	// Verdict is a review's: VerdictApprove or VerdictRequestChanges.
	Verdict string `json:"verdict,omitempty"`
}

// ActionResult is what a gated action did.
type ActionResult struct {
	Action    Action `json:"action"`
	Work      *Work  `json:"work"`
	CommentID int64  `json:"comment_id,omitempty"`
	// HeadSHA is the head a review or merge was pinned to.
	HeadSHA string `json:"head_sha,omitempty"`
	// Released says the action ended the session's lease: a review hands
	// the pull request on (to a merger when approved, back to its author
	// otherwise), a merge or a close ends the work.
	Released bool `json:"released"`
	// Queued says a merge joined the project's merge train instead of
	// merging now: the train merges it once CI passed on top of the merge
	// requests ahead of it (docs/merge-train.md).
	Queued bool `json:"queued,omitempty"`
}
