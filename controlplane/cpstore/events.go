package cpstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/workqueue-dev/workqueue/controlplane"
)

const eventCols = `id, time, type, actor, session_id, work_id, lease_id, assignment_id, reason, detail`

func scanEvent(r row) (controlplane.Event, error) {
	var e controlplane.Event
	var detail jsonCol
	err := r.Scan(&e.ID, (*timeCol)(&e.Time), &e.Type, &e.Actor, &e.SessionID, &e.WorkID, &e.LeaseID, &e.AssignmentID, &e.Reason, &detail)
	e.Detail = rawOrNil(detail)
	return e, err
}

// defaults fills in an event's type and time when the caller left them
// out.
func defaults(ev controlplane.Event, typ string, now time.Time) controlplane.Event {
	ev.Type = cmp.Or(ev.Type, typ)
	if ev.Time.IsZero() {
		ev.Time = now
	}
	return ev
}

// ofLease fills in the ids an event about l names, where the caller left
// them out.
func ofLease(ev controlplane.Event, l controlplane.Lease) controlplane.Event {
	ev.SessionID = cmp.Or(ev.SessionID, l.SessionID)
	ev.WorkID = cmp.Or(ev.WorkID, l.WorkID)
	ev.LeaseID = cmp.Or(ev.LeaseID, l.ID)
	ev.AssignmentID = cmp.Or(ev.AssignmentID, l.AssignmentID)
	return ev
}

// leaseEvent is the event the store writes itself for a lease it ended.
func leaseEvent(typ, actor, reason string, l controlplane.Lease, now time.Time) controlplane.Event {
	return ofLease(controlplane.Event{Time: now, Type: typ, Actor: cmp.Or(actor, "system"), Reason: reason}, l)
}

// AppendEvent appends an event. One without a time gets the wall clock's.
func (s *store) AppendEvent(ctx context.Context, ev controlplane.Event) error {
	err := s.write(ctx, func(c conn) error { return c.appendEvent(ctx, defaults(ev, "", time.Now())) })
	if err != nil {
		return fmt.Errorf("append %s event: %w", ev.Type, err)
	}
	return nil
}

func (c conn) appendEvent(ctx context.Context, ev controlplane.Event) error {
	detail, err := rawJSON("event detail", ev.Detail)
	if err != nil {
		return err
	}
	_, err = c.exec(ctx, `INSERT INTO cp_events (time, type, actor, session_id, work_id, lease_id, assignment_id, reason, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.Time, ev.Type, ev.Actor, ev.SessionID, ev.WorkID, ev.LeaseID, ev.AssignmentID, ev.Reason, detail)
	return err
}

// ListEvents returns events newest first.
func (s *store) ListEvents(ctx context.Context, f controlplane.EventFilter) ([]controlplane.Event, error) {
	var w filter
	w.eq("session_id", f.SessionID)
	w.eq("work_id", f.WorkID)
	w.eq("lease_id", f.LeaseID)
	out, err := queryAll(ctx, s.reader(), scanEvent, `SELECT `+eventCols+` FROM cp_events`+w.where()+` ORDER BY id DESC LIMIT ?`,
		append(w.args, limit(f.Limit))...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}
