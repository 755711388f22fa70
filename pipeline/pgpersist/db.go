package pgpersist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rtpengine/rtp/pipeline"
)

// Defaults of Options.
const (
	DefaultQueueLimit = 1 << 16
	DefaultBatchDelay = 100 * time.Millisecond
	DefaultRetryMin   = 100 * time.Millisecond
	DefaultRetryMax   = 10 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultLeaseTTL   = 15 * time.Second
)

// logEvery paces the log lines of a lasting failure and of dropped writes.
const logEvery = time.Minute

var (
	// ErrClosed is returned once the DB is closed.
	ErrClosed = errors.New("pgpersist: closed")
	// ErrLeaseLost is returned by the fleet methods once the node's lease
	// has lapsed (it was swept by a node, possibly itself) or another
	// process took the node's name over. It is final for the DB: the
	// entries the node holds may be served by other nodes, so the caller
	// must drop them and open the DB again.
	ErrLeaseLost = errors.New("pgpersist: the node's lease was lost")
)

// Options configure a DB. The zero value selects every default.
type Options struct {
	// Node names this process in the fleet; two processes running at
	// once must not share a name. Default the host name (os.Hostname).
	Node string
	// Schema is the PostgreSQL schema holding the tables; it must exist.
	// Default "": the search_path of the connection string.
	Schema string
	// LeaseTTL is how long the node's lease lasts after each heartbeat:
	// a node that stops renewing it (killed, cut off) has its claims
	// returned by the next sweep after that. Default DefaultLeaseTTL
	// (15 s).
	LeaseTTL time.Duration
	// HeartbeatEvery is the pace at which the lease is renewed. Default
	// LeaseTTL/3; it must be below LeaseTTL.
	HeartbeatEvery time.Duration
	// SweepEvery is the pace at which the node returns the rows of
	// lapsed nodes. Default LeaseTTL.
	SweepEvery time.Duration
	// QueueLimit bounds the pending writes, counted in rows (the writes
	// to one row coalesce). At most QueueLimit rows gather while the
	// writer commits a batch of at most QueueLimit rows; past the bound
	// the oldest are dropped (Stats.Dropped, a log line). Default
	// DefaultQueueLimit (65,536).
	QueueLimit int
	// BatchDelay is how long the writer lets writes gather after the
	// first of a batch before committing them in one transaction. Hot
	// marks, Flush and Close do not wait for it. Default
	// DefaultBatchDelay (100 ms); negative: commit as soon as anything
	// is queued.
	BatchDelay time.Duration
	// RetryMin and RetryMax bound the wait before a failed batch is
	// tried again: RetryMin, doubling per failure up to RetryMax, less a
	// random part of up to half. Defaults DefaultRetryMin (100 ms) and
	// DefaultRetryMax (10 s); when only one is set the other's default
	// gives way to it.
	RetryMin, RetryMax time.Duration
	// Timeout bounds each transaction of the writer and of the lease
	// upkeep. Default DefaultTimeout (10 s).
	Timeout time.Duration
	// MaxConns bounds the connection pool. Default 0: pgxpool's default
	// (the greater of 4 and the number of CPUs).
	MaxConns int32
	// Logger receives failures, dropped writes and recoveries. Default
	// slog.Default().
	Logger *slog.Logger
	// Software is the version of the program, recorded in the node's row
	// at each Open for fleet status (NodeInfo.Software). Default "".
	Software string
}

// Validate reports every invalid field at once.
func (o Options) Validate() error {
	var errs []error
	neg := func(name string, v time.Duration) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("pgpersist: %s %v is negative", name, v))
		}
	}
	neg("LeaseTTL", o.LeaseTTL)
	neg("HeartbeatEvery", o.HeartbeatEvery)
	neg("SweepEvery", o.SweepEvery)
	neg("RetryMin", o.RetryMin)
	neg("RetryMax", o.RetryMax)
	neg("Timeout", o.Timeout)
	if o.QueueLimit < 0 {
		errs = append(errs, fmt.Errorf("pgpersist: QueueLimit %d is negative", o.QueueLimit))
	}
	if o.MaxConns < 0 {
		errs = append(errs, fmt.Errorf("pgpersist: MaxConns %d is negative", o.MaxConns))
	}
	if o.RetryMin > 0 && o.RetryMax > 0 && o.RetryMin > o.RetryMax {
		errs = append(errs, fmt.Errorf("pgpersist: RetryMin %v is above RetryMax %v", o.RetryMin, o.RetryMax))
	}
	ttl := o.LeaseTTL
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	if o.HeartbeatEvery > 0 && o.HeartbeatEvery >= ttl {
		errs = append(errs, fmt.Errorf("pgpersist: HeartbeatEvery %v is not below LeaseTTL %v", o.HeartbeatEvery, ttl))
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() error {
	if o.Node == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return fmt.Errorf("pgpersist: no Node name and no host name to default to: %v", err)
		}
		o.Node = h
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.HeartbeatEvery == 0 {
		o.HeartbeatEvery = o.LeaseTTL / 3
	}
	if o.SweepEvery == 0 {
		o.SweepEvery = o.LeaseTTL
	}
	if o.QueueLimit == 0 {
		o.QueueLimit = DefaultQueueLimit
	}
	if o.BatchDelay == 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	if o.RetryMin == 0 {
		o.RetryMin = DefaultRetryMin
		if o.RetryMax > 0 {
			o.RetryMin = min(o.RetryMin, o.RetryMax)
		}
	}
	if o.RetryMax == 0 {
		o.RetryMax = max(DefaultRetryMax, o.RetryMin)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Stats are a DB's counters. Every write (Add, Remove, hot mark, journal
// work) ends up in one of Written, Coalesced and Dropped, or is Pending.
type Stats struct {
	Pending   int    // writes waiting to be committed, after coalescing
	Written   uint64 // writes committed
	Coalesced uint64 // writes that cancelled out before their commit
	Dropped   uint64 // writes lost: past QueueLimit, after Close, or failing at Close
	Failures  uint64 // commits that failed
	Retries   uint64 // commits of a batch that had failed before
	Failing   bool   // the last commit failed: its writes wait for a retry
	LastError string // the error of the last failed commit; kept once writes resume
	Claimed   uint64 // rows claimed by ClaimCold
	Swept     uint64 // rows of lapsed nodes this node returned or discarded
	LeaseLost bool   // the node's lease was lost (see ErrLeaseLost)
}

// DB is the locations database of one node. Open one with Open; the zero
// value is not usable. A DB is safe for concurrent use. It owns a writer
// goroutine and a lease goroutine, which Close stops.
type DB struct {
	pool *pgxpool.Pool
	opts Options
	node string
	log  *slog.Logger

	// Set by Open, read-only afterwards.
	version   int64                          // the node's incarnation
	unclean   bool                           // the node's previous run did not close
	discarded map[string][]pipeline.Location // by region

	wake chan struct{} // buffered(1): the queue is not empty
	now  chan struct{} // buffered(1): commit without delay
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has returned

	leaseStop chan struct{} // closed to stop the lease goroutine
	leaseDone chan struct{} // closed when it has returned
	stopLease sync.Once

	abandon bool // Close skips the clean shutdown (tests)

	// The writer's own.
	batch    *pending
	order    []*change
	streak   uint64
	downAt   time.Time
	loggedAt time.Time

	seqMu    sync.Mutex // serializes journal block reservations
	mu       sync.Mutex
	front    *pending // writes since the writer last took them
	spare    *pending
	batchOps int    // writes the writer holds
	seq      uint64 // sequence number of the last queued write
	// markSeq is the Seq of the last mark; blockEnd the last of the
	// reserved block.
	markSeq, blockEnd uint64
	committed         uint64 // writes up to this sequence number are committed
	attempts          uint64
	failSeq, failAt   uint64
	lastErr, closeErr error
	progress          chan struct{} // closed and replaced after every commit tried
	closed            bool
	droppedAt         time.Time
	leaseUntil        time.Time // the local, conservative end of the lease
	stats             Stats
}

// Open connects to the PostgreSQL database of dsn (a pgx connection
// string), migrates its schema if needed, registers the node (see the
// package documentation: a previous run of the same node that did not
// close has its hot rows discarded, reported by Region.Recovery) and starts
// the writer and the lease upkeep.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	d := &DB{
		pool: pool, opts: opts, node: opts.Node, log: opts.Logger.With("node", opts.Node),
		wake: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		leaseStop: make(chan struct{}), leaseDone: make(chan struct{}),
		batch: newPending(), front: newPending(), spare: newPending(), progress: make(chan struct{}),
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	if err := d.reserveBlock(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	if err := d.register(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: node %s: %w", d.node, err)
	}
	go d.run()
	go d.leaseLoop()
	return d, nil
}

// Node returns the name of the node.
func (d *DB) Node() string { return d.node }

// Unclean reports whether the node's previous run did not shut down in
// order (see pipeline.Recovery).
func (d *DB) Unclean() bool { return d.unclean }

// Region returns the Persister of one region under key. Both must be
// non-empty. The region is added to the regions of the node's row, which
// fleet status reports (NodeInfo.Regions).
func (d *DB) Region(region string, key pipeline.Key) (*Region, error) {
	var errs []error
	if region == "" {
		errs = append(errs, errors.New("pgpersist: empty region name"))
	}
	if key == "" {
		errs = append(errs, errors.New("pgpersist: empty key"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The node's row lists the regions it serves, for fleet status; a
	// failure costs only that, so it is logged and the region opened.
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET regions = array_append(regions, $2)
		WHERE name = $1 AND version = $3 AND NOT $2 = ANY(regions)`, d.node, region, d.version); err != nil {
		d.log.Warn("pgpersist: recording the region in the node's row failed", "region", region, "error", err)
	}
	return &Region{d: d, region: region, key: key}, nil
}

// enqueue queues one change and, for a hot mark, its callback (nil for
// none), never waiting for the database. While commits are failing, and
// once the DB is closed, done is called at once with the error.
func (d *DB) enqueue(f change, done func(error)) {
	d.mu.Lock()
	if d.closed {
		d.stats.Dropped++
		d.mu.Unlock()
		if done != nil {
			done(ErrClosed)
		}
		return
	}
	var failed error
	if done != nil {
		if d.stats.Failing {
			failed = d.lastErr
		} else {
			d.front.done = append(d.front.done, hotDone{row: f.row, f: done})
		}
	}
	d.seq++
	if f.a > 0 {
		f.seq = d.seq
	}
	dropped := 0
	if _, ok := d.front.at[f.row]; !ok {
		for d.front.rows() >= d.opts.QueueLimit {
			dropped += d.front.dropOldest()
		}
	}
	d.stats.Coalesced += uint64(d.front.put(f))
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	total := d.stats.Dropped
	d.mu.Unlock()
	if logDrop {
		d.logDrops(total)
	}
	if failed != nil {
		done(failed)
	}
	d.signal(done != nil && failed == nil)
}

// enqueueJournal queues journal work (put runs under d.mu); once the DB
// is closed the work is dropped.
func (d *DB) enqueueJournal(put func(p *pending) (cancelled int)) {
	d.mu.Lock()
	if d.closed {
		d.stats.Dropped++
		d.mu.Unlock()
		return
	}
	d.seq++
	d.stats.Coalesced += uint64(put(d.front))
	dropped := 0
	for len(d.front.marks) > d.opts.QueueLimit {
		d.front.dropOldestMark()
		dropped++
	}
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	total := d.stats.Dropped
	d.mu.Unlock()
	if logDrop {
		d.logDrops(total)
	}
	d.signal(false)
}

// signal wakes the writer; urgent asks it to skip its batch delay.
func (d *DB) signal(urgent bool) {
	select {
	case d.wake <- struct{}{}:
	default:
	}
	if urgent {
		select {
		case d.now <- struct{}{}:
		default:
		}
	}
}

// noteDropsLocked counts n dropped writes and reports whether to log them
// (at most once every logEvery). d.mu is held.
func (d *DB) noteDropsLocked(n int) bool {
	d.stats.Dropped += uint64(n)
	now := time.Now()
	if !d.droppedAt.IsZero() && now.Sub(d.droppedAt) < logEvery {
		return false
	}
	d.droppedAt = now
	return true
}

func (d *DB) logDrops(total uint64) {
	d.log.Warn("pgpersist: too many pending writes; dropping the oldest", "limit_rows", d.opts.QueueLimit, "dropped_total", total)
}

// run is the writer goroutine.
func (d *DB) run() {
	defer close(d.done)
	for {
		if d.streak == 0 {
			select {
			case <-d.wake:
				if d.opts.BatchDelay > 0 && !d.wait(d.opts.BatchDelay) {
					d.final()
					return
				}
			case <-d.now:
			case <-d.stop:
				d.final()
				return
			}
		} else if !d.wait(backoff(d.streak, d.opts.RetryMin, d.opts.RetryMax)) {
			d.final()
			return
		}
		d.commit()
	}
}

// wait waits for delay, or less if a commit is asked for; it returns
// false when Close stops the writer.
func (d *DB) wait(delay time.Duration) bool {
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.now:
	case <-d.stop:
		return false
	}
	return true
}

// backoff returns the wait before retry n (1 for the first): lo doubling
// per failure up to hi, less a random part of up to half, so that nodes
// that failed together do not retry in step.
func backoff(n uint64, lo, hi time.Duration) time.Duration {
	w := lo
	for i := uint64(1); i < n && w < hi; i++ {
		w *= 2
	}
	w = min(w, hi)
	return w - rand.N(w/2+1)
}

// final is the writer's last commit, at Close.
func (d *DB) final() {
	if err := d.commit(); err != nil {
		lost := d.batch.writes
		d.batch.reset()
		d.mu.Lock()
		d.stats.Dropped += uint64(lost)
		d.batchOps = 0
		d.closeErr = fmt.Errorf("pgpersist: close: %d writes lost, the database is still failing: %w", lost, err)
		d.mu.Unlock()
		d.log.Error("pgpersist: writes lost at close", "writes", lost, "failures", d.streak, "error", err)
	}
}

// commit takes the writes queued since the last commit into the batch
// (which keeps those of a failed commit) and commits it in one
// transaction.
func (d *DB) commit() error {
	select {
	case <-d.now:
	default:
	}
	d.mu.Lock()
	front := d.front
	d.front, d.spare = d.spare, nil
	d.batchOps += front.writes
	upTo := d.seq
	if d.streak > 0 {
		d.stats.Retries++
	}
	owner := d.ownerLocked()
	d.mu.Unlock()

	cancelled := d.batch.merge(front)
	front.reset()
	dropped := 0
	for d.batch.rows() > d.opts.QueueLimit {
		dropped += d.batch.dropOldest()
	}
	var err error
	var refused map[row]bool
	if d.batch.writes > 0 {
		refused, err = d.apply(d.batch, owner)
	}
	now := time.Now()
	ops := d.batch.writes
	done := d.batch.takeDone()
	if err == nil {
		d.batch.reset()
	}

	d.mu.Lock()
	d.spare = front
	d.stats.Coalesced += uint64(cancelled)
	logDrop := dropped > 0 && d.noteDropsLocked(dropped)
	d.attempts++
	streak, downAt := d.streak, d.downAt
	if err == nil {
		d.stats.Written += uint64(ops)
		d.committed = upTo
		d.stats.Failing = false
		d.batchOps = 0
	} else {
		d.stats.Failures++
		d.stats.Failing = true
		d.stats.LastError = err.Error()
		d.lastErr = err
		d.failSeq, d.failAt = upTo, d.attempts
		d.batchOps = ops
	}
	pending := d.batchOps + d.front.writes
	total := d.stats.Dropped
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()

	if logDrop {
		d.logDrops(total)
	}
	for _, h := range done {
		switch {
		case err != nil:
			h.f(err)
		case refused[h.row]:
			h.f(errNotOwned)
		default:
			h.f(nil)
		}
	}
	switch {
	case err == nil && streak > 0:
		d.streak = 0
		d.log.Info(fmt.Sprintf("pgpersist: writes resumed after %d failures, %v", streak, now.Sub(downAt).Round(time.Millisecond)),
			"failures", streak, "written", ops, "dropped_total", total)
	case err == nil:
	case streak == 0:
		d.streak, d.downAt, d.loggedAt = 1, now, now
		d.log.Warn("pgpersist: writing locations failed; keeping the writes and retrying", "pending", pending, "error", err)
	default:
		d.streak++
		if now.Sub(d.loggedAt) >= logEvery {
			d.loggedAt = now
			d.log.Warn("pgpersist: writing locations still failing", "failures", d.streak, "pending", pending,
				"down", now.Sub(downAt).Round(time.Second), "dropped_total", total, "error", err)
		}
	}
	return err
}

// ownerLocked is the owner written on rows this node adds or marks hot:
// the node, or NULL once its lease is lost. d.mu is held.
func (d *DB) ownerLocked() *string {
	if d.stats.LeaseLost {
		return nil
	}
	return &d.node
}

// apply commits b in one transaction, its statements sent as one batch.
// It returns the rows whose hot mark matched nothing: another node owns
// them, or they are gone.
func (d *DB) apply(b *pending, owner *string) (map[row]bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	var q pgx.Batch
	d.order = b.order(d.order)
	// hot[i] is the change whose hot mark is statement i, nil for others.
	var hot []*change
	var lost []row
	queue := func(c *change, sql string, args ...any) {
		q.Queue(sql, args...)
		hot = append(hot, c)
	}
	for _, c := range d.order {
		w := &c.row
		if c.r > 0 {
			queue(nil, sqlRemove, c.r, w.region, string(w.key), w.world, w.x, w.y, w.z, d.node)
		}
		if c.a > 0 {
			queue(nil, sqlAdd, c.a, w.region, string(w.key), w.world, w.x, w.y, w.z, c.idx, owner)
		}
		switch {
		case c.hot && owner != nil:
			queue(c, sqlHot, w.region, string(w.key), w.world, w.x, w.z, *owner)
		case c.hot:
			// The lease was lost since the mark was queued: the row may
			// be another node's by now.
			lost = append(lost, c.row)
		}
	}
	clear(d.order)
	regions := map[string]bool{}
	for _, m := range b.marks {
		q.Queue(sqlMark, int64(m.m.Seq), d.node, m.region, m.m.Index, int(m.m.Cause), m.m.Source, m.m.At.UnixNano())
		regions[m.region] = true
	}
	for k, at := range b.spots {
		q.Queue(sqlSpot, k.region, k.x, k.z, at, d.node)
		regions[k.region] = true
	}
	for region, seq := range b.trims {
		q.Queue(sqlTrim, region, d.node, int64(seq), time.Now().Add(-JournalRetention).UnixNano())
	}
	for region := range regions {
		// Delivered at commit: the other nodes read the feed then.
		q.Queue(`SELECT pg_notify($1, $2)`, FeedChannel, region)
	}
	refused := map[row]bool{}
	for _, r := range lost {
		refused[r] = true
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, &q)
		for i := range q.Len() {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close()
				return err
			}
			if i < len(hot) && hot[i] != nil && tag.RowsAffected() == 0 {
				refused[hot[i].row] = true
			}
		}
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return refused, nil
}

// Flush waits until every write queued before the call is committed, or
// ctx ends, asking for a commit at once. If that commit fails Flush
// returns its error (the writes are kept and retried); errors recovered
// from are not reported. It returns ErrClosed once the DB is closed.
func (d *DB) Flush(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrClosed
	}
	target, start := d.seq, d.attempts
	for d.committed < target {
		if d.failAt > start && d.failSeq >= target {
			err := fmt.Errorf("pgpersist: %d writes not committed, kept for a retry: %w", d.batchOps+d.front.writes, d.lastErr)
			d.mu.Unlock()
			return err
		}
		ch := d.progress
		d.mu.Unlock()
		select {
		case d.now <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.done:
			return ErrClosed
		}
		d.mu.Lock()
	}
	d.mu.Unlock()
	return nil
}

// Stats returns the DB's counters.
func (d *DB) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.stats
	st.Pending = d.batchOps + d.front.writes
	return st
}

// Close commits what is pending, stops the writer and the lease upkeep,
// returns the node's claims (every row it owns turns cold and unowned),
// records a clean shutdown in its nodes row and closes the pool. Writes
// queued afterwards are dropped. If the final commit fails Close returns
// an error that says how many writes were lost. Close is idempotent.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.haltLease()
	close(d.stop)
	<-d.done
	d.mu.Lock()
	err := d.closeErr
	lost := d.stats.LeaseLost
	d.mu.Unlock()
	if err == nil && !d.abandon && !lost {
		if cerr := d.release(); cerr != nil {
			err = fmt.Errorf("pgpersist: close: recording a clean shutdown: %w", cerr)
		}
	}
	d.pool.Close()
	return err
}

// haltLease stops the lease goroutine and waits for it.
func (d *DB) haltLease() {
	d.stopLease.Do(func() { close(d.leaseStop) })
	<-d.leaseDone
}
