package pgpersist

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
)

// Region is the pipeline.Persister and pipeline.Journal of one region and
// key, made by DB.Region. It is safe for concurrent use.
type Region struct {
	d      *DB
	region string
	key    pipeline.Key
}

var (
	_ pipeline.Persister = (*Region)(nil)
	_ pipeline.Journal   = (*Region)(nil)
)

// Add implements pipeline.Persister; it never waits for the database.
// The row is owned by the node.
func (r *Region) Add(loc pipeline.Location) {
	r.d.w.Add(r.region, r.key, loc)
}

// Remove implements pipeline.Persister; it never waits for the database.
func (r *Region) Remove(loc pipeline.Location) {
	r.d.w.Remove(r.region, r.key, loc)
}

// MarkHot implements pipeline.Persister; it never waits for the database.
// The writer commits an urgent hot mark without its batch delay (the
// others with their batch); the row is then
// owned by the node, unless another node owns it, in which case it is
// left alone. While commits are failing, and once the lease is lost, done
// hears of it at once.
func (r *Region) MarkHot(loc pipeline.Location, urgent bool, done func(error)) {
	if r.d.lost() {
		done(ErrLeaseLost)
		return
	}
	r.d.w.MarkHot(r.region, r.key, loc, urgent, done)
}

// Recovery implements pipeline.Persister: what the node's previous run
// left, known from Open. Only this node's rows count: another node's crash
// is recovered by the sweep, and reported to that node when it opens.
func (r *Region) Recovery() pipeline.Recovery {
	return pipeline.Recovery{Unclean: r.d.unclean, Discarded: slices.Clone(r.d.discarded[r.region])}
}

// Flush implements pipeline.Persister (it flushes the whole DB).
func (r *Region) Flush(ctx context.Context) error { return r.d.Flush(ctx) }

// Load implements pipeline.Persister. After flushing the queue it deletes
// the region's rows of other keys, claims every unowned row of the key
// for the node and returns the rows the node owns, one Location per copy,
// in insertion order. Rows other nodes own are not returned. It returns
// ErrLeaseLost once the lease is lost.
func (r *Region) Load(ctx context.Context) ([]pipeline.Location, error) {
	d := r.d
	if err := d.Flush(ctx); err != nil {
		return nil, fmt.Errorf("pgpersist: load %s: %w", r.region, err)
	}
	var out []pipeline.Location
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		out = out[:0]
		if err := d.checkLease(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM locations WHERE region = $1 AND key <> $2`, r.region, string(r.key)); err != nil {
			return fmt.Errorf("drop stale keys: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE locations SET owner = $3 WHERE region = $1 AND key = $2 AND owner IS NULL`,
			r.region, string(r.key), d.node); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT world, x, y, z, idx, n FROM locations WHERE region = $1 AND key = $2 AND owner = $3 ORDER BY id`,
			r.region, string(r.key), d.node)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l pipeline.Location
			var n int
			if err := rows.Scan(&l.World, &l.X, &l.Y, &l.Z, &l.Index, &n); err != nil {
				return err
			}
			for range n {
				out = append(out, l)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgpersist: load %s: %w", r.region, err)
	}
	return out, nil
}

// blockBits sizes the blocks of journal sequence numbers a node reserves:
// 2^32 marks per block, so a run practically never needs a second.
const blockBits = 32

// reserveBlock reserves a fresh block of journal sequence numbers from
// the database's sequence: every block is above every block reserved
// before, by any node, so the Seqs of a node only grow, across its runs
// too.
func (d *DB) reserveBlock(ctx context.Context) error {
	var b int64
	if err := d.pool.QueryRow(ctx, `SELECT nextval('journal_block')`).Scan(&b); err != nil {
		return fmt.Errorf("reserve journal block: %w", err)
	}
	d.mu.Lock()
	d.markSeq = uint64(b) << blockBits
	d.blockEnd = d.markSeq + 1<<blockBits - 1
	d.mu.Unlock()
	return nil
}

// Record implements pipeline.Journal: it never waits for the database,
// except after 2^32 marks of one run, when it reserves the next block of
// sequence numbers (see the package documentation).
func (r *Region) Record(m pipeline.Mark) uint64 {
	d := r.d
	d.mu.Lock()
	full := d.markSeq >= d.blockEnd
	d.mu.Unlock()
	if full {
		d.seqMu.Lock()
		d.mu.Lock()
		full = d.markSeq >= d.blockEnd
		d.mu.Unlock()
		if full {
			ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
			if err := d.reserveBlock(ctx); err != nil {
				d.log.Error("pgpersist: journal mark dropped, no sequence numbers left", "error", err)
				cancel()
				d.seqMu.Unlock()
				return d.Position()
			}
			cancel()
		}
		d.seqMu.Unlock()
	}
	return d.w.Record(r.region, m, func() uint64 {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.markSeq++
		return d.markSeq
	})
}

// Position implements pipeline.Journal: the Seq of the node's last mark,
// or the start of its block before any.
func (r *Region) Position() uint64 { return r.d.Position() }

// Position returns the Seq of the node's last mark (see
// pipeline.Journal.Position).
func (d *DB) Position() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.markSeq
}

// Trim implements pipeline.Journal: it queues the deletion of this
// region's marks up to seq that this node recorded (its snapshot covers
// those; other nodes trim their own). It never waits for the database.
func (r *Region) Trim(seq uint64) {
	r.d.w.Trim(r.region, seq)
}

// Claim implements pipeline.Journal: it never waits for the database.
func (r *Region) Claim(s pipeline.Spot) {
	r.d.w.Claim(r.region, s)
}

// TrimSpots implements pipeline.Journal: the spots are the fleet's, and
// any node's trim covers every node's older claims (the nodes of a
// region share its unique-placement window). It never waits for the
// database.
func (r *Region) TrimSpots(before time.Time) {
	r.d.w.TrimSpots(r.region, before)
}

// Marks implements pipeline.Journal: the region's marks not trimmed,
// recorded by any node, in Seq order.
func (r *Region) Marks(ctx context.Context) ([]pipeline.Mark, error) {
	if err := r.d.Flush(ctx); err != nil {
		return nil, fmt.Errorf("pgpersist: marks of %s: %w", r.region, err)
	}
	rows, err := r.d.pool.Query(ctx, `SELECT seq, idx, cause, source, at FROM memory_journal WHERE region = $1 ORDER BY seq`, r.region)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: marks of %s: %w", r.region, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pipeline.Mark, error) {
		var m pipeline.Mark
		var seq, at int64
		var cause int
		err := row.Scan(&seq, &m.Index, &cause, &m.Source, &at)
		m.Seq, m.Cause, m.At = uint64(seq), memory.Cause(cause), time.Unix(0, at)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgpersist: marks of %s: %w", r.region, err)
	}
	return out, nil
}

// Spots implements pipeline.Journal: the region's spots claimed by any
// node at or after since; older ones are deleted.
func (r *Region) Spots(ctx context.Context, since time.Time) ([]pipeline.Spot, error) {
	if err := r.d.Flush(ctx); err != nil {
		return nil, fmt.Errorf("pgpersist: spots of %s: %w", r.region, err)
	}
	var out []pipeline.Spot
	err := pgx.BeginFunc(ctx, r.d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM spots WHERE region = $1 AND at < $2`, r.region, since.UnixNano()); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT x, z, at FROM spots WHERE region = $1 ORDER BY at, x, z`, r.region)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (pipeline.Spot, error) {
			var s pipeline.Spot
			var at int64
			err := row.Scan(&s.X, &s.Z, &at)
			s.At = time.Unix(0, at)
			return s, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgpersist: spots of %s: %w", r.region, err)
	}
	return out, nil
}
