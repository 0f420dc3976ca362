package postgres

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// uuidCodec is pgx's uuid codec that also reads and writes uuid.UUID
// (wq.ItemID, every item's id) directly, as the 16 bytes of PostgreSQL's
// binary format. pgx knows uuid.UUID only as a driver.Valuer and a
// sql.Scanner: each id sent became its 36-character text and was parsed
// back into bytes, and each id read went through a string and
// uuid.Parse. In the submit bench that was 4% of the process's CPU
// (about 20 µs a submission); in a burn-down, every fenced write's id.
// Other values (pgtype.UUID, [16]byte, text) still go to pgx's codec.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDBinary{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUIDBinary{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDBinary struct{}

func (encodeUUIDBinary) Encode(value any, buf []byte) ([]byte, error) {
	id := value.(uuid.UUID)
	return append(buf, id[:]...), nil
}

type scanUUIDBinary struct{}

// Scan reads the 16 bytes of a uuid into a uuid.UUID; NULL leaves the
// zero id, as uuid.UUID's own Scan does.
func (scanUUIDBinary) Scan(src []byte, dst any) error {
	id := dst.(*uuid.UUID)
	if src == nil {
		*id = uuid.UUID{}
		return nil
	}
	if len(src) != len(id) {
		return fmt.Errorf("a uuid of %d bytes, want %d", len(src), len(id))
	}
	copy(id[:], src)
	return nil
}

// registerUUIDCodec puts uuidCodec in place of pgx's for uuid columns and
// parameters on one connection's type map.
func registerUUIDCodec(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
}
