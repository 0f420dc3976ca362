package service

import (
	"context"
	"net/http"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/config"
	"github.com/workqueue-dev/workqueue/mr"
	"github.com/workqueue-dev/workqueue/webhook"
)

// Webhooks turns verified forge deliveries into durable events for the
// items they concern (DESIGN section 5, DDR-30..35).
type Webhooks struct {
	Store   Store
	Config  config.Config
	Secrets map[string]string // webhook secret by forge name
	Notify  func(itemType string, id wq.ItemID)
	Audit   wq.AuditSink
	Now     func() time.Time
}

// Received says what a delivery led to.
type Received struct {
	Stored    int  `json:"stored"`    // events stored (0: no active item is concerned, or the event is not used)
	Duplicate bool `json:"duplicate"` // this delivery was stored before
}

// Receive verifies a delivery to the named forge, resolves it to the
// active item it concerns and stores its event, committed before it
// returns. Errors: ENOTFOUND for an unknown forge, EUNAUTHORIZED for a bad
// signature or token, EINVALID for a malformed delivery.
func (w *Webhooks) Receive(ctx context.Context, forgeName string, h http.Header, body []byte) (Received, error) {
	forge, ok := w.Config.ForgeNamed(forgeName)
	if !ok {
		return Received{}, wq.Errorf(wq.ENOTFOUND, "no forge named %q", forgeName)
	}
	d, err := webhook.Parse(forge.Kind, w.Secrets[forge.Name], h, body)
	if err != nil || d == nil {
		return Received{}, err
	}
	id, ok, err := w.Store.FindActiveMR(ctx, forge.Name, d.Project,
		mr.EventRef{Number: d.Number, PipelineID: d.PipelineID, SourceBranch: d.SourceBranch,
			TargetBranch: d.TargetBranch, HeadSHA: d.HeadSHA})
	if err != nil || !ok {
		return Received{}, err // DDR-32: no active item, nothing to store
	}
	now := time.Now()
	if w.Now != nil {
		now = w.Now()
	}
	dup, err := w.Store.InsertDelivery(ctx, forge.Name, d.DeliveryID,
		[]wq.Event{{ItemID: id, EventType: d.EventType, Body: d.Body, EventTS: d.EventTS}}, now)
	if err != nil {
		return Received{}, err
	}
	if dup {
		return Received{Duplicate: true}, nil
	}
	if w.Notify != nil {
		w.Notify(mr.ItemType, id)
	}
	if w.Audit != nil {
		w.Audit.WriteAudit(ctx, wq.AuditEntry{Time: now, EventType: "webhook_stored", ItemID: id.String(), ItemType: mr.ItemType,
			Actor: "forge:" + forge.Name, Trigger: map[string]any{"source": "webhook", "event_type": d.EventType},
			Metadata: map[string]any{"delivery_id": d.DeliveryID, "project": d.Project, "number": d.Number, "pipeline_id": d.PipelineID}})
	}
	return Received{Stored: 1}, nil
}
