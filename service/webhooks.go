package service

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jonboulle/clockwork"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/forge"
)

// Webhooks turns verified forge deliveries into durable events for the
// items they concern (DESIGN section 5, DDR-30..35). The item types that
// take forge events (their ItemAPI is a wq.EventResolver) say which item
// an event concerns.
type Webhooks struct {
	Store  wq.Store
	Forges map[string]WebhookForge // by configured forge name
	Kinds  *forge.Registry         // the kinds Forges name
	Types  []wq.ItemAPI
	Notify func(itemType string, id wq.ItemID)
	Audit  wq.AuditSink
	Clock  clockwork.Clock // nil: the real clock
	// Inventory, when set, takes every verified delivery that carries an
	// issue's or pull request's new state (the control plane's work
	// inventory), whether or not an item is concerned.
	Inventory interface {
		Apply(ctx context.Context, forge string, d *forge.Delivery) (bool, error)
	}
	// Metrics, when set, counts every delivery by forge and outcome
	// (package metrics implements it).
	Metrics interface {
		WebhookDelivery(forge, outcome string)
	}
}

// WebhookForge is what the receiver knows of a configured forge.
type WebhookForge struct {
	Kind   string // a kind of forge of Webhooks.Kinds
	Secret string // the webhook secret; "" refuses every delivery
}

// Received says what a delivery led to.
type Received struct {
	Stored    int  `json:"stored"`              // events stored (0: no active item is concerned, or the event is not used)
	Duplicate bool `json:"duplicate"`           // this delivery was stored before
	Inventory bool `json:"inventory,omitempty"` // the work inventory took the or pull request's new state
}

// Receive verifies a delivery to the named forge, resolves it to the
// active item it concerns and stores its event, committed before it
// returns. Errors: ENOTFOUND for an unknown forge, EUNAUTHORIZED for a bad
// signature or token, EINVALID for a malformed delivery.
func (w *Webhooks) Receive(ctx context.Context, forgeName string, h http.Header, body []byte) (got Received, err error) {
	if w.Metrics != nil {
		defer func() { w.countDelivery(forgeName, got, err) }()
	}
	return w.receive(ctx, forgeName, h, body)
}

// VerifyHeader checks a delivery to the named forge on its headers
// alone, before its body is read (forge.Registry.VerifyHeader): ENOTFOUND for an
// unknown forge, EUNAUTHORIZED when its headers already show it is not
// the forge's (GitLab's token), nil when the body must be read to
// decide, which Receive then does. A refusal is counted as Receive
// counts it.
func (w *Webhooks) VerifyHeader(forgeName string, h http.Header) error {
	f, ok := w.Forges[forgeName]
	var err error
	if !ok {
		err = wq.Errorf(wq.ENOTFOUND, "no forge named %q", forgeName)
	} else {
		err = w.Kinds.VerifyHeader(f.Kind, f.Secret, h)
	}
	if err != nil && w.Metrics != nil {
		w.countDelivery(forgeName, Received{}, err)
	}
	return err
}

// countDelivery counts a delivery's outcome; a forge name nobody
// configured is counted as "unknown", so callers cannot grow the labels.
func (w *Webhooks) countDelivery(forgeName string, got Received, err error) {
	outcome := "stored"
	switch {
	case err != nil && wq.ErrorCode(err) == wq.ENOTFOUND:
		outcome = "unknown_forge"
	case err != nil && wq.ErrorCode(err) == wq.EUNAUTHORIZED:
		outcome = "refused_signature"
	case err != nil && wq.ErrorCode(err) == wq.EINVALID:
		outcome = "invalid"
	case err != nil:
		outcome = "error"
	case got.Duplicate:
		outcome = "duplicate"
	case got.Stored == 0:
		outcome = "ignored"
	}
	if _, ok := w.Forges[forgeName]; !ok {
		forgeName = "unknown"
	}
	w.Metrics.WebhookDelivery(forgeName, outcome)
}

func (w *Webhooks) receive(ctx context.Context, forgeName string, h http.Header, body []byte) (Received, error) {
	f, ok := w.Forges[forgeName]
	if !ok {
		return Received{}, wq.Errorf(wq.ENOTFOUND, "no forge named %q", forgeName)
	}
	d, err := w.Kinds.ParseWebhook(f.Kind, f.Secret, h, body)
	if err != nil || d == nil {
		return Received{}, err
	}
	var got Received
	if w.Inventory != nil {
		// The inventory's write is idempotent and ordered by the forge's
		// updated time, so a redelivery is harmless there.
		if got.Inventory, err = w.Inventory.Apply(ctx, forgeName, d); err != nil {
			return Received{}, err
		}
	}
	ref := wq.EventRef{Number: d.Number, PipelineID: d.PipelineID, SourceBranch: d.SourceBranch,
		TargetBranch: d.TargetBranch, HeadSHA: d.HeadSHA}
	var id wq.ItemID
	var itemType string
	for _, t := range w.Types {
		r, ok := t.(wq.EventResolver)
		if !ok {
			continue
		}
		found, ok, err := r.ResolveEvent(ctx, forgeName, d.Project, ref)
		if err != nil {
			return Received{}, err
		}
		if ok {
			id, itemType = found, t.Type()
			break
		}
	}
	if itemType == "" && d.Work != nil && d.Event != nil {
		// A pull request no item holds: a type may track it (a person's
		// merge request labelled for workqueue).
		for _, t := range w.Types {
			tr, ok := t.(wq.WorkTracker)
			if !ok {
				continue
			}
			found, ok, err := tr.TrackWork(ctx, forgeName, d.Project, *d.Work, ref, w.now())
			if err != nil {
				return Received{}, err
			}
			if ok {
				id, itemType = found, t.Type()
				break
			}
		}
	}
	if itemType == "" || d.Event == nil {
		return got, nil // DDR-32: no active item (or nothing to tell it), nothing to store
	}
	event, err := json.Marshal(d.Event)
	if err != nil {
		return Received{}, err
	}
	now := w.now()
	stored, err := w.Store.InsertDelivery(ctx, forgeName, d.DeliveryID,
		[]wq.Event{{ItemID: id, EventType: forge.EventType, Body: event, EventTS: d.EventTS}}, now)
	if err != nil {
		return Received{}, err
	}
	if stored.Duplicate {
		got.Duplicate = true
		return got, nil
	}
	if stored.Stored == 0 {
		// The item ended between the lookup and the insert: an ended item
		// takes no events (DDR-37), so this one is ignored, and said so.
		if w.Audit != nil {
			w.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditEventIgnored, ItemID: id.String(), ItemType: itemType,
				Actor: "forge:" + forgeName, Trigger: map[string]any{"source": "webhook", "event_type": d.EventType},
				Metadata: map[string]any{"delivery_id": d.DeliveryID, "why": "the item ended before the delivery was stored"}})
		}
		return got, nil
	}
	if w.Notify != nil {
		w.Notify(itemType, id)
	}
	if w.Audit != nil {
		w.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: wq.AuditWebhookStored, ItemID: id.String(), ItemType: itemType,
			Actor: "forge:" + forgeName, Trigger: map[string]any{"source": "webhook", "event_type": d.EventType},
			Metadata: map[string]any{"delivery_id": d.DeliveryID, "project": d.Project, "number": d.Number, "pipeline_id": d.PipelineID}})
	}
	got.Stored = 1
	return got, nil
}

func (w *Webhooks) now() time.Time {
	if w.Clock != nil {
		return w.Clock.Now()
	}
	return time.Now()
}
