package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/rtpengine/rtp/internal/bubble"
	leasestore "github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/local"
	leaseredis "github.com/rtpengine/rtp/lease/redis"
	"github.com/rtpengine/rtp/lease/token"
)

// Tests of the network sink in fleet mode: two pipelines, nodes "a" and
// "b", each with its own world, memory, pool and locations table, share
// one lease store. Every test runs against lease/local (in a synctest
// bubble, so time passes at once) and against lease/redis when
// RTP_TEST_REDIS names a Redis (on the real clock, with short leases).

// fleetSecret is the network secret the nodes of a test fleet share.
var fleetSecret = []byte("0123456789abcdef-fleet")

// fleetCapacity is each node's network pool.
const fleetCapacity = 3

// fleetBackend is a lease store the suite runs against.
type fleetBackend struct {
	name string
	// bubble runs each test in a synctest bubble, on a fake clock.
	bubble bool
	// stores returns the clients of one store of the two nodes (Skip
	// when the store is not available).
	stores func(t *testing.T) (a, b leasestore.Store)
	// The nodes' lease TTL, store timeout and store check.
	ttl, timeout, check time.Duration
}

// pass lets d go by: on the bubble's fake clock, or on the real one for a
// store whose leases expire on its server's clock.
func (be fleetBackend) pass(d time.Duration) {
	if be.bubble {
		bubble.Advance(d)
		return
	}
	time.Sleep(d)
}

func fleetBackends() []fleetBackend {
	return []fleetBackend{
		{
			name: "local", bubble: true,
			stores: func(*testing.T) (leasestore.Store, leasestore.Store) {
				s := local.New(local.Options{})
				return s, s
			},
			ttl: 30 * time.Second, timeout: time.Second, check: time.Second,
		},
		{
			name: "redis", stores: redisStores,
			ttl: 2 * time.Second, timeout: 250 * time.Millisecond, check: 200 * time.Millisecond,
		},
	}
}

// redisStores returns two Redis lease stores (one client each, as two
// nodes have) under a fresh key prefix whose keys are deleted at cleanup.
func redisStores(t *testing.T) (leasestore.Store, leasestore.Store) {
	url := os.Getenv("RTP_TEST_REDIS")
	if url == "" {
		t.Skip("skipping: set RTP_TEST_REDIS to a Redis URL (e.g. redis://127.0.0.1:6379/0) to test fleet mode on the Redis lease store")
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatalf("RTP_TEST_REDIS: %v", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "rtp:pipelinetest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		c := goredis.NewClient(opts)
		defer c.Close()
		ctx := context.Background()
		var keys []string
		it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Errorf("listing the test keys: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := c.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("deleting the test keys: %v", err)
			}
		}
	})
	mk := func() leasestore.Store {
		c := goredis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatalf("RTP_TEST_REDIS: %v", err)
		}
		return leaseredis.New(c, leaseredis.Options{Prefix: prefix})
	}
	return mk(), mk()
}

// fleet is two nodes sharing a lease store.
type fleet struct {
	t      *testing.T
	be     fleetBackend
	a, b   *env
	na, nb *NetworkSink
	aDead  bool
}

// fleetNode makes a node's pipeline over store s, with its own seed so
// that the two nodes find different locations.
func fleetNode(t *testing.T, be fleetBackend, node string, seed uint64, s leasestore.Store) *env {
	e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
		o.Seed = seed
		o.Network = NetworkConfig{
			Enabled: true, Capacity: fleetCapacity, Secret: fleetSecret, LeaseTTL: be.ttl,
			Leases: s, Node: node, StoreTimeout: be.timeout, StoreCheck: be.check,
		}
	}})
	n := e.p.Network()
	e.fill(30, func() bool { return n.Len() == fleetCapacity })
	return e
}

func newFleet(t *testing.T, be fleetBackend) *fleet {
	sa, sb := be.stores(t)
	f := &fleet{t: t, be: be}
	f.a = fleetNode(t, be, "a", 1, sa)
	f.b = fleetNode(t, be, "b", 2, sb)
	f.na, f.nb = f.a.p.Network(), f.b.p.Network()
	for _, l := range poolLocations(f.na) {
		if f.nb.has(l) {
			t.Fatalf("both nodes hold %+v: the test cannot tell whose location a redeem handed out", l)
		}
	}
	return f
}

// kill stops node a: its pipeline closes, and it asks the store nothing
// more.
func (f *fleet) kill() {
	f.a.shutdown()
	f.aDead = true
}

func (f *fleet) shutdown() {
	if !f.aDead {
		f.a.shutdown()
	}
	f.b.shutdown()
}

// housekeep runs the time-keeping steps of a pulse on e (no refill, so a
// returning entry finds room in its pool) and waits for the check it
// started.
func housekeep(t *testing.T, e *env) {
	t.Helper()
	if err := e.p.Housekeep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// runFleet runs test against every back end.
func runFleet(t *testing.T, test func(t *testing.T, f *fleet)) {
	for _, be := range fleetBackends() {
		t.Run(be.name, func(t *testing.T) {
			if !be.bubble {
				test(t, newFleet(t, be))
				return
			}
			synctest.Test(t, func(t *testing.T) { test(t, newFleet(t, be)) })
		})
	}
}

// poolLocations returns the locations in n's pool, leaving it as it was
// (no other goroutine may use the pool meanwhile).
func poolLocations(n *NetworkSink) []Location {
	var hs []*Hot
	for {
		h, ok := n.pool.ring.PollSilent()
		if !ok {
			break
		}
		hs = append(hs, h)
	}
	var out []Location
	for _, h := range hs {
		out = append(out, h.Location)
		if !n.pool.ring.OfferSilent(h) {
			panic("pool refused an entry it held")
		}
	}
	return out
}

// has reports whether n's pool holds l.
func (n *NetworkSink) has(l Location) bool {
	for _, p := range poolLocations(n) {
		if p == l {
			return true
		}
	}
	return false
}

// leasedEntry returns the entry n holds for t's lease, or nil.
func (n *NetworkSink) leasedEntry(t token.Token) *Hot {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.holds[t]; l != nil {
		return l.h
	}
	return nil
}

// TestFleetRedeemElsewhere: a token reserved through a is redeemed through
// b, which hands out a's location without an entry of its own; a learns of
// it at its next check and disposes its entry, which it never hands out
// again (nor restores: its row went at the grant). The token is then used
// up on both nodes.
func TestFleetRedeemElsewhere(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		entry := f.na.leasedEntry(tok)
		if entry == nil || entry.Location != loc || f.na.has(loc) {
			t.Fatalf("a holds %v for the token, want its entry of %+v, out of the pool", entry, loc)
		}
		if rows := f.a.pers.counts()[loc]; rows != 0 {
			t.Fatalf("a's table keeps %d rows of the leased %+v, want none", rows, loc)
		}
		before := f.nb.Len()
		h, err := f.nb.Redeem(tok)
		if err != nil {
			t.Fatalf("Redeem through b = %v", err)
		}
		if h.Location != loc || h.Res != nil {
			t.Fatalf("b handed out %+v (reservation %v), want a's %+v without a reservation", h.Location, h.Res, loc)
		}
		h.Close()
		if f.nb.Len() != before || f.nb.StoreStats().RemoteRedeems != 1 {
			t.Fatalf("b's pool %d -> %d, remote redeems %d; want its pool untouched and one remote redeem", before, f.nb.Len(), f.nb.StoreStats().RemoteRedeems)
		}
		if _, err := f.nb.Redeem(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("second Redeem through b = %v, want ErrRedeemed", err)
		}

		f.be.pass(f.be.check)
		housekeep(t, f.a)
		if f.na.Leased() != 0 || f.na.StoreStats().RedeemedElsewhere != 1 || !entry.Res.Closed() {
			t.Fatalf("after a's check: leased %d, redeemed elsewhere %d, entry closed %v; want the entry disposed",
				f.na.Leased(), f.na.StoreStats().RedeemedElsewhere, entry.Res.Closed())
		}
		if _, err := f.na.Redeem(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("Redeem through a after b's = %v, want ErrRedeemed", err)
		}
		if _, err := f.na.Reserve(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("Reserve through a after b's redeem = %v, want ErrRedeemed", err)
		}
		// Drain a's pool twice over, refilling it: loc never comes back.
		for range 3 * fleetCapacity {
			if f.na.has(loc) {
				t.Fatalf("a's pool holds %+v again", loc)
			}
			tk := f.na.NewToken()
			got, err := f.na.Reserve(tk)
			if errors.Is(err, ErrMiss) {
				f.a.cycle()
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == loc {
				t.Fatalf("a reserved %+v again", loc)
			}
			h, err := f.na.Redeem(tk)
			if err != nil {
				t.Fatal(err)
			}
			h.Close()
			f.a.cycle()
		}
		if rows := f.a.pers.counts()[loc]; rows != 0 {
			t.Fatalf("a's table has %d rows of %+v, want none", rows, loc)
		}
	})
}

// TestFleetRedeemOnce: of two redeems of one token, through a and through
// b, at once or one after the other, exactly one gets the location; the
// entry is handed out once (by a, or disposed by a when b won).
func TestFleetRedeemOnce(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		wins := map[string]int{}
		for i := range 6 {
			f.a.fill(30, func() bool { return f.na.Len() == fleetCapacity })
			tok := f.na.NewToken()
			loc, err := f.na.Reserve(tok)
			if err != nil {
				t.Fatal(err)
			}
			var (
				hs   [2]*Hot
				errs [2]error
			)
			redeem := func(k int) {
				n := f.na
				if k == 1 {
					n = f.nb
				}
				hs[k], errs[k] = n.Redeem(tok)
			}
			switch i % 3 {
			case 0: // at once
				var wg sync.WaitGroup
				start := make(chan struct{})
				for k := range 2 {
					wg.Go(func() {
						<-start
						redeem(k)
					})
				}
				close(start)
				wg.Wait()
			case 1: // a, then b
				redeem(0)
				redeem(1)
			case 2: // b, then a
				redeem(1)
				redeem(0)
			}
			won := -1
			for k := range 2 {
				switch {
				case errs[k] == nil:
					if won >= 0 {
						t.Fatalf("round %d: both nodes redeemed the token", i)
					}
					won = k
					if hs[k].Location != loc {
						t.Fatalf("round %d: node %d handed out %+v, want %+v", i, k, hs[k].Location, loc)
					}
					hs[k].Close()
				case !errors.Is(errs[k], ErrRedeemed):
					t.Fatalf("round %d: node %d: %v, want success or ErrRedeemed", i, k, errs[k])
				}
			}
			if won < 0 {
				t.Fatalf("round %d: neither node redeemed the token: %v, %v", i, errs[0], errs[1])
			}
			wins[[]string{"a", "b"}[won]]++
			// a's entry is gone either way: handed out by a, or disposed
			// when b's redeem answered a's.
			if f.na.Leased() != 0 {
				f.be.pass(f.be.check)
				housekeep(t, f.a)
			}
			if f.na.Leased() != 0 || f.na.has(loc) {
				t.Fatalf("round %d: a still holds %+v (leased %d)", i, loc, f.na.Leased())
			}
		}
		if wins["b"] == 0 {
			t.Errorf("b never won (%v): the redeem of another node's lease was not exercised", wins)
		}
	})
}

// TestFleetReserveTwice: a token reserved through a and then through b
// gets a's location from both, with the same end; b's pool is untouched.
func TestFleetReserveTwice(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, expires, err := f.na.ReserveUntil(tok)
		if err != nil {
			t.Fatal(err)
		}
		before := poolLocations(f.nb)
		got, gotExpires, err := f.nb.ReserveUntil(tok)
		if err != nil || got != loc {
			t.Fatalf("Reserve through b = %+v, %v; want a's %+v", got, err, loc)
		}
		if d := gotExpires.Sub(expires); d < -time.Second || d > time.Second {
			t.Fatalf("b says the lease ends at %v, a at %v", gotExpires, expires)
		}
		if after := poolLocations(f.nb); len(after) != len(before) || f.nb.Leased() != 0 {
			t.Fatalf("b's pool %d -> %d, leased %d; want b to take nothing", len(before), len(after), f.nb.Leased())
		}
		if again, err := f.na.Reserve(tok); err != nil || again != loc {
			t.Fatalf("Reserve through a again = %+v, %v; want %+v", again, err, loc)
		}
		// a redeems its own lease: its entry, with its reservation.
		h, err := f.na.Redeem(tok)
		if err != nil || h.Location != loc || h.Res == nil || h.Res.Closed() {
			t.Fatalf("Redeem through a = %v, %v; want its entry of %+v, reserved", h, err, loc)
		}
		h.Close()
		if _, err := f.nb.Redeem(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("Redeem through b after a's = %v, want ErrRedeemed", err)
		}
		if _, err := f.nb.Reserve(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("Reserve through b after the redeem = %v, want ErrRedeemed", err)
		}
	})
}

// TestFleetNodeDies: the lease outlives the node that granted it: b
// redeems it within the TTL, and the dead node's table kept no row that a
// restart could serve again.
func TestFleetNodeDies(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		f.kill()
		if rows := f.a.pers.counts()[loc]; rows != 0 {
			t.Fatalf("the dead node's table keeps %d rows of its leased %+v, want none", rows, loc)
		}
		f.be.pass(f.be.ttl / 2)
		if got, err := f.nb.Reserve(tok); err != nil || got != loc {
			t.Fatalf("Reserve through b after a died = %+v, %v; want %+v", got, err, loc)
		}
		h, err := f.nb.Redeem(tok)
		if err != nil || h.Location != loc {
			t.Fatalf("Redeem through b after a died = %v, %v; want %+v", h, err, loc)
		}
		h.Close()
		if _, err := f.nb.Redeem(tok); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("second Redeem = %v, want ErrRedeemed", err)
		}
	})
}

// TestFleetExpiry: a lease past its end goes back to a's pool on a's next
// pulse (released in the store first), and can no longer be redeemed or
// reserved through either node.
func TestFleetExpiry(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		f.be.pass(f.be.ttl + 10*time.Millisecond)
		housekeep(t, f.a)
		if f.na.Leased() != 0 || !f.na.has(loc) {
			t.Fatalf("after the end: leased %d, %+v in the pool %v; want it back", f.na.Leased(), loc, f.na.has(loc))
		}
		for _, n := range []*NetworkSink{f.na, f.nb} {
			if _, err := n.Redeem(tok); !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Redeem of the ended lease through %s = %v, want ErrLeaseExpired", n.node, err)
			}
			if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Reserve of the ended lease through %s = %v, want ErrLeaseExpired", n.node, err)
			}
		}
		if st := f.na.StoreStats(); st.Uncertain != 0 || st.RedeemedElsewhere != 0 {
			t.Fatalf("a's fleet counters %+v, want nothing disposed", st)
		}
	})
}

// TestFleetExpiryLate: when a could not release its lease before the
// store ended it (it did not run), the lease is not redeemable, and a
// disposes its entry rather than serve it: whether it was redeemed
// elsewhere can no longer be told.
func TestFleetExpiryLate(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		entry := f.na.leasedEntry(tok)
		f.be.pass(f.be.ttl + storeGrace(f.be.timeout) + 50*time.Millisecond)
		if _, err := f.nb.Redeem(tok); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Redeem through b after the store's end = %v, want ErrLeaseExpired", err)
		}
		housekeep(t, f.a)
		if f.na.Leased() != 0 || f.na.has(loc) || !entry.Res.Closed() || f.na.StoreStats().Uncertain != 1 {
			t.Fatalf("leased %d, in the pool %v, closed %v, counters %+v; want the entry disposed as uncertain",
				f.na.Leased(), f.na.has(loc), entry.Res.Closed(), f.na.StoreStats())
		}
	})
}

// TestFleetRedeemedLearntLate: b redeems a's lease and a, not running,
// learns of it only after the store's lease has ended, when the store no
// longer tells a redeemed lease from an unredeemed one (both expired):
// a still never serves the location b handed out.
func TestFleetRedeemedLearntLate(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		h, err := f.nb.Redeem(tok)
		if err != nil || h.Location != loc {
			t.Fatalf("Redeem through b = %v, %v; want %+v", h, err, loc)
		}
		h.Close()
		f.be.pass(f.be.ttl + storeGrace(f.be.timeout) + 50*time.Millisecond)
		housekeep(t, f.a)
		if f.na.Leased() != 0 || f.na.has(loc) {
			t.Fatalf("leased %d, %+v in a's pool %v: a may serve what b handed out", f.na.Leased(), loc, f.na.has(loc))
		}
		for range 2 * fleetCapacity {
			f.a.cycle()
			tk := f.na.NewToken()
			if got, err := f.na.Reserve(tk); err == nil && got == loc {
				t.Fatalf("a reserved %+v, which b handed out", loc)
			}
		}
	})
}

// TestFleetRelease: a lease given up through a goes back to a's pool; one
// given up through b ends in the store, and a disposes its entry.
func TestFleetRelease(t *testing.T) {
	runFleet(t, func(t *testing.T, f *fleet) {
		defer f.shutdown()
		tok := f.na.NewToken()
		loc, err := f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.na.ReleaseLease(tok); err != nil {
			t.Fatal(err)
		}
		if f.na.Leased() != 0 || !f.na.has(loc) {
			t.Fatalf("after Release through a: leased %d, back in the pool %v", f.na.Leased(), f.na.has(loc))
		}
		if _, err := f.nb.Redeem(tok); !errors.Is(err, ErrUnknownToken) {
			t.Fatalf("Redeem through b of a released lease = %v, want ErrUnknownToken", err)
		}

		tok = f.na.NewToken()
		loc, err = f.na.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.nb.ReleaseLease(tok); err != nil {
			t.Fatalf("Release through b of a's lease = %v", err)
		}
		if err := f.nb.ReleaseLease(tok); !errors.Is(err, ErrUnknownToken) {
			t.Fatalf("second Release = %v, want ErrUnknownToken", err)
		}
		f.be.pass(f.be.check)
		housekeep(t, f.a)
		if f.na.Leased() != 0 || f.na.has(loc) || f.na.StoreStats().Uncertain != 1 {
			t.Fatalf("after b's release: leased %d, in a's pool %v, counters %+v; want a's entry disposed", f.na.Leased(), f.na.has(loc), f.na.StoreStats())
		}
		if _, err := f.na.Redeem(tok); !errors.Is(err, ErrUnknownToken) {
			t.Fatalf("Redeem of the released lease = %v, want ErrUnknownToken", err)
		}
	})
}

// errTransport stands for a failure of the store's transport.
var errTransport = errors.New("store: connection reset")

// flakyStore is a lease store whose calls fail while told to.
type flakyStore struct {
	leasestore.Store
	mu   sync.Mutex
	fail map[string]bool // by method name
}

func (s *flakyStore) failing(op string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail[op]
}

func (s *flakyStore) set(op string, fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail == nil {
		s.fail = map[string]bool{}
	}
	s.fail[op] = fail
}

func (s *flakyStore) Grant(ctx context.Context, token string, l leasestore.Lease, ttl time.Duration) error {
	if s.failing("Grant") {
		return errTransport
	}
	return s.Store.Grant(ctx, token, l, ttl)
}

func (s *flakyStore) Redeem(ctx context.Context, token string) (leasestore.Lease, error) {
	if s.failing("Redeem") {
		return leasestore.Lease{}, errTransport
	}
	return s.Store.Redeem(ctx, token)
}

func (s *flakyStore) Release(ctx context.Context, token string) error {
	if s.failing("Release") {
		return errTransport
	}
	return s.Store.Release(ctx, token)
}

func (s *flakyStore) Get(ctx context.Context, token string) (leasestore.Lease, time.Time, error) {
	if s.failing("Get") {
		return leasestore.Lease{}, time.Time{}, errTransport
	}
	return s.Store.Get(ctx, token)
}

// TestFleetStoreFailures: a failing store fails the calls with
// ErrLeaseStore and never lets an entry out unconfirmed: a grant whose
// outcome is unknown costs its entry, a redeem that failed leaves the
// lease as it was, and a lease that could not be released at its end
// stays pinned until the store answers.
func TestFleetStoreFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		be := fleetBackends()[0]
		s := &flakyStore{Store: local.New(local.Options{})}
		e := fleetNode(t, be, "a", 1, s)
		defer e.shutdown()
		n := e.p.Network()

		// The first look fails: nothing is taken from the pool.
		s.set("Get", true)
		tok := n.NewToken()
		if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseStore) || !errors.Is(err, errTransport) {
			t.Fatalf("Reserve with the store down = %v, want ErrLeaseStore wrapping the store's error", err)
		}
		if n.Len() != fleetCapacity {
			t.Fatalf("pool %d after a failed look, want %d", n.Len(), fleetCapacity)
		}
		s.set("Get", false)

		// The grant fails: the entry may be leased, so it is not served.
		s.set("Grant", true)
		if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseStore) {
			t.Fatalf("Reserve with a failing grant = %v, want ErrLeaseStore", err)
		}
		if n.Len() != fleetCapacity-1 || n.Leased() != 0 || n.StoreStats().Uncertain != 1 {
			t.Fatalf("after a failed grant: pool %d, leased %d, counters %+v; want the entry disposed", n.Len(), n.Leased(), n.StoreStats())
		}
		s.set("Grant", false)

		loc, err := n.Reserve(tok)
		if err != nil {
			t.Fatal(err)
		}
		s.set("Redeem", true)
		if _, err := n.Redeem(tok); !errors.Is(err, ErrLeaseStore) {
			t.Fatalf("Redeem with the store down = %v, want ErrLeaseStore", err)
		}
		if _, _, err := e.p.Take(context.Background(), Request{Token: tok}); !errors.Is(err, ErrLeaseStore) {
			t.Fatalf("Take with the store down = %v, want ErrLeaseStore", err)
		}
		if n.Leased() != 1 {
			t.Fatalf("leased %d after failed redeems, want the lease kept", n.Leased())
		}
		s.set("Redeem", false)

		// The end comes while releases fail: the entry stays pinned.
		s.set("Release", true)
		be.pass(be.ttl)
		housekeep(t, e)
		if n.Leased() != 1 || n.has(loc) {
			t.Fatalf("after a failed release: leased %d, in the pool %v; want the entry pinned", n.Leased(), n.has(loc))
		}
		if err := n.ReleaseLease(tok); !errors.Is(err, ErrLeaseStore) {
			t.Fatalf("Release with the store down = %v, want ErrLeaseStore", err)
		}
		s.set("Release", false)
		housekeep(t, e) // within the retry delay: not tried again yet
		if n.Leased() != 1 {
			t.Fatalf("leased %d, want the release retried only after StoreCheck", n.Leased())
		}
		be.pass(be.check)
		housekeep(t, e)
		if n.Leased() != 0 || !n.has(loc) {
			t.Fatalf("after the store came back: leased %d, in the pool %v; want the entry back", n.Leased(), n.has(loc))
		}
		if n.StoreStats().StoreErrors == 0 {
			t.Fatal("no store error counted")
		}
	})
}

// TestFleetRedisDown: a node whose Redis is unreachable fails with
// ErrLeaseStore, its pool intact, and hands nothing out.
func TestFleetRedisDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	be := fleetBackends()[1]
	e := fleetNode(t, be, "a", 1, leaseredis.New(c, leaseredis.Options{}))
	defer e.shutdown()
	n := e.p.Network()
	tok := n.NewToken()
	if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseStore) {
		t.Fatalf("Reserve = %v, want ErrLeaseStore", err)
	}
	if h, err := n.Redeem(tok); !errors.Is(err, ErrLeaseStore) {
		t.Fatalf("Redeem = %v, %v; want ErrLeaseStore", h, err)
	}
	if err := n.ReleaseLease(tok); !errors.Is(err, ErrLeaseStore) {
		t.Fatalf("Release = %v, want ErrLeaseStore", err)
	}
	if n.Len() != fleetCapacity || n.Leased() != 0 {
		t.Fatalf("pool %d, leased %d; want the pool untouched", n.Len(), n.Leased())
	}
}

// TestLeaseOptions: the lease-store options are checked, with a store
// given and with the default one.
func TestLeaseOptions(t *testing.T) {
	s := local.New(local.Options{})
	var nilStore *local.Store
	long := string(make([]byte, leasestore.MaxNameLen+1))
	for _, c := range []struct {
		name  string
		world string
		nc    NetworkConfig
	}{
		{"nil store", "overworld", NetworkConfig{Enabled: true, Leases: nilStore}},
		{"long node", "overworld", NetworkConfig{Enabled: true, Leases: s, Node: long}},
		{"negative timeout", "overworld", NetworkConfig{Enabled: true, Leases: s, StoreTimeout: -time.Second}},
		{"negative check", "overworld", NetworkConfig{Enabled: true, Leases: s, StoreCheck: -time.Second}},
		{"TTL too long", "overworld", NetworkConfig{Enabled: true, Leases: s, LeaseTTL: leasestore.MaxTTL}},
		{"long world", long, NetworkConfig{Enabled: true, Leases: s}},
		{"long node, default store", "overworld", NetworkConfig{Enabled: true, Node: long}},
		{"TTL too long, default store", "overworld", NetworkConfig{Enabled: true, LeaseTTL: leasestore.MaxTTL}},
		{"long world, default store", long, NetworkConfig{Enabled: true}},
	} {
		o := Options{World: c.world, Network: c.nc}
		if err := o.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", c.name, c.nc)
		}
	}
	o := Options{World: "overworld", Network: NetworkConfig{Enabled: true, Leases: s, LeaseTTL: leasestore.MaxTTL}}
	if err := o.Network.validateLeases(o.World); err == nil {
		t.Error("a lease TTL whose store lease exceeds leasestore.MaxTTL accepted")
	}
	for _, nc := range []NetworkConfig{{Enabled: true, Leases: s, Node: "a"}, {Enabled: true}} {
		if err := nc.validateLeases("overworld"); err != nil {
			t.Errorf("valid lease options %+v refused: %v", nc, err)
		}
	}
	// The default: a store in memory, and a node name of its own.
	d := Options{Network: NetworkConfig{Enabled: true}}.withDefaults().Network
	if _, ok := d.Leases.(*local.Store); !ok || d.Node == "" {
		t.Errorf("default lease store %T, node %q; want a *local.Store and a name", d.Leases, d.Node)
	}
	if d2 := (Options{Network: NetworkConfig{Enabled: true}}).withDefaults().Network; d2.Leases == d.Leases || d2.Node == d.Node {
		t.Error("two pipelines share a default lease store or node name")
	}
	if d := (Options{}).withDefaults().Network; d.Leases != nil {
		t.Errorf("a pipeline without a network sink got a lease store %T", d.Leases)
	}
}
