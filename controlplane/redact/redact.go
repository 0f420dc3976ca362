// Package redact removes secrets from text and JSON before they are
// stored (session checkpoints, incident links: hard rule 1 of #660): forge
// and provider tokens, authorization headers, credentials in URLs,
// private keys, cloud keys, JWTs and password-like pairs. It is pure and
// errs on the side of masking: a checkpoint that loses a word is
// recoverable, a stored token is not.
package redact

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Mask replaces what was removed.
const Mask = "[REDACTED]"

// secretKey matches names whose values are secrets whatever they look
// like: password, secret, token, api_key, authorization, dsn, ...
var secretKey = regexp.MustCompile(`(?i)(pass(word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|authorization|credential|dsn|cookie|session[_-]?key)`)

// pattern is one shape of secret and what replaces it: Mask, after the
// part of the match that names it (a pair's name, a URL's scheme).
type pattern struct {
	re   *regexp.Regexp
	with string
}

func whole(re string) pattern     { return pattern{regexp.MustCompile(re), Mask} }
func afterName(re string) pattern { return pattern{regexp.MustCompile(re), "${1}" + Mask} }

// patterns find secrets in free text, most specific first.
var patterns = []pattern{
	// PEM private keys, terminated or cut off.
	whole(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`),
	// Credentials in URLs: scheme://user:pass@host (Sentry DSNs too).
	{regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@`), "${1}" + Mask + "@"},
	// Authorization headers and bare bearer, basic and token credentials.
	afterName(`(?i)((?:proxy-)?authorization\s*[:=]\s*)[^\r\n]*`),
	afterName(`(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9\-._~+/]+=*`),
	afterName(`(?i)(\btoken\s+)[A-Za-z0-9\-._~+/]{16,}=*`),
	// Name = value pairs whose name says secret (password=…, secret: …).
	afterName(`(?i)(\b[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|dsn)["']?\s*[:=]\s*)("[^"]*"|'[^']*'|[^\s,;&}\])"'\[]+)`),
	// Forge and provider tokens by their shape.
	whole(`\bgl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent|soat|ffct)-[0-9A-Za-z_\-]{16,}`),           // GitLab
	whole(`\bgh[pousr]_[A-Za-z0-9]{30,}`),                                                       // GitHub classic
	whole(`\bgithub_pat_[A-Za-z0-9_]{22,}`),                                                     // GitHub fine-grained
	whole(`\bsntry[su]_[A-Za-z0-9+/=_]{20,}`),                                                   // Sentry auth tokens
	whole(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),                                                      // AWS access key ids
	whole(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),                    // JWTs
	afterName(`(?i)(\b(?:gitea|forge|access|api)[ _-]?token\b[^0-9a-f\n]{0,20})[0-9a-f]{40}\b`), // a labelled 40-hex Gitea token
}

// Text returns s with every secret it recognises replaced by Mask.
func Text(s string) string {
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.with)
	}
	return s
}

// JSON returns doc with every string (member names included) redacted as
// Text does, and the value of every member whose name says secret
// (password, token, authorization, ...) replaced by Mask whatever it is.
// doc must be valid JSON.
func JSON(doc json.RawMessage) (json.RawMessage, error) {
	if len(doc) == 0 {
		return doc, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(value(v))
}

// Value redacts a decoded JSON value.
func value(v any) any {
	switch v := v.(type) {
	case string:
		return Text(v)
	case []any:
		for i := range v {
			v[i] = value(v[i])
		}
		return v
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			name := Text(k)
			if secretKey.MatchString(k) {
				if _, isObject := x.(map[string]any); !isObject {
					if _, isList := x.([]any); !isList {
						out[name] = Mask
						continue
					}
				}
			}
			out[name] = value(x)
		}
		return out
	}
	return v
}
