package pgpersist

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/internal/rowqueue"
)

// Defaults of Options.
const (
	DefaultQueueLimit = 1 << 16
	DefaultBatchDelay = 100 * time.Millisecond
	DefaultHotDelay   = 5 * time.Millisecond
	DefaultRetryMin   = 100 * time.Millisecond
	DefaultRetryMax   = 10 * time.Second
	DefaultTimeout    = 10 * time.Second
	DefaultLeaseTTL   = 15 * time.Second
)

var (
	// ErrClosed is returned once the DB is closed.
	ErrClosed = errors.New("pgpersist: closed")
	// ErrLeaseLost is returned by the fleet methods, and given to hot
	// marks, once the node's lease has lapsed (it was swept by a node,
	// possibly itself) or another process took the node's name over. The
	// node's cold rows may be other nodes' by now; the DB rejoins as a new
	// run at its next heartbeat (see the package documentation).
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
	// HotDelay is how long an urgent hot mark waits for others to join
	// its commit, which the promotion waits for. Default DefaultHotDelay
	// (5 ms); negative: each commits at once.
	HotDelay time.Duration
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
	if o.HotDelay == 0 {
		o.HotDelay = DefaultHotDelay
	}
	o.RetryMin, o.RetryMax = rowqueue.RetryBounds(o.RetryMin, o.RetryMax, DefaultRetryMin, DefaultRetryMax)
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
// goroutine (a rowqueue.Writer, which commits with apply) and a lease
// goroutine, which Close stops.
type DB struct {
	pool *pgxpool.Pool
	opts Options
	node string
	log  *slog.Logger
	w    *rowqueue.Writer

	// Set by Open, read-only afterwards.
	version   int64                          // the node's incarnation
	unclean   bool                           // the node's previous run did not close
	discarded map[string][]pipeline.Location // by region

	leaseStop chan struct{} // closed to stop the lease goroutine
	leaseDone chan struct{} // closed when it has returned
	stopLease sync.Once

	abandon bool // Close skips the clean shutdown (tests)

	order []*rowqueue.Change // apply's, on the writer goroutine

	seqMu sync.Mutex // serializes journal block reservations
	// mu protects the following fields. The writer's lock may be held
	// when mu is taken (Record), never the other way round.
	mu sync.Mutex
	// markSeq is the Seq of the last mark; blockEnd the last of the
	// reserved block.
	markSeq, blockEnd uint64
	leaseUntil        time.Time // the local, conservative end of the lease
	leaseLost         bool      // see ErrLeaseLost and Stats.LeaseLost
	claimed, swept    uint64    // Stats.Claimed and Stats.Swept
	regions           []string  // opened by Region, in order; a rejoin lists them again

	schema string // the tables' schema, set by Open: feed notifications name it
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
		leaseStop: make(chan struct{}), leaseDone: make(chan struct{}),
	}
	d.w = rowqueue.New(rowqueue.Config{
		Name:       "pgpersist",
		QueueLimit: opts.QueueLimit,
		BatchDelay: opts.BatchDelay,
		HotDelay:   opts.HotDelay,
		RetryMin:   opts.RetryMin,
		RetryMax:   opts.RetryMax,
		Logger:     d.log,
		Closed:     ErrClosed,
		Refused:    errNotOwned,
		Apply:      d.apply,
	})
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&d.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: current schema: %w", err)
	}
	if err := d.reserveBlock(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: %w", err)
	}
	if err := d.register(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgpersist: open: node %s: %w", d.node, err)
	}
	d.w.Start()
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
	d.mu.Lock()
	if !slices.Contains(d.regions, region) {
		d.regions = append(d.regions, region)
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	if _, err := d.pool.Exec(ctx, `UPDATE nodes SET regions = array_append(regions, $2)
		WHERE name = $1 AND version = $3 AND NOT $2 = ANY(regions)`, d.node, region, d.version); err != nil {
		d.log.Warn("pgpersist: recording the region in the node's row failed", "region", region, "error", err)
	}
	return &Region{d: d, region: region, key: key}, nil
}

// owner is the owner written on rows this node adds or marks hot: the
// node, or NULL once its lease is lost.
func (d *DB) owner() *string {
	if d.lost() {
		return nil
	}
	return &d.node
}

// lost reports whether the node's lease is lost (see ErrLeaseLost).
func (d *DB) lost() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leaseLost
}

// apply commits b in one transaction, its statements sent as one batch
// (rowqueue.Config.Apply). It returns the rows whose hot mark matched
// nothing: another node owns them, or they are gone.
func (d *DB) apply(b *rowqueue.Pending) (map[rowqueue.Row]bool, error) {
	owner := d.owner()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.Timeout)
	defer cancel()
	var q pgx.Batch
	d.order = b.Order(d.order)
	// hot[i] is the change whose hot mark is statement i, nil for others.
	var hot []*rowqueue.Change
	var lost []rowqueue.Row
	queue := func(c *rowqueue.Change, sql string, args ...any) {
		q.Queue(sql, args...)
		hot = append(hot, c)
	}
	for _, c := range d.order {
		w := &c.Row
		if c.Removes > 0 {
			queue(nil, sqlRemove, c.Removes, w.Region, string(w.Key), w.World, w.X, w.Y, w.Z, d.node)
		}
		if c.Adds > 0 {
			queue(nil, sqlAdd, c.Adds, w.Region, string(w.Key), w.World, w.X, w.Y, w.Z, c.Idx, owner)
		}
		switch {
		case c.Hot && owner != nil:
			queue(c, sqlHot, w.Region, string(w.Key), w.World, w.X, w.Z, *owner)
		case c.Hot:
			// The lease was lost since the mark was queued: the row may
			// be another node's by now.
			lost = append(lost, c.Row)
		}
	}
	clear(d.order)
	regions := map[string]bool{}
	for _, m := range b.Marks {
		q.Queue(sqlMark, int64(m.Mark.Seq), d.node, m.Region, m.Mark.Index, int(m.Mark.Cause), m.Mark.Source, m.Mark.At.UnixNano())
		regions[m.Region] = true
	}
	for k, at := range b.Spots {
		q.Queue(sqlSpot, k.Region, k.X, k.Z, at, d.node)
		regions[k.Region] = true
	}
	for region, seq := range b.Trims {
		q.Queue(sqlTrim, region, d.node, int64(seq), time.Now().Add(-JournalRetention).UnixNano())
	}
	for region, before := range b.SpotTrims {
		q.Queue(sqlTrimSpots, region, before)
	}
	for region := range regions {
		// Delivered at commit: the other nodes read the feed then.
		// The payload names the schema too: notifications are
		// database-wide, and fleets in other schemas must not wake.
		q.Queue(`SELECT pg_notify($1, current_schema() || ':' || $2)`, FeedChannel, region)
	}
	refused := map[rowqueue.Row]bool{}
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
				refused[hot[i].Row] = true
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
func (d *DB) Flush(ctx context.Context) error { return d.w.Flush(ctx) }

// Stats returns the DB's counters.
func (d *DB) Stats() Stats {
	c := d.w.Stats()
	d.mu.Lock()
	defer d.mu.Unlock()
	return Stats{
		Pending: c.Pending, Written: c.Written, Coalesced: c.Coalesced, Dropped: c.Dropped,
		Failures: c.Failures, Retries: c.Retries, Failing: c.Failing, LastError: c.LastError,
		Claimed: d.claimed, Swept: d.swept, LeaseLost: d.leaseLost,
	}
}

// Close commits what is pending, stops the writer and the lease upkeep,
// returns the node's claims (every row it owns turns cold and unowned),
// records a clean shutdown in its nodes row and closes the pool. Writes
// queued afterwards are dropped. If the final commit fails Close returns
// an error that says how many writes were lost. Close is idempotent.
func (d *DB) Close() error {
	// The lease upkeep stops before the final commit, so that the owner
	// that commit writes stays put.
	first, err := d.w.Close(d.haltLease)
	if !first {
		return nil
	}
	if err == nil && !d.abandon && !d.lost() {
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
