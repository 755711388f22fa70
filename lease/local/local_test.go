package local

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/leasetest"
)

// fakeClock is a clock that moves only when told. It is safe for
// concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestContract(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Backend {
		clock := newFakeClock()
		s := New(Options{Clock: clock.Now})
		// One in-memory store is the whole fleet: every node shares it, and
		// killing a node leaves it be.
		return leasetest.Backend{
			Node:  func(testing.TB) (lease.Store, func()) { return s, func() {} },
			Now:   clock.Now,
			Wait:  clock.Advance,
			Slack: 0,
		}
	})
}

func TestContractRealClock(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) leasetest.Backend {
		var s Store // the zero value, on the real clock
		return leasetest.Backend{
			Node:  func(testing.TB) (lease.Store, func()) { return &s, func() {} },
			Now:   time.Now,
			Wait:  time.Sleep,
			Slack: 50 * time.Millisecond,
		}
	})
}

// TestBoundaries checks the exact ends of a lease's states on a fake
// clock: a lease is live strictly before grant+TTL, expired from then
// until grant+2·TTL, forgotten from then on.
func TestBoundaries(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := New(Options{Clock: clock.Now})
	const ttl = time.Second
	l := lease.Lease{World: "w", Owner: "n"}
	if err := s.Grant(ctx, "tok", l, ttl+time.Microsecond); err != nil { // kept to the millisecond
		t.Fatal(err)
	}
	start := clock.Now()
	if _, exp, err := s.Get(ctx, "tok"); err != nil || !exp.Equal(start.Add(ttl)) {
		t.Fatalf("Get = %v, %v; want expiry %v", exp, err, start.Add(ttl))
	}
	clock.Advance(ttl - time.Nanosecond)
	if _, _, err := s.Get(ctx, "tok"); err != nil {
		t.Fatalf("Get just before the end = %v", err)
	}
	clock.Advance(time.Nanosecond)
	if _, _, err := s.Get(ctx, "tok"); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("Get at the end = %v, want ErrExpired", err)
	}
	clock.Advance(ttl - time.Nanosecond)
	if _, _, err := s.Get(ctx, "tok"); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("Get just before being forgotten = %v, want ErrExpired", err)
	}
	clock.Advance(time.Nanosecond)
	if _, _, err := s.Get(ctx, "tok"); !errors.Is(err, lease.ErrUnknown) {
		t.Fatalf("Get once forgotten = %v, want ErrUnknown", err)
	}
	if s.Len() != 0 {
		t.Errorf("a forgotten record is still held: Len = %d", s.Len())
	}

	// Redeemed: until the lease's end, not past it.
	if err := s.Grant(ctx, "r", l, ttl); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ttl / 2)
	if _, err := s.Redeem(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ttl/2 - time.Nanosecond)
	if err := s.Grant(ctx, "r", l, ttl); !errors.Is(err, lease.ErrRedeemed) {
		t.Fatalf("Grant just before the redeemed lease's end = %v, want ErrRedeemed", err)
	}
	clock.Advance(time.Nanosecond)
	if _, err := s.Redeem(ctx, "r"); !errors.Is(err, lease.ErrExpired) {
		t.Fatalf("Redeem at the redeemed lease's end = %v, want ErrExpired", err)
	}
}

// TestForget checks that forgotten records are dropped even when nobody
// asks for them again, and that a record released, or granted again, is
// not dropped on its predecessor's schedule.
func TestForget(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	s := New(Options{Clock: clock.Now})
	for i := range 1000 {
		tok := fmt.Sprint("t", i)
		if err := s.Grant(ctx, tok, lease.Lease{}, time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Redeem(ctx, tok); err != nil {
			t.Fatal(err)
		}
		clock.Advance(100 * time.Millisecond)
	}
	// Records live 2 s and one was granted every 100 ms: 20 are remembered.
	if n := s.Len(); n != 20 {
		t.Errorf("Len = %d after many short leases, want 20", n)
	}

	// "a" is released and granted again for longer; the first grant's
	// schedule must not drop the second.
	if err := s.Grant(ctx, "a", lease.Lease{}, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Grant(ctx, "a", lease.Lease{}, time.Minute); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	if err := s.Grant(ctx, "b", lease.Lease{}, time.Second); err != nil { // drops the due records
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "a"); err != nil {
		t.Errorf("Get of a lease granted again = %v", err)
	}
	if n := s.Len(); n != 2 {
		t.Errorf("Len = %d, want 2 (a and b)", n)
	}
}

// BenchmarkRoundTrip runs on a clock that ticks a microsecond per
// reading, so that records are forgotten as the benchmark goes (a 10 ms
// lease is forgotten 10k round trips later) and no stall of the machine
// can end a lease early.
func BenchmarkRoundTrip(b *testing.B) {
	base := time.Unix(1_700_000_000, 0)
	var ticks atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Microsecond) }
	leasetest.BenchmarkRoundTrip(b, New(Options{Clock: clock}), 10*time.Millisecond)
}
