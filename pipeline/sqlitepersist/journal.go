package sqlitepersist

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
)

var _ pipeline.Journal = (*Region)(nil)

// MarkHot implements pipeline.Persister: it never waits for the database.
// The writer commits an urgent hot mark without its batch delay, and the
// others with their batch; while commits are failing, done hears of the
// failure at once.
func (r *Region) MarkHot(loc pipeline.Location, urgent bool, done func(error)) {
	r.d.w.MarkHot(r.region, r.key, loc, urgent, done)
}

// Recovery implements pipeline.Persister. The DB finds what the previous
// run left when it is opened, so the Recovery is known before Load too.
func (r *Region) Recovery() pipeline.Recovery {
	return pipeline.Recovery{Unclean: r.d.unclean, Discarded: slices.Clone(r.d.discarded[r.region])}
}

// Unclean reports whether the previous run of the database did not shut
// down cleanly (see pipeline.Recovery).
func (d *DB) Unclean() bool { return d.unclean }

// Record implements pipeline.Journal: it never waits for the database.
func (r *Region) Record(m pipeline.Mark) uint64 {
	return r.d.w.Record(r.region, m, func() uint64 { return r.d.markSeq.Add(1) })
}

// Position implements pipeline.Journal.
func (r *Region) Position() uint64 { return r.d.markSeq.Load() }

// Trim implements pipeline.Journal: it never waits for the database.
func (r *Region) Trim(seq uint64) { r.d.w.Trim(r.region, seq) }

// Claim implements pipeline.Journal: it never waits for the database.
func (r *Region) Claim(s pipeline.Spot) { r.d.w.Claim(r.region, s) }

// TrimSpots implements pipeline.Journal: it never waits for the database.
func (r *Region) TrimSpots(before time.Time) { r.d.w.TrimSpots(r.region, before) }

// Marks implements pipeline.Journal.
func (r *Region) Marks(ctx context.Context) ([]pipeline.Mark, error) {
	if err := r.d.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlitepersist: marks of %s: %w", r.region, err)
	}
	rows, err := r.d.db.QueryContext(ctx, sqlMarks, r.region)
	if err != nil {
		return nil, fmt.Errorf("sqlitepersist: marks of %s: %w", r.region, err)
	}
	defer rows.Close()
	var out []pipeline.Mark
	for rows.Next() {
		var m pipeline.Mark
		var seq, at int64
		var cause int
		if err := rows.Scan(&seq, &m.Index, &cause, &m.Source, &at); err != nil {
			return nil, fmt.Errorf("sqlitepersist: marks of %s: %w", r.region, err)
		}
		m.Seq, m.Cause, m.At = uint64(seq), memory.Cause(cause), time.Unix(0, at)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitepersist: marks of %s: %w", r.region, err)
	}
	return out, nil
}

// Spots implements pipeline.Journal.
func (r *Region) Spots(ctx context.Context, since time.Time) ([]pipeline.Spot, error) {
	if err := r.d.Flush(ctx); err != nil {
		return nil, fmt.Errorf("sqlitepersist: spots of %s: %w", r.region, err)
	}
	if _, err := r.d.db.ExecContext(ctx, sqlOldSpots, r.region, since.UnixNano()); err != nil {
		return nil, fmt.Errorf("sqlitepersist: spots of %s: %w", r.region, err)
	}
	rows, err := r.d.db.QueryContext(ctx, sqlSpots, r.region)
	if err != nil {
		return nil, fmt.Errorf("sqlitepersist: spots of %s: %w", r.region, err)
	}
	defer rows.Close()
	var out []pipeline.Spot
	for rows.Next() {
		var s pipeline.Spot
		var at int64
		if err := rows.Scan(&s.X, &s.Z, &at); err != nil {
			return nil, fmt.Errorf("sqlitepersist: spots of %s: %w", r.region, err)
		}
		s.At = time.Unix(0, at)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitepersist: spots of %s: %w", r.region, err)
	}
	return out, nil
}
