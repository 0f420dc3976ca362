package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
)

// Introspection validates opaque tokens by calling an endpoint with the
// token itself (DDR-24: OpenShift's users/~, which answers a valid token
// with its user and groups). Answers are cached by the token's hash for
// TTL: a revoked token is refused at most TTL after its revocation.
// Refusals and failures are never cached, so an endpoint that was down
// costs nothing once it is back, and a refusal is never stretched.
type Introspection struct {
	URL    string
	TTL    time.Duration // default 5m
	Rules  []Rule        // the group rules
	Client *http.Client
	Clock  clockwork.Clock

	mu    sync.Mutex
	cache map[[sha256.Size]byte]introspected
}

type introspected struct {
	user    string
	groups  []string
	expires time.Time
}

// maxCached bounds the cache; when full, expired entries go first, then
// everything (a cache, not a store).
const maxCached = 10000

// Authenticate asks the endpoint who the token belongs to and maps the
// user's groups through the group rules.
func (in *Introspection) Authenticate(ctx context.Context, token string) (*Caller, error) {
	if len(token) > MaxTokenBytes || token == "" {
		return nil, wq.Errorf(wq.EUNAUTHORIZED, "invalid token")
	}
	key, hit, fresh := in.cached(token)
	if !fresh {
		var err error
		if hit, err = in.ask(ctx, token); err != nil {
			return nil, err
		}
		ttl := in.TTL
		if ttl <= 0 {
			ttl = 5 * time.Minute
		}
		hit.expires = in.now().Add(ttl)
		in.store(key, hit, in.now())
	}
	c := &Caller{Identity: hit.user, Kind: KindIntrospection, Groups: slices.Clone(hit.groups), Grants: []Grant{}}
	for _, r := range in.Rules {
		if len(r.Groups) > 0 && r.MatchGroups(hit.groups) {
			c.Grants = append(c.Grants, Grant{Rule: r.Name, Permissions: slices.Clone(r.Permissions), Projects: slices.Clone(r.Projects)})
		}
	}
	return c, nil
}

// NeedsRemoteCall implements RemoteCoster: a token whose positive
// answer is in the cache costs no call.
func (in *Introspection) NeedsRemoteCall(token string) bool {
	_, _, fresh := in.cached(token)
	return !fresh
}

// cached is token's cache key and its cached answer; fresh says there is
// one and it has not expired.
func (in *Introspection) cached(token string) (key [sha256.Size]byte, hit introspected, fresh bool) {
	key = sha256.Sum256([]byte(token))
	in.mu.Lock()
	hit, ok := in.cache[key]
	in.mu.Unlock()
	return key, hit, ok && in.now().Before(hit.expires)
}

// now is the time on the introspection's clock.
func (in *Introspection) now() time.Time {
	if in.Clock != nil {
		return in.Clock.Now()
	}
	return time.Now()
}

func (in *Introspection) store(key [sha256.Size]byte, v introspected, now time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cache == nil {
		in.cache = map[[sha256.Size]byte]introspected{}
	}
	if len(in.cache) >= maxCached {
		for k, e := range in.cache {
			if !now.Before(e.expires) {
				delete(in.cache, k)
			}
		}
		if len(in.cache) >= maxCached {
			clear(in.cache)
		}
	}
	in.cache[key] = v
}

func (in *Introspection) ask(ctx context.Context, token string) (introspected, error) {
	client := in.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
	if err != nil {
		return introspected{}, fmt.Errorf("introspection: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return introspected{}, wq.Errorf(wq.EUNAUTHORIZED, "token could not be validated: introspection endpoint unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return introspected{}, wq.Errorf(wq.EUNAUTHORIZED, "token refused by the introspection endpoint (%d)", resp.StatusCode)
	}
	// OpenShift's users/~: {"metadata": {"name": …}, "groups": […]}.
	var u struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Groups []string `json:"groups"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&u); err != nil || u.Metadata.Name == "" {
		return introspected{}, wq.Errorf(wq.EUNAUTHORIZED, "token could not be validated: the introspection answer names no user")
	}
	return introspected{user: u.Metadata.Name, groups: u.Groups}, nil
}
