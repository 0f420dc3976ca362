package auth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule maps a remote identity to local permissions (DDR-21..23). The
// identity is either Groups (an introspected user's groups) or Issuer and
// Claims (a verified JWT): every claim must match (AND); a list of values
// matches if any does (OR); values compare as lowercase strings, so
// GitLab's numeric project_id and boolean ref_protected match "123" and
// "true". A claim name starting with "/" is a JSON pointer into nested
// claims (RFC 6901).
type Rule struct {
	Name          string
	Groups        []string
	Issuer        string
	Claims        map[string][]string // claim → accepted values, lowercase
	IdentityClaim string              // the claim that names the caller; "sub" when empty
	Permissions   []Permission
	Projects      []string // globs (doublestar); empty: every project
}

// Grant is what one matched rule gives a caller.
type Grant struct {
	Rule        string       `json:"rule"`
	Permissions []Permission `json:"permissions"`
	Projects    []string     `json:"projects,omitempty"` // empty: every project
}

func (g Grant) holds(p Permission) bool {
	return slices.Contains(g.Permissions, p) || slices.Contains(g.Permissions, Admin)
}

func (g Grant) covers(project string) bool {
	if len(g.Projects) == 0 {
		return true
	}
	for _, glob := range g.Projects {
		if ok, _ := doublestar.Match(glob, project); ok {
			return true
		}
	}
	return false
}

// MatchClaims reports whether claims (a JWT payload decoded with
// json.Decoder.UseNumber) satisfy every one of the rule's claims.
func (r *Rule) MatchClaims(claims map[string]any) bool {
	for name, want := range r.Claims {
		got, ok := lookupClaim(claims, name)
		if !ok || !anyValueMatches(got, want) {
			return false
		}
	}
	return true
}

// MatchGroups reports whether any of the caller's groups is one of the
// rule's.
func (r *Rule) MatchGroups(groups []string) bool {
	for _, g := range groups {
		if slices.Contains(r.Groups, g) {
			return true
		}
	}
	return false
}

// lookupClaim finds a top-level claim, or a nested one by JSON pointer.
func lookupClaim(claims map[string]any, name string) (any, bool) {
	if !strings.HasPrefix(name, "/") {
		v, ok := claims[name]
		return v, ok
	}
	var cur any = claims
	for _, tok := range strings.Split(name[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(node) || tok != strconv.Itoa(i) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// anyValueMatches compares a token's claim value (a scalar, or a list of
// them) with the accepted values.
func anyValueMatches(got any, want []string) bool {
	if list, ok := got.([]any); ok {
		for _, v := range list {
			if s, ok := scalarString(v); ok && slices.Contains(want, s) {
				return true
			}
		}
		return false
	}
	s, ok := scalarString(got)
	return ok && slices.Contains(want, s)
}

// scalarString renders a JSON scalar as a lowercase string; objects,
// arrays and null are not scalars.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return strings.ToLower(x), true
	case json.Number:
		return strings.ToLower(x.String()), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// ClaimValues turns a configured claim value (a string, number or
// boolean, or a list of them, as YAML decodes it) into the lowercase
// strings a rule compares with.
func ClaimValues(v any) ([]string, error) {
	one := func(x any) (string, error) {
		switch y := x.(type) {
		case string:
			return strings.ToLower(y), nil
		case int:
			return strconv.Itoa(y), nil
		case int64:
			return strconv.FormatInt(y, 10), nil
		case uint64:
			return strconv.FormatUint(y, 10), nil
		case float64:
			return strconv.FormatFloat(y, 'f', -1, 64), nil
		case bool:
			return strconv.FormatBool(y), nil
		}
		return "", fmt.Errorf("want a string, number or boolean, got %T", x)
	}
	if list, ok := v.([]any); ok {
		if len(list) == 0 {
			return nil, fmt.Errorf("an empty list matches nothing")
		}
		out := make([]string, 0, len(list))
		for _, x := range list {
			s, err := one(x)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := one(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

// ValidPointer reports whether name is a well-formed JSON pointer claim
// name: "/" then tokens in which "~" only starts "~0" or "~1".
func ValidPointer(name string) bool {
	if !strings.HasPrefix(name, "/") || len(name) < 2 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '~' && (i+1 >= len(name) || (name[i+1] != '0' && name[i+1] != '1')) {
			return false
		}
	}
	return true
}
