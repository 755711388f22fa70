package sqlitepersist_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
)

type store struct{ db *sqlitepersist.DB }

func (s store) Region(t *testing.T, region string, key pipeline.Key) pipeline.Persister {
	t.Helper()
	r, err := s.db.Region(region, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (s store) Close(t *testing.T) {
	t.Helper()
	if err := s.db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Crash implements persisttest.Crasher.
func (s store) Crash(t *testing.T) {
	t.Helper()
	if err := sqlitepersist.Abandon(s.db); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
}

func openDB(t *testing.T, path string) *sqlitepersist.DB {
	t.Helper()
	db, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestContract(t *testing.T) {
	persisttest.Run(t, func(t *testing.T, dir string) persisttest.Store {
		return store{openDB(t, filepath.Join(dir, "locations.db"))}
	})
}

func TestOptionsValidate(t *testing.T) {
	err := sqlitepersist.Options{QueueLimit: -1, BusyTimeout: -1, RetryMin: -1, RetryMax: -1}.Validate()
	for _, field := range []string{"QueueLimit", "BusyTimeout", "RetryMin", "RetryMax"} {
		if err == nil || !strings.Contains(err.Error(), field+" -1ns is negative") && !strings.Contains(err.Error(), field+" -1 is negative") {
			t.Errorf("Validate() = %v, want %s reported", err, field)
		}
	}
	err = sqlitepersist.Options{RetryMin: time.Minute, RetryMax: time.Second}.Validate()
	if err == nil || !strings.Contains(err.Error(), "RetryMin 1m0s is above RetryMax 1s") {
		t.Errorf("Validate() of a back-off that shrinks = %v", err)
	}
	for _, o := range []sqlitepersist.Options{{}, {RetryMax: time.Millisecond}, {RetryMin: time.Minute}} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", o, err)
		}
	}
	if _, err := sqlitepersist.Open(context.Background(), "", sqlitepersist.Options{}); err == nil {
		t.Fatal("Open with an empty path succeeded")
	}
}

func TestRegionArguments(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "l.db"))
	defer db.Close()
	if _, err := db.Region("", ""); err == nil || !strings.Contains(err.Error(), "region") || !strings.Contains(err.Error(), "key") {
		t.Fatalf("Region(\"\", \"\") = %v, want both problems reported", err)
	}
}

func TestOpenRejectsForeignFiles(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("this is not a database, just some bytes that are long enough to look like a header......."), 0o644); err != nil {
		t.Fatal(err)
	}
	if db, err := sqlitepersist.Open(context.Background(), junk, sqlitepersist.Options{}); err == nil {
		db.Close()
		t.Fatal("Open of a non-database file succeeded")
	}
	if db, err := sqlitepersist.Open(context.Background(), dir, sqlitepersist.Options{}); err == nil {
		db.Close()
		t.Fatal("Open of a directory succeeded")
	}

	// Another program's database: rtp's tables must not move in beside
	// its own, and the file must stay as it was.
	other := filepath.Join(dir, "other.db")
	raw, err := sql.Open(sqlitedb.DriverName, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE users (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before, _ := os.ReadFile(other)
	db, err := sqlitepersist.Open(context.Background(), other, sqlitepersist.Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open of another program's database succeeded")
	}
	if !errors.Is(err, sqlitedb.ErrForeign) || !strings.Contains(err.Error(), "users") || !strings.Contains(err.Error(), other) {
		t.Errorf("Open of another program's database = %v, want ErrForeign naming the file and its table users", err)
	}
	if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
		t.Error("Open of another program's database changed the file")
	}
}

func TestQueueLimitDrops(t *testing.T) {
	db, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), sqlitepersist.Options{QueueLimit: 1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := db.Region("r", "k")
	for i := range 1000 {
		r.Add(persisttest.Loc(i))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Dropped == 0 || st.Written+st.Dropped != 1000 {
		t.Fatalf("Stats() = %+v, want some drops and written+dropped = 1000", st)
	}
	locs, err := r.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(locs)) != st.Written {
		t.Fatalf("Load() has %d rows, Stats.Written %d", len(locs), st.Written)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r.Add(persisttest.Loc(1)) // after Close: dropped, no panic
	if err := db.Flush(context.Background()); err != sqlitepersist.ErrClosed {
		t.Fatalf("Flush after Close = %v, want ErrClosed", err)
	}
}

func TestAddDoesNotAllocate(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "l.db"))
	defer db.Close()
	r, _ := db.Region("r", "k")
	l := persisttest.Loc(1)
	// Warm the queue's buffers.
	for range 64 {
		r.Add(l)
		r.Remove(l)
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() { r.Remove(l) })
	if allocs > 0.1 {
		t.Fatalf("Remove allocates %.2f times per call, want 0", allocs)
	}
	// An Add and the Remove that cancels it: a row comes and goes.
	allocs = testing.AllocsPerRun(1000, func() { r.Add(l); r.Remove(l) })
	if allocs > 0.1 {
		t.Fatalf("Add and Remove allocate %.2f times per pair, want 0", allocs)
	}
}

// TestBatchDelay: writes wait for BatchDelay before they are committed,
// unless Flush or Close asks for them; and without Flush they are
// committed once the delay has passed.
func TestBatchDelay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	db, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{BatchDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := db.Region("r", "k")
	for i := range 10 {
		r.Add(persisttest.Loc(i))
	}
	time.Sleep(100 * time.Millisecond)
	if st := db.Stats(); st.Written != 0 || st.Pending != 10 {
		t.Fatalf("before the delay: Stats() = %+v, want 10 pending and none written", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.Flush(ctx); err != nil {
		t.Fatalf("Flush did not cut the delay short: %v", err)
	}
	if st := db.Stats(); st.Written != 10 || st.Pending != 0 {
		t.Fatalf("after Flush: Stats() = %+v, want 10 written", st)
	}
	// Flush right behind a write, whichever of the two wakes the writer
	// first, does not wait for the delay.
	for i := 10; i < 60; i++ {
		r.Add(persisttest.Loc(i))
		if err := db.Flush(ctx); err != nil {
			t.Fatalf("Flush right after write %d: %v", i, err)
		}
	}
	for i := 60; i < 65; i++ {
		r.Add(persisttest.Loc(i))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path)
	defer db.Close()
	r, _ = db.Region("r", "k")
	if locs, err := r.Load(ctx); err != nil || len(locs) != 65 {
		t.Fatalf("after Close and reopening: %d rows (%v), want 65", len(locs), err)
	}

	// A short delay: the writer commits on its own.
	db2, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "second.db"), sqlitepersist.Options{BatchDelay: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	r2, _ := db2.Region("r", "k")
	for i := range 5 {
		r2.Add(persisttest.Loc(i))
	}
	if _, ok := eventually.Within(10*time.Second, func() bool { return db2.Stats().Written == 5 }); !ok {
		t.Fatalf("writes not committed without Flush: Stats() = %+v", db2.Stats())
	}
}

// TestWriterTakesGate: with a Gate, the writer's transactions run in a
// turn of it: while the gate's only lane is held elsewhere nothing is
// committed, and once it is given back the writes are, and the lane is
// free again.
func TestWriterTakesGate(t *testing.T) {
	gate := pacer.New(1)
	db, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "l.db"), sqlitepersist.Options{Gate: gate, BatchDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Open committed its own setup; from here the lane is the test's.
	turn, err := gate.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, _ := db.Region("r", "k")
	for i := range 5 {
		r.Add(persisttest.Loc(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = db.Flush(ctx)
	cancel()
	if err == nil {
		t.Fatal("Flush returned while the gate's only lane was held: the writer did not wait for a turn")
	}
	if st := db.Stats(); st.Written != 0 {
		t.Fatalf("%d rows written while the gate's only lane was held, want 0", st.Written)
	}
	turn.Leave()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.Flush(ctx); err != nil {
		t.Fatalf("Flush once the lane is free: %v", err)
	}
	if st := db.Stats(); st.Written != 5 {
		t.Errorf("%d rows written, want 5", st.Written)
	}
	turn, err = gate.Enter(ctx)
	if err != nil {
		t.Fatalf("the writer kept the lane after its commit: %v", err)
	}
	turn.Leave()
}
