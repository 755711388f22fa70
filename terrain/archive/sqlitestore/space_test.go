package sqlitestore

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/diskspace"
)

// fakeDisk replaces the free space the store sees for the test.
func fakeDisk(t *testing.T, total uint64) *atomic.Uint64 {
	var free atomic.Uint64
	old := diskUsage
	diskUsage = func(string) (diskspace.Usage, error) {
		return diskspace.Usage{Free: free.Load(), Total: total}, nil
	}
	t.Cleanup(func() { diskUsage = old })
	return &free
}

// TestYieldsUnderFloor checks that under the free space floor a Put stores
// nothing, evicts the least recently used records worth what is missing,
// and gives their pages back to the file system; above it, the store grows
// again.
func TestYieldsUnderFloor(t *testing.T) {
	free := fakeDisk(t, 1<<30)
	free.Store(1 << 30)
	var log logBuffer
	path := dbPath(t)
	// The floor: the smaller of 8 MiB and 5% of 1 GiB (51 MiB).
	s := mustOpen(t, path, Options{MinFreeBytes: 8 << 20, Logger: log.logger(), OpenTimeout: time.Minute})
	// The floor's lines are held to one a minute: the test moves the
	// limiter's clock.
	var minutes atomic.Int64
	s.floorLog.Clock = func() time.Time { return time.Unix(minutes.Load()*60, 0) }
	const n, size = 32, 64 << 10
	for i := range n {
		putAll(t, s, record(key("r", i), size))
	}
	db := raw(t, path)
	var vacuum int
	if err := db.QueryRow(`PRAGMA auto_vacuum`).Scan(&vacuum); err != nil || vacuum != 2 {
		t.Fatalf("auto_vacuum of a new archive = %d, %v; want 2 (incremental)", vacuum, err)
	}
	// Frames still in the write-ahead log count as spent (a checkpoint may
	// copy them all into the file): start from an empty log.
	mustExec(t, db, `PRAGMA wal_checkpoint(TRUNCATE)`)
	pagesBefore := pageCount(t, db)

	// 512 KiB under the floor: what is missing up to the floor and its
	// margin (an eighth, 1 MiB) goes, 1.5 MiB or 24 records, the oldest
	// first, and the new record is not stored.
	free.Store(8<<20 - 512<<10)
	putAll(t, s, record("new", size))
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("write-ahead log holds %d bytes right after giving space back, want it truncated", fi.Size())
	}
	if got := s.Yielded(); got != 1 {
		t.Errorf("Yielded() = %d, want 1", got)
	}
	ctx := context.Background()
	if _, ok, err := s.Get(ctx, record("new", size).Digest); ok || err != nil {
		t.Errorf("Get(new) after a Put under the floor = %v, %v; want a miss", ok, err)
	}
	for i := range n {
		_, ok, err := s.Get(ctx, record(key("r", i), size).Digest)
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= 24; ok != want {
			t.Errorf("record %d present = %v, want %v (the oldest 24 evicted)", i, ok, want)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Entries != n-24 {
		t.Errorf("Stats() = %+v, %v; want %d entries", st, err, n-24)
	}
	if after := pageCount(t, db); after > pagesBefore-24*(size/4096) {
		t.Errorf("pages %d after evicting 1 MiB, %d before: the space was not given back", after, pagesBefore)
	}
	if !strings.Contains(log.String(), "disk low") || !strings.Contains(log.String(), "floor_bytes=8388608") {
		t.Errorf("no warning naming the floor:\n%s", log.String())
	}

	// Just above the floor but within its margin: still yielding (no flip
	// per Put), and no line saying it grows again.
	free.Store(8<<20 + 512<<10)
	yieldedBefore := s.Yielded()
	putAll(t, s, record("margin", size))
	if s.Yielded() != yieldedBefore+1 || strings.Contains(log.String(), "grows again") {
		t.Errorf("Put within the margin above the floor: yielded %d (want %d), log:\n%s", s.Yielded(), yieldedBefore+1, log.String())
	}

	// Space is back: the store grows again, and says so (a minute after
	// the line saying it yields).
	minutes.Add(1)
	free.Store(1 << 30)
	putAll(t, s, record("back", size))
	if _, ok, err := s.Get(ctx, record("back", size).Digest); !ok || err != nil {
		t.Errorf("Get(back) above the floor = %v, %v; want a hit", ok, err)
	}
	if !strings.Contains(log.String(), "grows again") {
		t.Errorf("no line saying the archive grows again:\n%s", log.String())
	}

	// Flipping again within the minute logs nothing more: the disk-low
	// line is not repeated until the minute is over.
	lows := strings.Count(log.String(), "disk low")
	free.Store(8<<20 - 512<<10)
	putAll(t, s, record("flip", size))
	free.Store(1 << 30)
	if got := strings.Count(log.String(), "disk low"); got != lows {
		t.Errorf("a second dip under the floor within a minute logged again (%d lines, want %d)", got, lows)
	}

	// With room above the floor but a write-ahead log larger than that
	// room, the store yields too.
	putAll(t, s, record("b1", size), record("b2", size), record("b3", size), record("b4", size))
	fi, err := os.Stat(path + "-wal")
	if err != nil || fi.Size() < 4*size {
		t.Fatalf("write-ahead log after 4 Puts: %v, %v; want at least %d bytes", fi, err, 4*size)
	}
	free.Store(8<<20 + uint64(fi.Size())/2)
	yielded := s.Yielded()
	putAll(t, s, record("b5", size))
	if s.Yielded() != yielded+1 {
		t.Errorf("Put with free space above the floor by less than the write-ahead log: yielded %d, want %d", s.Yielded(), yielded+1)
	}

	// Negative bounds drop the floor.
	free.Store(0)
	s2 := mustOpen(t, dbPath(t), Options{MinFreeBytes: -1, MinFreePercent: -1, OpenTimeout: time.Minute})
	putAll(t, s2, record("x", size))
	if _, ok, err := s2.Get(ctx, record("x", size).Digest); !ok || err != nil || s2.Yielded() != 0 {
		t.Errorf("without a floor, Put on a full disk: hit %v, %v, yielded %d; want stored", ok, err, s2.Yielded())
	}
}

// pageCount returns the pages of the database file.
func pageCount(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
