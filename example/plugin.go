package example

import (
	"slices"
	"time"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/itemtype"
)

// Plugin is the example item type, taken where the configuration enables
// it (example.enabled, or handled_types naming it).
var Plugin = itemtype.Plugin{
	Name:    Name,
	Enabled: func(c config.Config) bool { return c.ExampleEnabled() },
	Build: func(env itemtype.Env, _ any) (itemtype.Built, error) {
		return itemtype.Built{Type: Type(Options{StepDelay: time.Duration(env.Config.Example.StepDelay)}), API: API(env.Queue)}, nil
	},
	Warnings: func(c config.Config) []config.Warning {
		if c.Example.Enabled && !slices.Contains(c.HandledTypes, Name) {
			return []config.Warning{{Field: "example.enabled",
				Message: "example items are taken but not processed here: they wait until an instance with example in its handled_types runs on the same database"}}
		}
		return nil
	},
}
