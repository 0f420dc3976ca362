package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file is what the rules see beyond the text as written: a secret
// hidden under an encoding, split over lines or strings, or broken by
// characters no one sees. Each level of a text is looked at three ways
// besides as it is, and each way costs only where it changes something:
//
//   - normalised (normalise): the lines that hold an escape or an
//     invisible character, with percent-encoding (and %uXXXX), HTML
//     entities (named, decimal, hex), backslash escapes (JSON's \uXXXX
//     and \n, \xHH, octal, \u{...}) decoded; invisible characters
//     (format characters: zero-width space and joiners, word joiner, soft
//     hyphen, BOM, bidi controls; variation selectors, other
//     default-ignorable code points, control bytes, NUL, bytes that are
//     not UTF-8) removed; fullwidth ASCII, the compatibility letters and
//     digits (mathematical, circled) and Unicode dashes read as ASCII; a
//     few rounds while it changes (%2541 is %41 is A);
//   - joined (joinSeams, groupedWords): a word cut by a line end, or by a
//     string concatenation ("AKIAIOSF" +\n "ODNN7EXAMPLE"), or written in
//     groups ("AKIA IOSF ODNN ..."), read as one;
//   - decoded (decodesToSecret, byteLists): each word of base64 (standard
//     or URL-safe, with or without padding) or hex, and each list of byte
//     values ({0x41, 0x4b, ...}, 41:4b:..., character codes), decoded, and
//     the decoded text looked at again the same ways, down to maxLayers
//     layers; a word whose bytes start a private key's DER (PKCS#1,
//     PKCS#8, SEC 1) or an OpenSSH key is a private key without its BEGIN
//     line.
//
// The cost stays linear: a way's text is at most the text it comes from,
// the rules run only on what a way changed (the changed lines, the joined
// words, each distinct decoded word once), and a decoded word is at most
// three quarters of its encoding, so the layers shrink geometrically
// (TestTheDecodersReadATextABoundedNumberOfTimes).

// maxLayers is how many encodings deep a secret is looked for (base64 of
// base64 of base64, hex of percent-encoding of base64, ...).
const maxLayers = 5

// minEncodedWord is the shortest word decoded: 16 characters of base64
// are 12 bytes, shorter than any secret the rules know.
const minEncodedWord = 16

// patch is a text made of pieces of a parent text, transformed: for each
// of its bytes, the parent's bytes [from, to) that produced it.
type patch struct {
	text     []byte
	from, to []int32
	seams    []int32 // joined patches: where one part ends and the next starts
	strong   []bool  // per seam: a concatenation, or a line that is only a fragment
}

func (p *patch) add(b byte, from, to int) {
	p.text = append(p.text, b)
	p.from = append(p.from, int32(from))
	p.to = append(p.to, int32(to))
}

func (p *patch) addString(s string, from, to int) {
	for i := range len(s) {
		p.add(s[i], from, to)
	}
}

// truncate drops the patch's bytes from n on (seams stay: callers drop
// only bytes after the last seam).
func (p *patch) truncate(n int) {
	p.text, p.from, p.to = p.text[:n], p.from[:n], p.to[:n]
}

// copyOf adds parent[from:to] as it is.
func (p *patch) copyOf(parent string, from, to int) {
	for i := from; i < to; i++ {
		p.add(parent[i], i, i+1)
	}
}

// parent maps a span of the patch to the parent's bytes it came from.
func (p *patch) parent(sp span) span {
	sp.start, sp.end = int(p.from[sp.start]), int(p.to[sp.end-1])
	return sp
}

// deep is the secrets of s found beyond s as written (see the top of this
// file), as spans of s. layers is how many encodings deeper it looks.
func deep(s string, broad bool, layers int) []span {
	var out []span
	seen := map[string]bool{}
	// Normalised lines: every rule, as on s.
	norm := normalise(s)
	if norm != nil {
		for _, sp := range flat(string(norm.text), broad) {
			out = append(out, norm.parent(sp))
		}
	}
	// Joined words, of s and of its normalised lines.
	for _, j := range []struct {
		p    *patch
		over *patch
	}{{joinSeams(s), nil}, {joinSeamsOf(norm), norm}, {groupedWords(s), nil}} {
		if j.p == nil {
			continue
		}
		text := string(j.p.text)
		for _, sp := range flat(text, false) {
			strong, crosses := j.p.crosses(sp)
			if !crosses || sp.rule == "secret-assignment" && !strong || strings.Contains(sp.rule, "generic") && !strong {
				continue
			}
			sp = j.p.parent(sp)
			if j.over != nil {
				sp = j.over.parent(sp)
			}
			out = append(out, sp)
		}
		for _, w := range encodedRuns(text) {
			if _, crosses := j.p.crosses(span{start: w[0], end: w[1]}); !crosses {
				continue
			}
			if sp, ok := decodesToSecret(text[w[0]:w[1]], layers, seen); ok {
				sp.start, sp.end = w[0], w[1]
				sp = j.p.parent(sp)
				if j.over != nil {
					sp = j.over.parent(sp)
				}
				out = append(out, sp)
			}
		}
	}
	// Lists of byte values, of s.
	if layers > 0 {
		spans, lists := byteLists(s)
		for n, b := range lists {
			if text, ok := asText(b); ok && (len(flat(text, false)) > 0 || len(deep(text, false, layers-1)) > 0) {
				out = append(out, span{start: spans[n][0], end: spans[n][1], rule: "encoded-secret"})
			}
		}
	}
	// Encoded words, of s and of its normalised lines.
	for _, w := range encodedRuns(s) {
		if sp, ok := decodesToSecret(s[w[0]:w[1]], layers, seen); ok {
			sp.start, sp.end = w[0], w[1]
			out = append(out, sp)
		}
	}
	if norm != nil {
		text := string(norm.text)
		for _, w := range encodedRuns(text) {
			if sp, ok := decodesToSecret(text[w[0]:w[1]], layers, seen); ok {
				sp.start, sp.end = w[0], w[1]
				out = append(out, norm.parent(sp))
			}
		}
	}
	return out
}

// crosses reports whether sp spans one of the patch's seams, and whether
// one it spans is strong.
func (p *patch) crosses(sp span) (strong, crosses bool) {
	for i, at := range p.seams {
		if int(at) > sp.start && int(at) < sp.end {
			crosses = true
			strong = strong || p.strong[i]
		}
	}
	return strong, crosses
}

// decodesToSecret says whether word, decoded, holds a secret: the span's
// rule says which way (its offsets are the caller's to set). seen holds
// the words already looked at this level: each is decoded once.
func decodesToSecret(word string, layers int, seen map[string]bool) (span, bool) {
	if layers <= 0 || seen[word] {
		return span{}, false
	}
	seen[word] = true
	if privateKeyDER(word) {
		return span{rule: "private-key"}, true
	}
	text, ok := decodeWord(word)
	if !ok {
		return span{}, false
	}
	if len(flat(text, false)) > 0 || len(deep(text, false, layers-1)) > 0 {
		return span{rule: "encoded-secret"}, true
	}
	return span{}, false
}

// encodedRuns are the runs of s that may be an encoded word: base64's
// alphabets (standard and URL-safe, '=' only as padding at a run's end)
// and hex (a "0x" prefix left out), at least minEncodedWord long.
func encodedRuns(s string) [][2]int {
	var out [][2]int
	in := func(c byte) bool { return base64Byte[c] }
	for i := 0; i < len(s); {
		if !in(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && in(s[j]) {
			j++
		}
		for j < len(s) && s[j] == '=' {
			j++
		}
		start := i
		if j-i > 2 && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
			start = i + 2
		}
		if j-start >= minEncodedWord {
			out = append(out, [2]int{start, j})
		}
		i = j
	}
	return out
}

// decodeWord decodes word as hex (when it is only hex digits, of even
// length) or else as base64 (standard or URL-safe, padded or not), and
// returns the text when what it decodes to reads as text.
func decodeWord(word string) (string, bool) {
	if len(word)%2 == 0 && isHexWord(word) {
		if b, err := hex.DecodeString(word); err == nil {
			if t, ok := asText(b); ok {
				return t, true
			}
		}
	}
	trimmed := strings.TrimRight(word, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(trimmed); err == nil {
			return asText(b)
		}
	}
	return "", false
}

func isHexWord(w string) bool {
	for i := range len(w) {
		c := w[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// asText returns b as text when it reads as text: UTF-8 (or ASCII in
// UTF-16, NULs dropped) of which nine characters in ten are printable.
// Random bytes (a word that only looks like base64) are not.
func asText(b []byte) (string, bool) {
	if len(b) < 8 {
		return "", false
	}
	s := string(b)
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	n, good := 0, 0
	for _, r := range s {
		n++
		if r == '\n' || r == '\r' || r == '\t' || r >= ' ' && r != 0x7f && r != utf8.RuneError {
			good++
		}
	}
	return s, n >= 8 && good*10 >= n*9
}

// privateKeyDER reports whether a base64 or hex word starts with the DER
// of a private key, as a PEM body does: a SEQUENCE whose first member is
// the version INTEGER 0 or 1 and whose second is an INTEGER (PKCS#1 RSA,
// DSA), a SEQUENCE (PKCS#8's algorithm) or an OCTET STRING (SEC 1's EC
// key); or OpenSSH's "openssh-key-v1". Public keys and certificates start
// otherwise (a SEQUENCE, or a modulus, right away).
func privateKeyDER(word string) bool {
	var b []byte
	switch {
	case strings.HasPrefix(word, "b3BlbnNzaC1rZXktdjE"):
		return true
	case strings.HasPrefix(word, "6f70656e7373682d6b65792d763100"):
		return true
	case strings.HasPrefix(word, "M"):
		prefix := word[:min(len(word), 24)]
		prefix = prefix[:len(prefix)/4*4]
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			if d, err := enc.DecodeString(prefix); err == nil {
				b = d
				break
			}
		}
	case strings.HasPrefix(word, "30") && isHexWord(word[:min(len(word), 24)]):
		b, _ = hex.DecodeString(word[:min(len(word), 24)/2*2])
	}
	if len(b) < 6 || b[0] != 0x30 {
		return false
	}
	i := 2
	switch {
	case b[1] < 0x80:
	case b[1] >= 0x81 && b[1] <= 0x83:
		i += int(b[1] - 0x80)
	default:
		return false
	}
	if len(b) < i+4 || b[i] != 0x02 || b[i+1] != 0x01 || b[i+2] > 1 {
		return false
	}
	next := b[i+3]
	return next == 0x02 || next == 0x30 || next == 0x04
}

// needsNormalising flags the bytes that may start an escape or an
// invisible character.
var needsNormalising = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = c != '\t' && c != '\n' && c != '\r'
	}
	for c := 0x7f; c < 256; c++ {
		t[c] = true
	}
	t['%'], t['&'], t['\\'] = true, true, true
	return t
}()

// normaliseRounds bounds how many times a line is normalised while it
// changes: an escape of an escape of an escape.
const normaliseRounds = 4

// normalise is the lines of s that change when escapes are decoded and
// invisible characters removed, so changed, one after the other, each
// ended by a line end; nil when no line changes.
func normalise(s string) *patch {
	var out *patch
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		trigger := false
		for i := range len(line) {
			if needsNormalising[line[i]] {
				trigger = true
				break
			}
		}
		if trigger {
			if p := normaliseLine(line, start); p != nil {
				if out == nil {
					out = &patch{}
				}
				out.text = append(out.text, p.text...)
				out.from = append(out.from, p.from...)
				out.to = append(out.to, p.to...)
				out.add('\n', end, min(end+1, len(s)))
			}
		}
		start = end + 1
	}
	return out
}

// normaliseLine is line, at offset base of its text, normalised until it
// no longer changes (at most normaliseRounds times); nil if it does not
// change at all.
func normaliseLine(line string, base int) *patch {
	var cur *patch
	text := line
	significant := false
	for range normaliseRounds {
		next, changed, sig := normaliseOnce(text)
		if !changed {
			break
		}
		significant = significant || sig
		if cur == nil {
			for i := range next.from {
				next.from[i] += int32(base)
				next.to[i] += int32(base)
			}
		} else {
			for i := range next.from {
				next.from[i], next.to[i] = cur.from[next.from[i]], cur.to[next.to[i]-1]
			}
		}
		cur, text = next, string(next.text)
	}
	if !significant {
		return nil
	}
	return cur
}

// normaliseOnce is one pass over s (a line): every escape decoded once,
// every invisible character removed. significant says a change may
// reveal a secret: not only escapes of blanks, line ends, backslashes and
// slashes (the "\n" and "\\" of every string literal in code), which
// separate words and join none, so that a line changed only by them is
// not scanned twice.
func normaliseOnce(s string) (p *patch, changed, significant bool) {
	if !mayChange(s) {
		return nil, false, false
	}
	p = &patch{text: make([]byte, 0, len(s)), from: make([]int32, 0, len(s)), to: make([]int32, 0, len(s))}
	// An escape of a blank or a line end matters only inside a word
	// ("MIIE\nAbCd": a key body cut into rows), not at a string's end.
	decoded := func(text string, at, end int) {
		changed = true
		if !significant && (strings.Trim(text, " \t\r\n\\/") != "" || alnum(byteAt(s, at-1)) && alnum(byteAt(s, end))) {
			significant = true
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if !needsNormalising[c] {
			p.add(c, i, i+1)
			i++
			continue
		}
		switch {
		case c == '%':
			if i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && isHexWord(s[i+2:i+6]) { // %u0041, as JavaScript's escape()
				text := runeText(s[i+2 : i+6])
				p.addString(text, i, i+6)
				decoded(text, i, i+6)
				i += 6
				continue
			}
			if i+2 < len(s) && isHexWord(s[i+1:i+3]) {
				b, _ := hex.DecodeString(s[i+1 : i+3])
				p.add(b[0], i, i+3)
				decoded(string(b), i, i+3)
				i += 3
				continue
			}
		case c == '&':
			if n, text := entity(s[i:]); n > 0 {
				p.addString(text, i, i+n)
				decoded(text, i, i+n)
				i += n
				continue
			}
		case c == '\\':
			if n, text := backslashEscape(s[i:]); n > 0 {
				p.addString(text, i, i+n)
				decoded(text, i, i+n)
				i += n
				continue
			}
		case c < 0x20 || c == 0x7f:
			i, changed, significant = i+1, true, true // a control byte (NUL: UTF-16) hides nothing
			continue
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && n == 1, r >= 0x80 && r < 0xa0:
				// A byte that is not UTF-8, or a C1 control: nothing a
				// reader sees, so nothing that may cut a key ("A\xffKIA").
				i, changed, significant = i+n, true, true
				continue
			case invisible(r):
				i, changed, significant = i+n, true, true
				continue
			case r >= 0xff01 && r <= 0xff5e: // fullwidth ASCII
				p.add(byte(r-0xfee0), i, i+n)
				i, changed, significant = i+n, true, true
				continue
			}
			if r >= 0x2010 && r <= 0x2015 || r == 0x2212 || r == 0xfe63 { // hyphens, dashes and minus signs
				p.add('-', i, i+n)
				i, changed, significant = i+n, true, true
				continue
			}
			if ascii, ok := compatASCII(r); ok {
				p.addString(ascii, i, i+n)
				i, changed, significant = i+n, true, true
				continue
			}
			p.copyOf(s, i, i+n)
			i += n
			continue
		}
		p.add(c, i, i+1)
		i++
	}
	return p, changed, significant
}

// mayChange is a cheap look at whether normaliseOnce would change s: a
// percent sign before two hex digits, an ampersand before a name or a
// number, a backslash before an escape's letter, a control byte, or a
// character beyond ASCII.
func mayChange(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsNormalising[c] {
			continue
		}
		switch {
		case c == '%':
			if i+2 < len(s) && isHexWord(s[i+1:i+3]) || i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
				return true
			}
		case c == '&':
			if i+1 < len(s) && (s[i+1] == '#' || alnum(s[i+1])) {
				return true
			}
		case c == '\\':
			if i+1 < len(s) && strings.IndexByte(`ntr"'\\/`+"`"+`bfavxuU01234567`, s[i+1]) >= 0 {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// compatASCII is the ASCII a letter or digit of a compatibility block
// stands for (NFKC): mathematical alphanumerics (𝐀, 𝔸), enclosed and
// circled ones (Ⓐ, ①), letterlike symbols (ℌ), super- and subscripts
// (², ₐ), which read as the letters and digits of a key.
func compatASCII(r rune) (string, bool) {
	switch {
	case r >= 0x1d400 && r <= 0x1d7ff, r >= 0x2100 && r <= 0x24ff, r >= 0x1f100 && r <= 0x1f1ff,
		r >= 0x2070 && r <= 0x209f, r == 0xaa || r == 0xb2 || r == 0xb3 || r == 0xb9 || r == 0xba:
	default:
		return "", false
	}
	s := norm.NFKC.String(string(r))
	for i := range len(s) {
		if s[i] >= 0x80 || !alnum(s[i]) {
			return "", false
		}
	}
	return s, s != ""
}

// invisible reports whether r is a character no one sees that a reader
// or a tool drops: format characters (ZWSP, ZWNJ, ZWJ, word joiner, soft
// hyphen, BOM, the bidi controls, invisible operators), variation
// selectors and the other default-ignorable code points (combining
// grapheme joiner, Hangul fillers).
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || r == 0x034f
}

// entity decodes the HTML character reference at the start of s ("&amp;",
// "&#65;", "&#x41;", "&#65" without its semicolon): its length and text,
// or 0.
func entity(s string) (int, string) {
	j := 1
	for j < len(s) && j < 40 && (s[j] == '#' || 'a' <= s[j] && s[j] <= 'z' || 'A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
		j++
	}
	if j == 1 {
		return 0, ""
	}
	if j < len(s) && s[j] == ';' {
		j++
	}
	ref := s[:j]
	text := html.UnescapeString(ref)
	if text == ref {
		return 0, ""
	}
	// A reference without its semicolon may decode only a prefix
	// ("&ampx" is "&x"): what is left is text as it was.
	return j, text
}

// backslashEscape decodes the escape at the start of s (a backslash):
// JSON's and most languages' \n \t \r \" \' \\ \/ \b \f, octal \101, \xHH,
// \uXXXX (with a surrogate pair's second half), \u{X...} and
// \UXXXXXXXX: its length and text, or 0.
func backslashEscape(s string) (int, string) {
	if len(s) < 2 {
		return 0, ""
	}
	switch c := s[1]; c {
	case 'n':
		return 2, "\n"
	case 't':
		return 2, "\t"
	case 'r':
		return 2, "\r"
	case '"', '\'', '\\', '/', '`':
		return 2, string(c)
	case 'b', 'f', 'a', 'v':
		return 2, ""
	case '0', '1', '2', '3', '4', '5', '6', '7': // octal, as C, shells' printf and Python write bytes
		j := 1
		for j < len(s) && j < 4 && '0' <= s[j] && s[j] <= '7' {
			j++
		}
		v := 0
		for _, d := range []byte(s[1:j]) {
			v = v*8 + int(d-'0')
		}
		if v > 255 {
			return 0, ""
		}
		return j, string([]byte{byte(v)})
	case 'x':
		if len(s) >= 4 && isHexWord(s[2:4]) {
			b, _ := hex.DecodeString(s[2:4])
			return 4, string(b)
		}
	case 'u':
		if len(s) >= 4 && s[2] == '{' {
			end := strings.IndexByte(s[3:min(len(s), 12)], '}')
			if end > 0 && isHexWord(s[3:3+end]) {
				return 3 + end + 1, runeText(s[3 : 3+end])
			}
			return 0, ""
		}
		if len(s) >= 6 && isHexWord(s[2:6]) {
			r := hexRune(s[2:6])
			if r >= 0xd800 && r < 0xdc00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' && isHexWord(s[8:12]) {
				if lo := hexRune(s[8:12]); lo >= 0xdc00 && lo < 0xe000 {
					return 12, string(rune((r-0xd800)<<10 + (lo - 0xdc00) + 0x10000))
				}
			}
			return 6, runeText(s[2:6])
		}
	case 'U':
		if len(s) >= 10 && isHexWord(s[2:10]) {
			return 10, runeText(s[2:10])
		}
	}
	return 0, ""
}

func hexRune(h string) rune {
	var r rune
	for i := range len(h) {
		c := h[i]
		switch {
		case c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a':
			r = r<<4 | rune(c-'a'+10)
		default:
			r = r<<4 | rune(c-'A'+10)
		}
	}
	return r
}

// runeText is the character of a hex code point, "" for an invalid one.
func runeText(h string) string {
	if len(h) > 6 {
		return ""
	}
	r := hexRune(h)
	if !utf8.ValidRune(r) {
		return ""
	}
	return string(r)
}

// base64Byte is a byte of base64's alphabets (standard and URL-safe),
// padding aside; seamByte one that may be part of a seam.
var base64Byte, seamByte = func() (b64, seam [256]bool) {
	for c := range 256 {
		b64[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
	}
	seam['\n'], seam['"'], seam['\''], seam['`'] = true, true, true, true
	return b64, seam
}()

// tokenByte is a byte a key is made of.
func tokenByte(c byte) bool { return base64Byte[c] || c == '=' }

// minJoined is the shortest joined word looked at: shorter than any key
// the rules know.
const minJoined = 16

// joinContext is how much of a joined word's first line comes with it:
// the name a key is assigned to.
const joinContext = 64

// joinSeamsOf is joinSeams over a patch's text, or nil.
func joinSeamsOf(p *patch) *patch {
	if p == nil {
		return nil
	}
	return joinSeams(string(p.text))
}

// joinSeams is the words of s that a seam cuts, joined: a line end
// between two key bytes, with blanks, a string's quotes, a
// concatenation operator (+ . .. & || ~) or a line continuation around
// it ("AKIAIOSF" +\n "ODNN7EXAMPLE", a PEM body, a base64 wrapped at 76),
// and a concatenation of two strings on one line ("AKIA" + "IOSF...").
// Each joined word comes with the start of its first line and the rest
// of its last, and ends with a line end; nil when no word of at least minJoined bytes is cut.
func joinSeams(s string) *patch {
	var out *patch
	type part struct {
		end, next int // where a part ends, and where the next one starts
		strong    bool
	}
	var parts []part
	for i := 0; i < len(s); {
		at, end, strong := seamAt(s, i)
		if at < 0 {
			break
		}
		// The word before the seam, back to its start, and the parts
		// after it while another seam follows a part: measured first,
		// copied only when long enough.
		start := at
		for start > 0 && tokenByte(s[start-1]) {
			start--
		}
		parts = append(parts[:0], part{at, end, strong})
		k := end
		for {
			for k < len(s) && tokenByte(s[k]) {
				k++
			}
			nextAt, nextEnd, nextStrong := seamAt(s, k)
			if nextAt != k {
				break
			}
			parts = append(parts, part{k, nextEnd, nextStrong})
			k = nextEnd
		}
		joined := at - start
		for n, p := range parts {
			to := k
			if n+1 < len(parts) {
				to = parts[n+1].end
			}
			joined += to - p.next
		}
		if joined >= minJoined {
			if out == nil {
				out = &patch{}
			}
			// Context (the name a value is assigned to, its closing
			// quote) serves only rules that a strong seam lets through:
			// a piece joined only at weak seams (a line end in prose or
			// code) comes without it, as most seams of code are weak.
			strong := false
			for _, p := range parts {
				strong = strong || p.strong
			}
			ctx := start
			for strong && ctx > 0 && start-ctx < joinContext && s[ctx-1] != '\n' {
				ctx--
			}
			out.copyOf(s, ctx, at)
			for n, p := range parts {
				out.seams = append(out.seams, int32(len(out.text)))
				out.strong = append(out.strong, p.strong)
				to := k
				if n+1 < len(parts) {
					to = parts[n+1].end
				}
				out.copyOf(s, p.next, to)
			}
			// And the rest of its last line: a closing quote, what follows.
			rest := k
			for strong && rest < len(s) && rest-k < joinContext && s[rest] != '\n' {
				rest++
			}
			out.copyOf(s, k, rest)
			out.add('\n', rest, rest)
		}
		i = max(k, at+1)
	}
	return out
}

// byteAt is s[i], or 0 outside s.
func byteAt(s string, i int) byte {
	if i < 0 || i >= len(s) {
		return 0
	}
	return s[i]
}

// alnum is an ASCII letter or digit.
func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

// seamSide reports whether the bytes of a seam's side, the one at the
// seam first, are a word's: a letter or a digit, or another key byte
// next to one ("/abc", not a comment's "//" or a list's "- ").
func seamSide(c, next byte) bool {
	return alnum(c) || c != '=' && tokenByte(c) && alnum(next)
}

// seamAt finds the first seam at or after i: a key byte at at-1 and at
// end, and between them what cuts a word (see joinSeams). strong says it
// is a concatenation or a continuation, or that a side of it is a line
// holding only its part of the word, rather than a line end in running
// text. at is -1 when there is none.
func seamAt(s string, i int) (at, end int, strong bool) {
	for i < len(s) {
		j := i
		for j < len(s) && !seamByte[s[j]] {
			j++
		}
		if j == len(s) {
			return -1, 0, false
		}
		if s[j] == '\n' {
			if a, e, st, ok := newlineSeam(s, j); ok {
				return a, e, st
			}
		} else if a, e, st, ok := quoteSeam(s, j); ok {
			return a, e, st
		}
		i = j + 1
	}
	return -1, 0, false
}

func blank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func quote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

func concatOp(c byte) bool { return c == '+' || c == '.' || c == '&' || c == '|' || c == '~' }

// newlineSeam reads a seam around the line end at nl.
func newlineSeam(s string, nl int) (at, end int, strong, ok bool) {
	b := nl
	for b > 0 && blank(s[b-1]) {
		b--
	}
	marked := false
	if b > 0 && s[b-1] == '\\' {
		b, marked = b-1, true
	}
	for b > 0 && blank(s[b-1]) {
		b--
	}
	for n := 0; b > 0 && concatOp(s[b-1]) && n < 2; n++ {
		b, marked = b-1, true
	}
	for b > 0 && blank(s[b-1]) {
		b--
	}
	if b > 0 && quote(s[b-1]) {
		b, marked = b-1, true
	}
	if b == 0 || !seamSide(s[b-1], byteAt(s, b-2)) {
		return 0, 0, false, false
	}
	e := nl + 1
	for e < len(s) && blank(s[e]) {
		e++
	}
	for n := 0; e < len(s) && concatOp(s[e]) && n < 2; n++ {
		e, marked = e+1, true
	}
	for e < len(s) && blank(s[e]) {
		e++
	}
	if e < len(s) && quote(s[e]) {
		e, marked = e+1, true
	}
	if e >= len(s) || !seamSide(s[e], byteAt(s, e+1)) {
		return 0, 0, false, false
	}
	return b, e, marked || onlyWord(s, b, true) || onlyWord(s, e, false), true
}

// onlyWord reports whether the line around a seam's side holds only the
// word that side cuts (blanks, quotes and operators aside): a line of a
// wrapped key, not of prose.
func onlyWord(s string, at int, before bool) bool {
	if before {
		i := at
		for i > 0 && tokenByte(s[i-1]) {
			i--
		}
		for i > 0 && (blank(s[i-1]) || quote(s[i-1]) || concatOp(s[i-1]) || s[i-1] == '(' || s[i-1] == ',') {
			i--
		}
		return i == 0 || s[i-1] == '\n'
	}
	i := at
	for i < len(s) && tokenByte(s[i]) {
		i++
	}
	for i < len(s) && (blank(s[i]) || quote(s[i]) || concatOp(s[i]) || s[i] == ')' || s[i] == ',' || s[i] == ';' || s[i] == '\\') {
		i++
	}
	return i == len(s) || s[i] == '\n'
}

// quoteSeam reads a concatenation of two strings on one line at the
// closing quote q: "AKIA" + "IOSF", 'AKIA' . 'IOSF', "AKIA" "IOSF", and
// a list of strings, "AKIA", "IOSF" (weak).
func quoteSeam(s string, q int) (at, end int, strong, ok bool) {
	if q == 0 || !seamSide(s[q-1], byteAt(s, q-2)) {
		return 0, 0, false, false
	}
	e := q + 1
	for e < len(s) && blank(s[e]) {
		e++
	}
	strong = true
	if e < len(s) && s[e] == ',' {
		// A list of strings joined (["AKIA", "IOSF…"].join("")): weak,
		// since most lists of strings are lists.
		e, strong = e+1, false
	} else {
		for n := 0; e < len(s) && concatOp(s[e]) && n < 2; n++ {
			e++
		}
	}
	for e < len(s) && blank(s[e]) {
		e++
	}
	if e >= len(s) || !quote(s[e]) || e+1 >= len(s) || !seamSide(s[e+1], byteAt(s, e+2)) {
		return 0, 0, false, false
	}
	return q, e + 1, strong, true
}

// minByteList is the fewest numbers a byte list holds to be decoded: a
// list shorter than any key the rules know is not one.
const minByteList = 12

// byteLists finds the lists of byte values in s that may spell a text: a
// C or Go byte array ({0x41, 0x4b, ...}), hex pairs with separators
// ("41 4b 49", "41:4b:49"), character codes (fromCharCode(65, 75, ...)),
// at least minByteList long, separated by blanks, commas, colons or
// semicolons (or line ends). Each comes as its span of s and its bytes.
func byteLists(s string) (spans [][2]int, lists [][]byte) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') || i > 0 && (alnum(s[i-1]) || s[i-1] == '_') {
			continue
		}
		for _, mode := range []byte{'x', 'h', 'd'} {
			end, b := byteList(s, i, mode)
			if len(b) >= minByteList {
				spans, lists = append(spans, [2]int{i, end}), append(lists, b)
				i = end
				break
			}
		}
	}
	return spans, lists
}

// byteList reads a list of byte values at s[i:] written one way: 'x'
// 0x-prefixed hex, 'h' bare hex pairs, 'd' decimal. It returns where the
// list ends and its bytes.
func byteList(s string, i int, mode byte) (int, []byte) {
	var out []byte
	end := i
	for {
		j, v, ok := byteValue(s, i, mode)
		if !ok {
			return end, out
		}
		out, end = append(out, v), j
		k := j
		for k < len(s) && (blank(s[k]) || s[k] == ',' || s[k] == ':' || s[k] == ';' || s[k] == '\n') {
			k++
		}
		if k == j || k == len(s) {
			return end, out
		}
		i = k
	}
}

// byteValue reads one byte value at s[i:] (see byteList).
func byteValue(s string, i int, mode byte) (int, byte, bool) {
	digits := func(from, most int, ok func(byte) bool) int {
		j := from
		for j < len(s) && j-from < most && ok(s[j]) {
			j++
		}
		return j
	}
	isHex := func(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }
	var j int
	var v int
	switch mode {
	case 'x':
		if i+2 >= len(s) || s[i] != '0' || s[i+1] != 'x' && s[i+1] != 'X' {
			return 0, 0, false
		}
		j = digits(i+2, 2, isHex)
		if j == i+2 {
			return 0, 0, false
		}
		v = int(hexRune(s[i+2 : j]))
	case 'h':
		j = digits(i, 2, isHex)
		if j != i+2 {
			return 0, 0, false
		}
		v = int(hexRune(s[i:j]))
	default:
		j = digits(i, 3, func(c byte) bool { return '0' <= c && c <= '9' })
		if j == i {
			return 0, 0, false
		}
		for _, c := range []byte(s[i:j]) {
			v = v*10 + int(c-'0')
		}
		if v > 255 {
			return 0, 0, false
		}
	}
	if j < len(s) && (alnum(s[j]) || s[j] == '_') {
		return 0, 0, false // part of a longer word
	}
	return j, byte(v), true
}

// minGroups is the fewest groups a key written in groups has.
const minGroups = 4

// groupedWords is the keys of s written in groups of equal length
// separated by single blanks ("AKIA IOSF ODNN 7EXA MPLE", "QUtJ QUlP
// U0ZP RE5O"), each joined, with the start of its line before it and
// the rest after; its seams are strong only when the joined word mixes
// letters and digits (prose has runs of four-letter words too). nil when
// there are none.
func groupedWords(s string) *patch {
	var out *patch
	// The previous group's words end at prevLast in s and at tail in the
	// patch; its trailing context was copied up to copied in s.
	prevLast, tail, copied := 0, 0, 0
	wordEnd := func(i int) int {
		for i < len(s) && base64Byte[s[i]] {
			i++
		}
		for i < len(s) && s[i] == '=' {
			i++
		}
		return i
	}
	for i := 0; i < len(s); {
		if !base64Byte[s[i]] || i > 0 && base64Byte[s[i-1]] {
			i++
			continue
		}
		e := wordEnd(i)
		size := e - i
		if size < 3 || size > 8 {
			i = e
			continue
		}
		// Count the groups first (most words start none), copy after.
		groups, last := 1, e
		for last+1 < len(s) && s[last] == ' ' && base64Byte[s[last+1]] {
			next := wordEnd(last + 1)
			n := next - (last + 1)
			if n > size || n < size && groups < minGroups-1 {
				break
			}
			groups, last = groups+1, next
			if n < size {
				break // a last, shorter group
			}
		}
		if groups >= minGroups && groups*size >= minJoined {
			if out == nil {
				out = &patch{}
			}
			ctx := i
			for ctx > 0 && i-ctx < joinContext && s[ctx-1] != '\n' {
				ctx--
			}
			if len(out.text) > 0 && ctx < copied {
				// The previous group's trailing context reaches into this
				// one's: it is dropped, and this group's leading context
				// starts where that group's words ended, so that every byte
				// of s is in the patch once and in order.
				out.truncate(tail)
				ctx = prevLast
			}
			out.copyOf(s, ctx, e)
			from, firstSeam := len(out.text)-size, len(out.seams)
			for at := e; at < last; {
				next := wordEnd(at + 1)
				out.seams = append(out.seams, int32(len(out.text)))
				out.strong = append(out.strong, false)
				out.copyOf(s, at+1, next)
				at = next
			}
			if mixed(out.text[from:]) {
				for n := firstSeam; n < len(out.strong); n++ {
					out.strong[n] = true
				}
			}
			rest := last
			for rest < len(s) && rest-last < joinContext && s[rest] != '\n' {
				rest++
			}
			prevLast, tail, copied = last, len(out.text), rest
			out.copyOf(s, last, rest)
			out.add('\n', rest, rest)
		}
		i = last
	}
	return out
}

// mixed reports whether w holds a letter and a digit.
func mixed(w []byte) bool {
	var letter, digit bool
	for _, c := range w {
		letter = letter || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		digit = digit || '0' <= c && c <= '9'
	}
	return letter && digit
}
