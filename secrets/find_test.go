package secrets_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/workqueue-dev/workqueue/secrets"
)

// keys are private keys made for the test, as PEM: RSA (PKCS#1), EC (SEC
// 1) and Ed25519 (PKCS#8); and a certificate and a public key, which are
// not secrets.
var keys = sync.OnceValue(func() (k struct{ rsa, ec, ed, cert, pub string }) {
	r, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		panic(err)
	}
	e, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, d, _ := ed25519.GenerateKey(rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(e)
	edDER, _ := x509.MarshalPKCS8PrivateKey(d)
	pubDER, _ := x509.MarshalPKIXPublicKey(&r.PublicKey)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<31, 0)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &e.PublicKey, e)
	if err != nil {
		panic(err)
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	k.rsa = enc("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(r))
	k.ec, k.ed = enc("EC PRIVATE KEY", ecDER), enc("PRIVATE KEY", edDER)
	k.cert, k.pub = enc("CERTIFICATE", certDER), enc("PUBLIC KEY", pubDER)
	return k
})

// pemParts splits a PEM block into its BEGIN line, body and END line.
func pemParts(block string) (begin, body, end string) {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	return lines[0] + "\n", strings.Join(lines[1:len(lines)-1], "\n"), "\n" + lines[len(lines)-1] + "\n"
}

// kind is a secret as it sits in a text: the part an encoding of the
// secret itself changes (token), and what is around it.
type kind struct {
	name, before, token, after string
}

func kinds() []kind {
	begin, body, end := pemParts(keys().rsa)
	return []kind{
		{"rsa private key", begin, body, end},
		{"aws access key id", "aws_access_key_id = ", "AKIA" + "Q3Z7XK2P9LMN4R8T", "\n"},
		{"aws secret access key", "aws_secret_access_key = ", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Q3Z7XK2P9L", "\n"},
		{"github token", "GITHUB_TOKEN=", "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3AbCdEfGh1234", "\n"},
		{"gitlab token", "private_token: ", "glpat-" + "Xk2LmN8pQrStUvWxYz01", "\n"},
		{"high-entropy assignment", `db_password = "`, "p4ss-W0rd-9q8z" + "Xk29vbQe", "\"\n"},
	}
}

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64raw(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }
func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
func hexOf(s string) string  { return hex.EncodeToString([]byte(s)) }

func percent(s string) string {
	var b strings.Builder
	for i := range len(s) {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

func eachRune(s string, f func(rune) string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(f(r))
	}
	return b.String()
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// every n bytes of s, sep.
func every(s string, n int, sep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s[i:min(i+n, len(s))])
	}
	return b.String()
}

func utf16le(s string) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// encodings are the ways a secret is sent past a scanner: a whole text
// encoded (word: true, the encoding of the whole sample sits as a word
// in a config line), or its secret itself changed in place.
var encodings = []struct {
	name  string
	whole bool
	enc   func(string) string
}{
	{"as written", false, func(s string) string { return s }},
	{"base64", true, b64},
	{"base64 without padding", true, b64raw},
	{"base64url", true, b64url},
	{"base64 wrapped at 76", true, func(s string) string { return every(b64(s), 76, "\n") }},
	{"base64 twice", true, func(s string) string { return b64(b64(s)) }},
	{"base64 three times", true, func(s string) string { return b64(b64(b64(s))) }},
	{"base64url three times", true, func(s string) string { return b64url(b64url(b64url(s))) }},
	{"base64 of UTF-16", true, func(s string) string { return b64(utf16le(s)) }},
	{"hex", true, hexOf},
	{"hex in upper case", true, func(s string) string { return strings.ToUpper(hexOf(s)) }},
	{"hex with 0x", true, func(s string) string { return "0x" + hexOf(s) }},
	{"hex byte array", true, func(s string) string {
		return "[]byte{" + eachRune(s, func(r rune) string { return fmt.Sprintf("0x%02x, ", r) }) + "}"
	}},
	{"hex pairs with spaces", true, func(s string) string { return every(hexOf(s), 2, " ") }},
	{"hex pairs with colons", true, func(s string) string { return every(hexOf(s), 2, ":") }},
	{"character codes", true, func(s string) string {
		return "String.fromCharCode(" + strings.TrimSuffix(eachRune(s, func(r rune) string { return fmt.Sprintf("%d, ", r) }), ", ") + ")"
	}},
	{"octal escapes", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf(`\%03o`, r) }) }},
	{"javascript escape()", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf("%%u%04X", r) }) }},
	{"unicode hyphens", false, func(s string) string { return strings.ReplaceAll(s, "-", "\u2010") }},
	{"bytes that are not UTF-8", false, func(s string) string { return every(s, 3, "\xff\xfe") }},
	{"UTF-16 with a byte order mark", true, func(s string) string { return "\xff\xfe" + utf16le(s) }},
	{"hex escapes", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf(`\x%02x`, r) }) }},
	{"percent-encoding", true, percent},
	{"percent-encoding twice", true, func(s string) string { return strings.ReplaceAll(percent(s), "%", "%25") }},
	{"html decimal entities", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf("&#%d;", r) }) }},
	{"html hex entities", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf("&#x%x;", r) }) }},
	{"html named entities", false, func(s string) string { return every(s, 3, "&ZeroWidthSpace;") }},
	{"html entities escaped again", false, func(s string) string { return every(s, 3, "&amp;shy;") }},
	{"json unicode escapes", false, func(s string) string { return eachRune(s, func(r rune) string { return fmt.Sprintf(`\u%04x`, r) }) }},
	{"json string", true, jsonString},
	{"zero-width space", false, func(s string) string { return every(s, 3, "\u200b") }},
	{"zero-width non-joiner", false, func(s string) string { return every(s, 3, "\u200c") }},
	{"zero-width joiner", false, func(s string) string { return every(s, 2, "\u200d") }},
	{"word joiner", false, func(s string) string { return every(s, 3, "\u2060") }},
	{"soft hyphen", false, func(s string) string { return every(s, 3, "\u00ad") }},
	{"byte order mark", false, func(s string) string { return every(s, 3, "\ufeff") }},
	{"bidi controls", false, func(s string) string { return every(s, 3, "\u202e\u2066\u200f") }},
	{"variation selector", false, func(s string) string { return every(s, 3, "\ufe0f") }},
	{"fullwidth letters", false, func(s string) string {
		return eachRune(s, func(r rune) string {
			if r > ' ' && r < 0x7f {
				return string(r + 0xfee0)
			}
			return string(r)
		})
	}},
	{"mathematical letters", false, func(s string) string {
		return eachRune(s, func(r rune) string {
			switch {
			case r >= 'A' && r <= 'Z':
				return string(0x1d400 + r - 'A')
			case r >= 'a' && r <= 'z':
				return string(0x1d41a + r - 'a')
			case r >= '0' && r <= '9':
				return string(0x1d7ce + r - '0')
			}
			return string(r)
		})
	}},
	{"groups of four", false, func(s string) string { return every(s, 4, " ") }},
	{"base64 in groups of four", true, func(s string) string { return every(b64(s), 4, " ") }},
	{"split over lines", false, func(s string) string { return every(s, 8, "\n") }},
	{"split over escaped line ends", false, func(s string) string { return every(s, 5, `\n`) }},
	{"split over CRLF lines", false, func(s string) string { return every(s, 8, "\r\n") }},
	{"split over indented lines", false, func(s string) string { return every(s, 6, "\n    ") }},
	{"string concatenation across lines", false, func(s string) string { return every(s, 7, "\" +\n  \"") }},
	{"string concatenation on one line", false, func(s string) string { return every(s, 7, "\" + \"") }},
	{"adjacent string literals", false, func(s string) string { return every(s, 5, "\"\n  \"") }},
	{"line continuations", false, func(s string) string { return every(s, 9, "\\\n") }},
	{"base64 of hex", true, func(s string) string { return b64(hexOf(s)) }},
	{"hex of base64", true, func(s string) string { return hexOf(b64(s)) }},
	{"percent of base64 twice", true, func(s string) string { return percent(b64(b64(s))) }},
	{"base64 of percent", true, func(s string) string { return b64(percent(s)) }},
	{"html entities of base64", false, func(s string) string {
		return eachRune(b64(s), func(r rune) string { return fmt.Sprintf("&#%d;", r) })
	}},
	{"json escapes of percent", false, func(s string) string {
		return eachRune(percent(s), func(r rune) string { return fmt.Sprintf(`\u%04x`, r) })
	}},
	{"base64 of a json string with zero-width joiners", true, func(s string) string { return b64(jsonString(every(s, 4, "\u200d"))) }},
}

// Every kind of secret is found under every encoding, in a file and in
// a short field alike, and a finding never holds the secret.
func TestFindSeesEverySecretUnderEveryEncoding(t *testing.T) {
	for _, k := range kinds() {
		for _, e := range encodings {
			var text string
			if e.whole {
				text = "config: " + e.enc(k.before+k.token+k.after) + "\nnext: line\n"
			} else {
				text = k.before + e.enc(k.token) + k.after
			}
			t.Run(k.name+"/"+e.name, func(t *testing.T) {
				got := secrets.Find(text)
				if len(got) == 0 {
					t.Fatalf("nothing found in %q", text)
				}
				for _, f := range got {
					if f.Line < 1 || f.Column < 1 || f.Rule == "" || strings.Contains(f.Rule, k.token) {
						t.Errorf("finding %+v", f)
					}
				}
				if got := secrets.Scan([]byte("package x\n\n" + text)); len(got) == 0 {
					t.Errorf("Scan of a file holding it finds nothing")
				}
			})
		}
	}
}

// A token with a vendor's prefix is found in a list of strings joined
// back (["AKIA", "Q3Z7…"].join("")). A list's joins are weak: they let
// a prefix rule find a token, never make an assigned value longer, since
// most lists of strings are only lists.
func TestFindSeesAPrefixedTokenInAListOfStrings(t *testing.T) {
	for _, k := range kinds() {
		switch k.name {
		case "aws access key id", "github token", "gitlab token":
		default:
			continue
		}
		text := "parts = [\"" + every(k.token, 6, "\", \"") + "\"]\n"
		if got := secrets.Find(text); len(got) == 0 {
			t.Errorf("%s: nothing found in %q", k.name, text)
		}
	}
	if got := secrets.Find(`password = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]` + "\n"); len(got) != 0 {
		t.Errorf("a list of strings read as one password: %+v", got)
	}
}

// A private key without its BEGIN line is still a private key: its body
// alone (a PEM body starts with the DER of a private key), its END line
// alone, its body on one line or as a JSON string.
func TestFindSeesAPrivateKeyWithoutItsBeginLine(t *testing.T) {
	k := keys()
	for name, block := range map[string]string{"rsa": k.rsa, "ec": k.ec, "ed25519": k.ed} {
		_, body, end := pemParts(block)
		for shape, text := range map[string]string{
			"body and end":               body + end,
			"body":                       body + "\n",
			"end line":                   strings.TrimSpace(end) + "\n",
			"body on one line":           strings.ReplaceAll(body, "\n", "") + "\n",
			"body as json":               `{"key": ` + jsonString(body) + "}\n",
			"body in short rows as json": `{"key": ` + jsonString(every(strings.ReplaceAll(body, "\n", ""), 12, "\n")) + "}\n",
			"body in short rows":         every(strings.ReplaceAll(body, "\n", ""), 16, "\n") + "\n",
			"body as hex":                hexOf(string(mustB64(t, strings.ReplaceAll(body, "\n", "")))) + "\n",
			"body indented":              "key: |\n  " + strings.ReplaceAll(body, "\n", "\n  ") + "\n",
		} {
			if got := secrets.Find(text); len(got) == 0 {
				t.Errorf("%s, %s: nothing found in %q", name, shape, text)
			}
		}
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Ordinary text and code are not secrets, under these decoders either:
// escapes, entities, percent-encoding, base64 and hex of ordinary text,
// wrapped lines and string concatenations, public keys and certificates.
func TestFindLeavesOrdinaryTextAlone(t *testing.T) {
	k := keys()
	_, certBody, _ := pemParts(k.cert)
	_, pubBody, _ := pemParts(k.pub)
	for name, text := range map[string]string{
		"go code": "func handle(w http.ResponseWriter, r *http.Request) {\n\tif err := serve(r.Context(), w); err != nil {\n\t\tlog.Printf(\"serve %s: %v\\n\", r.URL.Path, err)\n\t}\n}\n" +
			"var msg = \"the quick brown fox jumps over \" +\n\t\"the lazy dog and keeps running\"\n",
		"python":            "def main():\n    parser = argparse.ArgumentParser(description=\"Process the \"\n                                     \"configuration files\")\n    print('%s: %d' % (name, count))\n",
		"json escapes":      `{"message": "line one\nline two \u00e9t\u00e9", "path": "C:\\Users\\agent\\go", "emoji": "\ud83d\ude00"}` + "\n",
		"html":              "<p>Fish &amp; chips &lt;3 &#8212; caf&eacute; &#x201C;quoted&#x201D;&nbsp;here</p>\n",
		"urls":              "see https://example.com/search?q=hello%20world&lang=en%2Dgb and /a%2Fb%3Fc\n",
		"base64 of prose":   "data: " + b64("This is an ordinary sentence that says nothing secret at all.") + "\n",
		"hex of prose":      "data: " + hexOf("This is an ordinary sentence that says nothing secret.") + "\n",
		"base64 image":      "src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\"\n",
		"commit ids":        "merged 5f0c2a1b3d4e5f60718293a4b5c6d7e8f9012345 and 0123456789abcdef0123456789abcdef01234567\n",
		"sums":              "github.com/google/go-cmp v0.7.0 h1:wk8382ETsv4JYUZwIsn6YpYiWiBsYLSJiTsyBybVuN8=\n\"integrity\": \"sha512-Q3Z7XK2P9LMN4R8TdGhpcyBpcyBub3QgYSBzZWNyZXQ=\"\n",
		"uuids":             "session 01a23571-d763-7c0d-b88d-62ea7efe0ef5 and 550e8400-e29b-41d4-a716-446655440000\n",
		"wrapped prose":     "The configuration\nmanagement system reads\nenvironmentvariables at\nstartup and writes them\n",
		"certificate":       k.cert,
		"certificate body":  certBody + "\n",
		"public key":        k.pub,
		"public key body":   pubBody + "\n",
		"ssh public key":    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGRlbW8ta2V5LW5vdC1hLXNlY3JldC1hdC1hbGwhISE= agent@host\n",
		"zero-width prose":  "caf\u00e9 na\u200dive \u2066isolated\u2069 text\ufeff with soft\u00adhyphen\n",
		"symbols":           "Step \u2460 then \u2461: x\u00b2 + y\u00b2 \u2264 r\u00b2, \u2116 5, \u2122 and \U0001d400\U0001d401\U0001d402 in a formula\n",
		"four-letter words": "password = none\nthis will have been done when that team made good use of time\nuuid 1a2b 3c4d 5e6f 7a8b is a test\n",
		"markdown":          "## Usage\n\nRun `make test`; set `TOKEN_FILE=/run/secrets/token` (see docs/config.md).\n",
	} {
		if got := secrets.Find(text); len(got) != 0 {
			t.Errorf("%s: findings %+v in %q", name, got, text)
		}
	}
}

// Binary content (random bytes, as an image or an archive holds) is
// scanned, bytes that are not UTF-8 and all, and holds no secret.
func TestScanFindsNothingInRandomBytes(t *testing.T) {
	r := mrand.New(mrand.NewPCG(7, 11))
	for range 8 {
		b := make([]byte, 64<<10)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if got := secrets.Scan(b); len(got) != 0 {
			t.Errorf("findings %+v in random bytes", got)
		}
	}
}

// A finding in a decoded word is placed at the word; one after escapes
// at the escape, on its line.
func TestFindPlacesADecodedSecretWhereItsEncodingIs(t *testing.T) {
	id := "AKIA" + "Q3Z7XK2P9LMN4R8T"
	for _, c := range []struct {
		text      string
		line, col int
	}{
		{"a\nb: " + b64(b64(b64("key "+id))) + "\n", 2, 4},
		{"one\ntwo\n  x = \"" + eachRune(id, func(r rune) string { return fmt.Sprintf("&#%d;", r) }) + "\"\n", 3, 8},
		{"one\n  k: " + every(id, 2, "\u200d") + "\n", 2, 6},
	} {
		got := secrets.Find(c.text)
		if len(got) != 1 || got[0].Line != c.line || got[0].Column != c.col {
			t.Errorf("%q: findings %+v, want one at line %d, column %d", c.text, got, c.line, c.col)
		}
	}
}

// FuzzFind holds Find to its promises on any text: it never panics,
// every finding is inside the text, and a secret of any kind under any
// encoding, planted on lines of its own, is found wherever it lands.
func FuzzFind(f *testing.F) {
	f.Add("", uint8(0), uint8(0))
	f.Add("x = \"a\" +\n", uint8(1), uint8(33))
	f.Add("%4\\u00&#x", uint8(2), uint8(5))
	f.Add("\x00\xff\u200d", uint8(3), uint8(20))
	f.Fuzz(func(t *testing.T, s string, which, how uint8) {
		lines := strings.Count(s, "\n") + 1
		for _, fd := range secrets.Find(s) {
			if fd.Line < 1 || fd.Line > lines || fd.Column < 1 || fd.Rule == "" {
				t.Fatalf("finding %+v outside a text of %d lines", fd, lines)
			}
		}
		k := kinds()[int(which)%len(kinds())]
		e := encodings[int(how)%len(encodings)]
		planted := k.before + e.enc(k.token) + k.after
		if e.whole {
			planted = "config: " + e.enc(k.before+k.token+k.after) + "\n"
		}
		text := s + "\n\n" + planted + "\n\n" + s
		if len(secrets.Find(text)) == 0 {
			t.Fatalf("%s under %s planted in %q and not found", k.name, e.name, text)
		}
	})
}
