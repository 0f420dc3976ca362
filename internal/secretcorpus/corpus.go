// Package secretcorpus generates the secrets agents paste, in the shapes
// and contexts they come in (tool output, shell history, configuration
// files, HTTP traces), for the tests that hold the service to never
// storing one: vendor tokens with their documented prefixes, tokens
// without one, private keys, credentials in URLs and headers,
// configuration lines and command lines, and the evasions (upper case,
// glued to a word, URL-encoded, base64-wrapped). Every value is random
// from a seeded source: the same seed gives the same corpus.
package secretcorpus

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
)

// Sample is one secret in its context: Text holds it, and Secret is what
// must not be found in anything stored (for an encoded evasion, the
// encoded form; the raw token never appears in Text).
type Sample struct {
	Class  string // vendor, no-prefix, private-key, url, header, config, command, evasion
	Shape  string
	Text   string
	Secret string
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	lower = "abcdefghijklmnopqrstuvwxyz0123456789"
	hex   = "0123456789abcdef"
	b64   = alnum + "+/"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

type gen struct{ r *rand.Rand }

func (g gen) s(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

// mixed is n characters of alphabet holding at least one upper, one lower
// and one digit (as random keys do), so that no shape is a word.
func (g gen) mixed(alphabet string, n int) string {
	for {
		v := g.s(alphabet, n)
		if strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(v, "0123456789") {
			return v
		}
	}
}

func (g gen) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// tokens are the vendor shapes by name: a generator each.
func (g gen) tokens() map[string]func() string {
	return map[string]func() string{
		"slack bot token": func() string {
			return "xoxb-" + g.s("0123456789", 12) + "-" + g.s("0123456789", 13) + "-" + g.mixed(alnum, 24)
		},
		"slack user token": func() string {
			return "xoxp-" + g.s("0123456789", 12) + "-" + g.s("0123456789", 12) + "-" + g.s("0123456789", 13) + "-" + g.s(hex, 32)
		},
		"slack app token":       func() string { return "xapp-1-A" + g.s(upper, 10) + "-" + g.s("0123456789", 13) + "-" + g.s(hex, 64) },
		"stripe secret key":     func() string { return g.pick("sk_live_", "rk_live_", "sk_test_") + g.mixed(alnum, 24) },
		"stripe webhook secret": func() string { return "whsec_" + g.mixed(alnum, 32) },
		"google api key":        func() string { return "AIza" + g.mixed(alnum+"_-", 35) },
		"openai project key":    func() string { return "sk-proj-" + g.mixed(alnum+"_-", 48) + "T3BlbkFJ" + g.mixed(alnum+"_-", 48) },
		"openai key":            func() string { return "sk-" + g.mixed(alnum, 20) + "T3BlbkFJ" + g.mixed(alnum, 20) },
		"anthropic key":         func() string { return "sk-ant-api03-" + g.mixed(alnum+"_-", 93) + "AA" },
		"hugging face token":    func() string { return "hf_" + g.mixed(alnum, 34) },
		"digitalocean token":    func() string { return g.pick("dop_v1_", "doo_v1_") + g.s(hex, 64) },
		"sendgrid key":          func() string { return "SG." + g.mixed(alnum+"_-", 22) + "." + g.mixed(alnum+"_-", 43) },
		"vault token":           func() string { return "hvs." + g.mixed(alnum+"_-", 90) },
		"npm token":             func() string { return "npm_" + g.mixed(alnum, 36) },
		"pypi token":            func() string { return "pypi-AgEIcHlwaS5vcmc" + g.mixed(alnum+"_-", 60) },
		"gitlab personal token": func() string { return "glpat-" + g.mixed(alnum+"_-", 20) },
		"gitlab runner token":   func() string { return "glrt-" + g.mixed(alnum+"_-", 20) },
		"gitlab registration":   func() string { return "GR1348941" + g.mixed(alnum+"_-", 20) },
		"github classic token":  func() string { return g.pick("ghp_", "gho_", "ghs_", "ghu_") + g.mixed(alnum, 36) },
		"github fine-grained":   func() string { return "github_pat_11" + g.s(upper, 20) + "_" + g.mixed(alnum, 59) },
		"sentry auth token":     func() string { return "sntrys_" + g.mixed(alnum, 60) },
		"aws access key id":     func() string { return "AKIA" + g.s(upper, 16) },
		"jwt":                   func() string { return "eyJhbGciOiJIUzI1NiJ9.eyJ" + g.mixed(alnum, 30) + "." + g.mixed(alnum+"_-", 43) },
		"slack webhook": func() string {
			return "https://hooks.slack.com/services/T" + g.s(upper, 8) + "/B" + g.s(upper, 8) + "/" + g.mixed(alnum, 24)
		},
		"azure storage key":     func() string { return g.mixed(b64, 86) + "==" },
		"azure sas signature":   func() string { return url.QueryEscape(g.mixed(b64, 43) + "=") },
		"gitea token":           func() string { return g.s(hex, 40) },
		"aws secret access key": func() string { return g.mixed(b64, 40) },
	}
}

// Corpus returns n samples of every shape in every class (at least 150
// in all for n >= 3), from seed.
func Corpus(seed uint64, n int) []Sample {
	g := gen{rand.New(rand.NewPCG(seed, seed^0x5ec))}
	var out []Sample
	add := func(class, shape, text, secret string) { out = append(out, Sample{class, shape, text, secret}) }
	tok := g.tokens()
	for range n {
		for _, shape := range []string{"slack bot token", "slack user token", "slack app token", "stripe secret key", "stripe webhook secret",
			"google api key", "openai project key", "openai key", "anthropic key", "hugging face token", "digitalocean token", "sendgrid key",
			"vault token", "npm token", "pypi token", "gitlab personal token", "gitlab runner token", "gitlab registration",
			"github classic token", "github fine-grained", "sentry auth token", "aws access key id", "jwt", "slack webhook"} {
			v := tok[shape]()
			add("vendor", shape, fmt.Sprintf(g.pick("export %s=%s\n", "%s: %s", "set %s to %s and retry", "{\"%s\": \"%s\"}"), g.pick("KEY", "value", "x", "config"), v), v)
			add("vendor", shape+" in prose", g.pick("the failing call used ", "pasted: ", "$ echo ")+v+g.pick("", " (from the run log)", "\n"), v)
		}
		k := tok["azure storage key"]()
		add("vendor", "azure storage connection string", "DefaultEndpointsProtocol=https;AccountName="+g.s(lower, 10)+";AccountKey="+k+";EndpointSuffix=core.windows.net", k)
		sig := tok["azure sas signature"]()
		add("vendor", "azure sas url", "https://"+g.s(lower, 8)+".blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2030-01-01&sp=r&sig="+sig, sig)

		// Tokens without a prefix.
		gt := tok["gitea token"]()
		label := g.pick("GITEA_TOKEN=%s", "token: %s", "Authorization: token %s", "X-Gitea-Token: %s", "access-token %s", "forge_token = \"%s\"", "my gitea key is %s")
		add("no-prefix", "gitea token", fmt.Sprintf(label, gt), gt)
		ak := tok["aws secret access key"]()
		add("no-prefix", "bare aws secret key", g.pick("AKIA"+g.s(upper, 16)+" ", "the secret is ", "")+ak, ak)

		// Private keys.
		body := g.mixed(b64, 64) + "\n" + g.mixed(b64, 64) + "\n" + g.mixed(b64, 20) + "=="
		kind := g.pick("RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "")
		add("private-key", "pem", "key:\n-----BEGIN "+kind+"PRIVATE KEY-----\n"+body+"\n-----END "+kind+"PRIVATE KEY-----\n", body[:40])
		add("private-key", "pgp", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"+body+"\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----", body[:40])
		add("private-key", "putty", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: agent\nPublic-Lines: 2\n"+g.mixed(b64, 64)+
			"\nPrivate-Lines: 1\n"+body[:64]+"\nPrivate-MAC: "+g.s(hex, 64)+"\n", body[:40])

		// Credentials in URLs.
		pw := g.mixed(alnum, 12)
		add("url", "redis empty user", "REDIS_URL=redis://:"+pw+"@cache.internal:6379/0", pw)
		pwSlash := g.mixed(alnum, 6) + "/" + g.mixed(alnum, 6)
		add("url", "password with slash", "cloning https://agent:"+pwSlash+"@git.example.com/o/r.git", pwSlash)
		pwAt := g.mixed(alnum, 6) + "@" + g.mixed(alnum, 6)
		add("url", "password with at", "postgres://app:"+pwAt+"@db.internal:5432/app?sslmode=require", pwAt)
		user := g.mixed(alnum, 30)
		add("url", "token as user", "remote: https://"+user+"@github.com/o/r", user)

		// Header lines.
		c := g.mixed(alnum, 32)
		add("header", "cookie", "> GET /api HTTP/1.1\n> Cookie: session="+c+"; theme=dark\n", c)
		add("header", "set-cookie", "< HTTP/1.1 200 OK\n< Set-Cookie: sid="+c+"; Path=/; HttpOnly\n", c)
		add("header", "authorization", "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("u:"+pw)), base64.StdEncoding.EncodeToString([]byte("u:"+pw)))

		// Configuration lines.
		v := g.mixed(alnum, 20)
		for _, line := range []string{"SECRET_KEY=%s", "secret_key_base: %s", "passphrase: %s", "ENCRYPTION_KEY=%s", "    client-key-data: %s",
			"\"auth\": \"%s\"", "machine api.example.com login bot password %s", "DATABASE_PASSWORD='%s'", "signing_key = %s"} {
			add("config", strings.Fields(line)[0], fmt.Sprintf(line, v), v)
			v = g.mixed(alnum, 20)
		}

		// Command lines.
		add("command", "--password", "$ psql --password "+v+" -h db", v)
		add("command", "--password=", "$ tool login --password="+v, v)
		add("command", "mysql -p", "$ mysql -u root -p"+v+" app", v)
		add("command", "curl -u", "$ curl -u admin:"+v+" https://example.com/api", v)

		// Evasions.
		gh := tok["github classic token"]()
		add("evasion", "upper-cased prefix", "TOKEN "+strings.ToUpper(gh), strings.ToUpper(gh))
		add("evasion", "glued to a word", "MY_TOKEN_"+gh, gh)
		sl := tok["slack bot token"]()
		enc := url.QueryEscape("token=" + sl + "&x=1")
		add("evasion", "url-encoded", "GET /callback?data="+enc, sl)
		wrapped := base64.StdEncoding.EncodeToString([]byte("password: " + v))
		add("evasion", "base64-wrapped", "debug: "+wrapped, wrapped)
		wrappedToken := base64.StdEncoding.EncodeToString([]byte(sl))
		add("evasion", "base64-wrapped token", "blob "+wrappedToken, wrappedToken)
	}
	return out
}
