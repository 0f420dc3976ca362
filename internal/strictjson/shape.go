package strictjson

import (
	"fmt"

	wq "github.com/workqueue-dev/workqueue"
)

// Bounds on a body's shape, checked on its bytes before anything is
// decoded: what a body may hold must be bounded before it is
// materialised, since a 32 MiB body of a million nulls in one array
// decodes into gigabytes. Each item type bounds its own lists more
// tightly (the mr type's file actions and labels) once decoded.
const (
	// MaxDepth is the deepest nesting of objects and arrays.
	MaxDepth = 32
	// MaxElements is the most elements of one array, and members of one
	// object.
	MaxElements = 10000
)

// RuleBodyTooComplex refuses a body nested deeper than MaxDepth or with
// an array or object larger than MaxElements.
const RuleBodyTooComplex = "body_too_complex"

// CheckShape scans body's bytes, without decoding them, for nesting
// deeper than MaxDepth and arrays or objects of more than MaxElements:
// such a body is refused (EINVALID, reason body_too_complex) naming the
// top-level member it is in and the limit. A body that is not JSON passes
// here and is refused by the decoder. It allocates nothing but its stack.
func CheckShape(body []byte) error {
	var commas [MaxDepth + 1]int // per open level: the separators seen, one fewer than its elements
	depth := 0
	member := ""       // the top-level member the scan is in
	wantKey := false   // at depth 1 in an object, the next string is a member name
	topObject := false // the body is an object
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			start := i + 1
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			if depth == 1 && topObject && wantKey {
				member = string(body[start:min(i, len(body))])
				wantKey = false
			}
		case '{', '[':
			if depth == 0 {
				topObject = c == '{'
			}
			depth++
			if depth > MaxDepth {
				return tooComplex(member, fmt.Sprintf("it nests deeper than %d levels", MaxDepth))
			}
			commas[depth] = 0
			if depth == 1 && topObject {
				wantKey = true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth > 0 {
				if commas[depth]++; commas[depth] >= MaxElements {
					return tooComplex(member, fmt.Sprintf("an array or object holds more than %d elements", MaxElements))
				}
				if depth == 1 && topObject {
					wantKey = true
				}
			}
		}
	}
	return nil
}

func tooComplex(member, why string) error {
	where := "body"
	if member != "" {
		where = member
	}
	return &wq.Error{Code: wq.EINVALID, Reason: RuleBodyTooComplex,
		Message: fmt.Sprintf("%s: %s, the most the API reads (%s)", where, why, RuleBodyTooComplex)}
}
