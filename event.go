package workqueue

import (
	"encoding/json"
	"time"
)

// Event is a durable pending event for one item (DDR-30): stored raw, then
// interpreted by the item type's handler inside the item's processing loop.
type Event struct {
	ID         int64
	ItemID     ItemID
	Source     string // forge name, or "test"
	EventType  string
	DeliveryID string // unique per source: redelivery is stored once
	Body       json.RawMessage
	EventTS    time.Time // when the source says it happened
	ReceivedAt time.Time
}

// EventResult is what a handler returns for an event (DDR-33, DDR-38). The
// handler only reads; the generic layer applies this.
type EventResult struct {
	Phase      Phase  // "" for no phase change
	Reason     string // recorded with the phase change
	Dimensions []DimensionUpdate
	Trigger    map[string]any // audit trigger metadata
}

// AppliedEvent reports what applying an EventResult changed.
type AppliedEvent struct {
	OldPhase     Phase
	NewPhase     Phase
	PhaseApplied bool // false when there was no phase change, it was stale, or the item was not active
	Stale        bool // the event was older than the item's last_event_at
}

// Delivery says what Store.InsertDelivery did with a delivery.
type Delivery struct {
	// Duplicate: the delivery was stored before, and nothing was stored now.
	Duplicate bool
	// Stored counts the events stored; Ended those not stored because
	// their item had ended.
	Stored, Ended int
}
