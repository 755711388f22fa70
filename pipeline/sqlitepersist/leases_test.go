package sqlitepersist_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/leasetest"
	"github.com/rtpengine/rtp/lease/local"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
)

// leaseClock is a clock that moves only when told, safe for concurrent
// use. It starts off a whole second, so that expiries keep nanoseconds.
type leaseClock struct {
	mu  sync.Mutex
	now time.Time
}

func newLeaseClock() *leaseClock { return &leaseClock{now: time.Unix(1_700_000_000, 123_456_789)} }

func (c *leaseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *leaseClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func openLeases(t testing.TB, db *sqlitepersist.DB, clock func() time.Time) *local.Store {
	t.Helper()
	s, err := local.Open(context.Background(), db.Leases(), local.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLeasesContract runs the lease store contract on a lease/local store
// written through the database's lease journal.
func TestLeasesContract(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Backend {
		db := openDB(t, filepath.Join(t.TempDir(), "l.db"))
		t.Cleanup(func() { db.Close() })
		clock := newLeaseClock()
		s := openLeases(t, db, clock.Now)
		return leasetest.Backend{
			Node:  func(testing.TB) (lease.Store, func()) { return s, func() {} },
			Now:   clock.Now,
			Wait:  clock.Advance,
			Slack: 0,
		}
	})
}

// TestLeasesSurviveKill checks that what a store answered is in the
// database when its process is killed (the DB abandoned, as a SIGKILL
// leaves it): reopened, a redeemed token is refused, a live lease is
// still redeemable, with its location and end to the nanosecond, and a
// released token is unknown; records forgotten are trimmed at the reopen.
func TestLeasesSurviveKill(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	clock := newLeaseClock()
	db := openDB(t, path)
	s := openLeases(t, db, clock.Now)
	la := lease.Lease{World: "overworld", X: -1234567, Y: 70, Z: 98765, Index: 42, Owner: "node-a"}
	lb := lease.Lease{World: "nether", X: 5, Y: 40, Z: 6, Index: 43, Owner: "node-a"}
	for tok, l := range map[string]lease.Lease{"a": la, "b": lb, "c": la} {
		if err := s.Grant(ctx, tok, l, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Grant(ctx, "short", la, time.Second); err != nil {
		t.Fatal(err)
	}
	_, endB, err := s.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redeem(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := sqlitepersist.Abandon(db); err != nil {
		t.Fatal(err)
	}

	clock.Advance(3 * time.Second) // "short" is forgotten
	db = openDB(t, path)
	defer db.Close()
	s = openLeases(t, db, clock.Now)
	if _, err := s.Redeem(ctx, "a"); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Redeem of a redeemed token after a kill = %v, want ErrRedeemed", err)
	}
	if err := s.Grant(ctx, "a", lb, time.Minute); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Grant of a redeemed token after a kill = %v, want ErrRedeemed", err)
	}
	if got, end, err := s.Get(ctx, "b"); err != nil || got != lb || !end.Equal(endB) {
		t.Errorf("Get of a live lease after a kill = %+v, %v, %v; want %+v, %v", got, end, err, lb, endB)
	}
	if _, _, err := s.Get(ctx, "c"); !errors.Is(err, lease.ErrUnknown) {
		t.Errorf("Get of a released token after a kill = %v, want ErrUnknown", err)
	}
	if n := s.Len(); n != 2 {
		t.Errorf("records after the reopen = %d, want 2 (a, b)", n)
	}
	if got, err := s.Redeem(ctx, "b"); err != nil || got != lb {
		t.Errorf("Redeem of a live lease after a kill = %+v, %v; want %+v", got, err, lb)
	}
	if n := countLeases(t, path); n != 2 {
		t.Errorf("rows of the leases table = %d, want 2 (the forgotten one trimmed)", n)
	}
}

// TestLeasesDamagedRow checks that a row whose lease does not decode
// refuses its token rather than failing the start or forgetting it.
func TestLeasesDamagedRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	db := openDB(t, path)
	db.Close()
	clock := newLeaseClock()
	end := clock.Now().Add(time.Minute).UnixNano()
	execRaw(t, path, `INSERT INTO leases (token, lease, expires, forget, redeemed) VALUES ('bad', x'ff00', `+
		itoa(end)+`, `+itoa(end+int64(time.Minute))+`, 0)`)
	db = openDB(t, path)
	defer db.Close()
	s := openLeases(t, db, clock.Now)
	if _, err := s.Redeem(ctx, "bad"); !errors.Is(err, lease.ErrRedeemed) {
		t.Errorf("Redeem of a damaged lease = %v, want ErrRedeemed", err)
	}
}

// TestLeasesClosed checks that the journal of a closed DB fails, and the
// store with it, changing nothing.
func TestLeasesClosed(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "l.db"))
	clock := newLeaseClock()
	s := openLeases(t, db, clock.Now)
	if err := s.Grant(ctx, "a", lease.Lease{World: "w"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := s.Grant(ctx, "b", lease.Lease{World: "w"}, time.Minute); err == nil {
		t.Error("Grant through a closed DB succeeded")
	}
	if _, err := s.Redeem(ctx, "a"); err == nil {
		t.Error("Redeem through a closed DB succeeded")
	}
	if _, _, err := s.Get(ctx, "a"); err != nil {
		t.Errorf("the failed Redeem changed the lease: Get = %v", err)
	}
}

// countLeases returns the rows of the leases table of the database at
// path.
func countLeases(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM leases`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkLeasesRoundTrip measures a Grant and a Redeem of a fresh token
// through a lease/local store journaled in the database: two commits, on
// the real clock.
func BenchmarkLeasesRoundTrip(b *testing.B) {
	db, err := sqlitepersist.Open(context.Background(), filepath.Join(b.TempDir(), "l.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	leasetest.BenchmarkRoundTrip(b, openLeases(b, db, time.Now), time.Minute)
}
