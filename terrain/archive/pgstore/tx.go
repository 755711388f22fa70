package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/terrain/archive"
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
// meta row lock) at its start, written back at its end.
type wtx struct {
	ctx            context.Context
	tx             pgx.Tx
	s              *Store
	version        int
	entries, bytes int64
}

// put inserts or replaces r as the most recent record, then evicts.
func (t *wtx) put(r archive.Record) error {
	var old int64
	if err := t.tx.QueryRow(t.ctx, t.s.q.upsert, r.Digest[:], r.Size(), nonNil(r.Key), nonNil(r.Payload)).Scan(&old); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if old < 0 {
		t.entries++
		old = 0
	}
	t.bytes += r.Size() - old
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
	t.entries--
	t.bytes -= size
	return nil
}

// removeAll deletes every record.
func (t *wtx) removeAll() error {
	if _, err := t.tx.Exec(t.ctx, t.s.q.clear); err != nil {
		return fmt.Errorf("clear: %w", err)
	}
	t.entries, t.bytes = 0, 0
	return nil
}

func (t *wtx) over() bool {
	l := t.s.opts.Limits
	return t.entries > l.MaxEntries || t.bytes > l.MaxBytes
}

// evict deletes least recently used records (ties by digest), never the
// one with digest keep (nil: none), until both limits hold.
//
// Drift guard: if a batch of deletes removes fewer rows than chosen, or the
// candidates run out while the counters still exceed a limit, the counters
// are recounted from the rows (the repair is logged) and eviction resumes
// from the true figures; a second disagreement in one transaction is an
// error, so the loop always ends.
func (t *wtx) evict(keep []byte) error {
	if keep == nil {
		keep = []byte{}
	}
	recounted := false
	drift := func(why string) error {
		if recounted {
			return fmt.Errorf("evict: counters disagree with the rows again (%s)", why)
		}
		recounted = true
		return t.recount(why)
	}
	for t.over() {
		digests, sizes, err := t.candidates(keep)
		if err != nil {
			return err
		}
		if len(digests) == 0 {
			if err := drift("no record left to evict while over a limit"); err != nil {
				return err
			}
			continue
		}
		// The shortest prefix of candidates whose removal meets both limits.
		entries, bytes, n := t.entries, t.bytes, 0
		l := t.s.opts.Limits
		for n < len(digests) && (entries > l.MaxEntries || bytes > l.MaxBytes) {
			entries--
			bytes -= sizes[n]
			n++
		}
		removed, freed, err := t.deleteAll(digests[:n])
		if err != nil {
			return err
		}
		t.entries -= removed
		t.bytes -= freed
		if removed != int64(n) {
			if err := drift("an eviction removed less than chosen"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *wtx) candidates(keep []byte) (digests [][]byte, sizes []int64, err error) {
	rows, err := t.tx.Query(t.ctx, t.s.q.candidates, keep, evictBatch)
	if err != nil {
		return nil, nil, fmt.Errorf("evict: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d []byte
		var size int64
		if err := rows.Scan(&d, &size); err != nil {
			return nil, nil, fmt.Errorf("evict: %w", err)
		}
		digests = append(digests, d)
		sizes = append(sizes, size)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("evict: %w", err)
	}
	return digests, sizes, nil
}

// deleteAll deletes the given records, returning how many rows and bytes
// the database actually removed.
func (t *wtx) deleteAll(digests [][]byte) (removed, freed int64, err error) {
	rows, err := t.tx.Query(t.ctx, t.s.q.del, digests)
	if err != nil {
		return 0, 0, fmt.Errorf("evict: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var size int64
		if err := rows.Scan(&size); err != nil {
			return 0, 0, fmt.Errorf("evict: %w", err)
		}
		removed++
		freed += size
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("evict: %w", err)
	}
	return removed, freed, nil
}

// recount replaces the counters by COUNT/SUM over the rows, logging the
// repair when they differ.
func (t *wtx) recount(why string) error {
	var n, b int64
	if err := t.tx.QueryRow(t.ctx, t.s.q.count).Scan(&n, &b); err != nil {
		return fmt.Errorf("recount: %w", err)
	}
	if n != t.entries || b != t.bytes {
		t.s.log.Warn("pgstore: counters repaired", "schema", t.s.opts.Schema, "reason", why,
			"entries", t.entries, "counted_entries", n, "bytes", t.bytes, "counted_bytes", b)
	}
	t.entries, t.bytes = n, b
	return nil
}
