package api

import (
	"encoding/json"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// Item is the API's view of an item.
type Item struct {
	ID             string     `json:"id"`
	ItemType       string     `json:"item_type"`
	Phase          wq.Phase   `json:"phase"`
	Reason         string     `json:"reason,omitempty"`
	Forge          string     `json:"forge,omitempty"`   // where the item acts, if anywhere
	Project        string     `json:"project,omitempty"` // where the item acts, if anywhere
	Attempts       int        `json:"attempts"`
	Error          string     `json:"error,omitempty"`
	RetryAfter     *time.Time `json:"retry_after,omitempty"`
	Generation     int        `json:"generation"`
	CallerIdentity string     `json:"caller_identity,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
	LastEventAt    *time.Time `json:"last_event_at,omitempty"` // the newest forge event time applied (the stale guard's mark)
	// Warnings say, in words, why the item may not progress: that no
	// instance handles its type. Set on a submission's answer and on a
	// single item's view.
	Warnings []string `json:"warnings,omitempty"`
	// Detail is the item type's own view, absent for types without one;
	// each type declares its shape beside it (the wire shapes of a type
	// live with the type).
	Detail json.RawMessage `json:"detail,omitempty"`
	// Summary is the item type's short view, in lists only: what a table
	// shows without loading each item. A summary with a "title" member
	// gives the dashboard's title column.
	Summary    json.RawMessage `json:"summary,omitempty"`
	Dimensions []Dimension     `json:"dimensions,omitempty"`
}

// Dimension is the API's view of a needs_* row.
type Dimension struct {
	Dimension    string          `json:"dimension"`
	Variant      string          `json:"variant,omitempty"`
	Status       string          `json:"status"`
	PendingUntil *time.Time      `json:"pending_until,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
}

// Submitted is the answer to a submission: the item and what the
// submission did.
type Submitted struct {
	Result wq.SubmitResult `json:"result"`
	*Item
}

// ItemPage is a page of items, newest first; NextCursor is "" on the last.
type ItemPage struct {
	Items      []*Item `json:"items"`
	NextCursor string  `json:"next_cursor"`
}
