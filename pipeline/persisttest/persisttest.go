// Package persisttest checks a pipeline.Persister implementation against
// the Persister contract. Every implementation runs it from its own tests:
//
//	func TestContract(t *testing.T) {
//		persisttest.Run(t, func(t *testing.T, dir string) persisttest.Store {
//			... open the store kept under dir ...
//		})
//	}
//
// The suite checks that rows written by Add come back from Load in order
// after the store is reopened, that copies are counted (each Remove undoes
// one Add), that removing an absent row does nothing, that Load deletes the
// region's rows of other keys and leaves other regions alone, and that
// concurrent writers lose nothing.
package persisttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/memory"

	"github.com/rtpengine/rtp/pipeline"
)

// Store is a persistence backend opened on one directory.
type Store interface {
	// Region returns the Persister of region under key.
	Region(t *testing.T, region string, key pipeline.Key) pipeline.Persister
	// Close flushes and closes the store; the suite reopens the same
	// directory with the Opener afterwards.
	Close(t *testing.T)
}

// Crasher is a Store that can end as a killed process would: every write
// queued is committed, but the run is not closed in order. Stores that
// implement it run the crash cases of the suite.
type Crasher interface {
	Crash(t *testing.T)
}

// Opener opens the store kept under dir (empty the first time).
type Opener func(t *testing.T, dir string) Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"RoundTrip", testRoundTrip},
		{"Copies", testCopies},
		{"RemoveAbsent", testRemoveAbsent},
		{"KeyMismatchDropped", testKeyMismatch},
		{"RegionsIndependent", testRegions},
		{"Concurrent", testConcurrent},
		{"HotDiscardedAfterCrash", testHotCrash},
		{"HotKeptAfterCleanClose", testHotClean},
		{"HotDurableAtCallback", testHotDurable},
		{"Journal", testJournal},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// Loc returns a distinct test location.
func Loc(i int) pipeline.Location {
	return pipeline.Location{World: "overworld", X: int64(i) * 16, Y: int64(64 + i%7), Z: -int64(i) * 16, Index: int64(i)}
}

func load(t *testing.T, p pipeline.Persister) []pipeline.Location {
	t.Helper()
	locs, err := p.Load(context.Background())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return locs
}

func flush(t *testing.T, p pipeline.Persister) {
	t.Helper()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func testRoundTrip(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	p := s.Region(t, "r", "k1")
	var want []pipeline.Location
	for i := range 20 {
		p.Add(Loc(i))
		want = append(want, Loc(i))
	}
	p.Remove(Loc(3))
	p.Remove(Loc(11))
	want = slices.DeleteFunc(want, func(l pipeline.Location) bool { return l == Loc(3) || l == Loc(11) })
	flush(t, p)
	s.Close(t)

	s = open(t, dir)
	defer s.Close(t)
	got := load(t, s.Region(t, "r", "k1"))
	if !slices.Equal(got, want) {
		t.Fatalf("after reopen Load() = %v, want %v (insertion order)", got, want)
	}
}

func testCopies(t *testing.T, open Opener) {
	s := open(t, t.TempDir())
	defer s.Close(t)
	p := s.Region(t, "r", "k")
	p.Add(Loc(1))
	p.Add(Loc(1))
	p.Add(Loc(2))
	p.Remove(Loc(1))
	flush(t, p)
	if got, want := load(t, p), []pipeline.Location{Loc(1), Loc(2)}; !slices.Equal(got, want) {
		t.Fatalf("two Adds and one Remove of a location: Load() = %v, want %v", got, want)
	}
	p.Remove(Loc(1))
	flush(t, p)
	if got, want := load(t, p), []pipeline.Location{Loc(2)}; !slices.Equal(got, want) {
		t.Fatalf("after the second Remove: Load() = %v, want %v", got, want)
	}
}

func testRemoveAbsent(t *testing.T, open Opener) {
	s := open(t, t.TempDir())
	defer s.Close(t)
	p := s.Region(t, "r", "k")
	p.Remove(Loc(5))
	p.Add(Loc(5))
	flush(t, p)
	if got := load(t, p); !slices.Equal(got, []pipeline.Location{Loc(5)}) {
		t.Fatalf("Remove before Add must not pre-cancel the Add: Load() = %v", got)
	}
}

func testKeyMismatch(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	old := s.Region(t, "r", "old")
	old.Add(Loc(1))
	old.Add(Loc(2))
	flush(t, old)
	s.Close(t)

	s = open(t, dir)
	if got := load(t, s.Region(t, "r", "new")); len(got) != 0 {
		t.Fatalf("Load under a new key = %v, want no rows", got)
	}
	s.Close(t)
	s = open(t, dir)
	defer s.Close(t)
	if got := load(t, s.Region(t, "r", "old")); len(got) != 0 {
		t.Fatalf("rows of the old key came back after a Load under another key dropped them: %v", got)
	}
}

func testRegions(t *testing.T, open Opener) {
	s := open(t, t.TempDir())
	defer s.Close(t)
	a := s.Region(t, "a", "ka")
	b := s.Region(t, "b", "kb")
	a.Add(Loc(1))
	b.Add(Loc(2))
	flush(t, a)
	if got := load(t, s.Region(t, "a", "other")); len(got) != 0 {
		t.Fatalf("region a under another key: %v", got)
	}
	if got := load(t, b); !slices.Equal(got, []pipeline.Location{Loc(2)}) {
		t.Fatalf("a Load of region a dropped rows of region b: %v", got)
	}
}

func testConcurrent(t *testing.T, open Opener) {
	s := open(t, t.TempDir())
	defer s.Close(t)
	p := s.Region(t, "r", "k")
	const writers, each = 4, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				l := Loc(w*each + i)
				p.Add(l)
				if i%2 == 1 {
					p.Remove(l)
				}
			}
		}()
	}
	wg.Wait()
	flush(t, p)
	got := load(t, p)
	if len(got) != writers*each/2 {
		t.Fatalf("Load() after concurrent writes has %d rows, want %d", len(got), writers*each/2)
	}
	for _, l := range got {
		if int(l.Index)%2 != 0 {
			t.Fatalf("row %v should have been removed", l)
		}
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(fmt.Errorf("second Flush: %w", err))
	}
}

// markAbsentHot marks a location without a row hot: the callback gets
// nil, or, from a Persister shared by a fleet, an error wrapping
// pipeline.ErrNotOwned (the row may have been handed out by another node).
func markAbsentHot(t *testing.T, p pipeline.Persister, loc pipeline.Location) {
	t.Helper()
	done := make(chan error, 1)
	p.MarkHot(loc, true, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, pipeline.ErrNotOwned) {
			t.Fatalf("MarkHot of a location without a row: %v, want nil or pipeline.ErrNotOwned", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("MarkHot never called back")
	}
}

// markHot marks loc hot, urgently or not, and waits for the callback.
func markHot(t *testing.T, p pipeline.Persister, loc pipeline.Location, urgent bool) {
	t.Helper()
	done := make(chan error, 1)
	p.MarkHot(loc, urgent, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("MarkHot: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("MarkHot never called back")
	}
}

// openCrasher opens a store in dir, or skips the test when the store
// cannot simulate a crash.
func openCrasher(t *testing.T, open Opener, dir string) (Store, Crasher) {
	t.Helper()
	s := open(t, dir)
	c, ok := s.(Crasher)
	if !ok {
		s.Close(t)
		t.Skip("the store cannot simulate a crash (it does not implement Crasher)")
	}
	return s, c
}

func testHotCrash(t *testing.T, open Opener) {
	dir := t.TempDir()
	s, c := openCrasher(t, open, dir)
	p := s.Region(t, "r", "k")
	if rec := p.Recovery(); rec.Unclean {
		t.Fatalf("a new store reports an unclean previous run: %+v", rec)
	}
	for i := range 4 {
		p.Add(Loc(i))
	}
	flush(t, p)
	hot := Loc(2)
	hot.Y += 3 // the landing y found at promotion may differ: any y of the column
	markHot(t, p, hot, false)
	markHot(t, p, Loc(3), true)
	p.Remove(Loc(3)) // handed out and removed: no row left to discard
	markAbsentHot(t, p, Loc(99))
	flush(t, p)
	c.Crash(t)

	s = open(t, dir)
	defer s.Close(t)
	p = s.Region(t, "r", "k")
	got := load(t, p)
	if want := []pipeline.Location{Loc(0), Loc(1)}; !slices.Equal(got, want) {
		t.Fatalf("after a crash Load() = %v, want %v (the hot row discarded)", got, want)
	}
	rec := p.Recovery()
	if !rec.Unclean || !slices.Equal(rec.Discarded, []pipeline.Location{Loc(2)}) {
		t.Fatalf("Recovery() = %+v, want unclean with %v discarded", rec, Loc(2))
	}
}

// testHotDurable checks that a hot mark's callback means the mark is on
// disk, urgent or not: a crash right after it, with no Flush, discards the
// row.
func testHotDurable(t *testing.T, open Opener) {
	dir := t.TempDir()
	s, c := openCrasher(t, open, dir)
	p := s.Region(t, "r", "k")
	for i := range 3 {
		p.Add(Loc(i))
	}
	flush(t, p)
	markHot(t, p, Loc(0), false)
	markHot(t, p, Loc(1), true)
	c.Crash(t)

	s = open(t, dir)
	defer s.Close(t)
	p = s.Region(t, "r", "k")
	if got, want := load(t, p), []pipeline.Location{Loc(2)}; !slices.Equal(got, want) {
		t.Fatalf("after a crash right after the marks' callbacks Load() = %v, want %v", got, want)
	}
	rec := p.Recovery()
	if !rec.Unclean || !slices.Equal(rec.Discarded, []pipeline.Location{Loc(0), Loc(1)}) {
		t.Fatalf("Recovery() = %+v, want unclean with %v and %v discarded", rec, Loc(0), Loc(1))
	}
}

func testHotClean(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	p := s.Region(t, "r", "k")
	p.Add(Loc(1))
	p.Add(Loc(2))
	markHot(t, p, Loc(1), false)
	s.Close(t)
	s = open(t, dir)
	p = s.Region(t, "r", "k")
	if got := load(t, p); !slices.Equal(got, []pipeline.Location{Loc(1), Loc(2)}) {
		t.Fatalf("after a clean close Load() = %v, want both rows (hot rows turn cold)", got)
	}
	if rec := p.Recovery(); rec.Unclean || len(rec.Discarded) != 0 {
		t.Fatalf("Recovery() after a clean close = %+v", rec)
	}
	s.Close(t)
	if _, ok := s.(Crasher); !ok {
		return
	}
	// Turned cold at the clean close: a crash afterwards discards nothing.
	s = open(t, dir)
	s.(Crasher).Crash(t)
	s = open(t, dir)
	defer s.Close(t)
	if got := load(t, s.Region(t, "r", "k")); len(got) != 2 {
		t.Fatalf("rows cold at a clean close were discarded by a later crash: %v", got)
	}
}

func testJournal(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := open(t, dir)
	j, ok := s.Region(t, "r", "k").(pipeline.Journal)
	if !ok {
		s.Close(t)
		t.Skip("the store keeps no journal (its Persister does not implement pipeline.Journal)")
	}
	other := s.Region(t, "other", "k").(pipeline.Journal)
	at := time.Unix(1_700_000_000, 123)
	var seqs []uint64
	for i := range 5 {
		seqs = append(seqs, j.Record(pipeline.Mark{Index: int64(i), Cause: memory.CauseUniquePlacement, Source: "s", At: at.Add(time.Duration(i) * time.Second)}))
	}
	other.Record(pipeline.Mark{Index: 9, Cause: memory.CauseSafety, At: at})
	if !slices.IsSorted(seqs) || seqs[0] == seqs[4] || j.Position() < seqs[4] {
		t.Fatalf("Record seqs %v, Position %d: want increasing, Position at the last", seqs, j.Position())
	}
	j.Trim(seqs[1])
	j.Claim(pipeline.Spot{X: 5, Z: 6, At: at})
	j.Claim(pipeline.Spot{X: 5, Z: 6, At: at.Add(time.Hour)})
	j.Claim(pipeline.Spot{X: 1, Z: 1, At: at.Add(-time.Hour)})
	j.Claim(pipeline.Spot{X: 7, Z: 7, At: at.Add(10 * time.Minute)})
	j.Claim(pipeline.Spot{X: 8, Z: 8, At: at.Add(2 * time.Hour)})
	other.Claim(pipeline.Spot{X: 7, Z: 7, At: at})
	// (7, 7) in r is young enough for Spots(at) below, not for this trim;
	// the trim is r's alone.
	j.TrimSpots(at.Add(30 * time.Minute))
	if c, ok := s.(Crasher); ok {
		flush(t, s.Region(t, "r", "k"))
		c.Crash(t)
	} else {
		s.Close(t)
	}
	s = open(t, dir)
	defer s.Close(t)
	j = s.Region(t, "r", "k").(pipeline.Journal)
	marks, err := j.Marks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(marks) != 3 || marks[0].Index != 2 || marks[2].Index != 4 || !marks[0].At.Equal(at.Add(2*time.Second)) ||
		marks[0].Cause != memory.CauseUniquePlacement || marks[0].Source != "s" || marks[0].Seq != seqs[2] {
		t.Fatalf("Marks() after a trim to %d = %+v, want indices 2..4 with their times", seqs[1], marks)
	}
	spots, err := j.Spots(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(spots) != 2 || spots[0].X != 5 || spots[0].Z != 6 || !spots[0].At.Equal(at.Add(time.Hour)) ||
		spots[1].X != 8 || !spots[1].At.Equal(at.Add(2*time.Hour)) {
		t.Fatalf("Spots(since) after TrimSpots = %+v, want (5, 6) at its latest time, then (8, 8)", spots)
	}
	spots, err = s.Region(t, "other", "k").(pipeline.Journal).Spots(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(spots) != 1 || spots[0].X != 7 || !spots[0].At.Equal(at) {
		t.Fatalf("Spots(since) of another region after TrimSpots = %+v, want its own spot kept", spots)
	}
	if j.Position() < seqs[4] {
		t.Fatalf("Position() after reopening = %d, below the last mark %d", j.Position(), seqs[4])
	}
}
