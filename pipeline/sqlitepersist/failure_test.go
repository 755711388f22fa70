package sqlitepersist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
)

// fakeClock is a clock that moves only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	asked   []time.Duration // every After, in order
}

type fakeWaiter struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) After(d time.Duration) (<-chan time.Time, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &fakeWaiter{at: f.now.Add(d), c: make(chan time.Time, 1)}
	f.waiters = append(f.waiters, w)
	f.asked = append(f.asked, d)
	return w.c, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.waiters = slices.DeleteFunc(f.waiters, func(x *fakeWaiter) bool { return x == w })
	}
}

// Advance moves the clock on by d, firing the waits that end by then.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.waiters = slices.DeleteFunc(f.waiters, func(w *fakeWaiter) bool {
		if w.at.After(f.now) {
			return false
		}
		w.c <- f.now
		return true
	})
}

func (f *fakeClock) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// logBuffer collects log output from the writer goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines returns the log lines that contain s.
func (l *logBuffer) lines(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for line := range strings.Lines(l.b.String()) {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, 10*time.Second, what, cond)
}

type fixture struct {
	t     *testing.T
	d     *DB
	r     *Region
	clock *fakeClock
	log   *logBuffer
	path  string
	ops   uint64 // writes made
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: newFakeClock(), log: &logBuffer{}, path: filepath.Join(t.TempDir(), "l.db")}
	opts.BatchDelay = -1
	opts.clock = f.clock
	opts.Logger = slog.New(slog.NewTextHandler(f.log, nil))
	d, err := Open(context.Background(), f.path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	f.d = d
	if f.r, err = d.Region("r", "k"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) add(i int)    { f.r.Add(persisttest.Loc(i)); f.ops++ }
func (f *fixture) remove(i int) { f.r.Remove(persisttest.Loc(i)); f.ops++ }

// exec runs a statement on the DB's one connection, between the writer's
// transactions.
func (f *fixture) exec(q string) {
	f.t.Helper()
	if _, err := f.d.db.Exec(q); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
}

// diskFull caps the database at the pages it has now: the next write
// that needs a page more fails with SQLITE_FULL, as on a full disk.
func (f *fixture) diskFull() {
	f.t.Helper()
	var pages int
	if err := f.d.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		f.t.Fatal(err)
	}
	f.exec(fmt.Sprintf(`PRAGMA max_page_count = %d`, pages))
}

// spaceBack lifts the cap of diskFull.
func (f *fixture) spaceBack() { f.exec(`PRAGMA max_page_count = 1073741823`) }

// fillUntilFull adds locations from start on, each flushed, until a flush
// fails; it returns the location that did not fit, left pending.
func (f *fixture) fillUntilFull(start int) int {
	f.t.Helper()
	for i := start; i < start+10_000; i++ {
		f.add(i)
		if err := f.d.Flush(context.Background()); err != nil {
			if !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), "1 writes not committed") {
				f.t.Fatalf("Flush on a full database = %v", err)
			}
			return i
		}
	}
	f.t.Fatal("the database never filled up")
	return 0
}

// attempts returns the commits tried so far.
func (f *fixture) attempts() uint64 { return f.d.w.Attempts() }

// retry lets the back-off of the parked writer pass and waits for the
// commit it then tries.
func (f *fixture) retry() {
	f.t.Helper()
	waitFor(f.t, "the writer waits to retry", func() bool { return f.clock.waiting() == 1 })
	n := f.attempts()
	f.clock.Advance(f.d.opts.RetryMax)
	waitFor(f.t, "the writer retried", func() bool { return f.attempts() > n })
}

func (f *fixture) load() []pipeline.Location {
	f.t.Helper()
	locs, err := f.r.Load(context.Background())
	if err != nil {
		f.t.Fatalf("Load: %v", err)
	}
	return locs
}

// checkBalance checks that every write is accounted for.
func (f *fixture) checkBalance(st Stats) {
	f.t.Helper()
	if got := st.Written + st.Coalesced + st.Dropped + uint64(st.Pending); got != f.ops {
		f.t.Errorf("Stats %+v account for %d writes, %d were made", st, got, f.ops)
	}
}

// TestDiskFull fills the database until SQLite reports it full, keeps
// writing through a long full period and gives the space back: no write
// is lost, the log holds one warning, a line a minute and one line on
// recovery, and Close succeeds.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	for i := range 5 {
		f.add(i)
	}
	if err := f.d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	f.diskFull()
	first := f.fillUntilFull(5)
	// While full: more writes, some of which cancel out, a second copy of
	// a committed row and the removal of another.
	for i := first + 1; i < first+300; i++ {
		f.add(i)
	}
	f.add(10_000)
	f.remove(10_000)
	f.add(2)
	f.remove(0)
	f.remove(first + 7) // pending since the failure: cancels its Add
	const retries = 40  // 40 waits of RetryMax, 10 s: 400 s full
	for range retries {
		f.retry()
	}
	st := f.d.Stats()
	if !st.Failing || st.Failures != retries+1 || st.Retries != retries || !strings.Contains(st.LastError, "database or disk is full") {
		t.Fatalf("while full: Stats() = %+v, want failing, %d failures, %d retries, the SQLite error", st, retries+1, retries)
	}
	// 300 Adds, one more copy, one removal, one Add undone: 301.
	if st.Pending != 301 || st.Coalesced != 4 || st.Dropped != 0 {
		t.Errorf("while full: Pending %d, Coalesced %d, Dropped %d; want 301, 4, 0", st.Pending, st.Coalesced, st.Dropped)
	}
	f.checkBalance(st)

	// Flush does not wait for the back-off, and says the writes are kept.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := f.d.Flush(fctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "301 writes not committed, kept for a retry") || !strings.Contains(err.Error(), "full") {
		t.Fatalf("Flush while full = %v", err)
	}

	// The back-off doubled from RetryMin to RetryMax, less at most half.
	f.clock.mu.Lock()
	asked := slices.Clone(f.clock.asked)
	f.clock.mu.Unlock()
	if len(asked) < retries {
		t.Fatalf("%d waits for %d retries", len(asked), retries)
	}
	full := DefaultRetryMin
	for i, d := range asked[:retries] {
		if i > 0 {
			full = min(2*full, DefaultRetryMax)
		}
		if d > full || d < full/2 {
			t.Errorf("back-off %d = %v, want in [%v, %v]", i+1, d, full/2, full)
		}
	}

	f.spaceBack()
	f.retry() // the writer retries on its own
	st = f.d.Stats()
	if st.Failing || st.Pending != 0 || st.Failures != retries+2 || st.Retries != retries+2 {
		t.Fatalf("after space came back: Stats() = %+v, want not failing, nothing pending, %d failures and retries", st, retries+2)
	}
	f.checkBalance(st)
	if err := f.d.Flush(ctx); err != nil {
		t.Fatalf("Flush after recovery = %v, want nil", err)
	}

	var wantLocs []pipeline.Location
	for i := 1; i < first+300; i++ {
		if i == first+7 {
			continue
		}
		wantLocs = append(wantLocs, persisttest.Loc(i))
		if i == 2 {
			wantLocs = append(wantLocs, persisttest.Loc(2))
		}
	}
	if got := f.load(); !slices.Equal(got, wantLocs) {
		t.Fatalf("after recovery Load() has %d rows, want %d in insertion order:\n got %v\nwant %v", len(got), len(wantLocs), got, wantLocs)
	}

	// The log: one warning with the error; one line a minute of the 400 s
	// full (the first retry is at 10 s, so 6 or 7); one on recovery.
	if got := f.log.lines("writing locations failed"); len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "database or disk is full") {
		t.Errorf("first-failure lines: %q", got)
	}
	if got := f.log.lines("still failing"); len(got) < 6 || len(got) > 7 {
		t.Errorf("%d still-failing lines over 400 s, want one a minute:\n%s", len(got), f.log)
	}
	// The writer logs the recovery after it wakes Flush, so wait for the
	// line rather than race it.
	resumed := fmt.Sprintf("writes resumed after %d failures, ", retries+2)
	waitFor(t, "the writer logs the recovery", func() bool { return len(f.log.lines("resumed")) > 0 })
	if got := f.log.lines("resumed"); len(got) != 1 || !strings.Contains(got[0], resumed) || !strings.Contains(got[0], "level=INFO") {
		t.Errorf("resume lines: %q, want one with %q", got, resumed)
	}
	if got := f.log.lines("level=ERROR"); len(got) != 0 {
		t.Errorf("error lines: %q", got)
	}
	if err := f.d.Close(); err != nil {
		t.Fatalf("Close after recovery = %v, want nil", err)
	}
}

// TestCloseWhileFailing: Close commits once more, and when that fails
// says how many writes were lost.
func TestCloseWhileFailing(t *testing.T) {
	f := newFixture(t, Options{})
	f.diskFull()
	first := f.fillUntilFull(0)
	for i := first + 1; i <= first+9; i++ {
		f.add(i)
	}
	err := f.d.Close()
	if err == nil || !strings.Contains(err.Error(), "sqlitepersist: close: 10 writes lost") || !strings.Contains(err.Error(), "full") {
		t.Fatalf("Close while full = %v, want 10 writes lost", err)
	}
	st := f.d.Stats()
	if st.Dropped != 10 || st.Pending != 0 || st.Written != uint64(first) {
		t.Errorf("after Close: Stats() = %+v, want 10 dropped, %d written", st, first)
	}
	f.checkBalance(st)
	if got := f.log.lines("writes lost at close"); len(got) != 1 || !strings.Contains(got[0], "writes=10") {
		t.Errorf("close lines: %q", got)
	}
	// What was committed before the disk filled is there.
	db, err := Open(context.Background(), f.path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, _ := db.Region("r", "k")
	if locs, err := r.Load(context.Background()); err != nil || len(locs) != first {
		t.Fatalf("after reopening: %d rows (%v), want %d", len(locs), err, first)
	}
}

// TestPendingBound: while the database fails, writes past QueueLimit rows
// drop the oldest, counted and logged once, and Add never waits.
func TestPendingBound(t *testing.T) {
	const limit = 50
	f := newFixture(t, Options{QueueLimit: limit})
	f.diskFull()
	first := f.fillUntilFull(0)
	start := time.Now()
	for i := first + 1; i <= first+500; i++ {
		f.add(i)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("500 Adds took %v while the database failed", el)
	}
	st := f.d.Stats()
	// The batch holds the location that did not fit; the 500 Adds after
	// it kept the newest 50.
	if st.Pending != limit+1 || st.Dropped != 500-limit {
		t.Fatalf("Stats() = %+v, want %d pending and %d dropped", st, limit+1, 500-limit)
	}
	f.spaceBack()
	f.retry() // the merged batch sheds its oldest row, then commits
	st = f.d.Stats()
	if st.Failing || st.Pending != 0 || st.Dropped != 500-limit+1 {
		t.Fatalf("after recovery: Stats() = %+v, want %d dropped", st, 500-limit+1)
	}
	f.checkBalance(st)
	got := f.load()
	if len(got) != first+limit || got[first] != persisttest.Loc(first+500-limit+1) || got[len(got)-1] != persisttest.Loc(first+500) {
		t.Fatalf("Load() = %v, want the %d rows committed before and the newest %d", got, first, limit)
	}
	if lines := f.log.lines("dropping the oldest"); len(lines) != 1 {
		t.Errorf("drop lines: %q, want one (at most one a minute)", lines)
	}
}

// TestRecoveredErrorNotReported: a failure the writer recovered from on
// its own is reported neither by a later Flush nor by Close.
func TestRecoveredErrorNotReported(t *testing.T) {
	f := newFixture(t, Options{})
	f.diskFull()
	f.fillUntilFull(0)
	f.spaceBack()
	f.retry()
	if err := f.d.Flush(context.Background()); err != nil {
		t.Fatalf("Flush = %v", err)
	}
	if err := f.d.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
}

func TestRetryDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, min, max time.Duration
		setMax       bool
	}{
		{0, DefaultRetryMin, DefaultRetryMax, false},
		{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, true}, // RetryMax alone, below RetryMin's default
		{time.Minute, time.Minute, time.Minute, false},                              // RetryMin alone, above RetryMax's default
	} {
		o := Options{}
		if tc.setMax {
			o.RetryMax = tc.in
		} else {
			o.RetryMin = tc.in
		}
		d, err := Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), o)
		if err != nil {
			t.Fatal(err)
		}
		if d.opts.RetryMin != tc.min || d.opts.RetryMax != tc.max {
			t.Errorf("Options %+v: back-off %v to %v, want %v to %v", o, d.opts.RetryMin, d.opts.RetryMax, tc.min, tc.max)
		}
		d.Close()
	}
}
