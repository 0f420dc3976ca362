package mr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/unicode/rangetable"
)

// This file holds the path classes that make a path mean or look like
// something else on some platform git checks out on (Windows, macOS) or
// to a reader: git for Windows refuses them in verify_path with
// core.protectNTFS (is_valid_win32_path), and a name that only differs
// in case or normalisation lands on the same file on a case-insensitive
// or normalisation-insensitive file system.

// invisible is Unicode's Default_Ignorable_Code_Point (derived in
// DerivedCoreProperties.txt from Other_Default_Ignorable_Code_Point, Cf
// and Variation_Selector, minus White_Space, which none of them hold)
// together with the rest of Cf, the format controls: all of them render
// as nothing, or change how their neighbours render, so a name holding
// one does not read as what it is. HFS+ also drops some of them when it
// compares names, which is how ".g\u200cit" became .git (CVE-2014-9390).
var invisible = rangetable.Merge(unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Cf)

// assigned is every code point Unicode (the version Go's tables and
// x/text's normalisation tables share) gives a general category. An
// unassigned code point has no normalisation, case or display properties
// yet, so a later Unicode version can make a checked name unnormalised or
// invisible.
var assigned = rangetable.Merge(unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co)

// folder is Unicode full case folding (ß and SS fold alike), which
// strings.ToLower and unicode.SimpleFold are not.
var folder = cases.Fold()

// checkCharacters refuses code points that change how a path reads:
// bidirectional controls (which reorder what is displayed, the
// "Trojan Source" class), default-ignorable and format characters, and
// unassigned code points and noncharacters.
func checkCharacters(p string) *Refusal {
	for _, r := range p {
		switch {
		case unicode.Is(unicode.Bidi_Control, r):
			return &Refusal{Path: p, Rule: RulePathBidiControl,
				Message: describe(r) + " is a bidirectional control: it reorders how the path is displayed"}
		case unicode.Is(invisible, r):
			return &Refusal{Path: p, Rule: RulePathInvisibleChar,
				Message: describe(r) + " is invisible (a default-ignorable or format code point): the path does not read as what it is"}
		case !unicode.Is(assigned, r) || unicode.Is(unicode.Noncharacter_Code_Point, r):
			return &Refusal{Path: p, Rule: RulePathUnassignedChar,
				Message: describe(r) + " is unassigned or a noncharacter: its normalisation and display are not defined"}
		}
	}
	if !norm.NFC.IsNormalString(p) {
		return &Refusal{Path: p, Rule: RulePathNotNFC,
			Message: "path is not in Unicode NFC (" + strconv.QuoteToASCII(p) + " is " + strconv.QuoteToASCII(norm.NFC.String(p)) + " composed); macOS reads both spellings as one name"}
	}
	return nil
}

// checkComponent applies the Windows checkout rules (git's
// is_valid_win32_path) and the option-injection rule to one component
// that has already passed the Unicode checks.
func checkComponent(p, c string) *Refusal {
	refuse := func(rule, msg string) *Refusal { return &Refusal{Path: p, Rule: rule, Message: msg} }
	if i := strings.IndexByte(c, ':'); i >= 0 {
		// A colon makes a drive-relative path ("C:x") or, after a name,
		// an NTFS alternate data stream ("a::$DATA" is a, not a new file).
		return refuse(RulePathColon, "component "+strconv.Quote(c)+" holds a colon: Windows reads it as a drive letter or an NTFS data stream, and macOS as a slash")
	}
	if i := strings.IndexAny(c, `<>"|?*`); i >= 0 {
		return refuse(RulePathReservedChar, "component "+strconv.Quote(c)+" holds "+strconv.Quote(c[i:i+1])+", which Windows does not allow in a file name")
	}
	if strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") {
		// Windows drops trailing dots and spaces, so "a." is "a": two
		// names for one file, and one of them not the name committed.
		return refuse(RulePathTrailingDotOrSpace, "component "+strconv.Quote(c)+" ends in a dot or a space, which Windows drops (it would check out as another name)")
	}
	if isReservedDeviceName(c) {
		return refuse(RulePathReservedName, "component "+strconv.Quote(c)+" is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, CONOUT$, with any extension): it cannot be checked out there")
	}
	if strings.HasPrefix(c, "-") {
		// A name that starts with '-' is read as an option by the tools
		// that are handed it (git submodule, scripts, CI jobs).
		return refuse(RulePathLeadingDash, "component "+strconv.Quote(c)+" starts with '-', which commands read as an option")
	}
	return nil
}

// isReservedDeviceName reports whether Windows opens a device instead of
// a file for component c: the device name in any case, optionally
// followed by spaces, and then the end or an extension (git's
// is_valid_win32_path; Windows also reads the superscript digits ¹ ² ³ as
// port numbers, and documents COM0 and LPT0 as reserved).
func isReservedDeviceName(c string) bool {
	base := c
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	base = strings.ToLower(strings.TrimRight(base, " "))
	switch base {
	case "con", "prn", "aux", "nul", "conin$", "conout$":
		return true
	}
	if len(base) < 4 || (base[:3] != "com" && base[:3] != "lpt") {
		return false
	}
	port, size := utf8.DecodeRuneInString(base[3:])
	if 3+size != len(base) {
		return false
	}
	return (port >= '0' && port <= '9') || port == '¹' || port == '²' || port == '³'
}

// foldKey is the name a case-insensitive, normalisation-insensitive file
// system (NTFS, APFS, HFS+) stores component c under. It is Unicode's
// canonical caseless match (NFD, full case folding, NFC), after the
// simple uppercase mapping NTFS applies: NTFS equates ı with i through
// I, which folding alone does not.
func foldKey(c string) string {
	var upper strings.Builder
	for _, r := range norm.NFD.String(c) {
		upper.WriteRune(unicode.ToUpper(r))
	}
	return norm.NFC.String(folder.String(norm.NFD.String(upper.String())))
}

// foldTree finds two spellings of one name within a submission: every
// directory and file an action touches is a node keyed by its parent and
// its fold key, so "Dir/a" and "dir/b" meet at the node of "dir" with two
// spellings. Keying by parent node keeps the cost linear in the path
// length, where keying by whole prefixes would be quadratic.
type foldTree struct {
	nodes map[foldEdge]foldNode
}

type foldEdge struct {
	parent int
	key    string
}

type foldNode struct {
	id       int
	spelling string // the component as first submitted
	index    int    // the action that first submitted it
	path     string // the path it was first submitted in
	dir      bool   // a directory of that path, not its file
}

// Conflicts foldTree.add finds.
const (
	noConflict       = iota
	spellingConflict // one name spelled two ways
	fileDirConflict  // one name used as a file and as a directory
)

// add records path p of action index. When a directory or file of p is
// spelled otherwise by an earlier path (spellingConflict), or is a file
// where an earlier path has a directory of that name or the other way
// round (fileDirConflict: a forge keeps one of them and silently drops the
// other), it returns p's prefix up to that component and the earlier node.
func (t *foldTree) add(p string, index int) (prefix string, earlier foldNode, conflict int) {
	if t.nodes == nil {
		t.nodes = map[foldEdge]foldNode{}
	}
	parent, start := 0, 0
	for start <= len(p) {
		end := strings.IndexByte(p[start:], '/')
		if end < 0 {
			end = len(p)
		} else {
			end += start
		}
		c := p[start:end]
		dir := end < len(p)
		edge := foldEdge{parent: parent, key: foldKey(c)}
		n, ok := t.nodes[edge]
		switch {
		case !ok:
			n = foldNode{id: len(t.nodes) + 1, spelling: c, index: index, path: p, dir: dir}
			t.nodes[edge] = n
		case n.spelling != c:
			return p[:end], n, spellingConflict
		case n.dir != dir:
			return p[:end], n, fileDirConflict
		}
		parent, start = n.id, end+1
	}
	return "", foldNode{}, noConflict
}

// describe names a code point for a message without printing it: it
// may be invisible or reorder the message around it.
func describe(r rune) string { return fmt.Sprintf("%U", r) }
