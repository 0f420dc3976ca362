package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	wq "github.com/workqueue-dev/workqueue"
)

// wakeupChannel carries "item_type:id" for every item work was enqueued
// for, so that every instance handling the type wakes at once.
const wakeupChannel = "workqueue_wakeup"

// notifyItem sends the wake-up for an item inside tx: PostgreSQL delivers
// it on commit, never for a rolled-back write.
func notifyItem(ctx context.Context, tx pgx.Tx, id wq.ItemID) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+wakeupChannel+`', item_type || ':' || id::text) FROM work_items WHERE id = $1`, id)
	return translate(err)
}

// ListenWakeups listens on a dedicated connection until ctx ends or the
// connection fails (the caller reconnects).
func (s *Store) ListenWakeups(ctx context.Context, ready func(), wake func(itemType string, id wq.ItemID)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("listen: %w", translate(err))
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+wakeupChannel); err != nil {
		return fmt.Errorf("listen: %w", translate(err))
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+wakeupChannel)
	ready()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("listen: %w", translate(err))
		}
		typ, idText, ok := strings.Cut(n.Payload, ":")
		if id, err := uuid.Parse(idText); ok && err == nil {
			wake(typ, id)
		}
	}
}
