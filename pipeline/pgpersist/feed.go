package pgpersist

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/internal/rowqueue"
)

// FeedChannel is the PostgreSQL notification channel of the journal feed:
// every commit that adds marks or spots of a region notifies it with the
// schema and the region's name as payload ("schema:region"), so that the other nodes read them at once
// (Region.Feed) rather than at their next poll.
const FeedChannel = "rtp_journal"

// JournalRetention is how long a node's marks stay in the journal after
// its own memory file covers them: the other nodes, and nodes that start
// later, learn the fleet's rejections from the journal, so a mark is
// deleted only once it is older than this (and its node's snapshot
// covers it). Marks of rejections remembered longer live on in the memory
// files of the nodes that saw them.
const JournalRetention = 24 * time.Hour

// FeedLimit bounds the marks one Feed call returns; a reader given that
// many calls again to continue from there.
const FeedLimit = 10_000

// spotSlack is how far before the latest spot time it read a Feed asks
// again: spot times are the writers' clocks, and a spot committed late
// may carry an earlier time than one already read. Reading a spot twice
// is harmless.
const spotSlack = 5 * time.Second

// errNotOwned is MarkHot's answer for a row another node owns, or that is
// gone.
var errNotOwned = fmt.Errorf("pgpersist: hot mark refused: %w", pipeline.ErrNotOwned)

// StrictHot tells the pipeline that a hot mark that failed must keep the
// entry out of the sinks (see pipeline.ErrNotOwned): rows are shared by
// the nodes of a fleet.
func (r *Region) StrictHot() bool { return true }

// Cursor is where one node's reading of a region's feed stands: the last
// Seq read of each other node, and the latest spot time read. The zero
// value reads from the start. A Cursor belongs to one reader.
type Cursor struct {
	seqs   map[string]int64
	spotAt int64 // Unix nanoseconds
}

// FeedStart returns a cursor past every mark and spot the other nodes
// have committed for the region so far: what a reader that has just
// replayed the journal (Marks, Spots) has seen. Marks committed between
// that replay and FeedStart are read twice, which is harmless.
func (r *Region) FeedStart(ctx context.Context) (*Cursor, error) {
	c := &Cursor{seqs: map[string]int64{}}
	rows, err := r.d.pool.Query(ctx, `SELECT node, max(seq) FROM memory_journal WHERE region = $1 AND node <> $2 GROUP BY node`, r.region, r.d.node)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	for rows.Next() {
		var node string
		var seq int64
		if err := rows.Scan(&node, &seq); err != nil {
			rows.Close()
			return nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
		}
		c.seqs[node] = seq
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	var at *int64
	if err := r.d.pool.QueryRow(ctx, `SELECT max(at) FROM spots WHERE region = $1`, r.region).Scan(&at); err != nil {
		return nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	if at != nil {
		c.spotAt = *at
	}
	return c, nil
}

// Feed returns the region's marks and spots that other nodes committed
// after c, and moves c past them. Marks come in each node's Seq order (a
// node's writer commits its marks in that order, so none is skipped);
// spots are read again from spotSlack before the latest time read.
func (r *Region) Feed(ctx context.Context, c *Cursor) ([]pipeline.Mark, []pipeline.Spot, error) {
	if c.seqs == nil {
		c.seqs = map[string]int64{}
	}
	nodes := make([]string, 0, len(c.seqs))
	seqs := make([]int64, 0, len(c.seqs))
	for n, s := range c.seqs {
		nodes, seqs = append(nodes, n), append(seqs, s)
	}
	rows, err := r.d.pool.Query(ctx, `SELECT m.node, m.seq, m.idx, m.cause, m.source, m.at
		FROM memory_journal m LEFT JOIN unnest($3::text[], $4::bigint[]) AS c(node, seq) ON c.node = m.node
		WHERE m.region = $1 AND m.node <> $2 AND m.seq > COALESCE(c.seq, 0)
		ORDER BY m.seq LIMIT $5`, r.region, r.d.node, nodes, seqs, FeedLimit)
	if err != nil {
		return nil, nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	var marks []pipeline.Mark
	next := map[string]int64{}
	for rows.Next() {
		var node string
		var seq, at int64
		var cause int
		var m pipeline.Mark
		if err := rows.Scan(&node, &seq, &m.Index, &cause, &m.Source, &at); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
		}
		m.Seq, m.Cause, m.At = uint64(seq), memory.Cause(cause), time.Unix(0, at)
		marks = append(marks, m)
		next[node] = max(next[node], seq)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	rows, err = r.d.pool.Query(ctx, `SELECT x, z, at FROM spots WHERE region = $1 AND node <> $2 AND at > $3 ORDER BY at`,
		r.region, r.d.node, c.spotAt-int64(spotSlack))
	if err != nil {
		return nil, nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	spots, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pipeline.Spot, error) {
		var s pipeline.Spot
		var at int64
		err := row.Scan(&s.X, &s.Z, &at)
		s.At = time.Unix(0, at)
		return s, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("pgpersist: feed of %s: %w", r.region, err)
	}
	for n, s := range next {
		c.seqs[n] = s
	}
	for _, s := range spots {
		c.spotAt = max(c.spotAt, s.At.UnixNano())
	}
	return marks, spots, nil
}

// Listen calls notify with the region of every feed notification (see
// FeedChannel) until ctx ends, on a connection of its own that it
// reconnects with back-off when it breaks; connected is called with true
// each time it is listening and false each time the connection is lost
// (nil for neither). notify must not block. Listen returns ctx's error.
func (d *DB) Listen(ctx context.Context, notify func(region string), connected func(bool)) error {
	for attempt := uint64(0); ; attempt++ {
		err := d.listenOnce(ctx, notify, connected)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if connected != nil {
			connected(false)
		}
		if attempt == 0 || attempt%60 == 0 {
			d.log.Warn("pgpersist: the feed listener lost its connection; reconnecting", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rowqueue.Backoff(min(attempt, 10), d.opts.RetryMin, d.opts.RetryMax)):
		}
		if err == nil {
			attempt = 0
		}
	}
}

// listenOnce listens on one connection until it fails or ctx ends.
func (d *DB) listenOnce(ctx context.Context, notify func(string), connected func(bool)) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer releaseListener(conn)
	if _, err := conn.Exec(ctx, `LISTEN `+FeedChannel); err != nil {
		return err
	}
	if connected != nil {
		connected(true)
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return ctx.Err()
			}
			return err
		}
		// "schema:region": a notification of another schema's fleet is
		// none of this node's business.
		if region, ok := strings.CutPrefix(n.Payload, d.schema+":"); ok {
			notify(region)
		}
	}
}

// releaseListener gives a listening connection back: it is closed rather
// than reused, so that no pooled connection carries the LISTEN.
func releaseListener(c *pgxpool.Conn) {
	conn := c.Hijack()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// Ping checks that the database answers.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgpersist: %w", err)
	}
	return nil
}

// LiveNodes returns the names of the running nodes whose lease has not
// lapsed and that serve region, sorted: the fleet among which the
// region's screening is shared.
func (d *DB) LiveNodes(ctx context.Context, region string) ([]string, error) {
	rows, err := d.pool.Query(ctx, `SELECT name FROM nodes WHERE state = 'running' AND expires > now() AND $1 = ANY(regions) ORDER BY name`, region)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: live nodes: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgpersist: live nodes: %w", err)
	}
	return names, nil
}

// rejoin registers the node again after its lease was lost (see
// ErrLeaseLost), as a new run of it: its hot rows, which a sweep may have
// discarded already, are deleted, its other rows returned to the pool,
// and a new lease taken. Entries the node still holds may then be marked
// hot again only where their rows are unowned (another node may have
// claimed them meanwhile, and ErrNotOwned keeps them out). It does
// nothing while the lease holds. The lease goroutine calls it at each
// heartbeat once the lease is lost.
func (d *DB) rejoin(ctx context.Context) error {
	if !d.lost() {
		return nil
	}
	if err := d.register(ctx); err != nil {
		return fmt.Errorf("pgpersist: rejoin: %w", err)
	}
	d.mu.Lock()
	d.leaseLost = false
	d.mu.Unlock()
	d.log.Info("pgpersist: the node rejoined the fleet under a new lease", "version", d.version)
	return nil
}
