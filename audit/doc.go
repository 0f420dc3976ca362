// Package audit writes audit entries (DDR-28) to sinks, each a
// wq.AuditSink:
//
//   - LogSink, Multi, Safe and Memory (audit.go): one structured log
//     record per entry; several sinks at once; a wrapper that keeps a
//     failing or panicking sink from breaking processing; and entries
//     kept in memory, for tests and callers that inspect them.
//   - Archive (archive.go), the record: batches of gzipped JSON lines,
//     under minute-partitioned keys, written in the background to an
//     ObjectStore, an S3-compatible bucket (S3Store, s3.go) or a local
//     directory (DirStore, dir.go).
//   - History (history.go) and Recent (recent.go), copies for the pages:
//     an item's entries kept in the database, on every instance and
//     bounded by age, or what this process heard since it started.
package audit
