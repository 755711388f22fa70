// Package rowqueue is the write queue that the persistence back ends of
// the pipeline (pipeline/sqlitepersist, pipeline/pgpersist) share: the
// coalescing set of per-row changes and journal work, and the writer
// goroutine that commits it in batches, retries a failed batch with
// back-off, bounds the pending work, paces its log lines and tells
// Flush, Stats and Close how far it got. Each back end keeps only what is
// its own: the one step that commits a batch to its database
// (Config.Apply), its schema, connection and recovery.
//
// The contract it keeps for the back ends: Add, Remove, MarkHot and the
// journal calls (Record, Trim, Claim) never wait for the database; the
// writes to one row coalesce (see Change); the writer commits after
// Config.BatchDelay, or at once for an urgent hot mark, Flush or Close; a failed
// batch is kept, the writes queued meanwhile merge into it, and it is
// tried again after Backoff; past Config.QueueLimit rows the oldest are
// dropped and counted.
package rowqueue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rtpengine/rtp/pipeline"
)

// logEvery paces the log lines of a lasting failure and of dropped
// writes: at most one a minute after the first.
const logEvery = time.Minute

// Config configures a Writer. Every field but Clock, Logger and Refused
// (needed only by an Apply that refuses rows) must be set; the back ends
// fill in their own defaults first.
type Config struct {
	// Name begins the writer's log lines and errors: the back end's
	// package name.
	Name string
	// QueueLimit bounds the pending rows: at most QueueLimit gather while
	// the writer commits (or waits to retry) a batch of at most
	// QueueLimit rows. Journal marks count against it apart.
	QueueLimit int
	// BatchDelay is how long writes gather after the first of a batch;
	// negative: commit as soon as anything is queued.
	BatchDelay time.Duration
	// HotDelay is how long an urgent hot mark waits, while a batch
	// gathers, for others to join its commit; 0 or negative: none.
	HotDelay time.Duration
	// RetryMin and RetryMax bound the back-off (see Backoff).
	RetryMin, RetryMax time.Duration
	// Logger receives failures and dropped writes, carrying the back
	// end's own attributes. Default slog.Default().
	Logger *slog.Logger
	// Clock is the writer's time. Default the real one.
	Clock Clock
	// Closed is what writes and Flush report once the writer is closed:
	// the back end's ErrClosed.
	Closed error
	// Refused is what the callback of a hot mark whose row Apply refused
	// hears.
	Refused error
	// Apply commits b to the database in one transaction. It runs on the
	// writer goroutine only, one batch at a time. It returns the rows
	// whose hot marks it refused (nil for none), whose callbacks hear
	// Refused; the others hear nil, or err for all when the commit
	// failed, in which case b is kept for the next try.
	Apply func(b *Pending) (refused map[Row]bool, err error)
}

// Counters are the writer's part of a back end's Stats. Every write
// (change, hot mark, journal work) ends up in one of Written, Coalesced
// and Dropped, or is Pending.
type Counters struct {
	Pending   int    // writes waiting to be committed, after coalescing
	Written   uint64 // writes committed
	Coalesced uint64 // writes that cancelled out before their commit
	Dropped   uint64 // writes lost: past QueueLimit, after Close, or failing at Close
	Failures  uint64 // commits that failed
	Retries   uint64 // commits of a batch that had failed before
	Failing   bool   // the last commit failed: its writes wait for a retry
	LastError string // the error of the last failed commit, "" if none; kept once writes resume
}

// Writer queues the writes of one database and commits them on a
// goroutine of its own. Make one with New, start it with Start and stop
// it with Close. A Writer is safe for concurrent use.
type Writer struct {
	cfg   Config
	log   *slog.Logger
	clock Clock

	wake chan struct{} // buffered(1): the queue is not empty
	now  chan struct{} // buffered(1): commit without delay
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer goroutine has returned

	// The writer goroutine's own: the batch it commits, kept across
	// failures.
	batch    *Pending
	hot      *Pending  // the hot marks of a commit of their own (see gather)
	streak   uint64    // failed commits in a row
	downAt   time.Time // when the streak began
	loggedAt time.Time // when the streak was last logged

	mu sync.Mutex
	// mu protects the following fields.
	front     *Pending      // writes since the writer last took them
	spare     *Pending      // the writer's emptied front, for the next swap
	batchOps  int           // writes the writer holds (its batch, and the front it took), for Stats
	seq       uint64        // sequence number of the last queued write
	committed uint64        // writes up to this sequence number are committed
	attempts  uint64        // commits tried
	failSeq   uint64        // the last failed commit covered writes up to this
	failAt    uint64        // attempts when the last commit failed
	lastErr   error         // of the last failed commit
	closeErr  error         // writes lost at Close
	progress  chan struct{} // closed and replaced after every commit tried
	closed    bool
	flushers  int       // Flush calls waiting
	droppedAt time.Time // when a drop was last logged
	stats     Counters  // counters other than Pending
}

// New returns a writer that is not started yet: writes queue, and Start
// begins committing them.
func New(cfg Config) *Writer {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &Writer{
		cfg: cfg, log: cfg.Logger, clock: cfg.Clock,
		wake: make(chan struct{}, 1), now: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		batch: newPending(), hot: newPending(), front: newPending(), spare: newPending(),
		progress: make(chan struct{}),
	}
}

// Start starts the writer goroutine. It must be called once, and before
// Close.
func (w *Writer) Start() { go w.run() }

// rowOf is the row of loc in region under key.
func rowOf(region string, key pipeline.Key, loc pipeline.Location) Row {
	return Row{Region: region, Key: key, World: loc.World, X: loc.X, Y: loc.Y, Z: loc.Z}
}

// Add queues one more copy of loc in region under key.
func (w *Writer) Add(region string, key pipeline.Key, loc pipeline.Location) {
	w.enqueue(Change{Row: rowOf(region, key, loc), Idx: loc.Index, Adds: 1}, false, nil)
}

// Remove queues the removal of one copy of loc in region under key.
func (w *Writer) Remove(region string, key pipeline.Key, loc pipeline.Location) {
	w.enqueue(Change{Row: rowOf(region, key, loc), Removes: 1}, false, nil)
}

// MarkHot queues a hot mark of loc's row (matched whatever its y: the
// back ends mark the column) in region under key; done hears how its
// commit went (see enqueue and Config.Apply). An urgent mark is committed
// after Config.HotDelay, apart from the batch (see gather); the others
// wait for the batch, as every other write does.
func (w *Writer) MarkHot(region string, key pipeline.Key, loc pipeline.Location, urgent bool, done func(error)) {
	w.enqueue(Change{Row: rowOf(region, key, loc), Hot: true}, urgent, done)
}

// enqueue queues one change and, for a hot mark, its callback (nil for
// none), which the commit of the change calls; urgent asks for that
// commit without the batch delay. It never waits for the
// database: it composes the change into the pending change of its row,
// or adds one, dropping the oldest row past QueueLimit. While commits are
// failing, and once the writer is closed, done is called at once with the
// error (a failing mark is still queued and retried).
func (w *Writer) enqueue(f Change, urgent bool, done func(error)) {
	w.mu.Lock()
	if w.closed {
		w.stats.Dropped++
		w.mu.Unlock()
		if done != nil {
			done(w.cfg.Closed)
		}
		return
	}
	var failed error
	if done != nil {
		if w.stats.Failing {
			failed = w.lastErr
		} else {
			w.front.done = append(w.front.done, hotDone{row: f.Row, f: done})
		}
	}
	w.seq++
	if f.Adds > 0 {
		f.AddSeq = w.seq
	}
	dropped := 0
	if _, ok := w.front.at[f.Row]; !ok {
		for w.front.rows() >= w.cfg.QueueLimit {
			dropped += w.front.dropOldest()
		}
	}
	w.stats.Coalesced += uint64(w.front.put(f))
	logDrop := dropped > 0 && w.noteDropsLocked(dropped)
	total := w.stats.Dropped
	w.mu.Unlock()
	if logDrop {
		w.logDrops(total)
	}
	if failed != nil {
		done(failed)
	}
	// An urgent promotion waits for the commit of its hot mark: no batch
	// delay.
	w.signal(urgent && done != nil && failed == nil)
}

// Record queues journal mark m of region. Its Seq is next(), which runs
// under the writer's lock, so that marks queue in Seq order. Record
// returns the Seq, or 0 once the writer is closed (the mark is dropped
// and next not called).
func (w *Writer) Record(region string, m pipeline.Mark, next func() uint64) uint64 {
	var seq uint64
	w.enqueueJournal(func(p *Pending) int {
		seq = next()
		m.Seq = seq
		p.putMark(MarkRow{Region: region, Mark: m})
		return 0
	})
	return seq
}

// Trim queues the deletion of region's marks up to seq.
func (w *Writer) Trim(region string, seq uint64) {
	w.enqueueJournal(func(p *Pending) int { return p.putTrim(region, seq) })
}

// TrimSpots queues the deletion of region's spots claimed before before.
func (w *Writer) TrimSpots(region string, before time.Time) {
	w.enqueueJournal(func(p *Pending) int { return p.putSpotTrim(region, before.UnixNano()) })
}

// Claim queues spot s of region; the claims of one column keep the
// latest time.
func (w *Writer) Claim(region string, s pipeline.Spot) {
	w.enqueueJournal(func(p *Pending) int {
		return p.putSpot(SpotKey{Region: region, X: s.X, Z: s.Z}, s.At.UnixNano())
	})
}

// enqueueJournal queues journal work (put, under w.mu) without waiting
// for the database, dropping the oldest marks past QueueLimit; once the
// writer is closed the work is dropped.
func (w *Writer) enqueueJournal(put func(p *Pending) (cancelled int)) {
	w.mu.Lock()
	if w.closed {
		w.stats.Dropped++
		w.mu.Unlock()
		return
	}
	w.seq++
	w.stats.Coalesced += uint64(put(w.front))
	dropped := 0
	for len(w.front.Marks) > w.cfg.QueueLimit {
		w.front.dropOldestMark()
		dropped++
	}
	logDrop := dropped > 0 && w.noteDropsLocked(dropped)
	total := w.stats.Dropped
	w.mu.Unlock()
	if logDrop {
		w.logDrops(total)
	}
	w.signal(false)
}

// signal wakes the writer; urgent asks it to skip its batch delay.
func (w *Writer) signal(urgent bool) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
	if urgent {
		select {
		case w.now <- struct{}{}:
		default:
		}
	}
}

// noteDropsLocked counts n dropped writes and reports whether to log them
// (at most once every logEvery). w.mu is held.
func (w *Writer) noteDropsLocked(n int) bool {
	w.stats.Dropped += uint64(n)
	now := w.clock.Now()
	if !w.droppedAt.IsZero() && now.Sub(w.droppedAt) < logEvery {
		return false
	}
	w.droppedAt = now
	return true
}

func (w *Writer) logDrops(total uint64) {
	w.log.Warn(w.cfg.Name+": too many pending writes; dropping the oldest", "limit_rows", w.cfg.QueueLimit, "dropped_total", total)
}

// run is the writer goroutine: it waits for writes (then BatchDelay), or
// after a failure for the back-off, and tries to commit everything
// pending. Hot marks do not wait for the batch: while it gathers they are
// committed on their own as they come (see gather). Flush cuts either
// wait short; Close makes it try once more and return.
func (w *Writer) run() {
	defer close(w.done)
	for {
		if w.streak == 0 {
			hot := false
			select {
			case <-w.wake:
			case <-w.now:
				hot = true
			case <-w.stop:
				w.final()
				return
			}
			if w.cfg.BatchDelay > 0 && !w.gather(w.cfg.BatchDelay, hot) {
				w.final()
				return
			}
		} else if !w.backoff(Backoff(w.streak, w.cfg.RetryMin, w.cfg.RetryMax)) {
			w.final()
			return
		}
		w.commit()
	}
}

// gather lets a batch gather for delay, committing the hot marks queued
// meanwhile on their own, without the rest of the batch: a promotion
// waits for its mark, nothing waits for the other writes, and the batch
// keeps its size (a commit at every mark would take a few of a busy
// table's row changes at a time). A mark first waits Config.HotDelay for
// others: promotions end in bursts, a pulse's worth within a few
// milliseconds, and a commit costs much the same whatever number of marks
// it carries. It returns early, for a full commit, when a Flush waits or a
// hot commit failed, and false when Close stops the writer. hot reports a
// commit request taken already.
func (w *Writer) gather(delay time.Duration, hot bool) bool {
	c, release := w.clock.After(delay)
	defer release()
	for {
		if hot {
			// Not cut short by further marks (nor by Flush, which waits
			// that much longer).
			if w.hotWaiting() && w.cfg.HotDelay > 0 && !w.wait(w.cfg.HotDelay) {
				return false
			}
			w.mu.Lock()
			full := w.flushers > 0 // a Flush wants everything committed
			w.mu.Unlock()
			if full || !w.commitHot() {
				return true
			}
		}
		select {
		case <-c:
			return true
		case <-w.now:
			hot = true
		case <-w.stop:
			return false
		}
	}
}

// hotWaiting reports whether a hot mark waits for its commit.
func (w *Writer) hotWaiting() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.front.done) > 0
}

// commitHot commits the hot marks pending, with the rest of their rows'
// changes, in a transaction of their own (see Pending.takeHot), and
// answers their callbacks. It runs only while no failed batch is kept
// (streak 0), so no older write of their rows is still uncommitted. On
// failure it puts them back in front of the newer writes and returns
// false: the full commit that follows retries them, and reports.
func (w *Writer) commitHot() bool {
	w.mu.Lock()
	w.front.takeHot(w.hot)
	ops := w.hot.writes
	w.batchOps += ops
	w.mu.Unlock()
	if len(w.hot.done) == 0 && ops == 0 {
		return true
	}
	var refused map[Row]bool
	var err error
	if ops > 0 {
		refused, err = w.cfg.Apply(w.hot)
	}
	w.mu.Lock()
	w.batchOps -= ops
	if err != nil {
		w.hot.merge(w.front)
		w.front, w.hot = w.hot, w.front
		w.hot.reset()
		w.mu.Unlock()
		return false
	}
	done := w.hot.takeDone()
	w.stats.Written += uint64(ops)
	w.attempts++
	close(w.progress)
	w.progress = make(chan struct{})
	w.mu.Unlock()
	w.hot.reset()
	for _, h := range done {
		if refused[h.row] {
			h.f(w.cfg.Refused)
		} else {
			h.f(nil)
		}
	}
	return true
}

// backoff waits out the back-off d after a failed commit, or less when a
// Flush waits for a commit. A commit request no Flush waits for any more
// (one sent while the commit that served it was under way) does not cut
// it short: it would retry at once, for nothing.
func (w *Writer) backoff(d time.Duration) bool {
	c, release := w.clock.After(d)
	defer release()
	for {
		select {
		case <-c:
			return true
		case <-w.now:
			w.mu.Lock()
			flushing := w.flushers > 0
			w.mu.Unlock()
			if flushing {
				return true
			}
		case <-w.stop:
			return false
		}
	}
}

// wait waits for delay; it returns false when Close stops the writer.
func (w *Writer) wait(delay time.Duration) bool {
	c, release := w.clock.After(delay)
	defer release()
	select {
	case <-c:
		return true
	case <-w.stop:
		return false
	}
}

// final is the writer's last commit, at Close: writes that fail now are
// lost, and Close says how many.
func (w *Writer) final() {
	if err := w.commit(); err != nil {
		lost := w.batch.writes
		w.batch.reset()
		w.mu.Lock()
		w.stats.Dropped += uint64(lost)
		w.batchOps = 0
		w.closeErr = fmt.Errorf("%s: close: %d writes lost, the database is still failing: %w", w.cfg.Name, lost, err)
		w.mu.Unlock()
		w.log.Error(w.cfg.Name+": writes lost at close", "writes", lost, "failures", w.streak, "error", err)
	}
}

// commit takes the writes queued since the last commit into the batch
// (which still holds those of a failed commit, if any) and commits the
// batch with Config.Apply. On failure the batch is kept for the next try.
func (w *Writer) commit() error {
	// This commit serves every request for one so far: a request left
	// over would cut the next wait short for nothing.
	select {
	case <-w.now:
	default:
	}
	w.mu.Lock()
	front := w.front
	w.front, w.spare = w.spare, nil
	w.batchOps += front.writes // in the writer's hands now
	upTo := w.seq
	if w.streak > 0 {
		w.stats.Retries++
	}
	w.mu.Unlock()

	cancelled := w.batch.merge(front)
	front.reset()
	dropped := 0
	for w.batch.rows() > w.cfg.QueueLimit {
		dropped += w.batch.dropOldest()
	}
	var err error
	var refused map[Row]bool
	if w.batch.writes > 0 {
		refused, err = w.cfg.Apply(w.batch)
	}
	now := w.clock.Now()
	ops := w.batch.writes
	// The hot marks of a failed commit stay in the batch and are retried,
	// but their callers hear of the failure now.
	done := w.batch.takeDone()
	if err == nil {
		w.batch.reset()
	}

	w.mu.Lock()
	w.spare = front
	w.stats.Coalesced += uint64(cancelled)
	logDrop := dropped > 0 && w.noteDropsLocked(dropped)
	w.attempts++
	streak, downAt := w.streak, w.downAt
	if err == nil {
		w.stats.Written += uint64(ops)
		w.committed = upTo
		w.stats.Failing = false
		w.batchOps = 0
	} else {
		w.stats.Failures++
		w.stats.Failing = true
		w.stats.LastError = err.Error()
		w.lastErr = err
		w.failSeq, w.failAt = upTo, w.attempts
		w.batchOps = ops
	}
	pending := w.batchOps + w.front.writes
	total := w.stats.Dropped
	close(w.progress)
	w.progress = make(chan struct{})
	w.mu.Unlock()

	if logDrop {
		w.logDrops(total)
	}
	for _, h := range done {
		switch {
		case err != nil:
			h.f(err)
		case refused[h.row]:
			h.f(w.cfg.Refused)
		default:
			h.f(nil)
		}
	}
	name := w.cfg.Name
	switch {
	case err == nil && streak > 0:
		w.streak = 0
		w.log.Info(fmt.Sprintf("%s: writes resumed after %d failures, %v", name, streak, now.Sub(downAt).Round(time.Millisecond)),
			"failures", streak, "down", now.Sub(downAt), "written", ops, "dropped_total", total)
	case err == nil:
	case streak == 0:
		w.streak, w.downAt, w.loggedAt = 1, now, now
		w.log.Warn(name+": writing locations failed; keeping the writes and retrying", "pending", pending, "error", err)
	default:
		w.streak++
		if now.Sub(w.loggedAt) >= logEvery {
			w.loggedAt = now
			w.log.Warn(name+": writing locations still failing", "failures", w.streak, "pending", pending,
				"down", now.Sub(downAt).Round(time.Second), "dropped_total", total, "error", err)
		}
	}
	return err
}

// Flush waits until every write queued before the call is committed, or
// ctx ends, and asks for a commit at once rather than after BatchDelay or
// the back-off. If that commit fails, Flush returns its error without
// waiting for the next retry: the writes are kept and retried, and a
// later Flush returns nil once they are committed. Errors recovered from
// are not reported. Flush returns Config.Closed once the writer is
// closed.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.cfg.Closed
	}
	target, start := w.seq, w.attempts
	w.flushers++
	defer func() {
		w.mu.Lock()
		w.flushers--
		w.mu.Unlock()
	}()
	for w.committed < target {
		if w.failAt > start && w.failSeq >= target {
			err := fmt.Errorf("%s: %d writes not committed, kept for a retry: %w", w.cfg.Name, w.batchOps+w.front.writes, w.lastErr)
			w.mu.Unlock()
			return err
		}
		ch := w.progress
		w.mu.Unlock()
		select {
		case w.now <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.done:
			return w.cfg.Closed
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return nil
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Counters {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.Pending = w.batchOps + w.front.writes
	return st
}

// Attempts returns the commits tried so far.
func (w *Writer) Attempts() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.attempts
}

// Close refuses the writes queued from now on (they are dropped), runs
// halt if it is not nil, then has the writer commit what is pending,
// once, and waits for it to return. If that commit fails the writes are
// given up, and the error says how many were lost; a failure recovered
// from before is not reported. Only the first Close does this: later
// ones return false and nil at once.
func (w *Writer) Close(halt func()) (first bool, err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false, nil
	}
	w.closed = true
	w.mu.Unlock()
	if halt != nil {
		halt()
	}
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return true, w.closeErr
}
