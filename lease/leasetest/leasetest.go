// Package leasetest checks a lease.Store against the contract of package
// lease. An implementation's tests call Run with a Backend constructor,
// and may benchmark it with BenchmarkRoundTrip.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/lease"
)

// Backend is one isolated instance of a store under test.
type Backend struct {
	// Node returns a client of the store standing for one node of a fleet,
	// and a function that kills that node (closes its connections). Every
	// node of a Backend sees the same leases. Required.
	Node func(t testing.TB) (s lease.Store, kill func())
	// Now tells the time on the store's clock. Required.
	Now func() time.Time
	// Wait lets d pass on the store's clock: a sleep for a store on the
	// real clock, an advance of a fake clock otherwise. Required.
	Wait func(d time.Duration)
	// Slack is how far a real clock may drift past a boundary: the tests
	// keep this far from the ends of leases and check expiry times to
	// within it. Zero for an exact fake clock.
	Slack time.Duration
}

// Run runs the contract suite, calling newBackend once per subtest.
func Run(t *testing.T, newBackend func(t *testing.T) Backend) {
	tests := []struct {
		name string
		f    func(t *testing.T, b Backend)
	}{
		{"GrantRedeemReplay", testGrantRedeemReplay},
		{"DoubleGrant", testDoubleGrant},
		{"Release", testRelease},
		{"Expiry", testExpiry},
		{"RedeemedUntilLeaseEnd", testRedeemedUntilLeaseEnd},
		{"Payloads", testPayloads},
		{"Invalid", testInvalid},
		{"Canceled", testCanceled},
		{"Owned", testOwned},
		{"ConcurrentRedeem", testConcurrentRedeem},
		{"ConcurrentGrant", testConcurrentGrant},
		{"DeadNode", testDeadNode},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, newBackend(t)) })
	}
}

var sample = lease.Lease{World: "world_nether", X: -1234567, Y: 70, Z: 98765, Index: 42, Owner: "node-a"}

// must fails t on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks that err is target.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s = %v, want %v", what, err, target)
	}
}

// checkState checks every reading method's answer for a token not live.
func checkState(t testing.TB, s lease.Store, token string, target error) {
	t.Helper()
	ctx := context.Background()
	_, _, err := s.Get(ctx, token)
	wantErr(t, "Get", err, target)
	_, err = s.Redeem(ctx, token)
	wantErr(t, "Redeem", err, target)
	wantErr(t, "Release", s.Release(ctx, token), target)
}

func testGrantRedeemReplay(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	checkState(t, s, "tok", lease.ErrUnknown)

	before := b.Now()
	must(t, s.Grant(ctx, "tok", sample, time.Minute))
	after := b.Now()
	l, exp, err := s.Get(ctx, "tok")
	must(t, err)
	if l != sample {
		t.Errorf("Get = %+v, want %+v", l, sample)
	}
	if lo, hi := before.Add(time.Minute-b.Slack), after.Add(time.Minute+b.Slack); exp.Before(lo) || exp.After(hi) {
		t.Errorf("Get expiry %v outside [%v, %v]", exp, lo, hi)
	}
	// Get neither consumes nor changes the lease.
	if l2, _, err := s.Get(ctx, "tok"); err != nil || l2 != sample {
		t.Errorf("second Get = %+v, %v", l2, err)
	}
	l, err = s.Redeem(ctx, "tok")
	must(t, err)
	if l != sample {
		t.Errorf("Redeem = %+v, want %+v", l, sample)
	}
	checkState(t, s, "tok", lease.ErrRedeemed)
	wantErr(t, "Grant after Redeem", s.Grant(ctx, "tok", sample, time.Minute), lease.ErrRedeemed)
	// Other tokens are untouched.
	checkState(t, s, "tok2", lease.ErrUnknown)
	must(t, s.Grant(ctx, "tok2", sample, time.Minute))
}

func testDoubleGrant(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	other := sample
	other.X, other.Owner = 1, "node-b"
	must(t, s.Grant(ctx, "tok", sample, time.Minute))
	wantErr(t, "second Grant", s.Grant(ctx, "tok", other, time.Hour), lease.ErrExists)
	// The refused Grant changed nothing.
	l, exp, err := s.Get(ctx, "tok")
	must(t, err)
	if l != sample {
		t.Errorf("after a refused Grant, Get = %+v, want %+v", l, sample)
	}
	if exp.After(b.Now().Add(time.Minute + b.Slack)) {
		t.Errorf("a refused Grant extended the lease to %v", exp)
	}
	if got, err := s.Redeem(ctx, "tok"); err != nil || got != sample {
		t.Errorf("Redeem = %+v, %v; want the first grant's lease", got, err)
	}
}

func testRelease(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	must(t, s.Grant(ctx, "tok", sample, time.Minute))
	must(t, s.Release(ctx, "tok"))
	// A released token is forgotten, and may be granted again.
	checkState(t, s, "tok", lease.ErrUnknown)
	other := sample
	other.Y = 100
	must(t, s.Grant(ctx, "tok", other, time.Minute))
	if got, err := s.Redeem(ctx, "tok"); err != nil || got != other {
		t.Errorf("Redeem after re-grant = %+v, %v; want %+v", got, err, other)
	}
	wantErr(t, "Release after Redeem", s.Release(ctx, "tok"), lease.ErrRedeemed)
}

func testExpiry(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	const ttl = 200 * time.Millisecond
	must(t, s.Grant(ctx, "tok", sample, ttl))
	must(t, s.Grant(ctx, "long", sample, time.Minute))
	b.Wait(ttl / 2)
	if _, _, err := s.Get(ctx, "tok"); err != nil {
		t.Fatalf("Get halfway through the lease = %v", err)
	}
	// Expired: remembered as such for one more TTL.
	b.Wait(ttl/2 + ttl/2)
	checkState(t, s, "tok", lease.ErrExpired)
	if _, _, err := s.Get(ctx, "long"); err != nil {
		t.Errorf("a longer lease ended with a shorter one: %v", err)
	}
	// Forgotten after that.
	b.Wait(ttl + b.Slack)
	checkState(t, s, "tok", lease.ErrUnknown)
	// An expired token may be granted again (a caller refuses it if too
	// old).
	must(t, s.Grant(ctx, "tok", sample, time.Minute))
	if _, err := s.Redeem(ctx, "tok"); err != nil {
		t.Errorf("Redeem of a token granted again after expiry = %v", err)
	}
}

func testRedeemedUntilLeaseEnd(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	const ttl = 200 * time.Millisecond
	must(t, s.Grant(ctx, "tok", sample, ttl))
	b.Wait(ttl / 4)
	if _, err := s.Redeem(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	b.Wait(ttl / 4)
	checkState(t, s, "tok", lease.ErrRedeemed)
	wantErr(t, "Grant while redeemed", s.Grant(ctx, "tok", sample, ttl), lease.ErrRedeemed)
	// The redeemed marker lasts as long as the lease would have, no more.
	b.Wait(ttl)
	checkState(t, s, "tok", lease.ErrExpired)
	b.Wait(ttl + b.Slack)
	checkState(t, s, "tok", lease.ErrUnknown)
}

func testPayloads(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	leases := []lease.Lease{
		{},
		{World: "ü🌍", X: -1 << 63, Y: 1<<63 - 1, Z: -1, Index: -1 << 63},
		{World: strings.Repeat("w", lease.MaxNameLen), Owner: strings.Repeat("o", lease.MaxNameLen), X: 1, Y: 2, Z: 3, Index: 4},
	}
	for i, l := range leases {
		tok := strings.Repeat(strconv.Itoa(i), lease.MaxTokenLen)[:lease.MaxTokenLen-i]
		must(t, s.Grant(ctx, tok, l, time.Minute))
		if got, _, err := s.Get(ctx, tok); err != nil || got != l {
			t.Errorf("Get = %+v, %v; want %+v", got, err, l)
		}
		if got, err := s.Redeem(ctx, tok); err != nil || got != l {
			t.Errorf("Redeem = %+v, %v; want %+v", got, err, l)
		}
	}
}

func testInvalid(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	long := strings.Repeat("t", lease.MaxTokenLen+1)
	for _, tok := range []string{"", long} {
		wantErr(t, "Grant", s.Grant(ctx, tok, sample, time.Minute), lease.ErrInvalid)
		checkState(t, s, tok, lease.ErrInvalid)
	}
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond, lease.MaxTTL + time.Second} {
		wantErr(t, fmt.Sprintf("Grant TTL %v", ttl), s.Grant(ctx, "tok", sample, ttl), lease.ErrInvalid)
	}
	bad := sample
	bad.World = strings.Repeat("w", lease.MaxNameLen+1)
	wantErr(t, "Grant long world", s.Grant(ctx, "tok", bad, time.Minute), lease.ErrInvalid)
	// Nothing was granted.
	checkState(t, s, "tok", lease.ErrUnknown)
	for _, o := range []string{"", long} {
		_, err := s.Owned(ctx, o)
		wantErr(t, fmt.Sprintf("Owned(%.8q)", o), err, lease.ErrInvalid)
	}
}

func testCanceled(t *testing.T, b Backend) {
	s, _ := b.Node(t)
	must(t, s.Grant(context.Background(), "tok", sample, time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantErr(t, "Grant", s.Grant(ctx, "other", sample, time.Minute), context.Canceled)
	_, err := s.Redeem(ctx, "tok")
	wantErr(t, "Redeem", err, context.Canceled)
	wantErr(t, "Release", s.Release(ctx, "tok"), context.Canceled)
	_, _, err = s.Get(ctx, "tok")
	wantErr(t, "Get", err, context.Canceled)
	_, err = s.Owned(ctx, "node-a")
	wantErr(t, "Owned", err, context.Canceled)
	// The canceled calls changed nothing.
	checkState(t, s, "other", lease.ErrUnknown)
	if _, err := s.Redeem(context.Background(), "tok"); err != nil {
		t.Errorf("Redeem after canceled calls = %v", err)
	}
}

func testOwned(t *testing.T, b Backend) {
	ctx := context.Background()
	s, _ := b.Node(t)
	grant := func(tok, owner string, x int64, ttl time.Duration) lease.Lease {
		l := sample
		l.X, l.Owner = x, owner
		must(t, s.Grant(ctx, tok, l, ttl))
		return l
	}
	const short = 200 * time.Millisecond
	grant("a-short", "a", 0, short)
	a3 := grant("a3", "a", 3, 3*time.Minute)
	a1 := grant("a1", "a", 1, time.Minute)
	grant("a-redeemed", "a", 4, time.Minute)
	grant("a-released", "a", 5, time.Minute)
	grant("b1", "b", 6, time.Minute)
	grant("unowned", "", 7, time.Minute)
	_, err := s.Redeem(ctx, "a-redeemed")
	must(t, err)
	must(t, s.Release(ctx, "a-released"))

	got, err := s.Owned(ctx, "a")
	must(t, err)
	if toks := tokens(got); !slices.Equal(toks, []string{"a-short", "a1", "a3"}) {
		t.Fatalf("Owned(a) = %v, want [a-short a1 a3]", toks)
	}
	if got[1].Lease != a1 || got[2].Lease != a3 {
		t.Errorf("Owned(a) leases = %+v, %+v; want %+v, %+v", got[1].Lease, got[2].Lease, a1, a3)
	}
	now := b.Now()
	if e := got[2].Expires; e.Before(now.Add(3*time.Minute-2*b.Slack)) || e.After(now.Add(3*time.Minute+b.Slack)) {
		t.Errorf("Owned(a) expiry of a3 = %v, want about %v", e, now.Add(3*time.Minute))
	}
	b.Wait(short + b.Slack)
	got, err = s.Owned(ctx, "a")
	must(t, err)
	if toks := tokens(got); !slices.Equal(toks, []string{"a1", "a3"}) {
		t.Errorf("Owned(a) after the short lease ended = %v, want [a1 a3]", toks)
	}
	// A token released and granted again by another node moves with it.
	must(t, s.Release(ctx, "a1"))
	grant("a1", "b", 8, time.Minute)
	got, err = s.Owned(ctx, "b")
	must(t, err)
	if toks := tokens(got); !slices.Equal(toks, []string{"b1", "a1"}) {
		t.Errorf("Owned(b) = %v, want [b1 a1]", toks)
	}
	got, err = s.Owned(ctx, "a")
	must(t, err)
	if toks := tokens(got); !slices.Equal(toks, []string{"a3"}) {
		t.Errorf("Owned(a) after a1 moved = %v, want [a3]", toks)
	}
	if got, err := s.Owned(ctx, "nobody"); err != nil || len(got) != 0 {
		t.Errorf("Owned(nobody) = %v, %v; want none", got, err)
	}
}

func tokens(es []lease.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Token
	}
	return out
}

// nodes returns n nodes of b.
func nodes(t *testing.T, b Backend, n int) []lease.Store {
	out := make([]lease.Store, n)
	for i := range out {
		out[i], _ = b.Node(t)
	}
	return out
}

// race runs f(i) for i in [0, n) in n goroutines released at once.
func race(n int, f func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			f(i)
		})
	}
	start.Done()
	done.Wait()
}

func testConcurrentRedeem(t *testing.T, b Backend) {
	ctx := context.Background()
	const goroutines, rounds = 16, 25
	ns := nodes(t, b, 4)
	for round := range rounds {
		tok := fmt.Sprintf("tok-%d", round)
		l := sample
		l.Index = int64(round)
		must(t, ns[round%len(ns)].Grant(ctx, tok, l, time.Minute))
		var wins, redeemed atomic.Int32
		errs := make([]error, goroutines)
		race(goroutines, func(i int) {
			got, err := ns[i%len(ns)].Redeem(ctx, tok)
			switch {
			case err == nil && got == l:
				wins.Add(1)
			case errors.Is(err, lease.ErrRedeemed):
				redeemed.Add(1)
			default:
				errs[i] = fmt.Errorf("goroutine %d: Redeem = %+v, %v", i, got, err)
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if wins.Load() != 1 || redeemed.Load() != goroutines-1 {
			t.Fatalf("round %d: %d Redeems won and %d were told ErrRedeemed; want 1 and %d",
				round, wins.Load(), redeemed.Load(), goroutines-1)
		}
	}
}

func testConcurrentGrant(t *testing.T, b Backend) {
	ctx := context.Background()
	const goroutines = 16
	ns := nodes(t, b, 4)
	var wins, exists atomic.Int32
	var winner atomic.Int64
	errs := make([]error, goroutines)
	race(goroutines, func(i int) {
		l := sample
		l.Index = int64(i)
		err := ns[i%len(ns)].Grant(ctx, "tok", l, time.Minute)
		switch {
		case err == nil:
			wins.Add(1)
			winner.Store(int64(i))
		case errors.Is(err, lease.ErrExists):
			exists.Add(1)
		default:
			errs[i] = err
		}
	})
	must(t, errors.Join(errs...))
	if wins.Load() != 1 || exists.Load() != goroutines-1 {
		t.Fatalf("%d Grants won and %d were told ErrExists; want 1 and %d", wins.Load(), exists.Load(), goroutines-1)
	}
	got, err := ns[0].Redeem(ctx, "tok")
	must(t, err)
	if got.Index != winner.Load() {
		t.Errorf("Redeem = index %d, want the winning Grant's %d", got.Index, winner.Load())
	}
}

func testDeadNode(t *testing.T, b Backend) {
	ctx := context.Background()
	a, kill := b.Node(t)
	l := sample
	l.Owner = "node-a"
	must(t, a.Grant(ctx, "tok", l, time.Minute))
	must(t, a.Grant(ctx, "tok2", l, time.Minute))
	kill()
	c, _ := b.Node(t)
	got, err := c.Owned(ctx, "node-a")
	must(t, err)
	if toks := tokens(got); !slices.Equal(toks, []string{"tok", "tok2"}) {
		t.Errorf("Owned(dead node) = %v, want [tok tok2]", toks)
	}
	if got, err := c.Redeem(ctx, "tok"); err != nil || got != l {
		t.Errorf("Redeem through another node after the granting node died = %+v, %v; want %+v", got, err, l)
	}
	must(t, c.Release(ctx, "tok2"))
	d, _ := b.Node(t)
	checkState(t, d, "tok", lease.ErrRedeemed)
	checkState(t, d, "tok2", lease.ErrUnknown)
}

// benchRuns numbers the runs of BenchmarkRoundTrip, so that each run's
// tokens are fresh.
var benchRuns atomic.Int64

// BenchmarkRoundTrip measures a Grant and a Redeem of a fresh token, with
// a lease TTL of ttl.
func BenchmarkRoundTrip(b *testing.B, s lease.Store, ttl time.Duration) {
	ctx := context.Background()
	l := sample
	buf := fmt.Appendf(nil, "bench-%d-%d-", time.Now().UnixNano(), benchRuns.Add(1))
	k := len(buf)
	n := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		n++
		buf = strconv.AppendInt(buf[:k], n, 36)
		tok := string(buf)
		if err := s.Grant(ctx, tok, l, ttl); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Redeem(ctx, tok); err != nil {
			b.Fatal(err)
		}
	}
}
