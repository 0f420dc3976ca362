// Package keylock serialises work per key within one process: callers
// that hold the same key run one at a time, callers of different keys do
// not wait for each other. A wait is bounded by its context.
//
// The standard library has no keyed mutex, and the well-kept ones outside
// it lack context-bounded waits; this is small enough to own.
package keylock

import (
	"context"
	"sync"
)

// Set is a set of per-key locks. The zero value is ready to use.
type Set struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	sem     chan struct{} // one token: held while locked
	waiters int           // holders and waiters; the entry is dropped at 0
}

// Lock waits until key is free or ctx ends. It returns the function that
// unlocks the key, to be called exactly once, or ctx's error.
func (s *Set) Lock(ctx context.Context, key string) (unlock func(), err error) {
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*entry{}
	}
	e := s.locks[key]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		s.locks[key] = e
	}
	e.waiters++
	s.mu.Unlock()

	select {
	case e.sem <- struct{}{}:
		return func() {
			<-e.sem
			s.release(key, e)
		}, nil
	case <-ctx.Done():
		s.release(key, e)
		return nil, ctx.Err()
	}
}

func (s *Set) release(key string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.waiters--
	if e.waiters == 0 {
		delete(s.locks, key)
	}
}

// Len returns how many keys are held or waited for (for tests).
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.locks)
}
