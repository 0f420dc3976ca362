package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
	"github.com/workqueue-dev/workqueue/mr"
)

// submitRequest is a merge request submission: a body with nested
// objects and arrays, optional members and pointers.
type submitRequest struct {
	ItemType string `json:"item_type"`
	mr.Submission
}

func decodeSubmission(body []byte) (submitRequest, error) {
	var req submitRequest
	err := strictjson.Decode(body, &req, "file_actions")
	return req, err
}

// validBody is a submission the decoder accepts; the cases edit it.
const validBody = `{"item_type":"mr","forge":"gitea","project":"o/r","source_branch":"workqueue/a","target_branch":"main",` +
	`"title":"T","labels":["x"],"file_actions":[{"action":"create","file_path":"a.txt","content":"A"},` +
	`{"action":"create","file_path":"b.txt","content":"B"}]}`

func TestDecodeSubmissionRefusesTextItCannotKeep(t *testing.T) {
	for _, tc := range []struct {
		name, body   string
		field        string
		index        int
		wantInDetail string
	}{
		{"invalid UTF-8 in a path", strings.Replace(validBody, `"b.txt"`, "\"b\xff.txt\"", 1), "file_actions[1].file_path", 1, "not valid UTF-8"},
		{"invalid UTF-8 in content", strings.Replace(validBody, `"A"`, "\"\xc3\x28\"", 1), "file_actions[0].content", 0, "not valid UTF-8"},
		{"an encoded surrogate (CESU-8)", strings.Replace(validBody, `"T"`, "\"\xed\xa0\x80\"", 1), "title", -1, "not valid UTF-8"},
		{"an overlong encoding of /", strings.Replace(validBody, `"a.txt"`, "\"a\xc0\xaf\"", 1), "file_actions[0].file_path", 0, "not valid UTF-8"},
		{"a truncated sequence at the end of a string", strings.Replace(validBody, `"main"`, "\"main\xe2\x82\"", 1), "target_branch", -1, "not valid UTF-8"},
		{"a lone high surrogate escape", strings.Replace(validBody, `"a.txt"`, `"a\uD800.txt"`, 1), "file_actions[0].file_path", 0, `\uD800`},
		{"a high surrogate escape at the end of a string", strings.Replace(validBody, `"T"`, `"T\ud83d"`, 1), "title", -1, `\uD83D`},
		{"a high surrogate escape before a non-surrogate escape", strings.Replace(validBody, `"T"`, `"\uD83D\u0041"`, 1), "title", -1, "without a low surrogate"},
		{"two high surrogate escapes", strings.Replace(validBody, `"T"`, `"\uD83D\uD83D"`, 1), "title", -1, "without a low surrogate"},
		{"a lone low surrogate escape", strings.Replace(validBody, `"x"`, `"\uDC00"`, 1), "labels[0]", -1, "lone low surrogate"},
		{"a low surrogate escape before a high one", strings.Replace(validBody, `"T"`, `"\uDE00\uD83D"`, 1), "title", -1, "lone low surrogate"},
		{"invalid UTF-8 in a member name", strings.Replace(validBody, `"title"`, "\"ti\xfftle\"", 1), "(body)", -1, "member name"},
		{"a lone surrogate in a nested member name", strings.Replace(validBody, `"content":"B"`, `"\uDC00":"B"`, 1), "file_actions[1]", 1, "member name"},
		{"invalid UTF-8 outside any string", validBody + "\xff", "", -1, "not valid UTF-8"},
		{"invalid UTF-8 in a string that is also malformed", strings.Replace(validBody, `"A"`, "\"\xff\n\"", 1), "file_actions[0].content", 0, "not valid UTF-8"},
		{"invalid UTF-8 in a string the body cuts off", "{\"item_type\":\"mr\",\"labels\":[\"a\",\"b\xff", "labels[1]", -1, "not valid UTF-8"},
		{"invalid UTF-8 in a member name the body cuts off", "{\"item_type\":\"mr\",\"ti\xff", "(body)", -1, "member name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeSubmission([]byte(tc.body))
			var r *wq.Refusal
			if !errors.As(err, &r) {
				t.Fatalf("err = %v, want an %s refusal", err, strictjson.RuleInvalidUTF8)
			}
			if r.Rule != strictjson.RuleInvalidUTF8 || r.Field != tc.field || r.Index != tc.index || !strings.Contains(r.Message, tc.wantInDetail) {
				t.Errorf("refusal %+v, want rule %s, field %q, index %d, message with %q", r, strictjson.RuleInvalidUTF8, tc.field, tc.index, tc.wantInDetail)
			}
			if !utf8.ValidString(r.Error()) {
				t.Errorf("the refusal's message is not UTF-8: %q", r.Error())
			}
		})
	}
}

func TestDecodeSubmissionKeepsValidEscapes(t *testing.T) {
	body := strings.Replace(validBody, `"T"`, `"\uD83D\uDE00 \u00e9 \"q\" \\uD800 \u0000"`, 1)
	req, err := decodeSubmission([]byte(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if want := "\U0001F600 é \"q\" \\uD800 \x00"; req.Title != want {
		t.Errorf("title %q, want %q", req.Title, want)
	}
}

func TestDecodeSubmissionRefusesTrailingData(t *testing.T) {
	for _, trailer := range []string{"]", "}", "{}", " x", "\n[]", " null", "0", ",", "\x00"} {
		_, err := decodeSubmission([]byte(validBody + trailer))
		if wq.ErrorCode(err) != wq.EINVALID || !strings.Contains(wq.ErrorMessage(err), "data after the JSON object") {
			t.Errorf("body followed by %q: err %v, want invalid naming the trailing data", trailer, err)
		}
	}
	for _, trailer := range []string{"", "\n", " \t\r\n "} {
		if _, err := decodeSubmission([]byte(validBody + trailer)); err != nil {
			t.Errorf("body followed by whitespace %q: %v", trailer, err)
		}
	}
}

func TestDecodeSubmissionRefusesMemberNamesItWouldMerge(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"a duplicate member", strings.Replace(validBody, `"title":"T"`, `"title":"T","title":"U"`, 1), `(body): member "title" is given twice`},
		{"a duplicate member in a file action", strings.Replace(validBody, `"content":"B"`, `"content":"B","content":"C"`, 1), `file_actions[1]: member "content" is given twice`},
		{"a member name in another case", strings.Replace(validBody, `"title"`, `"Title"`, 1), `member name "Title"`},
		{"a member name that only case folding matches", strings.Replace(validBody, `"source_branch"`, `"\u017Fource_branch"`, 1), "case-sensitive"},
		{"an unknown member", strings.Replace(validBody, `"target_branch":"main"`, `"target_branch":"main","labels_":1`, 1), "unknown field"},
		{"a misspelled member says which was meant", strings.Replace(validBody, `"title"`, `"tilte"`, 1), `unknown field "tilte"; did you mean "title"?`},
		{"a misspelled member of a file action says where and which was meant", strings.Replace(validBody, `"content":"B"`, `"contnet":"B"`, 1),
			`unknown field "contnet" (in file_actions[1]); did you mean "content"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeSubmission([]byte(tc.body))
			if wq.ErrorCode(err) != wq.EINVALID || !strings.Contains(wq.ErrorMessage(err), tc.want) {
				t.Errorf("err %v, want invalid with %q", err, tc.want)
			}
		})
	}
}

func TestDecodeRefusesATargetWhoseNamesItCannotCheck(t *testing.T) {
	for _, v := range []any{
		&struct {
			A string `json:"Name"`
		}{},
		&struct{ Untagged string }{},
	} {
		if err := strictjson.Decode([]byte(`{}`), v, ""); wq.ErrorCode(err) != wq.EINTERNAL {
			t.Errorf("%T: err %v, want internal: checkMemberNames would refuse or miss its names", v, err)
		}
	}
	if err := strictjson.CheckType(reflect.TypeFor[submitRequest]()); err != nil {
		t.Error(err)
	}
}

func TestDecodeSubmissionAcceptsAValidBody(t *testing.T) {
	req, err := decodeSubmission([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	if req.ItemType != "mr" || req.SourceBranch != "workqueue/a" || len(req.FileActions) != 2 || *req.FileActions[1].Content != "B" {
		t.Errorf("decoded %+v", req)
	}
}

// FuzzDecodeSubmission holds the decoder to its promise: whatever it
// accepts was one JSON object and nothing after it, held no lone
// surrogate escape, decodes to strings that are all valid UTF-8, and
// survives a re-encoding unchanged.
func FuzzDecodeSubmission(f *testing.F) {
	for _, seed := range []string{
		validBody,
		validBody + "]",
		validBody + " \n",
		`{"item_type":"mr","title":"\uD83D\uDE00"}`,
		`{"item_type":"mr","title":"\uD800"}`,
		`{"item_type":"mr","title":"\uDC00\uD800"}`,
		`{"title":"a\\uD800"}`,
		"{\"title\":\"\xff\"}",
		`{"labels":["a","\u00e9"]}{}`,
		`{"file_actions":[{"action":"create","file_path":"x","content":"\"\\\/\b\f\n\r\t"}]}`,
		`{"Title":"x"}`,
		`{"title":"x","title":"y"}`,
		`"just a string"`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeSubmission(body)
		if err != nil {
			var r *wq.Refusal
			if errors.As(err, &r) && (r.Rule != strictjson.RuleInvalidUTF8 || !utf8.ValidString(r.Error())) {
				t.Fatalf("refusal %+v: want rule %s and a UTF-8 message", r, strictjson.RuleInvalidUTF8)
			}
			if !errors.As(err, &r) && wq.ErrorCode(err) != wq.EINVALID {
				t.Fatalf("err %v: want an invalid error or a refusal", err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
		if off, why := strictjson.FirstInvalidText(body); off >= 0 {
			t.Fatalf("accepted a body whose byte %d %s", off, why)
		}
		// The body is exactly one value: a decoder that reads past it
		// finds only the end of input.
		dec := json.NewDecoder(strings.NewReader(string(body)))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("accepted a body the standard decoder refuses: %v", err)
		}
		if _, err := dec.Token(); err == nil {
			t.Fatalf("accepted a body with data after the object: %q", body)
		}
		for _, s := range stringsOf(reflect.ValueOf(req)) {
			if !utf8.ValidString(s) {
				t.Fatalf("decoded a string that is not UTF-8: %q", s)
			}
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := decodeSubmission(again)
		if err != nil {
			t.Fatalf("re-encoded %s, refused: %v", again, err)
		}
		// Compared as encoded, since omitempty turns [] into an absent
		// member that decodes to nil; and string by string.
		if twice, _ := json.Marshal(back); string(twice) != string(again) {
			t.Fatalf("round trip changed the submission:\n%s\n%s", again, twice)
		}
		if got, want := stringsOf(reflect.ValueOf(back)), stringsOf(reflect.ValueOf(req)); !slices.Equal(got, want) {
			t.Fatalf("round trip changed strings:\n%q\n%q", want, got)
		}
	})
}

// stringsOf returns every string reachable from v.
func stringsOf(v reflect.Value) []string {
	switch v.Kind() {
	case reflect.String:
		return []string{v.String()}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return stringsOf(v.Elem())
	case reflect.Slice, reflect.Array:
		var out []string
		for i := range v.Len() {
			out = append(out, stringsOf(v.Index(i))...)
		}
		return out
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, stringsOf(v.Field(i))...)
		}
		return out
	}
	return nil
}

func TestTopLevelStringFindsTheMemberBeforeTheBodyIsChecked(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"item_type":"mr","x":1}`, "mr"},
		{`{"x":{"item_type":"nested"},"item_type":"top"}`, "top"},
		{`{"labels":["item_type"],"item_type":"mr"`, "mr"}, // cut off after the member
		{`{"item_type":1}`, ""},
		{`[]`, ""},
		{"{\"item_type\":\"mr\",\"t\":\"\xff\"}", "mr"}, // Decode refuses the rest
	} {
		got, err := strictjson.TopLevelString([]byte(tc.body), "item_type")
		if err != nil || got != tc.want {
			t.Errorf("strictjson.TopLevelString(%q) = %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
	var r *wq.Refusal
	if _, err := strictjson.TopLevelString([]byte("{\"t\":\"\xff\"}"), "item_type"); !errors.As(err, &r) || r.Rule != strictjson.RuleInvalidUTF8 {
		t.Errorf("a body without the member and with invalid UTF-8: err %v, want an %s refusal", err, strictjson.RuleInvalidUTF8)
	}
}

// The envelope's strictness is the schema's: a member the schema leaves
// free (json.RawMessage, a map) holds the caller's JSON, whose member
// names are data, at any depth; the schema's own names stay strict.
func TestFreeMembersKeepTheirOwnNames(t *testing.T) {
	type inner struct {
		Note string `json:"note"`
	}
	type body struct {
		Evidence json.RawMessage   `json:"evidence"`
		Headers  map[string]string `json:"headers"`
		Items    []inner           `json:"items"`
	}
	var b body
	ok := `{"evidence": {"Authorization": "x", "Content-Type": "y", "nested": [{"X-Trace": 1, "X-Trace": 2}]}, "headers": {"Accept": "*/*"}, "items": [{"note": "n"}]}`
	if err := strictjson.Decode([]byte(ok), &b, ""); err != nil {
		t.Fatalf("free members refused: %v", err)
	}
	for _, bad := range []string{`{"Evidence": {}}`, `{"items": [{"Note": "n"}]}`, `{"evidence": {}, "evidence": {}}`} {
		if err := strictjson.Decode([]byte(bad), &b, ""); wq.ErrorCode(err) != wq.EINVALID {
			t.Errorf("%s: %v, want invalid", bad, err)
		}
	}
}

// A body's shape is bounded before it is decoded (issue 28, defect 6): a
// million nulls in one array, or nesting a thousand deep, is refused
// naming the member and the limit, and one at the limit passes.
func TestABodyTooComplexIsRefusedBeforeItIsDecoded(t *testing.T) {
	type body struct {
		Items  []any    `json:"items"`
		Labels []string `json:"labels"`
	}
	nulls := func(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("null,", n), ",") + "]" }
	for _, c := range []struct {
		name, body, says string
	}{
		{"an array past the limit", `{"labels":[],"items":` + nulls(strictjson.MaxElements+1) + `}`, "items"},
		{"a million nulls", `{"items":` + nulls(1_000_000) + `}`, "items"},
		{"nesting past the limit", `{"items":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`, "deeper"},
		{"an object of too many members", `{"items":[{` + strings.TrimSuffix(strings.Repeat(`"a":1,`, strictjson.MaxElements+1), ",") + `}]}`, "items"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v body
			err := strictjson.Decode([]byte(c.body), &v, "")
			if wq.ErrorReason(err) != strictjson.RuleBodyTooComplex || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Decode = %v, want %s naming %s", err, strictjson.RuleBodyTooComplex, c.says)
			}
			if _, err := strictjson.TopLevelString([]byte(c.body), "item_type"); wq.ErrorReason(err) != strictjson.RuleBodyTooComplex {
				t.Errorf("TopLevelString = %v, want %s", err, strictjson.RuleBodyTooComplex)
			}
		})
	}
	var v body
	ok := `{"labels":["a,b","[[[["],"items":` + nulls(strictjson.MaxElements) + `}`
	if err := strictjson.Decode([]byte(ok), &v, ""); err != nil || len(v.Items) != strictjson.MaxElements {
		t.Errorf("a body at the limit: %v, %d items", err, len(v.Items))
	}
}

func BenchmarkCheckShape(b *testing.B) {
	body := []byte(`{"items":[` + strings.TrimSuffix(strings.Repeat(`{"action":"create","file_path":"a/b.txt","content":"hello, world\n"},`, 5000), ",") + `]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := strictjson.CheckShape(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSubmission(b *testing.B) {
	body := []byte(validBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeSubmission(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPlainMemberNamesPassesOnlyWhatTheWalkWouldPass(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"a":1,"b_2":{"a":"x"},"c":[{"a":1},{"a":2}]}`, true},
		{`{"a":{"x":1},"b":{"x":1}}`, true}, // one name in sibling objects
		{`{"a":"a","b":"a"}`, true},         // a value that looks like a name
		{`{"a":"\"a\":1,\"a\":2","b":"\\"}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":{"x":1,"x":2}}`, false},
		{`{"a":[{"x":1,"x":2}]}`, false},
		{`{"A":1}`, false},
		{`{"a-b":1}`, false},
		{`{"\u0061":1}`, false}, // an escape: the walk decides
		{`{"é":1}`, false},
	} {
		var nothingKnown struct{}
		walked := strictjson.WalkMemberNames([]byte(tc.body), reflect.TypeOf(nothingKnown))
		if got := strictjson.PlainMemberNames([]byte(tc.body)); got != tc.want || got && walked != nil {
			t.Errorf("%s: plain %v, want %v (the walk says %v)", tc.body, got, tc.want, walked)
		}
	}
}

// FuzzPlainMemberNames holds the shortcut to the walk: a body it passes
// is one whose every member name the walk passes too, even with no name
// free; and a body the walk passes without escapes or wide objects, it
// passes.
func FuzzPlainMemberNames(f *testing.F) {
	for _, seed := range []string{validBody, `{"a":1,"a":2}`, `{"a":{"b":[{"c":"\"d\":1"}]},"b":{"b":1}}`, `[{"x":1},{"x":1}]`, `{"A":{}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) || strictjson.CheckShape(body) != nil {
			return
		}
		var nothingKnown struct{}
		walked := strictjson.WalkMemberNames(body, reflect.TypeOf(nothingKnown))
		plain := strictjson.PlainMemberNames(body)
		if plain && walked != nil {
			t.Fatalf("%q: the shortcut passes what the walk refuses: %v", body, walked)
		}
		if !plain && walked == nil && !bytes.Contains(body, []byte(`\`)) && !hasWideObject(body) {
			t.Fatalf("%q: the walk passes it, the shortcut does not", body)
		}
	})
}

// hasWideObject reports whether one of body's objects has more members
// than the shortcut compares.
func hasWideObject(body []byte) bool {
	var doc any
	_ = json.Unmarshal(body, &doc)
	var wide func(v any) bool
	wide = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if len(v) >= 32 {
				return true
			}
			for _, e := range v {
				if wide(e) {
					return true
				}
			}
		case []any:
			return slices.ContainsFunc(v, wide)
		}
		return false
	}
	return wide(doc)
}
