package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

type opKind uint8

const (
	opPut opKind = iota + 1
	opDelete
	opClear
)

// writeOp is one write handed to the writer goroutine.
type writeOp struct {
	ctx   context.Context
	name  string // for errors: "put", "delete", "clear"
	kind  opKind
	rec   archive.Record // opPut: the record; opDelete: its Digest
	reply chan error     // capacity 1
}

// Statements of the writing connection.
const (
	sqlLoadMeta   = `SELECT entries, bytes, seq FROM meta WHERE id = 1`
	sqlStoreMeta  = `UPDATE meta SET entries = ?, bytes = ?, seq = ? WHERE id = 1`
	sqlTouch      = `UPDATE records SET recency = ? WHERE digest = ?`
	sqlSizeOf     = `SELECT size FROM records WHERE digest = ?`
	sqlUpsert     = `INSERT INTO records (digest, size, recency, key, payload) VALUES (?, ?, ?, ?, ?) ON CONFLICT (digest) DO UPDATE SET size = excluded.size, recency = excluded.recency, key = excluded.key, payload = excluded.payload`
	sqlCandidates = `SELECT digest, size FROM records WHERE digest <> ? ORDER BY recency, digest LIMIT ?`
	sqlDelete     = `DELETE FROM records WHERE digest = ?`
	sqlClear      = `DELETE FROM records`
	sqlCount      = `SELECT count(*), coalesce(sum(size), 0) FROM records`
)

// writer owns the one writing connection and its prepared statements. It is
// used by Open (schema, counter check), then only by the writer goroutine.
type writer struct {
	path   string
	limits archive.Limits
	log    *slog.Logger
	conn   *sql.Conn

	loadMeta, storeMeta, touch, sizeOf, upsert, candidates, del, clear, count *sql.Stmt
}

// prepare prepares the statements; the schema must exist.
func (w *writer) prepare(ctx context.Context) error {
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&w.loadMeta, sqlLoadMeta},
		{&w.storeMeta, sqlStoreMeta},
		{&w.touch, sqlTouch},
		{&w.sizeOf, sqlSizeOf},
		{&w.upsert, sqlUpsert},
		{&w.candidates, sqlCandidates},
		{&w.del, sqlDelete},
		{&w.clear, sqlClear},
		{&w.count, sqlCount},
	} {
		st, err := w.conn.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = st
	}
	return nil
}

func (w *writer) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{w.loadMeta, w.storeMeta, w.touch, w.sizeOf, w.upsert, w.candidates, w.del, w.clear, w.count} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if w.conn != nil {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}

// wtx is the state of one write transaction: the counters and recency
// sequence read from the meta row at its start, written back at its end.
// It is the dbstore.Tx of its eviction.
type wtx struct {
	ctx context.Context
	w   *writer
	c   dbstore.Counters
	seq int64
}

var _ dbstore.Tx = (*wtx)(nil)

// tx runs one write transaction: BEGIN IMMEDIATE (so concurrent writers,
// possibly in other processes, queue on the database lock instead of failing
// to upgrade), read the meta row, apply the pending touches in hit order,
// run fn, write the meta row, COMMIT. On any failure it rolls back.
func (w *writer) tx(ctx context.Context, pending []touch, fn func(*wtx) error) (err error) {
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			w.rollback()
		}
	}()
	t := &wtx{ctx: ctx, w: w}
	if err := w.loadMeta.QueryRowContext(ctx).Scan(&t.c.Entries, &t.c.Bytes, &t.seq); err != nil {
		return fmt.Errorf("read counters: %w", err)
	}
	for _, tc := range pending {
		t.seq++
		if _, err := w.touch.ExecContext(ctx, t.seq, tc.digest[:]); err != nil {
			return fmt.Errorf("recency: %w", err)
		}
	}
	if fn != nil {
		if err := fn(t); err != nil {
			return err
		}
	}
	if _, err := w.storeMeta.ExecContext(ctx, t.c.Entries, t.c.Bytes, t.seq); err != nil {
		return fmt.Errorf("write counters: %w", err)
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rollback ends a failed transaction. SQLite may already have rolled it
// back (an interrupted write does), which is not an error.
func (w *writer) rollback() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := w.conn.ExecContext(ctx, "ROLLBACK"); err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		w.log.Error("sqlitestore: rollback failed", "path", w.path, "err", err)
	}
}

// put inserts or replaces r as the most recent record, then evicts.
func (t *wtx) put(r archive.Record) error {
	var old int64
	exists := true
	if err := t.w.sizeOf.QueryRowContext(t.ctx, r.Digest[:]).Scan(&old); errors.Is(err, sql.ErrNoRows) {
		exists = false
	} else if err != nil {
		return fmt.Errorf("look up: %w", err)
	}
	t.seq++
	if _, err := t.w.upsert.ExecContext(t.ctx, r.Digest[:], r.Size(), t.seq, dbstore.NonNil(r.Key), dbstore.NonNil(r.Payload)); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if !exists {
		t.c.Entries++
	}
	t.c.Bytes += r.Size() - old
	return t.evict(r.Digest[:])
}

// remove deletes the record with digest d, if present.
func (t *wtx) remove(d archive.Digest) error {
	var size int64
	if err := t.w.sizeOf.QueryRowContext(t.ctx, d[:]).Scan(&size); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("look up: %w", err)
	}
	res, err := t.w.del.ExecContext(t.ctx, d[:])
	if err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		t.c.Entries--
		t.c.Bytes -= size
	}
	return nil
}

// removeAll deletes every record.
func (t *wtx) removeAll() error {
	if _, err := t.w.clear.ExecContext(t.ctx); err != nil {
		return fmt.Errorf("clear: %w", err)
	}
	t.c = dbstore.Counters{}
	return nil
}

// evict brings the store within its limits (dbstore.Evict), never evicting
// the record with digest keep (nil: none).
func (t *wtx) evict(keep []byte) error { return dbstore.Evict(t, &t.c, t.w.limits, keep) }

// recount replaces the counters by COUNT/SUM over the rows (dbstore.Recount).
func (t *wtx) recount(why string) error { return dbstore.Recount(t, &t.c, why) }

// Candidates implements dbstore.Tx.
func (t *wtx) Candidates(keep []byte) ([]dbstore.Victim, error) {
	rows, err := t.w.candidates.QueryContext(t.ctx, keep, evictBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return dbstore.ReadVictims(rows)
}

// Delete implements dbstore.Tx: one statement per record (SQLite has no
// array parameter), the sizes those of the candidates.
func (t *wtx) Delete(vs []dbstore.Victim) (removed, freed int64, err error) {
	for _, v := range vs {
		res, err := t.w.del.ExecContext(t.ctx, v.Digest)
		if err != nil {
			return removed, freed, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return removed, freed, err
		}
		if n == 1 {
			removed++
			freed += v.Size
		}
	}
	return removed, freed, nil
}

// Count implements dbstore.Tx.
func (t *wtx) Count() (dbstore.Counters, error) {
	var n dbstore.Counters
	err := t.w.count.QueryRowContext(t.ctx).Scan(&n.Entries, &n.Bytes)
	return n, err
}

// Repaired implements dbstore.Tx: it logs the repair.
func (t *wtx) Repaired(why string, was, now dbstore.Counters) {
	t.w.log.Warn("sqlitestore: counters repaired", "path", t.w.path, "reason", why,
		"entries", was.Entries, "counted_entries", now.Entries, "bytes", was.Bytes, "counted_bytes", now.Bytes)
}

// run is the writer goroutine: it executes write operations one at a time
// and applies batched recency updates, until s.stop is closed, when it
// applies what is still pending and returns (closing s.done).
func (s *Store) run() {
	defer close(s.done)
	if s.w == nil { // read-only: nothing to write
		<-s.stop
		return
	}
	var timer *time.Timer
	var timerC <-chan time.Time
	arm := func() {
		if timerC != nil {
			return
		}
		if timer == nil {
			timer = time.NewTimer(s.opts.TouchDelay)
		} else {
			timer.Reset(s.opts.TouchDelay)
		}
		timerC = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case op := <-s.ops:
			op.reply <- s.execWrite(op)
		case <-s.touches.signal:
			if s.touches.len() >= touchBatch {
				s.flushTouches()
			} else {
				arm()
			}
		case <-timerC:
			timerC = nil
			s.flushTouches()
		case <-s.stop:
			s.flushTouches()
			return
		}
	}
}

// execWrite runs one write operation in its own transaction, after taking a
// transaction slot. Pending touches are applied first, inside the same
// transaction, so eviction sees every hit that returned before the write
// was handed over.
func (s *Store) execWrite(op *writeOp) error {
	if err := op.ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op.name, err)
	}
	txctx, release, err := s.admit(op.ctx)
	if err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", op.name, err)
	}
	defer release()
	pending := s.touches.take()
	var fn func(*wtx) error
	reclaim := false
	switch op.kind {
	case opPut:
		fn = func(t *wtx) error { return t.put(op.rec) }
		if low, missing := s.checkSpace(); low {
			// The disk is low: store nothing, give space back instead.
			s.yielded.Add(1)
			fn = func(t *wtx) error { return t.shrink(missing) }
			reclaim = true
		}
	case opDelete:
		fn = func(t *wtx) error { return t.remove(op.rec.Digest) }
	case opClear:
		pending = nil // a cleared store has nothing to touch
		fn = (*wtx).removeAll
	default:
		return fmt.Errorf("sqlitestore: %s: unknown write operation %d", op.name, op.kind)
	}
	if err := s.w.tx(txctx, pending, fn); err != nil {
		if op.kind != opClear {
			s.touches.restore(pending)
		}
		return s.fail(op.name, op.ctx, txctx, err)
	}
	if reclaim {
		s.reclaim(txctx)
	}
	return nil
}

// flushTouches applies pending touches in a transaction of their own. On
// failure they stay pending (the next write applies them first) and the
// failure is logged.
func (s *Store) flushTouches() {
	if s.touches.len() == 0 {
		return
	}
	txctx, release, err := s.admit(context.Background())
	if err != nil { // cannot happen with a background context
		return
	}
	defer release()
	pending := s.touches.take()
	if err := s.w.tx(txctx, pending, nil); err != nil {
		s.touches.restore(pending)
		s.warnings.Warn(s.log, "sqlitestore: recency update failed; kept for the next write", "path", s.path, "pending", len(pending), "err", s.fail("touch", context.Background(), txctx, err))
	}
}
