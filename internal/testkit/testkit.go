// Package testkit holds small things many packages' tests need alike: a
// logger that writes nowhere (Quiet), goroutines released together as
// racing callers arrive (AtOnce), and a list of lines many goroutines add
// to (Record).
package testkit

import (
	"io"
	"log/slog"
	"sync"
)

// Quiet is a logger that writes nowhere, for the parts under test.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// AtOnce runs f(0) … f(n-1) in n goroutines released together, the way
// racing callers arrive, and waits for all of them.
func AtOnce(n int, f func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			f(i)
		})
	}
	close(start)
	wg.Wait()
}

// Record is a list of lines that goroutines add to at once, such as the
// calls a fake saw; the zero value is empty and ready.
type Record struct {
	mu    sync.Mutex
	lines []string
}

// Add appends a line.
func (r *Record) Add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

// Lines returns a copy of the lines, in the order they were added.
func (r *Record) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}
