package auth_test

import (
	"context"
	"strings"
	"testing"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/auth"
)

func TestStaticTokensAuthenticateByHash(t *testing.T) {
	tok, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "wq_") || len(tok) != 46 || len(hash) != 64 {
		t.Fatalf("token %q hash %q", tok, hash)
	}
	s, err := auth.NewStaticTokens([]auth.Token{{Name: "ci", SHA256: hash, Permissions: []auth.Permission{auth.Submit}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Authenticate(context.Background(), tok)
	if err != nil || c.Identity != "token:ci" || !c.Can(auth.Submit) || c.Can(auth.Retry) {
		t.Errorf("Authenticate = %+v, %v", c, err)
	}
	for _, bad := range []string{"", hash, tok + "x", strings.Repeat("a", 9000)} {
		if _, err := s.Authenticate(context.Background(), bad); wq.ErrorCode(err) != wq.EUNAUTHORIZED {
			t.Errorf("token %.20q: %v, want unauthorized", bad, err)
		}
	}
}

func TestAdminHoldsEveryPermission(t *testing.T) {
	c := &auth.Caller{Grants: []auth.Grant{{Rule: "r", Permissions: []auth.Permission{auth.Admin}}}}
	for _, p := range auth.Permissions {
		if !c.Can(p) || !c.CanOn(p, "any/project") {
			t.Errorf("admin lacks %s", p)
		}
	}
	var none *auth.Caller
	if none.Can(auth.Read) {
		t.Error("a nil caller can read")
	}
}

func TestBadTokenConfigNamesTheEntry(t *testing.T) {
	_, hash, _ := auth.NewToken()
	for _, tc := range []struct {
		tokens []auth.Token
		want   string
	}{
		{[]auth.Token{{Name: "a", SHA256: "abc"}}, "auth.tokens[0].sha256"},
		{[]auth.Token{{Name: "a", SHA256: strings.ToUpper(hash)}}, "auth.tokens[0].sha256"},
		{[]auth.Token{{Name: "a", SHA256: hash}, {Name: "b", SHA256: hash}}, "auth.tokens[1].sha256: the same token"},
	} {
		if _, err := auth.NewStaticTokens(tc.tokens); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %s", tc.tokens, err, tc.want)
		}
	}
}
