package cpstore

import (
	"cmp"
	"context"
	"fmt"
	"time"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/controlplane"
)

const sessionCols = `id, identity, name, role, capabilities, created_at, heartbeat_at, ended_at`

func scanSession(r row) (controlplane.Session, error) {
	var s controlplane.Session
	var role string
	var caps jsonCol
	err := r.Scan(&s.ID, &s.Identity, &s.Name, &role, &caps, (*timeCol)(&s.CreatedAt), (*timeCol)(&s.HeartbeatAt), (*timeCol)(&s.EndedAt))
	s.Role, s.Capabilities = controlplane.Role(role), rawOrNil(caps)
	return s, err
}

// CreateSession inserts s.
func (s *store) CreateSession(ctx context.Context, ses controlplane.Session) error {
	caps, err := rawJSON("capabilities", ses.Capabilities)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(c conn) error {
		_, err := c.exec(ctx, `INSERT INTO cp_sessions (`+sessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			ses.ID, ses.Identity, ses.Name, string(ses.Role), caps, ses.CreatedAt, ses.HeartbeatAt, ses.EndedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("create session %s: %w", ses.ID, err)
	}
	return nil
}

// GetSession returns one session.
func (s *store) GetSession(ctx context.Context, id string) (*controlplane.Session, error) {
	ses, err := scanSession(s.reader().queryRow(ctx, `SELECT `+sessionCols+` FROM cp_sessions WHERE id = ?`, id))
	if err != nil {
		return nil, notFound(err, "session", id)
	}
	return &ses, nil
}

// ListSessions returns sessions newest first.
func (s *store) ListSessions(ctx context.Context, identity string, n int) ([]controlplane.Session, error) {
	var f filter
	f.eq("identity", identity)
	out, err := queryAll(ctx, s.reader(), scanSession, `SELECT `+sessionCols+` FROM cp_sessions`+f.where()+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(f.args, limit(n))...)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// HeartbeatSession sets heartbeat_at of a session that has not ended.
func (s *store) HeartbeatSession(ctx context.Context, id string, now time.Time) error {
	err := s.write(ctx, func(c conn) error {
		n, err := c.exec(ctx, `UPDATE cp_sessions SET heartbeat_at = ? WHERE id = ? AND ended_at IS NULL`, now, id)
		if err == nil && n == 0 {
			err = c.liveSession(ctx, id, "")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("heartbeat session %s: %w", id, err)
	}
	return nil
}

// liveSession returns ENOTFOUND for a missing session and ECONFLICT for
// one that ended; lock ends the SELECT (a row lock, or "").
func (c conn) liveSession(ctx context.Context, id, lock string) error {
	var ended timeCol
	if err := c.queryRow(ctx, `SELECT ended_at FROM cp_sessions WHERE id = ?`+lock, id).Scan(&ended); err != nil {
		return notFound(err, "session", id)
	}
	if t := time.Time(ended); !t.IsZero() {
		return wq.Errorf(wq.ECONFLICT, "session %s ended at %s", id, t.Format(time.RFC3339Nano))
	}
	return nil
}

// EndSession ends a session and releases its active leases, their
// terminal locks with them.
func (s *store) EndSession(ctx context.Context, id string, ev controlplane.Event, now time.Time) ([]controlplane.Lease, error) {
	ev = defaults(ev, controlplane.EventSession, now)
	ev.SessionID = cmp.Or(ev.SessionID, id)
	var released []controlplane.Lease
	err := s.write(ctx, func(c conn) error {
		n, err := c.exec(ctx, `UPDATE cp_sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL`, now, id)
		if err == nil && n == 0 {
			err = c.liveSession(ctx, id, "")
		}
		if err != nil {
			return err
		}
		released, err = c.endLeases(ctx, controlplane.LeaseReleased, now, func(l controlplane.Lease) controlplane.Event {
			return leaseEvent(controlplane.EventReleased, ev.Actor, "session ended", l, now)
		}, `session_id = ?`, id)
		if err != nil {
			return err
		}
		return c.appendEvent(ctx, ev)
	})
	if err != nil {
		return nil, fmt.Errorf("end session %s: %w", id, err)
	}
	return released, nil
}
