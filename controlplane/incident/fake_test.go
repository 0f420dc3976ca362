package incident_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane/cpstore/cpstoretest"
	"github.com/workqueue-dev/workqueue/controlplane/incident"
)

// memStore is an in-memory incident.Store that behaves as cpstore does
// (it passes the same conformance suite) and counts its writes.
type memStore struct {
	mu     sync.Mutex
	links  map[incident.Key]incident.Link
	writes atomic.Int64 // calls of a writing method
}

func newMemStore() *memStore { return &memStore{links: map[incident.Key]incident.Link{}} }

func (m *memStore) copyOf(l incident.Link) *incident.Link {
	l.LinkedPRs = slices.Clone(l.LinkedPRs)
	return &l
}

func (m *memStore) GetLink(_ context.Context, key incident.Key) (*incident.Link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.links[key]
	if !ok {
		return nil, wq.Errorf(wq.ENOTFOUND, "incident link %s not found", key)
	}
	return m.copyOf(l), nil
}

func (m *memStore) ClaimLink(_ context.Context, l incident.Link) (*incident.Link, bool, error) {
	m.writes.Add(1)
	if l.ClaimToken == "" {
		return nil, false, wq.Errorf(wq.EINVALID, "no claim token")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if have, ok := m.links[l.Key]; ok {
		return m.copyOf(have), false, nil
	}
	l.ID, l.State, l.Revision, l.IssueNumber, l.IssueURL = cmp.Or(l.ID, uuid.NewString()), incident.LinkCreating, 1, 0, ""
	l.LinkedPRs = slices.Clone(l.LinkedPRs)
	m.links[l.Key] = l
	return m.copyOf(l), true, nil
}

// set changes the link of key with edit if ok says it may, as the store's
// compare-and-set does.
func (m *memStore) set(key incident.Key, ok func(incident.Link) bool, edit func(*incident.Link), now time.Time) (*incident.Link, error) {
	m.writes.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	l, found := m.links[key]
	if !found {
		return nil, wq.Errorf(wq.ENOTFOUND, "incident link %s not found", key)
	}
	if !ok(l) {
		return nil, wq.Errorf(wq.ECONFLICT, "incident link %s changed", key)
	}
	edit(&l)
	l.Revision++
	l.UpdatedAt = now
	m.links[key] = l
	return m.copyOf(l), nil
}

func (m *memStore) FinishClaim(_ context.Context, key incident.Key, token string, issue incident.IssueRef, now time.Time) (*incident.Link, error) {
	return m.set(key, func(l incident.Link) bool { return l.State == incident.LinkCreating && l.ClaimToken == token },
		func(l *incident.Link) {
			l.IssueNumber, l.IssueURL, l.State, l.ClaimToken = issue.Number, issue.URL, incident.LinkLinked, ""
		}, now)
}

func (m *memStore) UpdateLink(_ context.Context, from, to incident.Link, now time.Time) (*incident.Link, error) {
	return m.set(from.Key, func(l incident.Link) bool { return l.State == incident.LinkLinked && l.Revision == from.Revision },
		func(l *incident.Link) {
			l.Status, l.EventCount, l.Permalink, l.FirstSeen, l.LastSeen = to.Status, to.EventCount, to.Permalink, to.FirstSeen, to.LastSeen
			l.LinkedPRs = slices.Clone(to.LinkedPRs)
		}, now)
}

func (m *memStore) TakeOverClaim(_ context.Context, key incident.Key, staleToken, token string, now time.Time) (*incident.Link, error) {
	return m.set(key, func(l incident.Link) bool { return l.State == incident.LinkCreating && l.ClaimToken == staleToken },
		func(l *incident.Link) { l.ClaimToken, l.ClaimedAt = token, now }, now)
}

func (m *memStore) ListLinks(_ context.Context, f incident.LinkFilter) ([]incident.Link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []incident.Link
	for _, l := range m.links {
		if (f.Provider == "" || f.Provider == l.Provider) && (f.Organization == "" || f.Organization == l.Organization) &&
			(f.Project == "" || f.Project == l.Project) && (f.Forge == "" || f.Forge == l.Forge) &&
			(f.Repo == "" || f.Repo == l.Repo) && (f.State == "" || f.State == l.State) {
			out = append(out, *m.copyOf(l))
		}
	}
	slices.SortFunc(out, func(a, b incident.Link) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

func (m *memStore) ImportLegacy(context.Context, time.Time) (incident.ImportReport, error) {
	return incident.ImportReport{}, nil
}

// TestMemStoreConformance: the fake passes the store's suite.
func TestMemStoreConformance(t *testing.T) {
	cpstoretest.RunIncidents(t, func(t *testing.T) incident.Store { return newMemStore() })
}

// fakeForge files issues in memory, numbering them from 1, and counts its
// calls. A non-nil gate holds every call until it is closed; err fails
// them.
type fakeForge struct {
	mu       sync.Mutex
	requests []wq.IssueCreate
	gate     chan struct{}
	entered  chan struct{} // receives once per call, when it arrives
	err      error
}

func (f *fakeForge) CreateIssue(ctx context.Context, req wq.IssueCreate) (*wq.WorkInfo, error) {
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if f.err != nil {
		return nil, f.err
	}
	n := int64(len(f.requests))
	return &wq.WorkInfo{Kind: wq.WorkIssue, Number: n, State: wq.MergeRequestOpen, Title: req.Title, Labels: req.Labels,
		URL: fmt.Sprintf("https://forge.example/%s/issues/%d", req.Project, n)}, nil
}

func (f *fakeForge) calls() []wq.IssueCreate {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}
