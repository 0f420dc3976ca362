package workqueue

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The kinds of forge workqueue ships (cmd/workqueue/world.go registers them; a kind
// is a forge.Plugin, looked up by name, never switched on).
const (
	ForgeGitea  = "gitea"
	ForgeGitLab = "gitlab"
)

// Forge is one configured code forge, as the item types need it. Every
// method has a timeout of its own and returns a *ForgeError (see
// ForgeErrorKind) for anything the forge refused or failed, so that
// executors decide between retrying and failing without parsing strings.
//
// Projects are named by their full path ("group/name" on GitLab,
// "owner/name" on Gitea). Merge requests are named by their
// project-scoped number (GitLab iid, Gitea index).
type Forge interface {
	// Kind returns the forge's kind, the name of its forge.Plugin.
	Kind() string

	// CommitFiles makes req.Branch exactly one new commit on top of the
	// current head of req.Base, holding every change, and force-updates
	// req.Branch if it exists. NotFound if the project or base is missing.
	CommitFiles(ctx context.Context, req CommitRequest) (Commit, error)

	// CommitChanges lists the paths commit sha changed against its first
	// parent: renames as the old path removed and the new one added, a
	// mode change as modified, each added or modified path with its new
	// mode. Executors compare it with what they asked for, so that a forge
	// that silently dropped or added a path, or wrote a symbolic link as a
	// file, is caught (DESIGN section 6). NotFound.
	CommitChanges(ctx context.Context, project, sha string) ([]PathChange, error)

	// BranchHead returns the commit SHA at the head of branch. NotFound.
	BranchHead(ctx context.Context, project, branch string) (string, error)

	// DeleteBranch deletes branch; a missing branch is not an error.
	DeleteBranch(ctx context.Context, project, branch string) error

	// FindMergeRequest returns the newest merge request from source into
	// target in any state, or nil if there is none. A fork's merge request
	// from a branch of the same name is never returned.
	FindMergeRequest(ctx context.Context, project, source, target string) (*MergeRequest, error)

	// OpenMergeRequestsFrom returns every open merge request whose source
	// is branch of project, into any target (forks' excluded): before a
	// branch is deleted, those that are not the caller's would be closed
	// with it. With branch "" it returns every open merge request of the
	// project (the bulk reconciliation's one listing per project), paged
	// through to its end.
	OpenMergeRequestsFrom(ctx context.Context, project, branch string) ([]MergeRequest, error)

	// CreateMergeRequest opens a merge request. Conflict if one is open
	// for the same branches.
	CreateMergeRequest(ctx context.Context, req MergeRequestCreate) (*MergeRequest, error)

	// GetMergeRequest reads one merge request. NotFound.
	GetMergeRequest(ctx context.Context, project string, number int64) (*MergeRequest, error)

	// UpdateMergeRequest changes the fields that are set.
	UpdateMergeRequest(ctx context.Context, project string, number int64, u MergeRequestUpdate) (*MergeRequest, error)

	// MergeMergeRequest merges, pinned to headSHA: Conflict if the head
	// moved or the merge conflicts; Unprocessable if the forge says it is
	// not mergeable now.
	MergeMergeRequest(ctx context.Context, project string, number int64, headSHA string) error

	// CompareTrees lists which of paths differ in content or mode between
	// the trees of base and head, tree against tree (not from their merge
	// base): PathAdded for a path only in head, PathRemoved for one only in
	// base, PathModified otherwise; a path that agrees, or is not in paths,
	// is left out. Item types use it to tell whether a target already
	// holds a change, on the paths the change touches (see docs/DESIGN.md,
	// "empty diff"), so what it costs grows with paths, never with the
	// repository: GitLab one compare whatever the paths, Gitea the
	// directories on the way to them in both trees (see the adapters).
	// NotFound if either ref is missing; Permanent if the forge cannot
	// list every path (GitLab's diff limits).
	CompareTrees(ctx context.Context, project, base, head string, paths []string) ([]PathChange, error)

	// WalkTree lists ref's tree a directory at a time: the entries of its
	// root directory and of each directory under it that descend accepts,
	// not recursively, each entry by its full path with its git mode (as
	// ReadTree's), each directory paged through to its end. descend is
	// asked about every directory entry of a directory listed, and only
	// about those, so the walk reads what descend chooses and nothing
	// else. Item types list the directories on the way to the paths a
	// change touches, so that what a push reads of the target grows with
	// the change, not with the repository (issue 53): one call per
	// directory listed and per further page of one (see the adapters for
	// the page size). NotFound if ref is missing; Transient if ref moved
	// and a directory listed a moment ago is gone.
	WalkTree(ctx context.Context, project, ref string, descend func(dir string) bool) ([]TreeEntry, error)

	// ReadTree lists every entry of ref's tree, recursively, with its
	// git mode: files, symbolic links, submodules and directories. It is
	// one listing paged through to its end (see the adapters for the page
	// size), so it costs what the repository holds: for people's tools and
	// tests, never on an item's way (WalkTree reads what a change needs).
	// NotFound if ref is missing.
	ReadTree(ctx context.Context, project, ref string) ([]TreeEntry, error)

	// ReadFile returns the content of path at ref, and whether it exists
	// there. Item types use it to tell whether a target branch already
	// holds a change (see docs/DESIGN.md, "empty diff").
	ReadFile(ctx context.Context, project, ref, path string) (content []byte, found bool, err error)

	// CreateNote comments on a merge request and returns the note's id.
	CreateNote(ctx context.Context, project string, number int64, body string) (int64, error)

	// UpdateNote replaces a note's body.
	UpdateNote(ctx context.Context, project string, number, noteID int64, body string) error

	// ListProjects returns the full paths of the projects the token can
	// reach (for matching the configured project globs).
	ListProjects(ctx context.Context) ([]string, error)

	// EnsureWebhook makes the project deliver merge request, review, issue
	// and CI events to url, signed with secret, through one hook. It is
	// idempotent and compares before it writes: a hook to url that is
	// active and sends those events is found and left alone (its secret
	// cannot be read back); one that is inactive, misses events, points
	// at url's path on another host or was disabled by the forge after
	// failing deliveries is repaired; further hooks to url are deleted, the
	// same one kept by every instance that runs it; otherwise one is
	// created. Whether a repair writes the secret depends on the forge
	// (see the adapters; WebhookSecretResetter always does).
	EnsureWebhook(ctx context.Context, project, url, secret string) (WebhookOutcome, error)

	// ListOpenWork returns every open issue and open pull request of the
	// project, paged through to the end, for the control plane's
	// inventory. A pull request's review verdict costs one more call per
	// open pull request; each adapter documents its page size and calls.
	// NotFound if the project is missing.
	ListOpenWork(ctx context.Context, project string) ([]WorkInfo, error)

	// GetWork reads one issue or pull request (kind WorkIssue or WorkPR)
	// in any state: the inventory re-reads what went missing from the open
	// list. NotFound if there is none of that kind and number, or it is
	// not assignable work (see the adapters).
	GetWork(ctx context.Context, project, kind string, number int64) (*WorkInfo, error)

	// CreateIssue opens an issue with req's title, body and labels (by
	// name; a label the project lacks is made, see the adapters) and
	// returns it as work of kind WorkIssue, its URL included: an issue
	// that ListOpenWork lists and GetWork reads. NotFound if the project
	// is missing; Permanent for an empty title. Not idempotent: a call
	// that failed transiently may still have opened the issue.
	CreateIssue(ctx context.Context, req IssueCreate) (*WorkInfo, error)

	// CommentOnWork comments on an issue or pull request (kind WorkIssue
	// or WorkPR) and returns the comment's id. The body is text only:
	// nothing in it runs as a command (GitLab's quick actions, see the
	// adapters). NotFound if there is none of that kind and number;
	// Permanent for an empty body. Not idempotent.
	CommentOnWork(ctx context.Context, project, kind string, number int64, body string) (int64, error)

	// ReviewPullRequest records a review verdict on a pull request,
	// ReviewApproved or ReviewChangesRequested, with body, as the
	// forge's review identity (the adapters' ReviewToken; the service's
	// own token without one), pinned to headSHA: Conflict if the pull
	// request's head is another commit, and no verdict is left recorded
	// where the forge pins it or lets it be withdrawn (see the adapters).
	// NotFound; Permanent for another verdict, an empty headSHA, changes
	// requested without a body, a pull request that is not open, and one
	// the review identity opened (wrapping ErrSelfReview).
	ReviewPullRequest(ctx context.Context, project string, number int64, verdict, body, headSHA string) error

	// CloseIssue closes an issue; closing a closed one is not an error.
	// NotFound, also for the number of a pull request.
	CloseIssue(ctx context.Context, project string, number int64) error
}

// ErrSelfReview is wrapped by the error of a review verdict the review
// identity may not give because it opened the pull request: Gitea refuses
// any author's verdict on their own pull request, and an author's verdict
// is no review. The service opens pull requests with its own token, so
// reviewing them takes a second forge identity (a forge's
// review_token_env or review_token_file).
var ErrSelfReview = errors.New("the review identity opened the pull request: a review needs a second forge identity (review_token_env or review_token_file)")

// Work kinds of WorkInfo: the only assignable work (DESIGN section 9).
const (
	WorkIssue = "issue"
	WorkPR    = "pr"
)

// Review verdicts of a pull request (WorkInfo.ReviewState).
const (
	ReviewNone             = "none"              // no reviewer's latest verdict approves or requests changes
	ReviewApproved         = "approved"          // approved, and no reviewer's latest verdict requests changes
	ReviewChangesRequested = "changes_requested" // some reviewer's latest verdict requests changes
)

// WorkInfo is an issue or pull request as the control plane's inventory
// needs it, in the forge's neutral words.
type WorkInfo struct {
	Kind   string // WorkIssue or WorkPR
	Number int64  // the project-scoped number (GitLab iid, Gitea index)
	State  string // MergeRequestOpen, MergeRequestMerged (pull requests only) or MergeRequestClosed
	Title  string
	Labels []string
	// URL is its web page; "" from the webhook package, which does not
	// read it.
	URL string
	// Author is the forge user who opened it; "" when the source does
	// not say (GitLab's webhooks name the author by id only).
	Author string
	// Pull requests only: the head commit, the review verdict (ReviewNone,
	// ReviewApproved, ReviewChangesRequested; "" when the source says
	// nothing of reviews), whether the forge would merge it now (as
	// MergeRequest.Mergeable), and the issues of the same project its
	// description closes ("closes #N", see forge.ClosingIssues).
	HeadSHA      string
	ReviewState  string
	Mergeable    bool
	LinkedIssues []int64
	// UpdatedAt is the forge's last change of it.
	UpdatedAt time.Time
}

// IssueCreate asks for a new issue. Labels are names; an adapter whose
// forge takes label ids resolves them (see the adapters for a name the
// project lacks).
type IssueCreate struct {
	Project string
	Title   string
	Body    string
	Labels  []string
	// ExistingOnly are labels of Labels the adapter must not make (as
	// MergeRequestCreate's).
	ExistingOnly []string
}

// WebhookOutcome says what EnsureWebhook did.
type WebhookOutcome string

// Webhook outcomes.
const (
	WebhookCreated WebhookOutcome = "created"
	WebhookUpdated WebhookOutcome = "updated"
	WebhookFound   WebhookOutcome = "found"
)

// FileChange is one file change as a forge applies it: inspected, with
// its content decoded.
type FileChange struct {
	Action       string // create, update, delete, move, chmod
	Path         string
	PreviousPath string // for move
	Content      []byte // for create and update only (forge.CheckChanges: a move's content is not applied alike by every forge)
	Executable   *bool  // set the executable bit, when not nil
	// Mode is the git mode Path must have after the commit, set by the
	// item type from the target's tree: a move keeps its source's mode, an
	// update the path's, so that a symbolic link or a submodule stays one.
	// "" for a delete, or when the item type did not read the tree (the
	// forge's default then). An adapter that cannot write this mode refuses
	// the commit (Permanent) instead of writing another.
	Mode string
	// FromMode is the mode, at the target, of the path the change starts
	// from: Path for update and chmod, PreviousPath for move; "" for create.
	FromMode string
}

// CommitRequest asks for one commit on top of Base, written to Branch.
type CommitRequest struct {
	Project string
	Base    string // the target branch the commit goes on top of
	Branch  string // the source branch, created or force-updated
	// Target is the merge request's target when Base is not it: a merge
	// train's car is built on the car ahead's branch, which is the
	// service's own (policy.Guard holds Base to its branch prefix then,
	// and Target to the targets). "": Base is the target.
	Target  string
	Message string
	Changes []FileChange
	Author  CommitAuthor
}

// CommitAuthor names who a commit is attributed to; empty: the token's user.
type CommitAuthor struct {
	Name  string
	Email string
}

// Path change statuses of CommitChanges.
const (
	PathAdded    = "added"
	PathModified = "modified"
	PathRemoved  = "removed"
)

// PathChange is one path a commit changed.
type PathChange struct {
	Path   string
	Status string // PathAdded, PathModified or PathRemoved
	// Mode is the path's git mode after the commit (ModeFile,
	// ModeExecutable, ModeSymlink, ModeGitlink) for an added or modified
	// path, as CommitChanges reports it; "" for a removed one, and from
	// CompareTrees, which says what differs, not what it became.
	Mode string
}

// Git modes of tree entries, as both forges' APIs spell them.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
	ModeGitlink    = "160000" // a submodule: the entry is a commit of another repository
	ModeDir        = "040000"
)

// TreeEntry is one entry of a tree (ReadTree, WalkTree): a file, a
// symbolic link, a submodule or a directory, by its full path.
type TreeEntry struct {
	Path string
	Mode string // one of the Mode constants
}

// ModeName says what an entry of mode is, for messages.
func ModeName(mode string) string {
	switch mode {
	case ModeFile:
		return "a regular file"
	case ModeExecutable:
		return "an executable file"
	case ModeSymlink:
		return "a symbolic link"
	case ModeGitlink:
		return "a submodule"
	case ModeDir:
		return "a directory"
	}
	return "mode " + mode
}

// NormalMode spells a git mode as the Mode constants do: GitLab and Gitea
// may write a directory's as "40000".
func NormalMode(mode string) string {
	if mode == "40000" {
		return ModeDir
	}
	return mode
}

// Commit is a commit the forge made.
type Commit struct {
	SHA string
	// Parent is the commit it was made on top of (the base's head at the
	// time), when the forge's answer says; "" when it does not. A caller
	// may only use it to save a read, never to decide without one.
	Parent string
}

// Merge request states.
const (
	MergeRequestOpen   = "open"
	MergeRequestMerged = "merged"
	MergeRequestClosed = "closed"
)

// MergeRequest is a merge request as the forge reports it.
type MergeRequest struct {
	Number       int64
	URL          string
	State        string // open, merged, closed
	SourceBranch string
	TargetBranch string
	HeadSHA      string
	Title        string
	Description  string
	Labels       []string
	// Mergeable is true when the forge says a merge would succeed now;
	// false also while the forge is still computing it.
	Mergeable bool
	// MergeStatus is the forge's own word for it (GitLab
	// detailed_merge_status; Gitea: "mergeable", "checking", "conflict").
	MergeStatus string
	// Blocker says, in the forge's neutral words, what keeps an open
	// merge request from merging now; MergeClear when nothing does.
	Blocker MergeBlocker
	// MergeBase is the commit the merge request's diff starts from (GitLab
	// diff_refs.base_sha, Gitea merge_base): when the target's head is no
	// longer it, the target moved since the branch was made.
	MergeBase string
	// HeadPipelineID is the CI pipeline of the head (GitLab's
	// head_pipeline); 0 when there is none or the forge does not say
	// (Gitea).
	HeadPipelineID int64
	// MergeCommitSHA is the commit a merged merge request's merge left
	// on the target (a merge or squash commit; the head itself for a
	// fast-forward); "" while not merged, or where the forge does not
	// say.
	MergeCommitSHA string
}

// MergeBlocker is what keeps an open merge request from merging now.
// Executors choose how soon to look again by it: a forge that is still
// computing is asked again soon, people are waited for.
type MergeBlocker string

// Merge blockers.
const (
	MergeClear    MergeBlocker = ""            // mergeable now
	MergeChecking MergeBlocker = "checking"    // the forge is still computing mergeability
	MergeMerging  MergeBlocker = "merging"     // a merge is in progress (GitLab's locked state)
	MergeCI       MergeBlocker = "ci"          // a pipeline must finish or pass first
	MergeRebase   MergeBlocker = "need_rebase" // the target moved and the project's merge method needs the branch on top of it
	MergeConflict MergeBlocker = "conflict"    // the branch conflicts with the target
	MergePeople   MergeBlocker = "people"      // approvals, discussions, draft, requested changes, a block: a person must act
	MergeOther    MergeBlocker = "other"       // anything else the forge reports
)

// MergeRequestCreate opens a merge request.
type MergeRequestCreate struct {
	Project      string
	SourceBranch string
	TargetBranch string
	Title        string
	Description  string
	Labels       []string // by name; created on the project if missing
	// ExistingOnly are labels of Labels the adapter must not make: one the
	// project lacks refuses the call (Permanent) before anything is
	// written. The outbound policy sets it to a caller's labels unless the
	// project has create_labels (package policy).
	ExistingOnly []string
}

// MergeRequestUpdate changes the fields that are not nil.
type MergeRequestUpdate struct {
	Title       *string
	Description *string
	State       *string // MergeRequestOpen to reopen, MergeRequestClosed to close
}

// ForgeErrorKind classifies a forge failure.
type ForgeErrorKind int

// The kinds of forge failure.
const (
	ForgePermanent     ForgeErrorKind = iota // refused for good: bad request, forbidden
	ForgeNotFound                            // project, branch, MR or note missing
	ForgeConflict                            // already exists, head moved, merge conflict
	ForgeUnprocessable                       // not possible now: not mergeable yet, still checking
	ForgeRateLimited                         // slow down; see RetryAfter
	ForgeTransient                           // network, timeout, 5xx: retry
)

var forgeKindNames = [...]string{"permanent", "not_found", "conflict", "unprocessable", "rate_limited", "transient"}

func (k ForgeErrorKind) String() string {
	if int(k) < len(forgeKindNames) {
		return forgeKindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// ForgeError is a classified forge failure.
type ForgeError struct {
	Kind       ForgeErrorKind
	Op         string // e.g. "gitea: merge owner/repo!3"
	Status     int    // HTTP status, 0 for network errors
	Message    string // the forge's message, if any
	RetryAfter time.Duration
	Err        error // the underlying error, if any
}

func (e *ForgeError) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: %s (HTTP %d): %s", e.Op, e.Kind, e.Status, msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Op, e.Kind, msg)
}

func (e *ForgeError) Unwrap() error { return e.Err }

// ForgeErrorOf returns the kind of err's *ForgeError, and whether there is one.
func ForgeErrorOf(err error) (ForgeErrorKind, bool) {
	var fe *ForgeError
	if errors.As(err, &fe) {
		return fe.Kind, true
	}
	return 0, false
}

// ParseRetryAfter reads a Retry-After header (RFC 9110 section 10.2.3):
// delay-seconds or an HTTP-date, as a wait from now. Anything else, and a
// date in the past, is 0. The wait is capped at a day: a forge that asks
// for longer is treated as asking for a day.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	// Out of range, ParseInt still returns the nearest int64: a wait too
	// long to count is a day, not none.
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if secs <= 0 {
			return 0
		}
		d = time.Duration(min(secs, 86400)) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}

// IsForgeError reports whether err is a forge failure of kind k.
func IsForgeError(err error, k ForgeErrorKind) bool {
	got, ok := ForgeErrorOf(err)
	return ok && got == k
}

// CI job statuses of CIJob.Status, in the forge's neutral words; a status
// a forge adds later is passed on as the forge spells it.
const (
	CIJobPending  = "pending" // waiting to run (GitLab created/pending/waiting; Gitea waiting/blocked)
	CIJobRunning  = "running"
	CIJobSuccess  = "success"
	CIJobFailed   = "failed"
	CIJobCanceled = "canceled"
	CIJobSkipped  = "skipped"
)

// CIJob is one job of a CI pipeline: a GitLab job, or a Gitea Actions
// job (whose pipeline is the workflow run).
type CIJob struct {
	ID         int64
	PipelineID int64 // GitLab pipeline id, Gitea Actions run id
	Name       string
	Stage      string // GitLab's stage; "" on Gitea
	Status     string // a CIJob* status
	// FailureReason is GitLab's failure_reason of a failed job
	// (runner_system_failure, script_failure, ...); "" where the forge
	// gives none (Gitea).
	FailureReason string
	AllowFailure  bool
	// Retries is how many times this job was run before this run of it:
	// GitLab keeps each run as a job of its own (the older ones
	// "retried"), Gitea reruns a job in place and counts attempts.
	Retries    int
	FinishedAt time.Time // zero while it has not finished
	URL        string    // the job's page, for people
}

// CIJobs is the optional capability of a forge whose CI jobs the retry
// herder can read and retry (DESIGN section 6, DDR-47): GitLab's jobs
// API, and Gitea Actions (1.26). A forge without it is never asked to
// retry anything. Every method returns *ForgeError as Forge's do.
type CIJobs interface {
	// PipelineJobs lists every job of a pipeline (a Gitea Actions run),
	// earlier runs of retried jobs included, newest first: the first job
	// of a name is that name's latest run. NotFound for no such pipeline.
	PipelineJobs(ctx context.Context, project string, pipelineID int64) ([]CIJob, error)
	// Job reads one job, Retries counted as PipelineJobs counts them (for
	// people's tools: workqueue herder check). NotFound.
	Job(ctx context.Context, project string, jobID int64) (*CIJob, error)
	// LatestPipeline returns the id of the newest pipeline (run) for
	// commit sha, 0 when there is none: the herder retries a job only in
	// the newest pipeline of the merge request's head.
	LatestPipeline(ctx context.Context, project, sha string) (int64, error)
	// JobTrace returns the end of a job's log, at most maxBytes bytes of
	// it (the herder reads only the last lines). NotFound.
	JobTrace(ctx context.Context, project string, jobID int64, maxBytes int) ([]byte, error)
	// RetryJob runs a finished job of pipeline again and returns the id
	// of the job that runs (GitLab makes a new job; Gitea reruns the same
	// one). Permanent if the forge says the job cannot be retried.
	RetryJob(ctx context.Context, project string, pipelineID, jobID int64) (int64, error)
}

// DefaultBrancher is the optional capability of a forge that reads a
// repository's default branch: the outbound policy's target of a project
// that sets no target_branches (package policy). Both shipped kinds have
// it; NotFound for a missing repository.
type DefaultBrancher interface {
	DefaultBranch(ctx context.Context, project string) (string, error)
}

// WorkCommentEditor is the optional capability of a forge on which the
// service finds and edits a comment it made on an issue or pull request:
// the control plane's holder note, which shows on the forge who holds the
// work (controlplane.HolderNotes). Both shipped kinds have it.
type WorkCommentEditor interface {
	// FindOwnWorkComment returns the id of the newest comment on the
	// issue or pull request (kind WorkIssue or WorkPR) that the service's
	// identity made and whose body holds marker; 0 when there is none.
	// NotFound.
	FindOwnWorkComment(ctx context.Context, project, kind string, number int64, marker string) (int64, error)
	// EditWorkComment replaces the body of comment id, made by the
	// service, as CommentOnWork would write it (nothing in it runs as a
	// command). NotFound. A write: policy.Guard checks it as a comment.
	EditWorkComment(ctx context.Context, project, kind string, number, id int64, body string) error
}

// FileModeSetter is the optional capability of a forge whose file writes
// can set a file's executable bit (GitLab's commits API); a change that
// sets one is refused at submission on a forge without it, instead of
// failing at the push.
type FileModeSetter interface {
	SetsFileModes() bool
}

// SetsFileModes reports whether f can set a file's executable bit.
func SetsFileModes(f Forge) bool {
	m, ok := f.(FileModeSetter)
	return ok && m.SetsFileModes()
}

// InertTexter is the optional capability of a forge that changes a text
// it would interpret (a description, a comment, a review or an issue
// body) before sending it, so that the forge runs nothing in it as the
// service's account (GitLab's quick actions). InertText is idempotent.
type InertTexter interface {
	InertText(text string) string
}

// InertText is the form in which f sends text: text itself on a forge
// without InertTexter.
func InertText(f Forge, text string) string {
	if t, ok := f.(InertTexter); ok {
		return t.InertText(text)
	}
	return text
}

// Commit status states of CommitStatus.State, in neutral words; the
// forge's own word is kept in CommitStatus.ForgeState.
const (
	CheckPending = "pending" // not decided yet: queued, running, manual, a warning
	CheckSuccess = "success"
	CheckFailed  = "failed" // failed, errored, cancelled or skipped: it will not succeed as it stands
)

// CommitStatus is the latest state of one check of a commit: a commit
// status (Gitea's, and Actions' jobs, which report as statuses) or a
// GitLab commit status (an external one, or a pipeline job's).
type CommitStatus struct {
	Context    string // Gitea's context, GitLab's name
	State      string // CheckPending, CheckSuccess or CheckFailed
	ForgeState string // the forge's own word for it
	URL        string // its target, for people; "" when none
}

// CommitStatusReader is the optional capability of a forge that reads a
// commit's checks: the required checks of a project (projects[].
// required_checks) wait on them before an auto-merge. Both shipped kinds
// have it.
type CommitStatusReader interface {
	// CommitStatuses lists the latest status of each check of commit sha,
	// every page read. A commit no check reported on has none.
	CommitStatuses(ctx context.Context, project, sha string) ([]CommitStatus, error)
}

// CommitPathLister is the optional capability of a forge that lists what
// a commit changed without reading the modes, where the modes cost reads
// of their own (Gitea's, a listing of every directory on the way). An
// item type asks for it when no mode is in question: a change of new
// regular files and deletions, on a forge that writes no other mode.
type CommitPathLister interface {
	// CommitPaths is CommitChanges with every Mode "".
	CommitPaths(ctx context.Context, project, sha string) ([]PathChange, error)
}
