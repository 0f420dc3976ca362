// Package compose is what a composition root does with the registries it
// builds and a configuration: what a file may name (Known), each item
// type's section resolved for its build, and the labels the types put
// themselves. The configuration and the item-type registry do not link
// each other (config is data; a type sees its own section only): this is
// where they meet, for cmd/workqueue/world.go and the test world
// (internal/testapi) alike.
package compose

import (
	"slices"

	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/forge"
	"github.com/workqueue-dev/workqueue/itemtype"
)

// Known is what a configuration may name in a program that links kinds
// and types: the kinds' names, and each type with its section and the
// warnings it gives.
func Known(kinds *forge.Registry, types *itemtype.Registry) config.Known {
	k := config.Known{ForgeKinds: kinds.Kinds()}
	for _, p := range types.All() {
		t := config.KnownType{Name: p.Name}
		if s := p.Section; s != nil {
			t.Section = &config.KnownSection{Key: s.Key, Default: s.Default, Validate: s.Validate}
		}
		if p.Warnings != nil {
			t.Warnings = func(c config.Config) []config.Warning {
				var out []config.Warning
				for _, w := range p.Warnings(Section(c, p), slices.Contains(c.HandledTypes, p.Name)) {
					out = append(out, config.Warning{Field: w.Field, Message: w.Message})
				}
				return out
			}
		}
		k.ItemTypes = append(k.ItemTypes, t)
	}
	return k
}

// Section is p's section in c, resolved (config.SectionOf: the defaults
// where c has none); nil for a type without a section.
func Section(c config.Config, p itemtype.Plugin) any {
	if p.Section == nil {
		return nil
	}
	return c.SectionOf(p.Section.Key, p.Section.Default)
}

// ServiceLabels are the labels types put on merge requests themselves, by
// c: the outbound policy lets the service put them and refuses them to
// callers.
func ServiceLabels(c config.Config, types *itemtype.Registry) []string {
	var out []string
	for _, p := range types.All() {
		if p.Labels != nil {
			out = append(out, p.Labels(Section(c, p))...)
		}
	}
	return out
}

// ReviewLabel is the label that marks a merge request only a person may
// approve, by c: the first a type gives ("" if none does).
func ReviewLabel(c config.Config, types *itemtype.Registry) string {
	for _, p := range types.All() {
		if p.ReviewLabel != nil {
			if l := p.ReviewLabel(Section(c, p)); l != "" {
				return l
			}
		}
	}
	return ""
}
