package mr

import (
	"fmt"
	"strings"
)

// configEntry is one variable of a git-config file, named as git names
// it: section and key lower-cased, the subsection as written (or, in the
// deprecated [section.subsection] form, lower-cased, as git does).
type configEntry struct {
	Section    string
	Subsection string
	HasSub     bool
	Key        string
	Value      string
	HasValue   bool // false for a bare "key", which git reads as true
	Line       int
}

// parseGitConfig reads git-config syntax the way git's config.c does
// (git_parse_source, get_base_var, get_value, parse_value): '#' and ';'
// comments, [section], [section "subsection"] with \-escapes, the
// deprecated [section.subsection], a key on the line of its header,
// values with quotes, the escapes \n \t \b \\ \", and \-newline
// continuations. What git would refuse to parse is an error: a
// .gitmodules we cannot read exactly as git does is not one we can vouch
// for.
func parseGitConfig(text string) ([]configEntry, error) {
	p := configParser{src: strings.TrimPrefix(text, "\ufeff"), line: 1}
	return p.parse()
}

type configParser struct {
	src  string
	pos  int
	line int
}

const configEOF = -1

// next returns the next byte, reading "\r\n" as '\n' like git's
// get_next_char, and configEOF at the end.
func (p *configParser) next() int {
	if p.pos >= len(p.src) {
		p.pos = len(p.src) + 1 // stays at EOF
		return configEOF
	}
	c := p.src[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.src) && p.src[p.pos] == '\n' {
		c = '\n'
		p.pos++
	}
	if c == '\n' {
		p.line++
	}
	return int(c)
}

func (p *configParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

func isConfigSpace(c int) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isConfigKeyChar(c int) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func lowerASCIIByte(c int) byte {
	if c >= 'A' && c <= 'Z' {
		return byte(c - 'A' + 'a')
	}
	return byte(c)
}

func (p *configParser) parse() ([]configEntry, error) {
	var (
		entries []configEntry
		comment bool
		section string // the dotted base: "submodule" or "submodule.name" or "submodule.sub"
		haveSec bool
		sub     string
		hasSub  bool
	)
	for {
		c := p.next()
		switch {
		case c == configEOF:
			return entries, nil
		case c == '\n':
			comment = false
			continue
		case comment || isConfigSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			var err error
			if section, sub, hasSub, err = p.header(); err != nil {
				return nil, err
			}
			haveSec = true
			continue
		case !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
			return nil, p.errorf("unexpected %q", rune(c))
		}
		if !haveSec {
			return nil, p.errorf("a variable outside any section")
		}
		line := p.line
		key, value, hasValue, err := p.variable(c)
		if err != nil {
			return nil, err
		}
		e := configEntry{Key: key, Value: value, HasValue: hasValue, Line: line}
		// Name the variable as git's parse_config_key splits
		// "base[.sub].key": the section up to the first dot of the base,
		// the subsection everything between it and the key.
		e.Section, e.Subsection, e.HasSub = section, "", false
		if i := strings.IndexByte(section, '.'); i >= 0 {
			e.Section, e.Subsection, e.HasSub = section[:i], section[i+1:], true
		}
		if hasSub {
			if e.HasSub {
				e.Subsection += "." + sub
			} else {
				e.Subsection = sub
			}
			e.HasSub = true
		}
		entries = append(entries, e)
	}
}

// header reads a section header after its '['.
func (p *configParser) header() (base, sub string, hasSub bool, err error) {
	var b strings.Builder
	for {
		c := p.next()
		switch {
		case c == configEOF || c == '\n':
			return "", "", false, p.errorf("unterminated section header")
		case c == ']':
			if b.Len() == 0 {
				return "", "", false, p.errorf("empty section name")
			}
			return b.String(), "", false, nil
		case isConfigSpace(c):
			if b.Len() == 0 {
				return "", "", false, p.errorf("empty section name")
			}
			sub, err := p.subsection(c)
			return b.String(), sub, true, err
		case !isConfigKeyChar(c) && c != '.':
			return "", "", false, p.errorf("invalid character %q in a section name", rune(c))
		}
		b.WriteByte(lowerASCIIByte(c))
	}
}

// subsection reads `"name"]` after the blank that ends a section name.
func (p *configParser) subsection(c int) (string, error) {
	for isConfigSpace(c) {
		if c == '\n' {
			return "", p.errorf("unterminated section header")
		}
		c = p.next()
	}
	if c != '"' {
		return "", p.errorf("a subsection name must be quoted")
	}
	var b strings.Builder
	for {
		c = p.next()
		switch c {
		case configEOF, '\n':
			return "", p.errorf("unterminated subsection name")
		case '"':
			if p.next() != ']' {
				return "", p.errorf("want ] after the subsection name")
			}
			return b.String(), nil
		case '\\':
			if c = p.next(); c == configEOF || c == '\n' {
				return "", p.errorf("unterminated subsection name")
			}
		}
		b.WriteByte(byte(c))
	}
}

// variable reads "key", "key =" or "key = value" whose first letter is c.
func (p *configParser) variable(c int) (key, value string, hasValue bool, err error) {
	var b strings.Builder
	for ; isConfigKeyChar(c); c = p.next() {
		b.WriteByte(lowerASCIIByte(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	switch c {
	case '\n', configEOF:
		return b.String(), "", false, nil
	case '=':
		value, err = p.value()
		return b.String(), value, true, err
	}
	return "", "", false, p.errorf("want = after the variable name %q", b.String())
}

// value reads a value after its '=' up to the end of its line, as git's
// parse_value: blanks outside quotes collapse to the spaces between
// words and vanish at both ends, and a comment ends the value.
func (p *configParser) value() (string, error) {
	var (
		b       strings.Builder
		comment bool
		quoted  bool
		spaces  int
	)
	for {
		c := p.next()
		if c == '\n' || c == configEOF {
			if quoted {
				return "", p.errorf("unterminated quoted value")
			}
			return b.String(), nil
		}
		if comment {
			continue
		}
		if isConfigSpace(c) && !quoted {
			if b.Len() > 0 {
				spaces++
			}
			continue
		}
		if !quoted && (c == '#' || c == ';') {
			comment = true
			continue
		}
		for ; spaces > 0; spaces-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			switch c = p.next(); c {
			case '\n':
				continue // a continuation line
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", p.errorf("invalid escape in a value")
			}
		case '"':
			quoted = !quoted
			continue
		}
		b.WriteByte(byte(c))
	}
}
