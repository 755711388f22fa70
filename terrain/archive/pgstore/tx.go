package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// schemaVersion is the version this package writes in the meta row.
const schemaVersion = 1

// queries holds every statement with the schema's quoted names filled in.
type queries struct {
	ddl                           []string
	exists                        string    // $1..$4: names; true when all exist
	names                         [4]string // meta, records, recency, records_lru
	lockMeta, storeMeta, count    string
	get, upsert, candidates, del  string
	deleteOne, clear, scan, stats string
}

func newQueries(schema string) queries {
	sch := pgx.Identifier{schema}.Sanitize()
	records := pgx.Identifier{schema, "records"}.Sanitize()
	meta := pgx.Identifier{schema, "meta"}.Sanitize()
	seq := pgx.Identifier{schema, "recency"}.Sanitize()
	// nextval takes the sequence's name as text: quote it as a literal.
	seqLit := "'" + escapeLiteral(seq) + "'"
	return queries{
		exists: `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AND to_regclass($3) IS NOT NULL AND to_regclass($4) IS NOT NULL`,
		names:  [4]string{meta, records, seq, pgx.Identifier{schema, "records_lru"}.Sanitize()},
		ddl: []string{
			`CREATE SCHEMA IF NOT EXISTS ` + sch,
			`CREATE TABLE IF NOT EXISTS ` + meta + ` (
				id      integer PRIMARY KEY CHECK (id = 1),
				version integer NOT NULL,
				entries bigint  NOT NULL,
				bytes   bigint  NOT NULL)`,
			`INSERT INTO ` + meta + ` (id, version, entries, bytes) VALUES (1, ` + fmt.Sprint(schemaVersion) + `, 0, 0) ON CONFLICT (id) DO NOTHING`,
			`CREATE SEQUENCE IF NOT EXISTS ` + seq,
			`CREATE TABLE IF NOT EXISTS ` + records + ` (
				digest  bytea  PRIMARY KEY CHECK (octet_length(digest) = 32),
				size    bigint NOT NULL CHECK (size >= 0),
				recency bigint NOT NULL,
				key     bytea  NOT NULL,
				payload bytea  NOT NULL)`,
			`CREATE INDEX IF NOT EXISTS records_lru ON ` + records + ` (recency, digest) INCLUDE (size)`,
		},
		lockMeta:  `SELECT version, entries, bytes FROM ` + meta + ` WHERE id = 1 FOR UPDATE`,
		storeMeta: `UPDATE ` + meta + ` SET entries = $1, bytes = $2 WHERE id = 1`,
		count:     `SELECT count(*), coalesce(sum(size), 0)::bigint FROM ` + records,
		get:       `UPDATE ` + records + ` SET recency = nextval(` + seqLit + `) WHERE digest = $1 RETURNING key, payload`,
		// The old size comes from the statement's snapshot, taken before
		// the insert; the meta row lock keeps any other writer out.
		upsert: `WITH old AS (SELECT size FROM ` + records + ` WHERE digest = $1),
			up AS (INSERT INTO ` + records + ` (digest, size, recency, key, payload)
				VALUES ($1, $2, nextval(` + seqLit + `), $3, $4)
				ON CONFLICT (digest) DO UPDATE SET size = excluded.size, recency = excluded.recency,
					key = excluded.key, payload = excluded.payload
				RETURNING 1)
			SELECT coalesce((SELECT size FROM old), -1) FROM up`,
		candidates: `SELECT digest, size FROM ` + records + ` WHERE digest <> $1 ORDER BY recency, digest LIMIT $2`,
		del:        `DELETE FROM ` + records + ` WHERE digest = ANY($1) RETURNING size`,
		deleteOne:  `DELETE FROM ` + records + ` WHERE digest = $1 RETURNING size`,
		clear:      `TRUNCATE ` + records,
		scan:       `SELECT digest, key, payload FROM ` + records + ` WHERE digest > $1 ORDER BY digest LIMIT $2`,
		stats:      `SELECT entries, bytes FROM ` + meta + ` WHERE id = 1`,
	}
}

// escapeLiteral doubles single quotes for use inside a SQL string literal.
func escapeLiteral(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// wtx is the state of one write transaction: the counters read (under the
// meta row lock) at its start, written back at its end. It is the
// dbstore.Tx of its eviction.
type wtx struct {
	ctx     context.Context
	tx      pgx.Tx
	s       *Store
	version int
	c       dbstore.Counters
}

var _ dbstore.Tx = (*wtx)(nil)

// put inserts or replaces r as the most recent record, then evicts.
func (t *wtx) put(r archive.Record) error {
	var old int64
	if err := t.tx.QueryRow(t.ctx, t.s.q.upsert, r.Digest[:], r.Size(), dbstore.NonNil(r.Key), dbstore.NonNil(r.Payload)).Scan(&old); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if old < 0 {
		t.c.Entries++
		old = 0
	}
	t.c.Bytes += r.Size() - old
	return t.evict(r.Digest[:])
}

// remove deletes the record with digest d, if present.
func (t *wtx) remove(d archive.Digest) error {
	var size int64
	err := t.tx.QueryRow(t.ctx, t.s.q.deleteOne, d[:]).Scan(&size)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	t.c.Entries--
	t.c.Bytes -= size
	return nil
}

// removeAll deletes every record.
func (t *wtx) removeAll() error {
	if _, err := t.tx.Exec(t.ctx, t.s.q.clear); err != nil {
		return fmt.Errorf("clear: %w", err)
	}
	t.c = dbstore.Counters{}
	return nil
}

// evict brings the store within its limits (dbstore.Evict), never evicting
// the record with digest keep (nil: none).
func (t *wtx) evict(keep []byte) error { return dbstore.Evict(t, &t.c, t.s.opts.Limits, keep) }

// recount replaces the counters by COUNT/SUM over the rows (dbstore.Recount).
func (t *wtx) recount(why string) error { return dbstore.Recount(t, &t.c, why) }

// Candidates implements dbstore.Tx.
func (t *wtx) Candidates(keep []byte) ([]dbstore.Victim, error) {
	rows, err := t.tx.Query(t.ctx, t.s.q.candidates, keep, evictBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return dbstore.ReadVictims(rows)
}

// Delete implements dbstore.Tx: one statement for the batch, the sizes
// from the rows it deleted.
func (t *wtx) Delete(vs []dbstore.Victim) (removed, freed int64, err error) {
	digests := make([][]byte, len(vs))
	for i, v := range vs {
		digests[i] = v.Digest
	}
	rows, err := t.tx.Query(t.ctx, t.s.q.del, digests)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var size int64
		if err := rows.Scan(&size); err != nil {
			return 0, 0, err
		}
		removed++
		freed += size
	}
	return removed, freed, rows.Err()
}

// Count implements dbstore.Tx.
func (t *wtx) Count() (dbstore.Counters, error) {
	var n dbstore.Counters
	err := t.tx.QueryRow(t.ctx, t.s.q.count).Scan(&n.Entries, &n.Bytes)
	return n, err
}

// Repaired implements dbstore.Tx: it logs the repair.
func (t *wtx) Repaired(why string, was, now dbstore.Counters) {
	t.s.log.Warn("pgstore: counters repaired", "schema", t.s.opts.Schema, "reason", why,
		"entries", was.Entries, "counted_entries", now.Entries, "bytes", was.Bytes, "counted_bytes", now.Bytes)
}
