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

// The shares of the ready set are ranges of ids that follow one another
// and cover every id: each id is in exactly one share, the first share
// has no lower bound and the last no upper one, and the ids of a span
// spread evenly over it are dealt out about evenly.
func TestTheSharesOfTheReadySetAreRangesThatCoverEveryID(t *testing.T) {
	id := func(lead uint64, trailing byte) [16]byte {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], lead)
		for i := 8; i < 16; i++ {
			b[i] = trailing
		}
		return b
	}
	in := func(x [16]byte, from, to *[16]byte) bool {
		return (from == nil || bytes.Compare(x[:], from[:]) >= 0) && (to == nil || bytes.Compare(x[:], to[:]) < 0)
	}
	for _, c := range []struct {
		name   string
		lo, hi uint64
		shares int
	}{
		{"two", 1_000, 1_999, 2},
		{"three", 1_000, 1_999, 3},
		{"seven over a wide span", 1 << 40, 1<<63 + 12_345, 7},
		{"the whole range of leading bits", 0, ^uint64(0), 5},
		{"more shares than ids", 10, 12, 8},
		{"one id", 500, 500, 3},
		{"alone", 1_000, 1_999, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			lo, hi := id(c.lo, 0x11), id(c.hi, 0xee)
			bounds := make([][2]*[16]byte, c.shares)
			for s := range c.shares {
				from, to := shareBounds(lo, hi, c.shares, s)
				bounds[s] = [2]*[16]byte{from, to}
				if (s == 0) != (from == nil) || (s == c.shares-1) != (to == nil) {
					t.Fatalf("share %d of %d: from %v, to %v: only the first share may lack a lower bound, only the last an upper", s, c.shares, from, to)
				}
				if s > 0 && *bounds[s-1][1] != *from {
					t.Fatalf("share %d starts at %x, share %d ends at %x: not adjacent", s, *from, s-1, *bounds[s-1][1])
				}
			}
			// Ids below, across and above the span, with either trailing half.
			count := make([]int, c.shares)
			step := (c.hi-c.lo)/997 + 1
			probe := []uint64{0, c.lo, c.hi, ^uint64(0)}
			for x, n := c.lo, 0; n < 1_000 && x <= c.hi; x, n = x+step, n+1 {
				probe = append(probe, x)
				if x > c.hi-step {
					break // the next step would pass hi, or wrap round
				}
			}
			for _, lead := range probe {
				for _, tr := range []byte{0x00, 0xff} {
					x, owners := id(lead, tr), 0
					for s, b := range bounds {
						if in(x, b[0], b[1]) {
							owners++
							if lead >= c.lo && lead <= c.hi && tr == 0xff {
								count[s]++
							}
						}
					}
					if owners != 1 {
						t.Fatalf("id %x is in %d shares, want 1", x, owners)
					}
				}
			}
			if c.hi-c.lo+1 >= uint64(100*c.shares) {
				for s, n := range count {
					if want := len(probe) / c.shares; n < want*8/10 || n > want*12/10 {
						t.Errorf("share %d holds %d of %d ids spread over the span, want about %d", s, n, len(probe)-4, want)
					}
				}
			}
		})
	}
}
