package tally

import (
	"encoding/json"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/itemtype"
)

// Face is what the API's document, the agents' tools and the CLI show of
// the type: all from its registration, none of them naming it.
var Face = wq.ItemFace{
	Type:       Name,
	Schemas:    itemtype.Schemas([]byte(openAPISchemas)),
	Submission: "TallySubmission", Detail: "TallyDetail", Summary: "TallySummary",
	Tool: &wq.ItemTool{Name: "submit_tally", Input: itemtype.ToolInput[toolInput](),
		Description: `Submit a tally: an item that counts to its target, one step at a time, then completes. Follow it with get_item.`},
	View: func(summary, detail json.RawMessage) wq.ItemView {
		var s struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(summary, &s) == nil {
			return wq.ItemView{Title: s.Title}
		}
		return wq.ItemView{}
	},
}

// toolInput is submit_tally's input, described for a model.
type toolInput struct {
	ItemType string `json:"item_type" jsonschema:"always tally"`
	Target   int    `json:"target" jsonschema:"how far to count: 1 to the configured tally.max_target"`
}

const openAPISchemas = `{
  "TallySubmission": {
    "type": "object",
    "description": "A tally (a type for tests): it counts to target, then completes.",
    "required": ["item_type", "target"],
    "additionalProperties": false,
    "properties": {
      "item_type": {"type": "string", "enum": ["tally"]},
      "target": {"type": "integer", "minimum": 1}
    }
  },
  "TallyDetail": {
    "type": "object",
    "required": ["counted", "target"],
    "properties": {"counted": {"type": "integer"}, "target": {"type": "integer"}}
  },
  "TallySummary": {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}}
  }
}`
