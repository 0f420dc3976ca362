package keylock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestHoldersOfOneKeyRunOneAtATime(t *testing.T) {
	var s Set
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := s.Lock(context.Background(), "branch")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d holders of one key at once, want 1", most.Load())
	}
	if s.Len() != 0 {
		t.Errorf("%d keys left after every holder unlocked", s.Len())
	}
}

func TestOtherKeysDoNotWait(t *testing.T) {
	var s Set
	unlock, _ := s.Lock(context.Background(), "a")
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	other, err := s.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("key b waited for key a: %v", err)
	}
	other()
}

func TestAWaitEndsWithItsContextAndLeavesNothingBehind(t *testing.T) {
	var s Set
	unlock, _ := s.Lock(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Lock(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a cancelled context = %v, want context.Canceled", err)
	}
	unlock()
	if s.Len() != 0 {
		t.Errorf("%d keys left", s.Len())
	}
}
