package forge

import (
	"fmt"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// CheckComment refuses an empty comment before it is sent: both forges
// refuse one, and the Gitea SDK does so without an answer, which would
// read as a network failure and be retried for ever. op names the call
// ("gitea: comment on issue o/r#3").
func CheckComment(op, body string) error {
	if strings.TrimSpace(body) == "" {
		return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Message: "empty comment"}
	}
	return nil
}

// CheckReview refuses, before any call, a review verdict no forge would
// record as asked: a verdict other than wq.ReviewApproved and
// wq.ReviewChangesRequested, no head to pin it to, or changes requested
// without saying which (Gitea refuses that body; GitLab would record the
// state without a word).
func CheckReview(op, verdict, body, headSHA string) error {
	refuse := func(msg string) error { return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Message: msg} }
	switch {
	case verdict != wq.ReviewApproved && verdict != wq.ReviewChangesRequested:
		return refuse(fmt.Sprintf("verdict %q: want %s or %s", verdict, wq.ReviewApproved, wq.ReviewChangesRequested))
	case headSHA == "":
		return refuse("no head commit to pin the verdict to")
	case verdict == wq.ReviewChangesRequested && strings.TrimSpace(body) == "":
		return refuse("changes requested without a body saying which")
	}
	return nil
}

// NotOpen refuses a verdict on a pull request that is not open: Gitea
// refuses one on a closed or merged pull request (422), and a verdict
// there decides nothing.
func NotOpen(op, state string) error {
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Message: "the pull request is " + state + ", not open"}
}

// HeadMoved is the conflict of a verdict pinned to a head the pull
// request no longer has.
func HeadMoved(op, pinned, head string) *wq.ForgeError {
	return &wq.ForgeError{Kind: wq.ForgeConflict, Op: op,
		Message: fmt.Sprintf("the head is %s, not %s: the verdict was for another commit", head, pinned)}
}

// CheckReviewable refuses a verdict on a pull request that is not open
// (NotOpen) or whose head is not the one the verdict is pinned to
// (HeadMoved).
func CheckReviewable(op string, mr *wq.MergeRequest, headSHA string) error {
	switch {
	case mr.State != wq.MergeRequestOpen:
		return NotOpen(op, mr.State)
	case mr.HeadSHA != headSHA:
		return HeadMoved(op, headSHA, mr.HeadSHA)
	}
	return nil
}

// SelfReview refuses a verdict by the pull request's own author, wrapping
// wq.ErrSelfReview. dedicated says whether the forge has a review
// identity of its own: without one the service's token reviews, and the
// service opened the pull request.
func SelfReview(op, author string, dedicated bool) error {
	msg := fmt.Sprintf("%s opened this pull request and is the service's review identity too: "+
		"set the forge's review_token_env or review_token_file to the token of a second account with write access", author)
	if dedicated {
		msg = fmt.Sprintf("%s, the review identity (review_token_env or review_token_file), opened this pull request", author)
	}
	return &wq.ForgeError{Kind: wq.ForgePermanent, Op: op, Message: msg, Err: wq.ErrSelfReview}
}
