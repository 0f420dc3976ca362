package controlplane

import (
	"context"

	wq "github.com/workqueue-dev/workqueue"
)

// Project scope (issue 48): a caller narrowed to some projects
// (Caller.Projects) sees and acts on the work of those alone. Whatever
// of another project it names (a lease, an assignment, a checkpoint) is
// answered as what does not exist, with the very error a missing one
// gets, and lists leave it out while still filling their pages, so that
// neither an answer, a cursor nor a count tells the caller it is there.

// leaseNotFound is the answer for a lease that does not exist, or that
// the caller may not see: the same for both.
func leaseNotFound(id string) error { return wq.Errorf(wq.ENOTFOUND, "lease %s not found", id) }

// checkpointNotFound is the answer for a checkpoint that does not
// exist, or that the caller may not see.
func checkpointNotFound() error { return wq.Errorf(wq.ENOTFOUND, "checkpoint not found") }

// scopeCache answers whether the caller covers the work of an id,
// reading each work item once.
type scopeCache struct {
	s       *Service
	c       Caller
	covered map[string]bool
}

func (s *Service) scopeOf(c Caller) *scopeCache {
	return &scopeCache{s: s, c: c, covered: map[string]bool{}}
}

// coversWork reports whether the caller covers work id. Work that is
// gone is covered by no narrowed caller: nothing says whose it was.
func (sc *scopeCache) coversWork(ctx context.Context, id string) (bool, error) {
	if sc.c.Projects == nil {
		return true, nil
	}
	if ok, known := sc.covered[id]; known {
		return ok, nil
	}
	w, err := sc.s.Store.GetWork(ctx, id)
	switch {
	case wq.ErrorCode(err) == wq.ENOTFOUND:
		w = nil
	case err != nil:
		return false, err
	}
	ok := sc.c.covers(w)
	sc.covered[id] = ok
	return ok, nil
}

// lease loads lease id if the caller may see it: a lease of work outside
// its projects is leaseNotFound, as is a missing one.
func (s *Service) lease(ctx context.Context, c Caller, id string) (*Lease, error) {
	l, err := s.Store.GetLease(ctx, id)
	if wq.ErrorCode(err) == wq.ENOTFOUND {
		return nil, leaseNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	ok, err := s.scopeOf(c).coversWork(ctx, l.WorkID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, leaseNotFound(id)
	}
	return l, nil
}

// Work lists the inventory the caller may see, in key order. A narrowed
// caller's page is filled from its projects alone (the store is read on
// past the others), so that its length and its last id, the next page's
// cursor, say nothing of another project.
func (s *Service) Work(ctx context.Context, c Caller, f WorkFilter) ([]Work, error) {
	if c.Projects == nil {
		return s.Store.ListWork(ctx, f)
	}
	want := f.Limit
	if want <= 0 || want > wq.MaxListLimit {
		want = wq.MaxListLimit
	}
	out := []Work{}
	if f.Forge != "" && f.Repo != "" && !c.Covers(f.Forge, f.Repo) {
		return out, nil
	}
	page := f
	page.Limit = wq.MaxListLimit
	for {
		list, err := s.Store.ListWork(ctx, page)
		if err != nil {
			return nil, err
		}
		for i := range list {
			if c.covers(&list[i]) {
				out = append(out, list[i])
				if len(out) == want {
					return out, nil
				}
			}
		}
		if len(list) < page.Limit {
			return out, nil
		}
		page.After = list[len(list)-1].ID
	}
}
