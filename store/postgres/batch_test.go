package postgres

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

// Calls made at the same moment share a batch, each gets its own
// result, and a batch that fails as a whole is retried call by call so
// that one call's error is only its own.
func TestABatcherAnswersEachCallAndIsolatesAFailingOne(t *testing.T) {
	var sizes sync.Map // batch size → seen
	started := make(chan struct{}, batchRunners)
	release := make(chan struct{})
	b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) {
		if reqs[0] >= 100 { // a holder: keeps a runner busy
			started <- struct{}{}
			<-release
			return reqs, nil
		}
		sizes.Store(len(reqs), true)
		out := make([]int, len(reqs))
		for i, r := range reqs {
			if r < 0 {
				return nil, errors.New("bad request") // fails the batch as a whole
			}
			out[i] = r * 10
		}
		return out, nil
	})
	defer b.close()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range batchRunners {
		wg.Add(1)
		go func() { defer wg.Done(); b.do(ctx, 100+i) }()
		<-started
	}
	const n = 12
	results := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := i
			if i == 7 {
				req = -1
			}
			results[i], errs[i] = b.do(ctx, req)
		}()
	}
	for len(b.queue) < n {
		runtime.Gosched() // until every call waits behind the holders
	}
	close(release)
	wg.Wait()
	for i := range n {
		switch {
		case i == 7:
			if errs[i] == nil {
				t.Errorf("call %d: no error, want the bad request's", i)
			}
		case errs[i] != nil || results[i] != i*10:
			t.Errorf("call %d: %d, %v; want %d", i, results[i], errs[i], i*10)
		}
	}
	coalesced := false
	sizes.Range(func(k, _ any) bool { coalesced = coalesced || k.(int) >= n/batchRunners; return true })
	if !coalesced {
		t.Error("the queued calls were not coalesced into batches")
	}
}

// A call after close learns the store is closed instead of waiting.
func TestACallAfterCloseIsRefused(t *testing.T) {
	b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) { return reqs, nil })
	b.close()
	if _, err := b.do(context.Background(), 1); !errors.Is(err, errStoreClosed) {
		t.Errorf("after close: %v, want errStoreClosed", err)
	}
}

// Calls made while the store closes each end, with their answer or with
// errStoreClosed: none waits for ever, whether it was queued before the
// close, during it or after.
func TestCallsRacingCloseAllEnd(t *testing.T) {
	for range 20 {
		b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) { return reqs, nil })
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, err := b.do(context.Background(), i); err == nil && got != i {
					t.Errorf("call %d answered %d", i, got)
				} else if err != nil && !errors.Is(err, errStoreClosed) {
					t.Errorf("call %d: %v", i, err)
				}
			}()
		}
		b.close()
		wg.Wait()
	}
}

// A caller that gave up leaves its call to be answered later; that late
// answer never reaches a later caller, whose call may be a recycled one.
func TestALateAnswerGoesToNoOtherCaller(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	b := newBatcher(func(_ context.Context, reqs []int) ([]int, error) {
		if reqs[0] == -1 {
			started <- struct{}{}
			<-release
		}
		return reqs, nil
	})
	defer b.close()
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() { _, err := b.do(ctx, -1); gaveUp <- err }()
	<-started
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that gave up: %v", err)
	}
	close(release) // its call is answered now, to nobody
	for i := range 1000 {
		if got, err := b.do(context.Background(), i); err != nil || got != i {
			t.Fatalf("call %d: %d, %v", i, got, err)
		}
	}
}
