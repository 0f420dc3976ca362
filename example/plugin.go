package example

import (
	_ "embed"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/itemtype"
)

// Section is the example type's section of the configuration file
// (example:).
type Section struct {
	// Enabled takes example items over the API on an instance that does
	// not process them (one that does, by handled_types, always takes them).
	Enabled bool `yaml:"enabled"`
	// StepDelay is how long each of an example item's steps takes.
	StepDelay config.Duration `yaml:"step_delay"`
}

// In returns c's example section to change in place, put in c with its
// defaults first if c has none (a configuration made in code).
func In(c *config.Config) *Section {
	return c.EditSection("example", func() any { return &Section{} }).(*Section)
}

// Plugin is the example item type, taken where the configuration enables
// it (example.enabled, or handled_types naming it).
var Plugin = itemtype.Plugin{
	Name: Name,
	Section: &itemtype.Section{Key: "example", Default: func() any { return &Section{} },
		Validate: func(v any) []error {
			if v.(*Section).StepDelay < 0 {
				return []error{fmt.Errorf("example.step_delay: must not be negative")}
			}
			return nil
		}},
	// A type for tests and demos: a production instance has it only when
	// configured.
	Enabled: func(section any, handled bool) bool { return handled || section.(*Section).Enabled },
	Build: func(env itemtype.Env, _ any) (itemtype.Built, error) {
		return itemtype.Built{Type: Type(Options{StepDelay: time.Duration(env.Section.(*Section).StepDelay)}), API: API(env.Queue)}, nil
	},
	Warnings: func(section any, handled bool) []itemtype.Warning {
		if section.(*Section).Enabled && !handled {
			return []itemtype.Warning{{Field: "example.enabled",
				Message: "example items are taken but not processed here: they wait until an instance with example in its handled_types runs on the same database"}}
		}
		return nil
	},
	Face: &wq.ItemFace{Type: Name, Schemas: itemtype.Schemas(openAPISchemas),
		Submission: "ExampleSubmission", Detail: "ExampleDetail"},
}

// openAPISchemas are the type's OpenAPI 3.0 schemas, by component name.
//
//go:embed openapi.json
var openAPISchemas []byte
