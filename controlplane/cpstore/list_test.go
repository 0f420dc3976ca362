package cpstore

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodeLists: the reflection-free reading of stored arrays agrees
// with encoding/json on what either database stores, and hands what it
// does not read plainly to encoding/json.
func TestDecodeLists(t *testing.T) {
	for _, doc := range []string{
		``, `[]`, `[ ]`, `["a"]`, `["a","b"]`, `["a", "b"]`, ` [ "a" , "b" ] `, `["a,b", "c"]`, `["", "x"]`,
		`["é", "日本"]`, `["a\"b"]`, `["a\\b", "c"]`, `["\u00e9"]`, `[1]`, `[1, -2, 3]`, `[1,2]`, `[1e3]`, `[1.5]`,
		`[9223372036854775807]`, `["a" "b"]`, `["a",]`, `[,]`, `["a"`, `"a"`, `[["a"]]`, `[null]`, `[true]`,
	} {
		for _, kind := range []string{"strings", "ints"} {
			var got, want any
			var err, wantErr error
			if kind == "strings" {
				var w []string
				wantErr = json.Unmarshal([]byte(doc), &w)
				g, e := decodeStrings[string](jsonCol(doc))
				got, want, err = g, w, e
			} else {
				var w []int64
				wantErr = json.Unmarshal([]byte(doc), &w)
				g, e := decodeInts(jsonCol(doc))
				got, want, err = g, w, e
			}
			if doc == "" {
				wantErr = nil // NULL: no list
			}
			if (err != nil) != (wantErr != nil) {
				t.Errorf("%s of %q: error %v, encoding/json says %v", kind, doc, err, wantErr)
				continue
			}
			if err == nil && reflect.ValueOf(want).Len() > 0 && !reflect.DeepEqual(got, want) {
				t.Errorf("%s of %q: %#v, encoding/json reads %#v", kind, doc, got, want)
			}
			if err == nil && reflect.ValueOf(want).Len() == 0 && reflect.ValueOf(got).Len() != 0 {
				t.Errorf("%s of %q: %#v, want none", kind, doc, got)
			}
		}
	}
}
