package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	wq "github.com/workqueue-dev/workqueue"
	"github.com/workqueue-dev/workqueue/internal/testdb"
	"github.com/workqueue-dev/workqueue/store"
	"github.com/workqueue-dev/workqueue/store/postgres"
)

// TestAnItemIDGoesToPostgreSQLAndBackAsItself: the store's connections
// read and write uuid.UUID (wq.ItemID) as uuid's binary form, and the
// value is the same id both ways: sent as a parameter, compared with its
// text, read back from a uuid column, from an array, and NULL as the zero
// id (as uuid.UUID's own Scan gives).
func TestAnItemIDGoesToPostgreSQLAndBackAsItself(t *testing.T) {
	ctx := context.Background()
	pg := testdb.Open(t, store.KindPostgres).Queue.(*postgres.Store)
	conn, err := postgres.Pool(pg).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if typ, ok := conn.Conn().TypeMap().TypeForOID(pgtype.UUIDOID); !ok || !postgres.IsUUIDCodec(typ.Codec) {
		t.Fatalf("the uuid type's codec is %T, want the store's", typ.Codec)
	}
	id := wq.NewItemID()
	var (
		back, fromArray, null wq.ItemID
		text                  string
		same                  bool
	)
	null = wq.NewItemID()
	if err := conn.QueryRow(ctx, `SELECT $1::uuid, $1::uuid::text, $1::uuid = $2::text::uuid, ($3::uuid[])[1], NULL::uuid`,
		id, id.String(), []uuid.UUID{id}).Scan(&back, &text, &same, &fromArray, &null); err != nil {
		t.Fatal(err)
	}
	if back != id || text != id.String() || !same || fromArray != id || null != (wq.ItemID{}) {
		t.Errorf("sent %s: read %s, text %q, equal to its text %v, from an array %s, NULL read as %s",
			id, back, text, same, fromArray, null)
	}
}
