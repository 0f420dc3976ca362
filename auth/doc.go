// Package auth answers "who is calling, and may they do this?" for the
// HTTP API and the dashboard (DESIGN section 8). Bearer tokens only
// (DDR-24):
//
//   - Caller and Permission (auth.go): who a token proves and what it may
//     do, on which projects (CanOn); static tokens stored as SHA-256
//     hashes (StaticTokens, NewToken, HashToken).
//   - JWTs (jwt.go, jwks.go): OIDC JWTs verified against their issuer's
//     keys, the cluster the service runs in among the issuers (IssuerK8s).
//   - Introspection (introspect.go): opaque tokens validated by an
//     introspection endpoint, valid answers cached.
//   - Rule and Grant (rules.go): rules map what a token proves (claims,
//     groups) to permissions, optionally narrowed to projects.
//   - Chain (chain.go) tries each kind of token in turn; FailureLimiter
//     (throttle.go) slows token guessing by refusing, for a while, an
//     address that failed too often.
package auth
