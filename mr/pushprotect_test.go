package mr

import (
	"encoding/base64"
	"strings"
	"testing"
)

// awsKeyID is AWS's documented example key id: found by the rules, yet
// no one's key.
const awsKeyID = "AKIA" + "IOSFODNN7EXAMPLE"

// A NUL byte anywhere makes content binary, however far past git's
// 8000-byte window it sits: what is judged text is what is read as text.
func TestInspectJudgesContentBinaryByANulAnywhere(t *testing.T) {
	for _, at := range []int{0, 7999, 8000, 8001, 100 << 10} {
		content := strings.Repeat("a", at) + "\x00" + strings.Repeat("b", 10)
		r := Inspect([]FileAction{{Action: ActionCreate, FilePath: "f.txt", Content: text(content)}}, Policy{})
		wantRefusal(t, r, 0, "f.txt", RuleBinary)
	}
}

// Push protection reads every content, text or binary: a secret after a
// NUL byte, wherever it lies, is found, whether the project refuses
// binary content or allows it.
func TestASecretInContentWithANulIsFoundWhateverItsSize(t *testing.T) {
	for _, at := range []int{0, 100, 8000, 9000, 200 << 10} {
		content := strings.Repeat("x = 1\n", at/6) + "\x00\n" + "aws_access_key_id = " + awsKeyID + "\n"
		for _, enc := range []string{"", EncodingBase64} {
			c := content
			if enc == EncodingBase64 {
				c = base64.StdEncoding.EncodeToString([]byte(content))
			}
			actions := []FileAction{{Action: ActionCreate, FilePath: "blob.bin", Content: &c, Encoding: enc}}
			for _, allow := range []bool{false, true} {
				rs := scanSecrets(actions, Policy{AllowBinary: allow})
				if len(rs) == 0 || rs[0].Rule != RuleSecret || rs[0].Path != "blob.bin" {
					t.Errorf("NUL at %d, encoding %q, binary allowed %v: refusals %v, want %s", at, enc, allow, rs, RuleSecret)
				}
			}
		}
	}
}

// A secret in UTF-16 (every other byte a NUL) is still a secret.
func TestASecretInUTF16ContentIsFound(t *testing.T) {
	var b []byte
	for _, c := range []byte("aws_access_key_id = " + awsKeyID + "\n") {
		b = append(b, c, 0)
	}
	c := base64.StdEncoding.EncodeToString(b)
	if rs := scanSecrets([]FileAction{{Action: ActionCreate, FilePath: "k.txt", Content: &c, Encoding: EncodingBase64}}, Policy{AllowBinary: true}); len(rs) == 0 {
		t.Error("a key in UTF-16 content passed push protection")
	}
}

// A move carries no content: GitLab would write it, Gitea would not
// apply it as given, so what the forge holds would differ from what was
// inspected. The same goes for an encoding without content.
func TestInspectRefusesContentOnAMove(t *testing.T) {
	for name, a := range map[string]FileAction{
		"content":          {Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Content: text("hello\n")},
		"empty content":    {Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Content: text("")},
		"base64 content":   {Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Content: text("aGVsbG8K"), Encoding: EncodingBase64},
		"an encoding only": {Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Encoding: EncodingText},
		"replace_type":     {Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt", Content: text("x"), ReplaceType: true},
	} {
		t.Run(name, func(t *testing.T) {
			wantRefusal(t, Inspect([]FileAction{a}, Policy{}), 0, "new.txt", RuleUnexpectedField)
		})
	}
	if r := Inspect([]FileAction{{Action: ActionMove, FilePath: "new.txt", PreviousPath: "old.txt"}}, Policy{}); r != nil {
		t.Errorf("a move without content refused: %v", r)
	}
}

// Every action kind that carries content, with any encoding, is
// scanned: push protection does not depend on inspection having refused
// the content first.
func TestEveryActionsContentIsScanned(t *testing.T) {
	secret := "aws_access_key_id = " + awsKeyID + "\n"
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	for _, a := range []FileAction{
		{Action: ActionCreate, FilePath: "a", Content: &secret},
		{Action: ActionUpdate, FilePath: "a", Content: &b64, Encoding: EncodingBase64},
		{Action: ActionMove, FilePath: "a", PreviousPath: "b", Content: &secret},
		{Action: ActionMove, FilePath: "a", PreviousPath: "b", Content: &b64, Encoding: EncodingBase64},
		{Action: ActionDelete, FilePath: "a", Content: &secret},
		{Action: ActionChmod, FilePath: "a", Content: &secret},
		{Action: ActionCreate, FilePath: "a", Content: &secret, Encoding: "utf-16"},
		{Action: ActionCreate, FilePath: "a", Content: text("!!" + b64), Encoding: EncodingBase64}, // not base64: scanned as it is
	} {
		if rs := scanSecrets([]FileAction{a}, Policy{}); len(rs) == 0 || rs[0].Path != "a" {
			t.Errorf("%s (encoding %q): refusals %v, want a secret found", a.Action, a.Encoding, rs)
		}
	}
}
