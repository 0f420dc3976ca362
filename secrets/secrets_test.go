package secrets_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/workqueue-dev/workqueue/secrets"
)

// secrets are one sample of each shape, as they appear in the wild.
var samples = []struct{ name, secret string }{
	{"gitlab personal token", "glpat-Xk2LmN8pQrStUvWxYz01"},
	{"gitlab deploy token", "gldt-aB3dE5fG7hI9jK1lM3nO"},
	{"gitlab runner token", "glrt-t1_AbCdEfGhIjKlMnOpQrSt"},
	{"gitlab ci job token", "glcbt-64_Zx9Yw8Vu7Ts6Rq5Po4Nm"},
	{"github classic token", "ghp_1234567890abcdefghijABCDEFGHIJklmnop"},
	{"github fine-grained token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"},
	{"sentry auth token", "sntrys_eyJpYXQiOjE3MDAwMDAwMDAuMTIzNDU2LCJ1cmwiOiJodHRwczovL3NlbnRyeS5pbyJ9"},
	{"sentry user token", "sntryu_0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"},
	{"aws access key id", "AKIAIOSFODNN7EXAMPLE"},
	{"jwt", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXBhcnQtaGVyZQ"},
}

// contexts are texts a secret is pasted into, and what must be gone.
var contexts = []struct{ name, text, gone string }{
	{"bearer header", "curl -H 'Authorization: Bearer s3cr3tVALUEabc123'", "s3cr3tVALUEabc123"},
	{"token header", "header: token 0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"},
	{"credential url", "cloned https://agent:hunter2pass@gitea.example.com/o/r.git", "hunter2pass"},
	{"credential url user", "cloned https://agent:hunter2pass@gitea.example.com/o/r.git", "agent:"},
	{"sentry dsn", "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/42", "0123456789abcdef0123456789abcdef"},
	{"password pair", "login with password=correct-horse-battery", "correct-horse-battery"},
	{"secret yaml", "webhook_secret: 'tr0ub4dor&3'", "tr0ub4dor&3"},
	{"api key pair", `{"api_key":"k-99887766"}`, "k-99887766"},
	{"aws secret pair", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	{"labelled gitea token", "gitea token: 5f0c2a1b3d4e5f60718293a4b5c6d7e8f9012345", "5f0c2a1b3d4e5f60718293a4b5c6d7e8f9012345"},
	{"pem private key", "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\nend", "b3BlbnNzaC1rZXktdjEAAAAA"},
	{"pem cut off", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7", "MIIEpAIBAAKCAQEA7"},
}

func TestTextRemovesEveryShapeOfSecret(t *testing.T) {
	for _, s := range samples {
		for _, around := range []string{"%s", "token was %s.", "(%s)", "x=%s&y=1", "\"%s\""} {
			in := fmt.Sprintf(around, s.secret)
			if out := secrets.Text(in); strings.Contains(out, s.secret) || !strings.Contains(out, secrets.MaskPrefix) {
				t.Errorf("%s in %q: %q", s.name, around, out)
			}
		}
	}
	for _, c := range contexts {
		if out := secrets.Text(c.text); strings.Contains(out, c.gone) {
			t.Errorf("%s: %q still holds %q", c.name, out, c.gone)
		}
	}
}

func TestTextKeepsWhatIsNotSecret(t *testing.T) {
	for _, s := range []string{
		"Fix the flaky test in pkg/engine (see #42)",
		"pushed 5f0c2a1b3d4e5f60718293a4b5c6d7e8f9012345 to workqueue/fix", // a commit, not a labelled token
		"https://gitea.example.com/o/r/pulls/3",
		"next: run go test ./... and open the pull request",
	} {
		if out := secrets.Text(s); out != s {
			t.Errorf("%q became %q", s, out)
		}
	}
}

func TestJSONMasksSecretMembersAndRedactsEveryString(t *testing.T) {
	in := `{"note":"Authorization: Bearer abcdefghijklmnop","nested":{"password":12345,"list":["glpat-Xk2LmN8pQrStUvWxYz01",{"token":"opaque"}]},` +
		`"glpat-Xk2LmN8pQrStUvWxYz01":"a key that is a token","ok":"keep me","count":3}`
	out, err := secrets.JSON(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"abcdefghijklmnop", "12345", "glpat-", "opaque"} {
		if strings.Contains(string(out), gone) {
			t.Errorf("%s still holds %q", out, gone)
		}
	}
	for _, kept := range []string{`"ok":"keep me"`, `"count":3`} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("%s lost %s", out, kept)
		}
	}
}

// A secret planted anywhere in a random JSON document, as a value, inside
// a text, or as a member name, never survives.
func TestASecretPlantedAnywhereInJSONNeverSurvives(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		s := samples[r.IntN(len(samples))].secret
		doc := randomJSON(r, 4, s)
		raw, _ := json.Marshal(doc)
		if !strings.Contains(string(raw), s) {
			continue // the secret landed nowhere this round
		}
		out, err := secrets.JSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out), s) {
			t.Fatalf("round %d: %s survived in %s", round, s, out)
		}
	}
}

// randomJSON builds a value of depth at most d, planting secret at random
// places: as a string, inside a sentence, or as a member name.
func randomJSON(r *rand.Rand, d int, secret string) any {
	words := []string{"fix", "the", "branch", "workqueue/a", "stage", "push", "42", "ok"}
	text := func() string {
		w := []string{words[r.IntN(len(words))], words[r.IntN(len(words))]}
		if r.IntN(4) == 0 {
			w = append(w, secret)
		}
		r.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
		return strings.Join(w, " ")
	}
	switch k := r.IntN(5); {
	case d == 0 || k == 0:
		return text()
	case k == 1:
		return r.IntN(1000)
	case k == 2:
		list := make([]any, r.IntN(4))
		for i := range list {
			list[i] = randomJSON(r, d-1, secret)
		}
		return list
	default:
		obj := map[string]any{}
		for range r.IntN(4) + 1 {
			key := words[r.IntN(len(words))]
			if r.IntN(6) == 0 {
				key = secret
			}
			obj[key] = randomJSON(r, d-1, secret)
		}
		return obj
	}
}

// FuzzText holds Text to its promise on any input: a known secret placed
// in it never survives, and redacting twice changes nothing more.
func FuzzText(f *testing.F) {
	for _, c := range contexts {
		f.Add(c.text, uint8(0))
	}
	f.Add("", uint8(3))
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		secret := samples[int(which)%len(samples)].secret
		in := s + " " + secret + " " + s
		out := secrets.Text(in)
		if strings.Contains(out, secret) {
			t.Fatalf("%q survived in %q", secret, out)
		}
		if again := secrets.Text(out); again != out {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
	})
}

// FuzzScan holds push protection to its promise on any file: it never
// panics, every finding is inside the file, and a planted token is found
// wherever it lands.
func FuzzScan(f *testing.F) {
	for _, c := range contexts {
		f.Add([]byte(c.text), uint8(0))
	}
	f.Fuzz(func(t *testing.T, content []byte, which uint8) {
		lines := bytes.Count(content, []byte("\n")) + 1
		for _, fd := range secrets.Scan(content) {
			if fd.Line < 1 || fd.Line > lines || fd.Column < 1 || fd.Rule == "" {
				t.Fatalf("finding %+v outside a file of %d lines", fd, lines)
			}
		}
		if !utf8.Valid(content) || bytes.IndexByte(content, 0) >= 0 {
			return
		}
		secret := samples[int(which)%len(samples)].secret
		planted := append(append(append([]byte{}, content...), []byte("\ntoken = "+secret+"\n")...), content...)
		if len(secrets.Scan(planted)) == 0 {
			t.Fatalf("%q planted and not found", secret)
		}
	})
}

// FuzzJSON holds JSON redaction to its promise: valid JSON in, valid JSON
// out, with no planted secret left.
func FuzzJSON(f *testing.F) {
	f.Add(`{"a": ["b", {"c": 1}]}`, uint8(1))
	f.Add(`"x"`, uint8(2))
	f.Fuzz(func(t *testing.T, doc string, which uint8) {
		if !json.Valid([]byte(doc)) {
			return
		}
		secret := samples[int(which)%len(samples)].secret
		wrapped := `{"doc": ` + doc + `, "note": "saw ` + secret + `"}`
		out, err := secrets.JSON(json.RawMessage(wrapped))
		if err != nil {
			t.Fatalf("valid JSON refused: %v", err)
		}
		if !json.Valid(out) || strings.Contains(string(out), secret) {
			t.Fatalf("%s -> %s", wrapped, out)
		}
	})
}

// Push protection refuses what looks like a key, not what merely sits
// where one could: templates, ids, words and identities such as
// token:alice pass Scan; they are still masked when stored (Text).
func TestScanLeavesPlaceholdersAndNamesAlone(t *testing.T) {
	for _, s := range []string{
		"written-by: token:swarm-author-1",
		"      token: ${{ secrets.GITHUB_TOKEN }}",
		"session: 01a23571-d763-7c0d-b88d-62ea7efe0ef5",
		"password: changeme",
		"api_key = <your key here>",
		"Written by session 01a23571-d763-7c0d-b88d-62ea7efe0ef5",
	} {
		if got := secrets.Scan([]byte(s)); len(got) != 0 {
			t.Errorf("%q: findings %+v", s, got)
		}
	}
	if out := secrets.Text("password: changeme"); strings.Contains(out, "changeme") {
		t.Errorf("a weak password is still a password to redact: %q", out)
	}
	for _, s := range []string{"password: Xk29vbQe7LmN", "DB_PASSWORD='p4ss-W0rd-9q8z'", "\"client_secret\": \"8f3Kq0zLm2Vx9aB1\""} {
		if got := secrets.Scan([]byte(s)); len(got) != 1 || got[0].Rule != "secret-assignment" {
			t.Errorf("%q: findings %+v, want one secret-assignment", s, got)
		}
	}
}
