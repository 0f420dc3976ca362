package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// Who holds what, on the forge (issue 50, point 4): while a session holds
// an issue or a pull request, a note of the service's on the forge's
// thread names the holding identity, its session and role, and until
// when the lease holds; it is edited on every assignment, release,
// expiry, adoption, reclaim and abandon, and keeps the lease history of
// the work, so that a handoff (a reviewer's lease ending, a merger's
// starting) reads on the thread in order. It replaces the seed's
// reviewer→merger handoff comment (docs/agents.md, "Who holds what, on
// the forge"): the database stays the authority, and the note is its
// mirror for people, who look at the forge. A note, not an assignee or a
// label: a comment needs no right beyond the one the service comments
// with, on both forges, and says more than a name.

// HolderMarker is the hidden line that marks the service's holder note
// on a thread (the note is found by it and by its author, the service).
const HolderMarker = "<!-- workqueue:holder -->"

// holderHistory bounds the lease events the note lists.
const holderHistory = 10

// HolderNotes keeps the holder note of each work unit whose lease
// changed. Changed returns at once; the note is written by a goroutine
// of the work's own, a few seconds at most after the change, and again
// when the lease's expiry passes (the store marks an expiry only when
// asked: the note says it at the time).
type HolderNotes struct {
	Store  Store
	Forges map[string]wq.Forge // guarded (policy.Open): the note is a comment through the outbound policy
	Clock  clockwork.Clock
	Log    *slog.Logger

	mu      sync.Mutex
	notes   map[string]int64           // work id → the note's comment id, once known
	running map[string]bool            // work ids whose note is being written
	again   map[string]bool            // changed again while being written
	expiry  map[string]clockwork.Timer // work id → the timer of its lease's expiry
	wg      sync.WaitGroup
	stopped bool
}

// Changed says that the leases of work changed: its note is written
// again. It never blocks on the forge.
func (h *HolderNotes) Changed(workID string) {
	if h == nil || workID == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	if h.running == nil {
		h.running, h.again, h.notes, h.expiry = map[string]bool{}, map[string]bool{}, map[string]int64{}, map[string]clockwork.Timer{}
		if h.Clock == nil {
			h.Clock = clockwork.NewRealClock()
		}
	}
	if h.running[workID] {
		h.again[workID] = true // written once more after the write in progress
		return
	}
	h.running[workID] = true
	h.wg.Go(func() { h.run(workID) })
}

// Wait waits for the notes being written.
func (h *HolderNotes) Wait() {
	if h != nil {
		h.wg.Wait()
	}
}

// Stop stops writing notes and waits for those being written.
func (h *HolderNotes) Stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.stopped = true
	for _, t := range h.expiry {
		t.Stop()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *HolderNotes) run(workID string) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := h.write(ctx, workID); err != nil {
			h.log().Warn("holder note: not written", "work", workID, "err", err)
		}
		cancel()
		h.mu.Lock()
		if !h.again[workID] || h.stopped {
			delete(h.running, workID)
			delete(h.again, workID)
			h.mu.Unlock()
			return
		}
		delete(h.again, workID)
		h.mu.Unlock()
	}
}

func (h *HolderNotes) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log.With("component", "holders")
}

// write renders the note of work from the store and makes or edits it.
func (h *HolderNotes) write(ctx context.Context, workID string) error {
	w, err := h.Store.GetWork(ctx, workID)
	if err != nil {
		return err
	}
	f, ok := h.Forges[w.Forge]
	if !ok {
		return fmt.Errorf("no forge %q", w.Forge)
	}
	editor, ok := f.(wq.WorkCommentEditor)
	if !ok {
		return errors.New("the forge cannot edit comments")
	}
	body, expires, err := h.render(ctx, w)
	if err != nil {
		return err
	}
	h.scheduleExpiry(workID, expires)
	h.mu.Lock()
	id := h.notes[workID]
	h.mu.Unlock()
	if id == 0 {
		if id, err = editor.FindOwnWorkComment(ctx, w.Repo, string(w.Kind), w.Number, HolderMarker); err != nil {
			return err
		}
	}
	if id != 0 {
		err = editor.EditWorkComment(ctx, w.Repo, string(w.Kind), w.Number, id, body)
		if !wq.IsForgeError(err, wq.ForgeNotFound) {
			if err == nil {
				h.remember(workID, id)
			}
			return err
		}
		// A person deleted the note: make it again.
	}
	if id, err = f.CommentOnWork(ctx, w.Repo, string(w.Kind), w.Number, body); err != nil {
		return err
	}
	h.remember(workID, id)
	return nil
}

func (h *HolderNotes) remember(workID string, id int64) {
	h.mu.Lock()
	h.notes[workID] = id
	h.mu.Unlock()
}

// scheduleExpiry writes the note again when a live lease's expiry passes
// (zero: none to wait for).
func (h *HolderNotes) scheduleExpiry(workID string, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.expiry[workID]; ok {
		t.Stop()
		delete(h.expiry, workID)
	}
	if at.IsZero() || h.stopped {
		return
	}
	h.expiry[workID] = h.Clock.AfterFunc(at.Sub(h.Clock.Now())+time.Second, func() { h.Changed(workID) })
}

// render is the note's body: who holds the work now, and its lease
// history, newest first. expires is the live lease's expiry, zero when
// none holds the work.
func (h *HolderNotes) render(ctx context.Context, w *Work) (body string, expires time.Time, err error) {
	now := h.Clock.Now()
	leases, err := h.Store.ListLeases(ctx, LeaseFilter{WorkID: w.ID})
	if err != nil {
		return "", time.Time{}, err
	}
	events, err := h.Store.ListEvents(ctx, EventFilter{WorkID: w.ID, Limit: 50})
	if err != nil {
		return "", time.Time{}, err
	}
	sessions := map[string]*Session{}
	who := func(id string) *Session {
		if s, ok := sessions[id]; ok {
			return s
		}
		s, err := h.Store.GetSession(ctx, id)
		if err != nil {
			s = &Session{ID: id}
		}
		sessions[id] = s
		return s
	}
	var b strings.Builder
	b.WriteString(HolderMarker + "\n")
	what := "issue"
	if w.Kind == KindPR {
		what = "pull request"
	}
	fmt.Fprintf(&b, "**workqueue**: who holds this %s. The service keeps this note as the control plane's leases change; the database is the authority.\n\n", what)
	var live *Lease
	for i := range leases {
		if leases[i].State == LeaseActive {
			live = &leases[i]
		}
	}
	switch {
	case live != nil && live.Live(now):
		s := who(live.SessionID)
		fmt.Fprintf(&b, "**Held by** `%s` as **%s** (session `%s`), since %s; the lease holds until %s unless its holder renews it.\n",
			inert(s.Identity), s.Role, shortID(s.ID), stamp(live.CreatedAt), stamp(live.ExpiresAt))
		if live.AdoptedFromSessionID != "" {
			fmt.Fprintf(&b, "Taken over from session `%s`.\n", shortID(live.AdoptedFromSessionID))
		}
		expires = live.ExpiresAt
	case live != nil:
		s := who(live.SessionID)
		fmt.Fprintf(&b, "**Held by nobody**: the lease of `%s` (%s, session `%s`) expired at %s without a renewal; the work can be given to another session.\n",
			inert(s.Identity), s.Role, shortID(s.ID), stamp(live.ExpiresAt))
	default:
		b.WriteString("**Held by nobody**: no session holds it now.\n")
	}
	var rows []string
	for _, e := range events {
		if !leaseEventType(e.Type) || len(rows) == holderHistory {
			continue
		}
		s := who(e.SessionID)
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | `%s` | `%s` |", stamp(e.Time), e.Type, s.Role, inert(s.Identity), shortID(s.ID)))
	}
	if len(rows) > 0 {
		b.WriteString("\n| when | what | role | identity | session |\n| --- | --- | --- | --- | --- |\n")
		b.WriteString(strings.Join(rows, "\n") + "\n")
	}
	return b.String(), expires, nil
}

// leaseEventType says whether an event changes who holds a work.
func leaseEventType(t string) bool {
	switch t {
	case EventAssigned, EventReleased, EventExpired, EventAdopted, EventAbandoned, EventReclaimed:
		return true
	}
	return false
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// shortID is the tail of an id: the random part of a time-ordered UUID,
// which tells sessions of one second apart.
func shortID(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// inert keeps an identity from breaking out of its code span.
func inert(s string) string { return strings.NewReplacer("`", "'", "\n", " ", "|", "/").Replace(s) }
