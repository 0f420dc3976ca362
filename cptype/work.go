package cptype

import "time"

// WorkKey names one issue or pull request.
type WorkKey struct {
	Forge  string `json:"forge"`
	Repo   string `json:"repo"`
	Kind   Kind   `json:"kind"`
	Number int64  `json:"number"`
}

// Work is one open (or recently finished) issue or pull request of the
// inventory, kept current by webhooks and a periodic sync.
type Work struct {
	ID string `json:"id"`
	WorkKey
	State        State       `json:"state"`
	Title        string      `json:"title"`
	Labels       []string    `json:"labels"`
	Author       string      `json:"author"`                  // the forge user who opened it
	HeadSHA      string      `json:"head_sha,omitempty"`      // pull requests
	ReviewState  ReviewState `json:"review_state,omitempty"`  // pull requests
	Mergeable    bool        `json:"mergeable"`               // pull requests
	LinkedIssues []int64     `json:"linked_issues,omitempty"` // issues a pull request closes
	// AuthorSession is the session that authored the pull request, when
	// one did (it opened it under an assignment).
	AuthorSession string    `json:"author_session,omitempty"`
	UpdatedAt     time.Time `json:"updated_at"` // the forge's
	SyncedAt      time.Time `json:"synced_at"`  // when the inventory last heard of it
}

// SyncReport says what one sync of the inventory did, per repository
// (the answer of POST /api/v1/work/sync).
type SyncReport struct {
	Started  time.Time  `json:"started"`  // when the sync began listing
	Finished time.Time  `json:"finished"` // when the last repository was written
	Repos    []RepoSync `json:"repos"`    // in the order they were listed
}

// RepoSync is what a sync did for one repository. A repository whose
// listing failed has Err set and its work untouched.
type RepoSync struct {
	Forge string `json:"forge"`
	Repo  string `json:"repo"`
	// Open is how many open issues and pull requests the forge listed,
	// all written to the store (a row the store holds newer is kept).
	Open int `json:"open"`
	// Reread is how many work items were open in the inventory but not in
	// the forge's list, and so read one by one; Closed how many of them
	// turned out merged, closed or gone.
	Reread int `json:"reread"`
	Closed int `json:"closed"`
	// Dropped is true for a repository the configuration no longer
	// covers or the token no longer reaches: its open work, Closed items,
	// was marked closed without asking the forge.
	Dropped bool   `json:"dropped,omitempty"`
	Err     string `json:"error,omitempty"`
}
