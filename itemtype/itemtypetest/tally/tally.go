// Package tally is an item type that exists for tests: it shows that a
// type is one package plus one registration line
// (types.Register(tally.Plugin), in a registry the test builds), with no generic layer to extend. A
// tally item counts to its target, one fenced write of its own table per
// action, then completes. It has everything a real type has: a store of
// its own with a migration chain per dialect (built on the store seam,
// naming no driver), a pure decider, fenced executors, a face to callers
// with a detail and a summary, a section of its own in the configuration
// file (tally: {max_target: N}) and a configuration warning.
package tally

import (
	"context"
	"embed"
	"fmt"
	"path"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/strictjson"
	"github.com/workqueue-dev/workqueue/itemtype"
	"github.com/workqueue-dev/workqueue/store/seam"
)

// Name is the type's name.
const Name = "tally"

// MaxTarget is tally.max_target's default: the largest target a
// submission may ask for.
const MaxTarget = 100

// Section is the type's section of the configuration file (tally:).
type Section struct {
	// MaxTarget is the largest target a submission may ask for.
	MaxTarget int `yaml:"max_target"`
}

const (
	actCount  = "count"
	actFinish = "finish"
	dimCount  = "needs_count"
)

//go:embed migrations
var migrations embed.FS

// Plugin is the tally item type.
var Plugin = itemtype.Plugin{
	Name:      Name,
	Face:      &Face,
	OpenStore: func(db wq.Store) (any, error) { return Open(db) },
	Section: &itemtype.Section{Key: Name, Default: func() any { return &Section{MaxTarget: MaxTarget} },
		Validate: func(v any) []error {
			if n := v.(*Section).MaxTarget; n < 1 || n > 10000 {
				return []error{fmt.Errorf("tally.max_target: want 1 to 10000, got %d", n)}
			}
			return nil
		}},
	Build: func(env itemtype.Env, st any) (itemtype.Built, error) {
		s, ok := st.(*Store)
		if !ok {
			return itemtype.Built{}, fmt.Errorf("tally: a store of type %T", st)
		}
		return itemtype.Built{Type: Type(s), API: api{s: s, max: env.Section.(*Section).MaxTarget}}, nil
	},
	Warnings: func(_ any, handled bool) []itemtype.Warning {
		if !handled {
			return []itemtype.Warning{{Field: "handled_types", Message: "tally items are taken but not counted here"}}
		}
		return nil
	},
}

// Store is the type's table beside the queue's, on any driver.
type Store struct {
	db seam.Driver
}

// Open returns the type's store on db and registers its migrations: call
// it before db.Migrate.
func Open(db wq.Store) (*Store, error) {
	d, ok := db.(seam.Driver)
	if !ok {
		return nil, fmt.Errorf("tally store: the %T driver does not implement the store seam", db)
	}
	if err := d.AddMigrations(Name, migrations, path.Join("migrations", d.Dialect().Name)); err != nil {
		return nil, err
	}
	return &Store{db: d}, nil
}

// create inserts an item that counts to target, and its row, in one
// transaction.
func (s *Store) create(ctx context.Context, n wq.NewItem, target int, now time.Time) (*wq.Item, error) {
	err := s.db.Write(ctx, func(tx seam.Tx) error {
		if err := tx.InsertItem(ctx, &n, now); err != nil {
			return err
		}
		q, args := s.db.Dialect().Bind(`INSERT INTO tally_counts (work_item_id, target) VALUES (?, ?)`, []any{n.ID, target})
		_, err := tx.Exec(ctx, q, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.db.GetItem(ctx, n.ID)
}

// count adds one to the item's count under its lease and returns the new
// count and the target. wq.ErrLeaseLost once the lease no longer holds.
func (s *Store) count(ctx context.Context, l wq.Lease) (counted, target int, err error) {
	err = s.db.Fenced(ctx, l, "count", func(tx seam.Tx) error {
		q, args := s.db.Dialect().Bind(`UPDATE tally_counts SET counted = counted + 1 WHERE work_item_id = ?`, []any{l.ItemID})
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return err
		}
		q, args = s.db.Dialect().Bind(`SELECT counted, target FROM tally_counts WHERE work_item_id = ?`, []any{l.ItemID})
		return tx.QueryRow(ctx, q, args...).Scan(&counted, &target)
	})
	return counted, target, err
}

// read returns how far the item counted, and to what.
func (s *Store) read(ctx context.Context, id wq.ItemID) (counted, target int, err error) {
	q, args := s.db.Dialect().Bind(`SELECT counted, target FROM tally_counts WHERE work_item_id = ?`, []any{id})
	err = s.db.Translate(s.db.Reader().QueryRow(ctx, q, args...).Scan(&counted, &target))
	return counted, target, err
}

// Type is the engine's side of the type.
func Type(s *Store) wq.ItemType {
	return wq.ItemType{
		Name: Name,
		Decide: func(item *wq.Item, now time.Time) string {
			if item.Dimensions.Needs(dimCount, "", now) {
				return actCount
			}
			return actFinish
		},
		Executors: map[string]wq.Executor{
			actCount: func(ctx context.Context, x *wq.Execution) error {
				counted, target, err := s.count(ctx, x.Lease)
				if err != nil || counted < target {
					return err
				}
				return x.Writer.Apply(ctx, wq.Change{Dimensions: []wq.DimensionUpdate{
					{DimensionKey: wq.DimensionKey{Dimension: dimCount}, Status: wq.StatusFalse}}})
			},
			actFinish: func(ctx context.Context, x *wq.Execution) error {
				return x.Writer.Apply(ctx, wq.Change{Phase: wq.PhaseCompleted, Reason: "counted"})
			},
		},
	}
}

// api is the type's face to callers: {"item_type": "tally", "target": N},
// N at most max (tally.max_target).
type api struct {
	s   *Store
	max int
}

type request struct {
	ItemType string `json:"item_type"`
	Target   int    `json:"target"`
}

func (request) Scope() wq.Scope { return wq.Scope{} }
func (request) Key() string     { return "" }

// Detail is the API's view of a tally item.
type Detail struct {
	Counted int `json:"counted"`
	Target  int `json:"target"`
}

func (api) Type() string { return Name }

func (a api) Decode(body []byte) (wq.Submission, error) {
	var r request
	if err := strictjson.Decode(body, &r, ""); err != nil {
		return nil, err
	}
	if r.Target < 1 || r.Target > a.max {
		return nil, wq.Errorf(wq.EINVALID, "target: want 1 to %d (tally.max_target), got %d", a.max, r.Target)
	}
	return r, nil
}

func (a api) Submit(ctx context.Context, sub wq.Submission, by wq.Submitter, now time.Time) (*wq.Item, wq.SubmitResult, error) {
	r, ok := sub.(request)
	if !ok {
		return nil, "", fmt.Errorf("tally: submission of type %T", sub)
	}
	n := wq.NewItem{ItemType: Name, CallerIdentity: by.Identity,
		Dimensions: []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: dimCount}, Status: wq.StatusTrue}}}
	it, err := a.s.create(ctx, n, r.Target, now)
	if err != nil {
		return nil, "", err
	}
	return it, wq.SubmitCreated, nil
}

func (a api) Detail(ctx context.Context, it *wq.Item) (any, error) {
	counted, target, err := a.s.read(ctx, it.ID)
	if err != nil {
		return nil, err
	}
	return Detail{Counted: counted, Target: target}, nil
}

func (a api) Summaries(ctx context.Context, items []*wq.Item) (map[wq.ItemID]any, error) {
	out := map[wq.ItemID]any{}
	for _, it := range items {
		counted, target, err := a.s.read(ctx, it.ID)
		if err != nil {
			return nil, err
		}
		out[it.ID] = map[string]string{"title": fmt.Sprintf("tally %d/%d", counted, target)}
	}
	return out, nil
}

// RetryDimensions: count what is left.
func (api) RetryDimensions(*wq.Item) []wq.DimensionUpdate {
	return []wq.DimensionUpdate{{DimensionKey: wq.DimensionKey{Dimension: dimCount}, Status: wq.StatusTrue}}
}
