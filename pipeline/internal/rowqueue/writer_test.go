package rowqueue

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/internal/bubble"
	"github.com/rtpengine/rtp/pipeline"
)

var (
	errClosed  = errors.New("test: closed")
	errRefused = errors.New("test: refused")
	errDisk    = errors.New("test: disk full")
)

// fakeDB is a back end's apply step: it records the batches it commits,
// fails while fail is set and refuses the hot marks of the rows in
// refuse.
type fakeDB struct {
	mu      sync.Mutex
	fail    error
	refuse  map[Row]bool
	applied [][]Change
}

func (f *fakeDB) apply(b *Pending) (map[Row]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var batch []Change
	refused := map[Row]bool{}
	for _, c := range b.Order(nil) {
		batch = append(batch, *c)
		if c.Hot && f.refuse[c.Row] {
			refused[c.Row] = true
		}
	}
	f.applied = append(f.applied, batch)
	return refused, nil
}

func (f *fakeDB) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

// last returns the last batch committed.
func (f *fakeDB) last() []Change {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.applied) == 0 {
		return nil
	}
	return f.applied[len(f.applied)-1]
}

// newWriter starts a writer on f that commits at once and, after a
// failure, waits an hour unless Flush asks for a try.
func newWriter(t *testing.T, f *fakeDB) *Writer {
	t.Helper()
	return newDelayedWriter(t, f, -1, 0)
}

// newDelayedWriter is newWriter with the given batch and hot delays.
func newDelayedWriter(t *testing.T, f *fakeDB, batch, hot time.Duration) *Writer {
	t.Helper()
	w := New(Config{
		Name: "test", QueueLimit: 100, BatchDelay: batch, HotDelay: hot, RetryMin: time.Hour, RetryMax: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Closed: errClosed, Refused: errRefused, Apply: f.apply,
	})
	w.Start()
	t.Cleanup(func() { w.Close(nil) })
	return w
}

// markHot enqueues a hot mark of r and returns the channel its callback
// answers on.
func markHot(w *Writer, r Row) <-chan error {
	c := make(chan error, 1)
	w.enqueue(Change{Row: r, Hot: true}, true, func(err error) { c <- err })
	return c
}

func answer(t *testing.T, what string, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no callback", what)
		return nil
	}
}

// TestHotMarkResults: each hot mark's callback learns its own row's
// result when Apply refuses some rows, and the batch's error when the
// commit fails; a mark queued while commits fail hears at once, and is
// still retried.
func TestHotMarkResults(t *testing.T) {
	ctx := context.Background()
	a, b := Row{Region: "r", X: 1}, Row{Region: "r", X: 2}
	f := &fakeDB{refuse: map[Row]bool{b: true}}
	w := newWriter(t, f)
	ca, cb := markHot(w, a), markHot(w, b)
	if err := answer(t, "mark of a", ca); err != nil {
		t.Errorf("mark of an accepted row = %v, want nil", err)
	}
	if err := answer(t, "mark of b", cb); !errors.Is(err, errRefused) {
		t.Errorf("mark of a refused row = %v, want Config.Refused", err)
	}

	f.setFail(errDisk)
	c, d := Row{Region: "r", X: 3}, Row{Region: "r", X: 4}
	if err := answer(t, "mark of c", markHot(w, c)); !errors.Is(err, errDisk) {
		t.Fatalf("mark of a failing commit = %v, want the commit's error", err)
	}
	cd := markHot(w, d)
	select {
	case err := <-cd:
		if !errors.Is(err, errDisk) {
			t.Fatalf("mark queued while failing = %v, want the last error", err)
		}
	default:
		t.Fatal("a mark queued while commits fail did not hear of it at once")
	}
	err := w.Flush(ctx)
	if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "test: 2 writes not committed, kept for a retry") {
		t.Fatalf("Flush while failing = %v", err)
	}
	if st := w.Stats(); !st.Failing || st.Failures != 2 || st.Pending != 2 || st.LastError != errDisk.Error() {
		t.Fatalf("while failing: Stats() = %+v, want 2 failures and 2 writes pending", st)
	}

	f.setFail(nil)
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush once the database works = %v", err)
	}
	// Changes of equal AddSeq (hot marks alone) come in no set order.
	got := f.last()
	marked := map[Row]bool{}
	for _, ch := range got {
		marked[ch.Row] = ch.Hot
	}
	if len(got) != 2 || !marked[c] || !marked[d] {
		t.Fatalf("batch after recovery = %+v, want the hot marks of c and d", got)
	}
	// Two marks committed at first, two retried; none lost.
	if st := w.Stats(); st.Failing || st.Pending != 0 || st.Written != 4 || st.Retries != 2 || st.Dropped != 0 {
		t.Fatalf("after recovery: Stats() = %+v", st)
	}
}

// TestCloseGivesUpFailingWrites: Close refuses new writes before halt
// runs, commits once more, and when that fails reports and counts the
// writes lost; later calls report nothing.
func TestCloseGivesUpFailingWrites(t *testing.T) {
	f := &fakeDB{}
	w := newWriter(t, f)
	f.setFail(errDisk)
	for i := range 3 {
		w.Add("r", "k", pipeline.Location{X: int64(i)})
	}
	if err := w.Flush(context.Background()); !errors.Is(err, errDisk) {
		t.Fatalf("Flush while failing = %v", err)
	}
	halted := false
	first, err := w.Close(func() {
		halted = true
		w.Add("r", "k", pipeline.Location{X: 9})
	})
	if !first || !halted || !errors.Is(err, errDisk) || !strings.Contains(err.Error(), "test: close: 3 writes lost") {
		t.Fatalf("Close while failing = %v, %v (halt run: %v), want 3 writes lost", first, err, halted)
	}
	if st := w.Stats(); st.Dropped != 4 || st.Pending != 0 || st.Written != 0 {
		t.Fatalf("after Close: Stats() = %+v, want the 3 lost and the one queued during halt dropped", st)
	}
	if first, err := w.Close(nil); first || err != nil {
		t.Fatalf("second Close = %v, %v, want false and nil", first, err)
	}
	if err := answer(t, "mark after Close", markHot(w, Row{Region: "r"})); !errors.Is(err, errClosed) {
		t.Fatalf("mark after Close = %v, want Config.Closed", err)
	}
	if err := w.Flush(context.Background()); !errors.Is(err, errClosed) {
		t.Fatalf("Flush after Close = %v, want Config.Closed", err)
	}
	if seq := w.Record("r", pipeline.Mark{}, func() uint64 { t.Error("next called after Close"); return 1 }); seq != 0 {
		t.Fatalf("Record after Close = %d, want 0", seq)
	}
}

// TestJournalQueue: Record numbers the marks with next, in order, and the
// journal work of a batch reaches Apply; past QueueLimit the oldest marks
// are dropped.
func TestJournalQueue(t *testing.T) {
	var got []MarkRow
	var spots map[SpotKey]int64
	var trims map[string]uint64
	var spotTrims map[string]int64
	var mu sync.Mutex
	w := New(Config{
		Name: "test", QueueLimit: 3, BatchDelay: time.Hour, RetryMin: time.Hour, RetryMax: time.Hour,
		Logger: slog.New(slog.DiscardHandler), Closed: errClosed,
		Apply: func(b *Pending) (map[Row]bool, error) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, b.Marks...)
			spots, trims = map[SpotKey]int64{}, map[string]uint64{}
			for k, v := range b.Spots {
				spots[k] = v
			}
			for k, v := range b.Trims {
				trims[k] = v
			}
			spotTrims = maps.Clone(b.SpotTrims)
			return nil, nil
		},
	})
	w.Start()
	defer w.Close(nil)
	seq := uint64(100)
	next := func() uint64 { seq++; return seq }
	for i := range 5 {
		if s := w.Record("r", pipeline.Mark{Index: int64(i)}, next); s != uint64(101+i) {
			t.Fatalf("Record %d = %d, want %d", i, s, 101+i)
		}
	}
	w.Trim("r", 102)
	w.Trim("r", 101)
	at := time.Unix(0, 42)
	w.Claim("r", pipeline.Spot{X: 3, Z: 4, At: at})
	w.Claim("r", pipeline.Spot{X: 3, Z: 4, At: at.Add(-time.Second)})
	w.TrimSpots("r", time.Unix(0, 7))
	w.TrimSpots("r", time.Unix(0, 9))
	if err := w.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || got[0].Mark.Seq != 103 || got[0].Mark.Index != 2 || got[2].Mark.Seq != 105 {
		t.Fatalf("marks committed = %+v, want the newest 3 in Seq order", got)
	}
	if trims["r"] != 102 || spots[SpotKey{Region: "r", X: 3, Z: 4}] != 42 {
		t.Fatalf("trims %v, spots %v: want the highest trim and the latest spot", trims, spots)
	}
	if spotTrims["r"] != 9 {
		t.Fatalf("spot trims %v: want the latest", spotTrims)
	}
	// 5 marks (2 dropped), 2 trims, 2 spots and 2 spot trims (one of
	// each coalesced).
	if st := w.Stats(); st.Written != 6 || st.Dropped != 2 || st.Coalesced != 3 {
		t.Fatalf("Stats() = %+v, want 6 written, 2 dropped, 3 coalesced", st)
	}
}

func TestBackoff(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 10 * time.Second
	for n := uint64(1); n < 100; n++ {
		full := min(lo<<min(n-1, 20), hi)
		if d := Backoff(n, lo, hi); d < full/2 || d > full {
			t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", n, d, full/2, full)
		}
	}
}

func TestRetryBounds(t *testing.T) {
	const defLo, defHi = 100 * time.Millisecond, 10 * time.Second
	for _, tc := range []struct{ lo, hi, wantLo, wantHi time.Duration }{
		{0, 0, defLo, defHi},
		{0, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}, // hi alone, below lo's default
		{time.Minute, 0, time.Minute, time.Minute},                               // lo alone, above hi's default
		{time.Second, time.Minute, time.Second, time.Minute},
	} {
		if lo, hi := RetryBounds(tc.lo, tc.hi, defLo, defHi); lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("RetryBounds(%v, %v) = %v, %v; want %v, %v", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

// TestHotMarksCommitAlone: while a batch gathers, a hot mark is committed
// at once in a transaction of its own with the rest of its row's change
// (an Add queued before it), and leaves the other rows' writes and the
// journal to the batch; a failed hot commit keeps every write, and its
// callback hears the error.
func TestHotMarksCommitAlone(t *testing.T) {
	ctx := context.Background()
	f := &fakeDB{}
	w := newDelayedWriter(t, f, time.Hour, 0)

	other := pipeline.Location{World: "w", X: 1}
	marked := pipeline.Location{World: "w", X: 2}
	w.Add("r", "k", other)
	w.Add("r", "k", marked)
	w.Claim("r", pipeline.Spot{X: 5, Z: 5, At: time.Unix(1, 0)})
	c := make(chan error, 1)
	w.MarkHot("r", "k", marked, true, func(err error) { c <- err })
	if err := answer(t, "hot mark", c); err != nil {
		t.Fatalf("hot mark = %v, want nil", err)
	}
	got := f.last()
	want := Change{Row: rowOf("r", "k", marked), Adds: 1, Hot: true, AddSeq: 2}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("hot commit = %+v, want only %+v", got, want)
	}
	if st := w.Stats(); st.Pending != 2 || st.Written != 2 {
		t.Fatalf("after the hot commit: Stats() = %+v, want the other Add and the spot pending, 2 written", st)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.last(); len(got) != 1 || got[0].Row != rowOf("r", "k", other) || got[0].Hot {
		t.Fatalf("batch after Flush = %+v, want the other row's Add", got)
	}

	f.setFail(errDisk)
	again := pipeline.Location{World: "w", X: 3}
	w.Add("r", "k", other)
	w.MarkHot("r", "k", again, true, func(err error) { c <- err })
	if err := answer(t, "failing hot mark", c); !errors.Is(err, errDisk) {
		t.Fatalf("hot mark of a failing commit = %v, want the error", err)
	}
	f.setFail(nil)
	if err := w.Flush(ctx); err != nil {
		t.Fatalf("Flush once the database works = %v", err)
	}
	rows := map[Row]Change{}
	for _, ch := range f.last() {
		rows[ch.Row] = ch
	}
	if len(rows) != 2 || !rows[rowOf("r", "k", again)].Hot || rows[rowOf("r", "k", other)].Adds != 1 {
		t.Fatalf("retried batch = %+v, want the failed mark and the Add beside it", f.last())
	}
	if st := w.Stats(); st.Failing || st.Pending != 0 || st.Dropped != 0 {
		t.Fatalf("after recovery: Stats() = %+v", st)
	}
}

// TestHotDelayGathers: a hot mark waits Config.HotDelay for the marks
// that follow it, and they share one commit; Close cuts the wait short
// and commits them.
func TestHotDelayGathers(t *testing.T) {
	// On a fake clock: the hot delay and Close's haste are exact.
	synctest.Test(t, func(t *testing.T) {
		f := &fakeDB{}
		w := newDelayedWriter(t, f, time.Hour, 200*time.Millisecond)
		a, b := Row{Region: "r", X: 1}, Row{Region: "r", X: 2}
		ca := markHot(w, a)
		bubble.Advance(20 * time.Millisecond)
		cb := markHot(w, b)
		for _, c := range []<-chan error{ca, cb} {
			if err := answer(t, "hot mark", c); err != nil {
				t.Fatal(err)
			}
		}
		f.mu.Lock()
		applied := f.applied
		f.mu.Unlock()
		if len(applied) != 1 || len(applied[0]) != 2 {
			t.Fatalf("commits = %+v, want one holding both marks", applied)
		}

		cc := markHot(w, Row{Region: "r", X: 3})
		start := time.Now()
		if first, err := w.Close(nil); !first || err != nil {
			t.Fatalf("Close = %v, %v", first, err)
		}
		if err := answer(t, "mark at Close", cc); err != nil {
			t.Fatalf("mark committed by Close = %v, want nil", err)
		}
		if d := time.Since(start); d >= 200*time.Millisecond {
			t.Fatalf("Close took %v: it waited out the hot delay", d)
		}
	})
}

// TestLazyHotMarkRidesBatch: a hot mark that is not urgent waits for the
// batch like any other write and is committed with it, in one commit; an
// urgent mark queued later takes it along in its own commit.
func TestLazyHotMarkRidesBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := &fakeDB{}
		w := newDelayedWriter(t, f, time.Hour, 0)

		other := pipeline.Location{World: "w", X: 1}
		lazy := pipeline.Location{World: "w", X: 2}
		w.Add("r", "k", other)
		c := make(chan error, 1)
		w.MarkHot("r", "k", lazy, false, func(err error) { c <- err })
		bubble.Advance(time.Minute) // well short of the batch delay
		select {
		case err := <-c:
			t.Fatalf("a mark that is not urgent was committed before its batch (%v)", err)
		default:
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := answer(t, "lazy mark", c); err != nil {
			t.Fatalf("lazy mark = %v, want nil", err)
		}
		f.mu.Lock()
		applied := slices.Clone(f.applied)
		f.mu.Unlock()
		if len(applied) != 1 || len(applied[0]) != 2 {
			t.Fatalf("commits = %+v, want one holding the Add and the mark", applied)
		}

		lazy2 := pipeline.Location{World: "w", X: 3}
		urgent := pipeline.Location{World: "w", X: 4}
		c2 := make(chan error, 1)
		w.MarkHot("r", "k", lazy2, false, func(err error) { c <- err })
		w.MarkHot("r", "k", urgent, true, func(err error) { c2 <- err })
		for what, ch := range map[string]<-chan error{"lazy mark": c, "urgent mark": c2} {
			if err := answer(t, what, ch); err != nil {
				t.Fatalf("%s = %v, want nil", what, err)
			}
		}
		if got := f.last(); len(got) != 2 || !got[0].Hot || !got[1].Hot {
			t.Fatalf("urgent commit = %+v, want both marks", got)
		}
	})
}
