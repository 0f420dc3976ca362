package httpapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	wq "github.com/workqueue-dev/workqueue"
)

// openAPI is the generic part of the API's description: every route and
// answer, with no item type in it. Document adds the types' schemas; a
// test checks every route and response against the result, so it cannot
// drift from the handlers.
//
//go:embed openapi.json
var openAPI []byte

// Document is the API's description as a server that takes the item
// types of faces serves it: openapi.json with each type's schemas (its
// registration's wq.ItemFace) added, its submission in SubmissionRequest's
// union and discriminator, its detail and summary in Item's. So the
// document, like the handlers, names no type.
func Document(faces []wq.ItemFace) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, err
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	request := schemas["SubmissionRequest"].(map[string]any)
	mapping := request["discriminator"].(map[string]any)["mapping"].(map[string]any)
	item := schemas["Item"].(map[string]any)["properties"].(map[string]any)
	var submissions, details, summaries []any
	var detailNames, summaryNames []string
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	for _, f := range faces {
		for name, raw := range f.Schemas {
			if _, taken := schemas[name]; taken {
				return nil, fmt.Errorf("item type %s: schema %q is taken", f.Type, name)
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("item type %s: schema %q: %w", f.Type, name, err)
			}
			schemas[name] = v
		}
		for _, n := range []string{f.Submission, f.Detail, f.Summary} {
			if _, ok := f.Schemas[n]; n != "" && !ok {
				return nil, fmt.Errorf("item type %s: no schema %q among its own", f.Type, n)
			}
		}
		if f.Submission != "" {
			submissions = append(submissions, ref(f.Submission))
			mapping[f.Type] = "#/components/schemas/" + f.Submission
		}
		if f.Detail != "" {
			details = append(details, ref(f.Detail))
			detailNames = append(detailNames, fmt.Sprintf("%s for %s items", f.Detail, f.Type))
		}
		if f.Summary != "" {
			summaries = append(summaries, ref(f.Summary))
			summaryNames = append(summaryNames, fmt.Sprintf("%s for %s items", f.Summary, f.Type))
		}
	}
	if len(submissions) == 0 {
		return nil, fmt.Errorf("no item type takes submissions")
	}
	request["oneOf"] = submissions
	detail := item["detail"].(map[string]any)
	if len(details) == 0 {
		delete(item, "detail")
	} else {
		detail["oneOf"] = details
		detail["description"] = "The item type's own view: " + strings.Join(detailNames, ", ") + "."
	}
	summary := item["summary"].(map[string]any)
	switch len(summaries) {
	case 0:
		delete(item, "summary")
	case 1:
		// One view is a plain reference: generated clients keep its type.
		delete(summary, "oneOf")
		summary["allOf"] = summaries
	default:
		summary["oneOf"] = summaries
	}
	if len(summaries) > 0 {
		summary["description"] = "The item type's short view, in item lists only (GET /api/v1/items): " +
			strings.Join(summaryNames, ", ") + "; absent for types without one."
	}
	return json.MarshalIndent(doc, "", "  ")
}

// openAPIDocument serves Document for the types the server takes. The
// document describes the API, not its data: a client reads it before it
// has a token (issue 17).
func (s *Server) openAPIDocument(w http.ResponseWriter, r *http.Request) {
	doc, err := s.document()
	if err != nil {
		s.Error(w, r, fmt.Errorf("the OpenAPI document: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}
