package forge

// ClosingRef is one closing reference in a text.
// (Interim: replaced by the full parser of issue 48's point 4.)
type ClosingRef struct {
	Repo   string // "" for the text's own project
	Number int64
	Text   string
}

// ClosingReferences returns every closing reference of text.
func ClosingReferences(text string) []ClosingRef {
	var out []ClosingRef
	for _, n := range ClosingIssues(text) {
		out = append(out, ClosingRef{Number: n, Text: "#" + itoa(n)})
	}
	return out
}

func itoa(n int64) string {
	b := []byte{}
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
