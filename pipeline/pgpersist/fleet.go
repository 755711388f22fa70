package pgpersist

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/pipeline"
)

// The states of a nodes row.
const (
	stateRunning = "running" // the node is open
	stateClean   = "clean"   // it closed in order and returned its claims
	stateLapsed  = "lapsed"  // its lease lapsed; a sweep returned its claims
)

// NodeInfo describes one node of the fleet, as Nodes reports it.
type NodeInfo struct {
	Name string
	// Version counts the runs of the node: each Open adds one.
	Version int64
	// State is "running", "clean" (closed in order) or "lapsed" (its
	// lease ran out and a sweep returned its claims).
	State     string
	Started   time.Time // when the current or last run opened
	Heartbeat time.Time // the last renewal of the lease
	Expires   time.Time // when the lease lapses (or lapsed)
	// Live reports a running node whose lease has not lapsed.
	Live bool
	// Owned and Hot count the location rows the node owns, and of those
	// the hot ones (each row once, whatever its copies).
	Owned, Hot int64
	// Software is the version of rtp the node's last run reported
	// (Options.Software); "" when it reported none.
	Software string
	// Regions are the regions the node's last run opened (DB.Region), in
	// the order it opened them.
	Regions []string
	// AsOf is the database's clock when the row was read: ages and
	// times to expiry measured against it do not depend on the reader's
	// clock.
	AsOf time.Time
}

// ttlSeconds is the lease TTL as the float seconds make_interval takes.
func (d *DB) ttlSeconds() float64 { return d.opts.LeaseTTL.Seconds() }

// returnRows discards the hot rows of the nodes (into discarded, for
// their next Open to report) and returns their other rows to the pool.
// It returns how many rows it touched.
func returnRows(ctx context.Context, tx pgx.Tx, nodes []string) (int64, error) {
	tag, err := tx.Exec(ctx, `WITH gone AS (
			DELETE FROM locations WHERE owner = ANY($1) AND hot
			RETURNING owner, region, world, x, y, z, idx, n, id)
		INSERT INTO discarded (node, region, world, x, y, z, idx, n, id) SELECT * FROM gone`, nodes)
	if err != nil {
		return 0, fmt.Errorf("discard hot rows: %w", err)
	}
	hot := tag.RowsAffected()
	tag, err = tx.Exec(ctx, `UPDATE locations SET owner = NULL, hot = false WHERE owner = ANY($1)`, nodes)
	if err != nil {
		return 0, fmt.Errorf("return claims: %w", err)
	}
	return hot + tag.RowsAffected(), nil
}

// register takes the node's row for this run: a previous run that did not
// close has its hot rows discarded and its claims returned, and what it
// lost is kept for Region.Recovery.
func (d *DB) register(ctx context.Context) error {
	start := time.Now()
	var live bool
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state, state = 'running' AND expires > now() FROM nodes WHERE name = $1 FOR UPDATE`, d.node).Scan(&state, &live)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			state = stateClean
			_, err = tx.Exec(ctx, `INSERT INTO nodes (name, version, state, started, heartbeat, expires)
				VALUES ($1, 0, $2, now(), now(), now()) ON CONFLICT (name) DO NOTHING`, d.node, stateClean)
			if err != nil {
				return fmt.Errorf("insert node: %w", err)
			}
		case err != nil:
			return fmt.Errorf("read node: %w", err)
		}
		d.unclean = state != stateClean
		if d.unclean {
			if _, err := returnRows(ctx, tx, []string{d.node}); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `DELETE FROM discarded WHERE node = $1 RETURNING region, world, x, y, z, idx, n, id`, d.node)
			if err != nil {
				return fmt.Errorf("read discarded rows: %w", err)
			}
			type lost struct {
				region string
				l      pipeline.Location
				n      int
				id     int64
			}
			var all []lost
			for rows.Next() {
				var r lost
				if err := rows.Scan(&r.region, &r.l.World, &r.l.X, &r.l.Y, &r.l.Z, &r.l.Index, &r.n, &r.id); err != nil {
					rows.Close()
					return fmt.Errorf("read discarded rows: %w", err)
				}
				all = append(all, r)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read discarded rows: %w", err)
			}
			slices.SortFunc(all, func(a, b lost) int { return cmp.Compare(a.id, b.id) })
			d.discarded = map[string][]pipeline.Location{}
			for _, r := range all {
				for range r.n {
					d.discarded[r.region] = append(d.discarded[r.region], r.l)
				}
			}
		}
		// A run starts with the regions opened so far: none at Open
		// (DB.Region adds those it opens), all of them on a rejoin.
		d.mu.Lock()
		regions := slices.Clone(d.regions)
		d.mu.Unlock()
		if regions == nil {
			regions = []string{}
		}
		return tx.QueryRow(ctx, `UPDATE nodes SET version = version + 1, state = $2, started = now(), heartbeat = now(),
			expires = now() + make_interval(secs => $3), software = $4, regions = $5 WHERE name = $1 RETURNING version`,
			d.node, stateRunning, d.ttlSeconds(), d.opts.Software, regions).Scan(&d.version)
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.leaseUntil = start.Add(d.opts.LeaseTTL)
	d.mu.Unlock()
	if live {
		d.log.Warn("pgpersist: took over the name of a node whose lease had not lapsed; two processes must not share a node name unless the other was killed",
			"version", d.version)
	}
	if d.unclean {
		total := 0
		for _, l := range d.discarded {
			total += len(l)
		}
		d.log.Warn("pgpersist: the node's previous run did not shut down cleanly; discarded its hot locations, which may have been handed out",
			"discarded", total)
	}
	return nil
}

// release ends the run cleanly: the node's rows turn cold and unowned and
// its row records a clean shutdown, unless another run has taken the name
// over since (its rows are that run's).
func (d *DB) release() error {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE nodes SET state = $3, heartbeat = now(), expires = now()
			WHERE name = $1 AND version = $2 AND state = $4`, d.node, d.version, stateClean, stateRunning)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE locations SET owner = NULL, hot = false WHERE owner = $1`, d.node)
		return err
	})
}

// leaseLoop renews the lease every HeartbeatEvery and sweeps every
// SweepEvery until Close.
func (d *DB) leaseLoop() {
	defer close(d.leaseDone)
	beat := time.NewTicker(d.opts.HeartbeatEvery)
	defer beat.Stop()
	sweep := time.NewTicker(d.opts.SweepEvery)
	defer sweep.Stop()
	var failing bool
	for {
		select {
		case <-d.leaseStop:
			return
		case <-beat.C:
			if d.lost() {
				ctx, cancel := context.WithTimeout(context.Background(), min(d.opts.Timeout, d.opts.LeaseTTL))
				if err := d.rejoin(ctx); err != nil && !failing {
					failing = true
					d.log.Warn("pgpersist: rejoining the fleet failed", "error", err)
				} else if err == nil {
					failing = false
				}
				cancel()
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), min(d.opts.Timeout, d.opts.LeaseTTL))
			err := d.Heartbeat(ctx)
			cancel()
			switch {
			case errors.Is(err, ErrLeaseLost):
				d.log.Error("pgpersist: the node's lease was lost; its entries may be served by other nodes", "version", d.version)
			case err != nil && !failing:
				failing = true
				d.log.Warn("pgpersist: renewing the lease failed", "error", err, "lease_until", d.LeaseUntil())
			case err == nil && failing:
				failing = false
				d.log.Info("pgpersist: lease renewed again")
			}
		case <-sweep.C:
			ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
			if _, err := d.Sweep(ctx); err != nil {
				d.log.Warn("pgpersist: sweeping lapsed nodes failed", "error", err)
			}
			cancel()
		}
	}
}

// Heartbeat renews the node's lease now (the DB does so every
// HeartbeatEvery on its own). It returns ErrLeaseLost, and the DB
// keeps that state, when the lease had already lapsed or another run has
// the name.
func (d *DB) Heartbeat(ctx context.Context) error {
	if d.lost() {
		return ErrLeaseLost
	}
	start := time.Now()
	tag, err := d.pool.Exec(ctx, `UPDATE nodes SET heartbeat = now(), expires = now() + make_interval(secs => $3)
		WHERE name = $1 AND version = $2 AND state = 'running' AND expires > now()`, d.node, d.version, d.ttlSeconds())
	if err != nil {
		return fmt.Errorf("pgpersist: heartbeat: %w", err)
	}
	if tag.RowsAffected() == 0 {
		d.loseLease()
		return ErrLeaseLost
	}
	d.mu.Lock()
	d.leaseUntil = start.Add(d.opts.LeaseTTL)
	d.mu.Unlock()
	return nil
}

func (d *DB) loseLease() {
	d.mu.Lock()
	d.leaseLost = true
	d.leaseUntil = time.Time{}
	d.mu.Unlock()
}

// LeaseUntil returns until when the node's claims are surely its own:
// the start of its last successful renewal plus LeaseTTL, measured on the
// local clock, which is no later than the database's view of the lease.
// After it, a sweep may return the node's cold rows to others (its hot
// rows are discarded, so the hot entries it holds stay its own to serve).
// It is the zero time once the lease is lost.
func (d *DB) LeaseUntil() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leaseUntil
}

// Sweep returns the rows of every running node whose lease has lapsed
// (the DB sweeps every SweepEvery on its own): their hot rows are
// discarded, since they may have been handed out, and kept for the node's
// next Open to report; their other rows turn unowned, for any node to
// claim. The nodes are marked lapsed. It returns the rows touched. Nodes
// sweeping at once skip each other's locked rows, so each lapsed node is
// swept once.
func (d *DB) Sweep(ctx context.Context) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name FROM nodes WHERE state = 'running' AND expires < now() FOR UPDATE SKIP LOCKED`)
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(names) == 0 {
			return err
		}
		if n, err = returnRows(ctx, tx, names); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE nodes SET state = $2 WHERE name = ANY($1)`, names, stateLapsed)
		if err == nil {
			d.log.Warn("pgpersist: returned the rows of nodes whose lease lapsed", "nodes", names, "rows", n)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pgpersist: sweep: %w", err)
	}
	d.mu.Lock()
	d.swept += uint64(n)
	d.mu.Unlock()
	return n, nil
}

// checkLease verifies in tx that the node's lease holds, and keeps it from
// being swept until tx ends.
func (d *DB) checkLease(ctx context.Context, tx pgx.Tx) error {
	if d.lost() {
		return ErrLeaseLost
	}
	var ok bool
	err := tx.QueryRow(ctx, `SELECT true FROM nodes WHERE name = $1 AND version = $2 AND state = 'running' AND expires > now() FOR SHARE`,
		d.node, d.version).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
		d.loseLease()
		return ErrLeaseLost
	}
	return err
}

// ClaimCold claims up to n cold, unowned rows of the region and key for
// the node, oldest first, and returns them, one Location per copy. Rows
// locked by a concurrent claim are skipped (FOR UPDATE SKIP LOCKED), so
// nodes claiming at once never get the same row, and none waits for
// another. It returns ErrLeaseLost once the lease is lost. Queued writes
// are not flushed first: rows this node added are its own already.
func (r *Region) ClaimCold(ctx context.Context, n int) ([]pipeline.Location, error) {
	if n <= 0 {
		return nil, nil
	}
	d := r.d
	var out []pipeline.Location
	rowsClaimed := 0
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		out, rowsClaimed = out[:0], 0
		if err := d.checkLease(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `WITH c AS (
				SELECT id FROM locations WHERE region = $1 AND key = $2 AND owner IS NULL
				ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
			UPDATE locations l SET owner = $4 FROM c WHERE l.id = c.id
			RETURNING l.id, l.world, l.x, l.y, l.z, l.idx, l.n`, r.region, string(r.key), n, d.node)
		if err != nil {
			return err
		}
		type claimed struct {
			id int64
			l  pipeline.Location
			n  int
		}
		var got []claimed
		for rows.Next() {
			var c claimed
			if err := rows.Scan(&c.id, &c.l.World, &c.l.X, &c.l.Y, &c.l.Z, &c.l.Index, &c.n); err != nil {
				rows.Close()
				return err
			}
			got = append(got, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		slices.SortFunc(got, func(a, b claimed) int { return cmp.Compare(a.id, b.id) })
		for _, c := range got {
			for range c.n {
				out = append(out, c.l)
			}
		}
		rowsClaimed = len(got)
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrLeaseLost) {
			return nil, err
		}
		return nil, fmt.Errorf("pgpersist: claim in %s: %w", r.region, err)
	}
	d.mu.Lock()
	d.claimed += uint64(rowsClaimed)
	d.mu.Unlock()
	return out, nil
}

// Nodes returns every node that has registered, by name, with its lease
// and the rows it owns: what a fleet status report shows. ListNodes reads
// the same without registering a node.
func (d *DB) Nodes(ctx context.Context) ([]NodeInfo, error) {
	out, err := queryNodes(ctx, d.pool, SchemaVersion)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: nodes: %w", err)
	}
	return out, nil
}
