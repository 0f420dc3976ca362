// Package types registers the item types workqueue ships with the item
// type registry (itemtype.Register): a program that serves, checks a
// configuration or wires the item service for tests imports it. Adding a
// type is its package and one line here.
package types

import (
	"github.com/workqueue-dev/workqueue/example"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/mr/mrtype"
)

func init() {
	itemtype.Register(mrtype.Plugin)
	itemtype.Register(example.Plugin)
}
