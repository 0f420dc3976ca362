package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// checkPatch holds a patch to its promise: every byte comes from bytes
// of the parent, in order.
func checkPatch(t *testing.T, p *patch, parent string) {
	t.Helper()
	if p == nil {
		return
	}
	if len(p.from) != len(p.text) || len(p.to) != len(p.text) {
		t.Fatalf("%d bytes, %d froms, %d tos", len(p.text), len(p.from), len(p.to))
	}
	for i := range p.text {
		if p.from[i] < 0 || p.to[i] < p.from[i] || int(p.to[i]) > len(parent) || i > 0 && p.from[i] < p.from[i-1] {
			t.Fatalf("byte %d of %q maps to [%d, %d) of %q", i, p.text, p.from[i], p.to[i], parent)
		}
	}
	for _, sm := range p.seams {
		if sm < 0 || int(sm) > len(p.text) {
			t.Fatalf("seam %d outside %d bytes", sm, len(p.text))
		}
	}
}

// FuzzNormalise holds the normalised view to its promises on any text:
// each byte maps into the text, in order; it does not grow more than a
// named entity's expansion allows; and it never holds a byte or a
// character it is meant to remove.
func FuzzNormalise(f *testing.F) {
	for _, s := range []string{"%41%4B", "&#65;&#x4b;&amp;amp;&nGt;", `\u0041\x4b\u{49}\ud83d\ude00\n`, "A\u200dK\u00adI\ufeffA", "a\x00b", "ＡＫＩＡ", "%2541", "&#", `\u12`, "&;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := normalise(s)
		checkPatch(t, p, s)
		if p == nil {
			return
		}
		if len(p.text) > 2*len(s)+1 {
			t.Fatalf("%q grew to %q", s, p.text)
		}
	})
}

// FuzzJoinSeams holds the joined view to its promises: each byte maps
// into the text, in order within a joined word, and every seam is inside
// the view.
func FuzzJoinSeams(f *testing.F) {
	for _, s := range []string{"AKIAIOSF\nODNN7EXAMPLE\n", "x = \"AKIA\" +\n  \"IOSFODNN7EXAMPLE\"", "'ab' 'cd' . 'ef'", "a\\\nb", "\n\n\"", "ab\"\"cd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := joinSeams(s)
		if p == nil {
			return
		}
		if len(p.from) != len(p.text) || len(p.seams) != len(p.strong) {
			t.Fatalf("%d bytes, %d froms; %d seams, %d strengths", len(p.text), len(p.from), len(p.seams), len(p.strong))
		}
		for i := range p.text {
			if p.from[i] < 0 || p.to[i] < p.from[i] || int(p.to[i]) > len(s) {
				t.Fatalf("byte %d maps to [%d, %d) of %d", i, p.from[i], p.to[i], len(s))
			}
		}
		if len(p.text) > 3*len(s)+2 {
			t.Fatalf("%q joined to %d bytes", s, len(p.text))
		}
	})
}

// FuzzDecodeWord holds the word decoders to theirs: no panic, text only
// when it reads as text, and a private key's DER test on any word.
func FuzzDecodeWord(f *testing.F) {
	for _, s := range []string{"QUtJQUlPU0ZPRE5ON0VYQU1QTEU=", "414b4941494f53464f444e4e374558414d504c45", "MIIEpAIBAAKCAQEA", "b3BlbnNzaC1rZXktdjEAAAAA", "MC4CAQAwBQYDK2VwBCIEI", "30820122"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, w string) {
		privateKeyDER(w)
		if text, ok := decodeWord(w); ok {
			if _, ok := asText([]byte(text)); !ok {
				t.Fatalf("%q decoded to %q, which does not read as text", w, text)
			}
			if len(text) > len(w) {
				t.Fatalf("%q decoded to %d bytes", w, len(text))
			}
		}
		for _, r := range encodedRuns(w) {
			if r[0] < 0 || r[1] > len(w) || r[1]-r[0] < minEncodedWord {
				t.Fatalf("run %v of %q", r, w)
			}
		}
	})
}

// scanned is how many bytes the rules read to find what Find finds in s.
func scanned(s string) int {
	n := 0
	flatHook = func(l int) { n += l }
	defer func() { flatHook = nil }()
	find(s, false)
	return n
}

// The decoders cost a bounded multiple of the text, whatever its shape:
// texts made to branch (words that decode to words that decode, escapes
// of escapes, a seam at every line) are read a few times, never
// exponentially many, and the multiple does not grow with the size.
func TestTheDecodersReadATextABoundedNumberOfTimes(t *testing.T) {
	nest := func(s string, layers int, enc func([]byte) string) string {
		for range layers {
			s = enc([]byte(s))
		}
		return s
	}
	b64 := base64.StdEncoding.EncodeToString
	words := func(n int) string {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			b.WriteString(nest("some ordinary words here", 2, b64) + " ")
		}
		return b.String()
	}
	shapes := map[string]func(n int) string{
		"base64 nested deeper than looked":     func(n int) string { return nest(words(n/8), 6, b64) },
		"hex nested":                           func(n int) string { return nest(words(n/16), 4, hex.EncodeToString) },
		"words of base64 of words of base64":   words,
		"percent of percent":                   func(n int) string { return strings.Repeat("%252541", n/7) },
		"entities of entities":                 func(n int) string { return strings.Repeat("&amp;amp;#65;", n/13) },
		"a seam at every line":                 func(n int) string { return strings.Repeat("abcdefgh\n", n/9) },
		"words in groups of four":              func(n int) string { return strings.Repeat("ab1d ", n/5) },
		"byte lists of byte lists":             func(n int) string { return strings.Repeat("0x34, 0x31, ", n/12) },
		"concatenations":                       func(n int) string { return strings.Repeat(`"abcdefgh" + `, n/13) },
		"invisible characters between letters": func(n int) string { return strings.Repeat("a\u200d", n/4) },
		"escaped base64 wrapped over lines":    func(n int) string { return strings.ReplaceAll(nest(words(n/4), 1, b64), "A", "\\u0041\n") },
	}
	for name, shape := range shapes {
		small, large := shape(4<<10), shape(64<<10)
		rs, rl := float64(scanned(small))/float64(len(small)), float64(scanned(large))/float64(len(large))
		t.Logf("%s: %.2f and %.2f times the text", name, rs, rl)
		if rl > 12 || rl > 2*rs+1 {
			t.Errorf("%s: the rules read %.1f times a text of %d bytes (%.1f times one of %d)", name, rl, len(large), rs, len(small))
		}
	}
}

// FuzzByteLists holds the byte lists to theirs: inside the text, long
// enough, never overlapping.
func FuzzByteLists(f *testing.F) {
	for _, s := range []string{"0x41, 0x4b, 0x49, 0x41, 0x41, 0x4b, 0x49, 0x41, 0x41, 0x4b, 0x49, 0x41", "41:4b:49:41:41:4b:49:41:41:4b:49:41", "65, 75, 73, 65, 65, 75, 73, 65, 65, 75, 73, 65, 999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spans, lists := byteLists(s)
		last := -1
		for n, sp := range spans {
			if sp[0] < 0 || sp[1] > len(s) || sp[0] >= sp[1] || sp[0] < last || len(lists[n]) < minByteList {
				t.Fatalf("list %v (%d bytes) in %d bytes after %d", sp, len(lists[n]), len(s), last)
			}
			last = sp[1]
		}
	})
}

// FuzzGroupedWords holds the grouped view to the patch's promises.
func FuzzGroupedWords(f *testing.F) {
	for _, s := range []string{"AKIA IOSF ODNN 7EXA MPLE", "QUtJ QUlP U0ZP RE5O TEU=", "ab cd ef gh", "x = aaaa bbbb cccc dd\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := groupedWords(s)
		checkPatch(t, p, s)
		if p != nil && len(p.seams) != len(p.strong) {
			t.Fatalf("%d seams, %d strengths", len(p.seams), len(p.strong))
		}
	})
}
