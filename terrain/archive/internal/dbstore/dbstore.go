// Package dbstore holds what the archive's two database stores, pgstore
// (PostgreSQL) and sqlitestore (SQLite), do alike: the checks of their
// limits, the admission of a call, the paged Scan and the reading of one
// page, and the least-recently-used eviction with its drift guard. The SQL
// and the transactions stay with each store; this package only sees rows
// and the statements a store hands it.
//
// Every error it builds starts with the store's package name (pkg), so a
// caller reads the same messages as before the code was shared.
package dbstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/rtpengine/rtp/internal/txgate"
	"github.com/rtpengine/rtp/terrain/archive"
)

// Bounds of one Scan page (one read transaction).
const (
	ScanPageRows  = 64
	ScanPageBytes = 8 << 20
)

// ValidateLimits reports each negative field of l.
func ValidateLimits(pkg string, l archive.Limits) []error {
	var errs []error
	if l.MaxEntries < 0 {
		errs = append(errs, fmt.Errorf("%s: Limits.MaxEntries %d is negative", pkg, l.MaxEntries))
	}
	if l.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%s: Limits.MaxBytes %d is negative", pkg, l.MaxBytes))
	}
	return errs
}

// Calls admits the calls of one store and runs their transactions. The
// zero value is not usable: a store makes one with its gate.
type Calls struct {
	// Gate admits the calls and bounds their transactions.
	Gate *txgate.Gate
	// Pkg names the store in errors.
	Pkg string
	// Fail wraps an error of the database from operation op: given the
	// caller's context and the transaction's, it tells a caller's context
	// error and a transaction that ran out of time from other failures.
	Fail func(op string, ctx, txctx context.Context, err error) error
}

// Enter admits a call: archive.ErrStoreClosed once the store is closed,
// ctx's error (wrapped, naming op) when ctx is done. A nil error must be
// paired with c.Gate.Leave.
func (c Calls) Enter(ctx context.Context, op string) error {
	if err := c.Gate.Enter(ctx); err != nil {
		if errors.Is(err, txgate.ErrClosed) {
			return archive.ErrStoreClosed
		}
		return fmt.Errorf("%s: %s: %w", c.Pkg, op, err)
	}
	return nil
}

// Tx runs fn as one transaction of an admitted call: it waits for a
// transaction slot (honouring ctx), runs fn with the transaction's context
// (bounded by the gate's timeout from then on) and frees the slot. An
// error waiting for the slot is wrapped naming op; fn's error goes through
// Fail.
func (c Calls) Tx(ctx context.Context, op string, fn func(txctx context.Context) error) error {
	txctx, release, err := c.Gate.Admit(ctx)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.Pkg, op, err)
	}
	defer release()
	if err := fn(txctx); err != nil {
		return c.Fail(op, ctx, txctx, err)
	}
	return nil
}

// Run is one call of one transaction: Enter, Tx and Leave.
func (c Calls) Run(ctx context.Context, op string, fn func(txctx context.Context) error) error {
	if err := c.Enter(ctx, op); err != nil {
		return err
	}
	defer c.Gate.Leave()
	return c.Tx(ctx, op, fn)
}

// NonNil returns b, or an empty slice for nil: records keep their shape.
func NonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Scan calls fn for every record, in digest order, reading them with page:
// page(after) returns the records whose digest follows after (empty: from
// the first), and whether more may follow. Scan stops at the first error
// fn returns, which it returns as is, and checks ctx between pages.
func Scan(ctx context.Context, pkg string, page func(after []byte) ([]archive.Record, bool, error), fn func(archive.Record) error) error {
	after := []byte{}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: scan: %w", pkg, err)
		}
		recs, more, err := page(after)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if !more || len(recs) == 0 {
			return nil
		}
		last := recs[len(recs)-1].Digest
		after = last[:]
	}
}

// Rows is what ReadPage needs of a query's result: *sql.Rows and pgx.Rows
// both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadPage reads one Scan page from rows of (digest, key, payload), asked
// for at most ScanPageRows rows: it stops early once the page holds
// ScanPageBytes of records. more reports whether more records may follow.
// Its errors are for the caller's Calls.Fail.
func ReadPage(rows Rows) (page []archive.Record, more bool, err error) {
	var bytes int64
	for rows.Next() {
		var d, key, payload []byte
		if err := rows.Scan(&d, &key, &payload); err != nil {
			return nil, false, err
		}
		if len(d) != len(archive.Digest{}) {
			return nil, false, fmt.Errorf("row with a %d-byte digest", len(d))
		}
		r := archive.Record{Digest: archive.Digest(d), Key: NonNil(key), Payload: NonNil(payload)}
		page = append(page, r)
		bytes += r.Size()
		if bytes >= ScanPageBytes {
			return page, true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	return page, len(page) == ScanPageRows, nil
}

// Counters are a store's retained entries and bytes (of Record.Size), as a
// write transaction reads them at its start and writes them back at its
// end.
type Counters struct {
	Entries, Bytes int64
}

// Over reports whether c exceeds a limit of l.
func (c Counters) Over(l archive.Limits) bool {
	return c.Entries > l.MaxEntries || c.Bytes > l.MaxBytes
}

// Victim is an eviction candidate: a record's digest and size.
type Victim struct {
	Digest []byte
	Size   int64
}

// ReadVictims reads eviction candidates from rows of (digest, size).
func ReadVictims(rows Rows) ([]Victim, error) {
	var out []Victim
	for rows.Next() {
		var v Victim
		if err := rows.Scan(&v.Digest, &v.Size); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Tx is what eviction needs of one write transaction.
type Tx interface {
	// Candidates returns the next least recently used records (ties by
	// digest) other than the one with digest keep, a bounded batch.
	Candidates(keep []byte) ([]Victim, error)
	// Delete deletes the given records and reports how many rows and how
	// many bytes of Record.Size it actually removed.
	Delete(vs []Victim) (removed, freed int64, err error)
	// Count counts the rows: entries and the sum of their sizes.
	Count() (Counters, error)
	// Repaired tells of counters that disagreed with the rows (was) and
	// were replaced by the counted figures (now), for why.
	Repaired(why string, was, now Counters)
}

// Recount replaces c by the figures t counts, telling t.Repaired when they
// differ.
func Recount(t Tx, c *Counters, why string) error {
	n, err := t.Count()
	if err != nil {
		return fmt.Errorf("recount: %w", err)
	}
	if n != *c {
		t.Repaired(why, *c, n)
	}
	*c = n
	return nil
}

// Evict deletes least recently used records (ties by digest), never the one
// with digest keep (nil: none), until c is within l, keeping c up to date.
// Of each batch of candidates it deletes the shortest prefix whose removal
// meets both limits.
//
// Drift guard: the counters are trusted only while they agree with what
// the deletes remove. If a delete removes fewer rows than chosen, or the
// candidates run out while the counters still exceed a limit, the counters
// are recounted from the rows (Recount) and eviction resumes from the true
// figures; a second disagreement in one transaction is an error, so the
// loop always ends.
func Evict(t Tx, c *Counters, l archive.Limits, keep []byte) error {
	if keep == nil {
		keep = []byte{} // digest <> NULL would match nothing
	}
	recounted := false
	drift := func(why string) error {
		if recounted {
			return fmt.Errorf("evict: counters disagree with the rows again (%s)", why)
		}
		recounted = true
		return Recount(t, c, why)
	}
	for c.Over(l) {
		vs, err := t.Candidates(keep)
		if err != nil {
			return fmt.Errorf("evict: %w", err)
		}
		if len(vs) == 0 {
			if err := drift("no record left to evict while over a limit"); err != nil {
				return err
			}
			continue
		}
		after, n := *c, 0
		for n < len(vs) && after.Over(l) {
			after.Entries--
			after.Bytes -= vs[n].Size
			n++
		}
		removed, freed, err := t.Delete(vs[:n])
		if err != nil {
			return fmt.Errorf("evict: %w", err)
		}
		c.Entries -= removed
		c.Bytes -= freed
		if removed != int64(n) {
			if err := drift("an eviction removed less than chosen"); err != nil {
				return err
			}
		}
	}
	return nil
}
