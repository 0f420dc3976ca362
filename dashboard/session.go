package dashboard

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	wq "github.com/workqueue-dev/workqueue"
)

// CookieKeyName names the dashboard's cookie key among the database's
// secrets (wq.SecretStore), used when the configuration gives none.
const CookieKeyName = "dashboard_cookie_key"

// MinCookieKeyBytes is the shortest secret a cookie key is derived from.
const MinCookieKeyBytes = 32

// StoredCookieKey returns the cookie key kept in the database, made (32
// random bytes) by the first instance that asks: every instance on one
// database gets the same key, and so accepts the others' cookies.
func StoredCookieKey(ctx context.Context, s wq.SecretStore, now time.Time) ([]byte, error) {
	fresh := make([]byte, 32)
	rand.Read(fresh)
	key, err := s.GetOrCreateSecret(ctx, CookieKeyName, fresh, now)
	if err != nil {
		return nil, fmt.Errorf("dashboard cookie key: %w", err)
	}
	return key, nil
}

// sealer seals session cookies with AES-256-GCM (a random nonce each,
// prepended) under a key derived from the configured or stored secret
// by HKDF-SHA256, so that the secret itself is used for nothing else.
// The sealed text is
//
//	version (1 byte) | expiry (8 bytes, Unix seconds) | login nonce (18 bytes) | token
//
// and the additional data names the cookie's purpose, so that a value
// sealed under the same key for anything else does not open as a
// session. Only the service can make or read a session cookie: a leaked
// one is not the API token (it is not valid as a bearer token and does
// not contain it), and it ends at its expiry even if the browser keeps
// it.
type sealer struct {
	aead cipher.AEAD
}

const (
	sealVersion = 1
	// loginNonceBytes is the random part of one login, which the CSRF
	// tokens of its forms are bound to.
	loginNonceBytes = 18
	sealHeader      = 1 + 8 + loginNonceBytes
)

// sessionPurpose is the additional data of a session cookie.
var sessionPurpose = []byte("workqueue dashboard session cookie " + sessionCookie)

func newSealer(secret []byte) (*sealer, error) {
	if len(secret) < MinCookieKeyBytes {
		return nil, fmt.Errorf("dashboard: the cookie key needs at least %d bytes, got %d", MinCookieKeyBytes, len(secret))
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "workqueue dashboard cookie key", 32)
	if err != nil {
		return nil, fmt.Errorf("dashboard: derive the cookie key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// sealedSession is what a session cookie carries.
type sealedSession struct {
	token   string
	nonce   string // the login's nonce, base64url
	expires time.Time
}

// seal returns the cookie value of a new login with token, valid until
// expires, with a nonce of its own.
func (s *sealer) seal(token string, expires time.Time) string {
	plain := make([]byte, sealHeader, sealHeader+len(token))
	plain[0] = sealVersion
	binary.BigEndian.PutUint64(plain[1:9], uint64(expires.Unix()))
	rand.Read(plain[9:sealHeader]) // the login's nonce
	plain = append(plain, token...)
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nil, nil, plain, sessionPurpose))
}

var errBadSession = errors.New("not a session cookie of this service, or expired")

// open returns the session a cookie value seals, refusing one that is
// tampered with, sealed under another key or for another purpose, or
// expired at now.
func (s *sealer) open(value string, now time.Time) (sealedSession, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return sealedSession{}, errBadSession
	}
	plain, err := s.aead.Open(nil, nil, sealed, sessionPurpose)
	if err != nil || len(plain) <= sealHeader || plain[0] != sealVersion {
		return sealedSession{}, errBadSession
	}
	expires := time.Unix(int64(binary.BigEndian.Uint64(plain[1:9])), 0)
	if !now.Before(expires) {
		return sealedSession{}, errBadSession
	}
	return sealedSession{token: string(plain[sealHeader:]), nonce: base64.RawURLEncoding.EncodeToString(plain[9:sealHeader]),
		expires: expires}, nil
}

// loginID names a login for its revocation: the SHA-256 of its nonce, so
// that the database holds nothing a cookie is made of.
func loginID(nonce string) string {
	sum := sha256.Sum256([]byte("workqueue dashboard login\x00" + nonce))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ended reports whether login was logged out, on any instance: a login
// this process knows revoked costs nothing, any other one read of the
// revocations by their key, so that a logout holds everywhere at once
// (no cache of "not revoked" to wait out). A read that fails ends the
// session too: a cookie that may have been logged out opens nothing.
func (d *Dashboard) ended(ctx context.Context, login string) bool {
	now := d.o.Clock.Now()
	if d.revoked.has(login, now) {
		return true
	}
	revoked, err := d.o.Sessions.SessionRevoked(ctx, login)
	if err != nil {
		d.log.Warn("session revocations unreadable: the session is refused", "err", err)
		return true
	}
	return revoked
}

// maxRevokedCached bounds the logins a process remembers as revoked;
// past it, the expired go first, then all (a cache, not the record).
const maxRevokedCached = 10000

// revokedCache is the logins this process knows revoked, until their
// cookie's expiry: a revocation never ends before its cookie does.
type revokedCache struct {
	mu      sync.Mutex
	revoked map[string]time.Time
}

func newRevokedCache() *revokedCache { return &revokedCache{revoked: map[string]time.Time{}} }

func (c *revokedCache) has(login string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	exp, ok := c.revoked[login]
	return ok && now.Before(exp)
}

func (c *revokedCache) add(login string, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.revoked) >= maxRevokedCached {
		clear(c.revoked)
	}
	c.revoked[login] = expires
}

// memoryRevocations are revocations of one process, for a dashboard
// given no store.
type memoryRevocations struct {
	mu      sync.Mutex
	revoked map[string]time.Time
}

func (m *memoryRevocations) RevokeSession(_ context.Context, id string, expires, now time.Time) error {
	if id == "" {
		return wq.Errorf(wq.EINVALID, "a revoked session needs an id")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.revoked, func(_ string, exp time.Time) bool { return exp.Before(now) })
	m.revoked[id] = expires
	return nil
}

func (m *memoryRevocations) SessionRevoked(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.revoked[id]
	return ok, nil
}
