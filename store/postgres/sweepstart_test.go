package postgres

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// A sweep's start is drawn inside the ready set's span of ids, over the
// whole of it: instances sharing a database start in different places.
func TestASweepStartsAnywhereInTheReadySetsSpan(t *testing.T) {
	id := func(lead uint64) [16]byte {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], lead)
		copy(b[8:], "trailing")
		return b
	}
	lo, hi := id(1_000), id(1_099)
	seen := map[uint64]bool{}
	for range 5_000 {
		got := randomBetween(lo, hi)
		if bytes.Compare(got[:], lo[:]) < 0 || binary.BigEndian.Uint64(got[:8]) > 1_099 {
			t.Fatalf("start %x outside [%x, %x]", got, lo, hi)
		}
		seen[binary.BigEndian.Uint64(got[:8])] = true
	}
	if len(seen) < 90 {
		t.Errorf("5,000 draws over 100 leading values gave %d of them: not spread over the span", len(seen))
	}
	if got := randomBetween(hi, lo); got != hi {
		t.Errorf("an empty span: %x, want its lower end", got)
	}
	if got := randomBetween(lo, lo); got != lo {
		t.Errorf("a span of one id: %x, want it", got)
	}
}
