package pgclaims

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rtpengine/rtp/verify/claims"
)

// follower keeps a PostgreSQL store's index up to date with the writes of
// every node on the database. It owns one connection, outside the pool,
// that listens on the schema's channel: each write transaction notifies
// its change, which reaches the listener when the transaction commits, in
// commit order. A change that does not follow the index's revision means
// a notification was missed, and the follower reloads every claim. When
// no notification has come for Options.ResyncInterval it reads the
// revision and reloads if it moved, the fallback for a notification lost
// in a way that no later one reveals. A broken connection is replaced
// with back-off; after each reconnection the follower reloads, since the
// notifications of the outage are lost.
type follower struct {
	m        *claims.Mirror // set before run
	cfg      *pgx.ConnConfig
	schema   string
	channel  string
	interval time.Duration
	log      *slog.Logger

	ctx    context.Context // cancelled by stop
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	pid atomic.Uint32 // the backend process of the connection, 0 while down
}

func newFollower(cfg *pgx.ConnConfig, schema, channel string, interval time.Duration, log *slog.Logger) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	return &follower{
		cfg: cfg, schema: schema, channel: channel,
		interval: interval, log: log,
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
	}
}

// connect opens the connection, listens, then reads the revision and
// every claim: in this order, so a change committed after the snapshot is
// notified and one committed before it is in it. The caller puts the
// snapshot in force (a new Store, or Replace).
func (f *follower) connect(ctx context.Context) (conn *pgx.Conn, rev int64, all []claims.Claim, err error) {
	conn, err = pgx.ConnectConfig(ctx, f.cfg)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{f.channel}.Sanitize()); err != nil {
		f.drop(conn)
		return nil, 0, nil, fmt.Errorf("listen: %w", err)
	}
	if rev, all, err = snapshot(ctx, conn); err != nil {
		f.drop(conn)
		return nil, 0, nil, fmt.Errorf("load: %w", err)
	}
	f.pid.Store(conn.PgConn().PID())
	return conn, rev, all, nil
}

// snapshot reads the revision and every claim in one snapshot of the
// database.
func snapshot(ctx context.Context, conn *pgx.Conn) (rev int64, all []claims.Claim, err error) {
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, pgRevision).Scan(&rev); err != nil {
			return fmt.Errorf("read the revision: %w", err)
		}
		var err error
		all, err = queryClaims(ctx, tx, "")
		return err
	})
	return rev, all, err
}

// replace puts a snapshot in force, leaving out (with a warning) the rows
// that are not valid claims.
func (f *follower) replace(rev int64, all []claims.Claim) {
	f.m.Replace(rev, all, func(err error) {
		f.log.Warn("claims: a row of the claims table is not a valid claim; it is not in force", "schema", f.schema, "err", err)
	})
}

// reload reads every claim again on conn.
func (f *follower) reload(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(f.ctx, pgQueryTimeout)
	defer cancel()
	rev, all, err := snapshot(ctx, conn)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	f.replace(rev, all)
	return nil
}

// run follows the changes on conn, and on the connections that replace it,
// until stop. It logs a warning when a connection breaks and an info
// record when the next one is ready, not each failed attempt between them.
func (f *follower) run(conn *pgx.Conn) {
	defer close(f.done)
	for {
		err := f.follow(conn)
		f.pid.Store(0)
		f.drop(conn)
		if f.ctx.Err() != nil {
			return
		}
		down := time.Now()
		f.log.Warn("claims: lost the PostgreSQL connection that follows the other nodes' changes; reconnecting, and until then their changes are not seen here",
			"schema", f.schema, "err", err)
		var attempts int
		if conn, attempts = f.reconnect(); conn == nil {
			return
		}
		f.log.Info("claims: reconnected to PostgreSQL and reloaded the claims; following the other nodes' changes again",
			"schema", f.schema, "outage", time.Since(down).Round(time.Millisecond), "attempts", attempts)
	}
}

// reconnect tries to connect until it succeeds, waiting between attempts
// from pgMinBackoff, doubling up to pgMaxBackoff, with jitter so the nodes
// of a fleet do not come back in step. It returns nil on stop.
func (f *follower) reconnect() (*pgx.Conn, int) {
	backoff := pgMinBackoff
	for attempt := 1; ; attempt++ {
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return nil, attempt - 1
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(f.ctx, pgConnectTimeout)
		conn, rev, all, err := f.connect(ctx)
		cancel()
		if err == nil {
			f.replace(rev, all)
			return conn, attempt
		}
		backoff = min(2*backoff, pgMaxBackoff)
	}
}

// follow applies the notifications of conn and checks the revision when
// none came for the interval. It returns the error that broke the
// connection, or nil on stop.
func (f *follower) follow(conn *pgx.Conn) error {
	next := time.Now().Add(f.interval)
	for {
		ctx, cancel := context.WithDeadline(f.ctx, next)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		switch {
		case f.ctx.Err() != nil:
			return nil
		case err == nil:
			if err := f.notified(conn, n); err != nil {
				return err
			}
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			if err := f.check(conn); err != nil {
				return err
			}
			next = time.Now().Add(f.interval)
		default:
			return err
		}
	}
}

// notified applies the change of a notification, or reloads if it is not
// the next one.
func (f *follower) notified(conn *pgx.Conn, n *pgconn.Notification) error {
	if n.Channel != f.channel {
		return nil
	}
	ch, err := decodeNotice(n.Payload)
	if err != nil {
		f.log.Warn("claims: a notification on the claims channel is not a change of claims; reloading", "schema", f.schema, "err", err)
		return f.reload(conn)
	}
	if f.m.Apply(ch) {
		return nil
	}
	return f.reload(conn)
}

// check reloads if the database's revision is ahead of the index.
func (f *follower) check(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(f.ctx, pgQueryTimeout)
	defer cancel()
	var rev int64
	if err := conn.QueryRow(ctx, pgRevision).Scan(&rev); err != nil {
		return fmt.Errorf("read the revision: %w", err)
	}
	if rev <= f.m.Revision() {
		return nil
	}
	return f.reload(conn)
}

// drop closes conn and waits, boundedly, for pgx's cleanup of it.
func (f *follower) drop(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), pgCloseTimeout)
	defer cancel()
	conn.Close(ctx)
	select {
	case <-conn.PgConn().CleanupDone():
	case <-ctx.Done():
	}
}

// stop ends run and waits for it.
func (f *follower) stop() {
	f.cancel()
	<-f.done
}
