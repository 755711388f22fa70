package pipeline

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/bubble"
	"github.com/rtpengine/rtp/lease/token"
)

// TestHysteresis: a capacity cut inside the minimum residence window evicts
// nothing; once the entries have been in the sink for MinResidence the
// surplus is demoted.
func TestHysteresis(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) { o.General.Capacity = 6 }})
		defer e.shutdown()
		g := e.p.General()
		e.fill(20, func() bool { return g.Len() == 6 })
		bubble.Advance(5 * time.Second)
		g.SetCapacity(2)
		closed := e.res.Stats().Closed
		for range 5 {
			e.cycle()
			bubble.Advance(10 * time.Second)
		}
		// 55 s since the last entry arrived (the fill may have finished
		// just before the cut): nothing evicted.
		if g.Len() != 6 || e.res.Stats().Closed != closed || e.p.Stats().Trims != 0 {
			t.Fatalf("inside the residence window: fill %d, closed %d->%d, trims %d; want no eviction",
				g.Len(), closed, e.res.Stats().Closed, e.p.Stats().Trims)
		}
		bubble.Advance(6 * time.Second)
		e.cycle()
		if g.Len() != 2 || e.res.Stats().Closed != closed+4 || e.p.Stats().Trims != 4 {
			t.Fatalf("after the window: fill %d, closed +%d, trims %d; want 2, +4, 4",
				g.Len(), e.res.Stats().Closed-closed, e.p.Stats().Trims)
		}
		if e.p.Stats().Demotions != 4 {
			t.Fatalf("Demotions = %d, want the 4 trimmed entries demoted to cold", e.p.Stats().Demotions)
		}
	})
}

// TestDemandGating: a demand-driven sink (no floor) is filled only while
// there is demand; when demand stops its quota falls and promotions stop,
// but no entry is evicted.
func TestDemandGating(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
			o.General = SinkConfig{Capacity: 10, Floor: -1}
			o.DemandHorizon = 10 * time.Second
			o.DemandHalfLife = 10 * time.Second
		}})
		defer e.shutdown()
		cmd := e.p.General()
		for range 10 {
			e.cycle()
			bubble.Advance(time.Second)
		}
		if cmd.Len() != 0 || cmd.Quota() != 0 {
			t.Fatalf("without demand: fill %d, quota %d; want 0, 0", cmd.Len(), cmd.Quota())
		}
		// Sustained demand of one request a second.
		for range 60 {
			if h, ok := cmd.Take(); ok {
				h.Close()
			}
			e.cycle()
			bubble.Advance(time.Second)
		}
		if q := cmd.Quota(); q < 9 {
			t.Fatalf("after a minute at 1 request/s: quota %d, want about 10", q)
		}
		e.fill(10, func() bool { return cmd.Len() >= 9 })
		fill, closed, opened := cmd.Len(), e.res.Stats().Closed, e.res.Stats().Opened
		// Demand stops: the quota decays, nothing is evicted or refilled.
		for range 120 {
			e.cycle()
			bubble.Advance(time.Second)
		}
		if cmd.Quota() != 0 {
			t.Fatalf("two minutes without demand: quota %d, want 0", cmd.Quota())
		}
		if cmd.Len() != fill || e.res.Stats().Closed != closed || e.res.Stats().Opened != opened {
			t.Fatalf("quota drop evicted or promoted: fill %d->%d, closed +%d, opened +%d",
				fill, cmd.Len(), e.res.Stats().Closed-closed, e.res.Stats().Opened-opened)
		}
	})
}

func TestDemandEWMA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) { o.DemandHalfLife = 20 * time.Second }})
		defer e.shutdown()
		g := e.p.General()
		e.fill(20, func() bool { return g.Len() == g.Cap() })
		// 3 requests a second for 10 half-lives.
		for range 200 {
			for range 3 {
				if h, ok := g.Take(); ok {
					g.ring.OfferSilent(h) // keep the sink full; the request counts
				}
			}
			bubble.Advance(time.Second)
			if err := e.p.Pulse(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if w := g.demandWeight(); math.Abs(float64(w)-3000) > 30 {
			t.Fatalf("DemandWeight after a steady 3/s = %d, want about 3000", w)
		}
		// One half-life without requests halves it.
		for range 20 {
			bubble.Advance(time.Second)
			if err := e.p.Pulse(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if w := g.demandWeight(); math.Abs(float64(w)-1500) > 30 {
			t.Fatalf("DemandWeight one half-life later = %d, want about 1500", w)
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// rebalanceEnv fills a general sink whose surplus (no floor) can cover the
// login reserve's floor deficit, then empties cold so that only a transfer
// can fill the reserve.
func rebalanceEnv(t *testing.T, login Criteria) *env {
	e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 3, Criteria: login}
		o.Network = NetworkConfig{Enabled: true, Capacity: 2}
	}})
	l := e.p.Login()
	l.SetOnline(3) // no free slot yet: capacity 0
	e.p.Network().SetCapacity(0)
	g := e.p.General()
	e.fill(20, func() bool { return g.Len() == g.Cap() })
	g.floor.Store(-1) // demand-driven from now on: no demand, so all surplus
	bubble.Advance(61 * time.Second)
	clearStage[Location](e.p.cold)
	clearStage[Candidate](e.p.backlog)
	e.p.opts.Budget.Candidates = -1 // feed nothing more (set after validation)
	return e
}

// TestFloorDeficitByTransfer: the login reserve's floor deficit is met by
// moving entries from the general sink's surplus, with zero reservations
// opened or closed.
func TestFloorDeficitByTransfer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := rebalanceEnv(t, Criteria{World: "overworld"})
		defer e.shutdown()
		l, g := e.p.Login(), e.p.General()
		for range 3 {
			l.OnQuit()
		}
		rs0 := e.res.Stats()
		e.cycle()
		rs := e.res.Stats()
		if l.Len() != 3 || g.Len() != g.Cap()-3 {
			t.Fatalf("login %d, general %d; want the 3-entry floor deficit moved from general", l.Len(), g.Len())
		}
		if rs.Opened != rs0.Opened || rs.Closed != rs0.Closed {
			t.Fatalf("transfer opened %d and closed %d reservations, want 0 and 0", rs.Opened-rs0.Opened, rs.Closed-rs0.Closed)
		}
		if st := e.p.Stats(); st.Transfers != 3 {
			t.Fatalf("Transfers = %d, want 3", st.Transfers)
		}
	})
}

// TestNonEligibleRebalance: when no entry may move (the destination's
// recheck rejects them, or the destination is leased), rebalancing closes
// nothing and leaves the surplus in place.
func TestNonEligibleRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := rebalanceEnv(t, Criteria{World: "nether"})
		defer e.shutdown()
		l, g, n := e.p.Login(), e.p.General(), e.p.Network()
		l.OnQuit()
		n.SetCapacity(2)
		rs0 := e.res.Stats()
		e.cycle()
		rs := e.res.Stats()
		if l.Len() != 0 || n.Len() != 0 || g.Len() != g.Cap() {
			t.Fatalf("login %d, network %d, general %d: an ineligible transfer happened", l.Len(), n.Len(), g.Len())
		}
		if rs.Closed != rs0.Closed || rs.Opened != rs0.Opened {
			t.Fatalf("an ineligible rebalance opened %d / closed %d reservations", rs.Opened-rs0.Opened, rs.Closed-rs0.Closed)
		}
	})
}

func TestLoginReserve(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Login = LoginConfig{Enabled: true, PlayerCap: 500}
		o.ColdCapacity, o.BacklogCapacity = 1024, 1024
		o.Budget = Budget{Candidates: 1024, Screens: 1024, MaxScreens: 1024}
	}})
	defer e.shutdown()
	l := e.p.Login()
	if l.Cap() != 500 {
		t.Fatalf("login capacity = %d, want playerCap 500 with nobody online", l.Cap())
	}
	e.fill(10, func() bool { return l.Len() == 500 })

	// A 500-player join burst: every join is served.
	var taken []*Hot
	for range 500 {
		l.OnJoin()
		h, ok := l.Take()
		if !ok {
			t.Fatalf("join %d missed with the reserve at %d", len(taken)+1, l.Len())
		}
		taken = append(taken, h)
	}
	st := e.p.Stats()
	if st.LoginExhaustion != 0 || st.Misses != 0 || l.Cap() != 0 {
		t.Fatalf("after the burst: exhaustion %d, misses %d, capacity %d", st.LoginExhaustion, st.Misses, l.Cap())
	}
	if _, ok := l.Take(); ok {
		t.Fatal("Take on an empty reserve succeeded")
	}
	if l.Exhaustion() != 1 {
		t.Fatalf("Exhaustion = %d, want 1", l.Exhaustion())
	}
	for _, h := range taken {
		h.Close()
	}
	// One per quit.
	l.OnQuit()
	e.fill(10, func() bool { return l.Len() == 1 })
	if l.Online() != 499 || l.Cap() != 1 {
		t.Fatalf("online %d, capacity %d", l.Online(), l.Cap())
	}
}

func TestNetworkSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
			o.Network = NetworkConfig{Enabled: true, Capacity: 2, Secret: []byte("0123456789abcdef-network"), LeaseTTL: 30 * time.Second}
		}})
		defer e.shutdown()
		n := e.p.Network()
		e.fill(20, func() bool { return n.Len() == 2 })

		t1, t2 := n.NewToken(), n.NewToken()
		if t1 == t2 || len(t1) != token.TextLen {
			t.Fatalf("tokens %q %q: want distinct %d-character tokens", t1, t2, token.TextLen)
		}
		forged := []byte(t1)
		forged[10] ^= 1
		other, err := token.New([]byte("another secret of the network"), e.p.opts.Region, n.Name(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []token.Token{"", "abc", token.Token(forged), other.Mint(), t1 + "A"} {
			if _, err := n.Reserve(bad); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Reserve(%q) = %v, want ErrInvalidToken", bad, err)
			}
		}

		loc, err := n.Reserve(t1)
		if err != nil {
			t.Fatal(err)
		}
		again, err := n.Reserve(t1)
		if err != nil || again != loc || n.Len() != 1 || n.Leased() != 1 {
			t.Fatalf("second Reserve: %+v, %v, pool %d, leased %d; want the same location, one lease", again, err, n.Len(), n.Leased())
		}
		if e.pers.counts()[loc] != 0 {
			t.Fatal("a leased location kept its row: a restart could serve it while the lease holds it")
		}
		h, err := n.Redeem(t1)
		if err != nil || h.Location != loc || !h.live() {
			t.Fatalf("Redeem = %+v, %v", h, err)
		}
		h.Close()
		if e.pers.counts()[loc] != 0 {
			t.Fatal("a redeemed location kept its row")
		}
		if _, err := n.Redeem(t1); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("second Redeem = %v, want ErrRedeemed", err)
		}
		if _, err := n.Reserve(t1); !errors.Is(err, ErrRedeemed) {
			t.Fatalf("Reserve after Redeem = %v, want ErrRedeemed", err)
		}
		if _, err := n.Redeem(t2); !errors.Is(err, ErrUnknownToken) {
			t.Fatalf("Redeem of an unreserved token = %v, want ErrUnknownToken", err)
		}

		// Release returns the entry to the pool (without its row, which
		// went at the grant).
		e.fill(20, func() bool { return n.Len() == 2 })
		loc2, err := n.Reserve(t2)
		if err != nil {
			t.Fatal(err)
		}
		if !n.Release(t2) || n.Len() != 2 || n.Leased() != 0 || n.Release(t2) {
			t.Fatalf("Release: pool %d, leased %d", n.Len(), n.Leased())
		}

		// Expiry with room in the pool: back to the pool at the next
		// pulse, the lease released in the store.
		t3 := n.NewToken()
		loc3, err := n.Reserve(t3)
		if err != nil {
			t.Fatal(err)
		}
		bubble.Advance(31 * time.Second)
		if _, err := n.Reserve(t3); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Reserve after expiry = %v, want ErrLeaseExpired", err)
		}
		e.cycle()
		if n.Len() != 2 || n.Leased() != 0 {
			t.Fatalf("expired lease: pool %d, leased %d; want it back in the pool", n.Len(), n.Leased())
		}
		// The ended token is too old to lease again: late calls are told
		// the lease expired.
		if _, err := n.Redeem(t3); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Redeem once the lease ended = %v, want ErrLeaseExpired", err)
		}
		if _, err := n.Reserve(t3); !errors.Is(err, ErrLeaseExpired) {
			t.Fatalf("Reserve once the lease ended = %v, want ErrLeaseExpired", err)
		}
		if _, ok := n.Expires(t3); ok || n.Release(t3) {
			t.Fatal("an ended lease reports an end or can be released")
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}

		// Expiry with the pool full: demoted to cold, its reservation
		// closed.
		t4 := n.NewToken()
		loc4, err := n.Reserve(t4)
		if err != nil {
			t.Fatal(err)
		}
		e.fill(20, func() bool { return n.Len() == 2 })
		bubble.Advance(31 * time.Second)
		closed, dem := e.res.Stats().Closed, e.p.Stats().Demotions
		e.cycle()
		if n.Len() != 2 || n.Leased() != 0 || e.p.Stats().Demotions != dem+1 || e.res.Stats().Closed < closed+1 {
			t.Fatalf("expired lease, full pool: pool %d, leased %d, demotions +%d", n.Len(), n.Leased(), e.p.Stats().Demotions-dem)
		}
		// The leased locations came back without their rows; every other
		// location has exactly its row.
		rows := e.pers.counts()
		for _, l := range []Location{loc2, loc3, loc4} {
			if rows[l] != 0 {
				t.Errorf("%+v, leased and back, has %d rows; want none", l, rows[l])
			}
		}
		e.checkRowsLeased("end", map[Location]bool{loc2: true, loc3: true, loc4: true})
	})
}

func TestPersonalSink(t *testing.T) {
	e := newEnv(t, envConfig{opts: func(o *Options) { o.Personal = PersonalConfig{Enabled: true, PerPlayer: 2} }})
	defer e.shutdown()
	ps := e.p.Personal()
	if err := ps.Open("", 1); err == nil {
		t.Fatal("Open with an empty player succeeded")
	}
	if err := ps.Open("alice", 0); err != nil {
		t.Fatal(err)
	}
	if err := ps.Open("bob", 1); err != nil {
		t.Fatal(err)
	}
	e.fill(20, func() bool { return ps.PlayerLen("alice") == 2 && ps.PlayerLen("bob") == 1 })
	if ps.Cap() != 3 || ps.Len() != 3 {
		t.Fatalf("Cap %d Len %d, want 3 3", ps.Cap(), ps.Len())
	}
	h, ok := ps.Take("alice")
	if !ok {
		t.Fatal("miss")
	}
	h.Close()
	if _, ok := ps.Take("carol"); ok {
		t.Fatal("Take for a player without a bucket succeeded")
	}
	closed := e.res.Stats().Closed
	if !ps.Close("bob") || ps.Close("bob") {
		t.Fatal("Close should report the bucket open exactly once")
	}
	if e.res.Stats().Closed != closed+1 {
		t.Fatal("closing a bucket did not close its entry's reservation")
	}
	if got := ps.Players(); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("Players() = %v", got)
	}
	if !ps.IsOpen("alice") || ps.IsOpen("bob") || ps.IsOpen("carol") {
		t.Fatalf("IsOpen alice, bob, carol = %v, %v, %v; want true, false, false",
			ps.IsOpen("alice"), ps.IsOpen("bob"), ps.IsOpen("carol"))
	}
	e.checkRows("end")
}

// endedLease makes a pipeline (in a synctest bubble) with a network sink
// of 2 and a 30 s lease TTL, fills the sink, leases one entry and lets 31 s
// pass: the lease is past its end, and no pulse has ended it yet. more, if
// set, changes the options further.
func endedLease(t *testing.T, more func(*Options)) (*env, *NetworkSink, token.Token) {
	t.Helper()
	e := newEnv(t, envConfig{realTime: true, opts: func(o *Options) {
		o.Network = NetworkConfig{Enabled: true, Capacity: 2, Secret: []byte("0123456789abcdef-network"), LeaseTTL: 30 * time.Second}
		if more != nil {
			more(o)
		}
	}})
	n := e.p.Network()
	e.fill(20, func() bool { return n.Len() == 2 })
	tok := n.NewToken()
	if _, err := n.Reserve(tok); err != nil {
		t.Fatal(err)
	}
	bubble.Advance(31 * time.Second)
	return e, n, tok
}

// TestHousekeep: Housekeep ends expired leases, as Pulse does, and starts
// no other work: nothing is screened or promoted, though the general sink
// has room and candidates wait.
func TestHousekeep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, n, _ := endedLease(t, func(o *Options) { o.General.Capacity = 64 })
		defer e.shutdown()
		before := e.p.Stats()
		if err := e.p.Housekeep(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Settle(context.Background()); err != nil {
			t.Fatal(err)
		}
		after := e.p.Stats()
		if n.Leased() != 0 || n.Len() != 2 {
			t.Fatalf("after Housekeep: pool %d, leased %d; want the expired lease back in the pool", n.Len(), n.Leased())
		}
		if after.Screened != before.Screened || after.Promotions != before.Promotions || e.p.General().Len() == 64 {
			t.Fatalf("Housekeep did work: screened %d -> %d, promotions %d -> %d", before.Screened, after.Screened, before.Promotions, after.Promotions)
		}
		// Pulse, by contrast, refills.
		e.cycle()
		if e.p.Stats().Promotions == after.Promotions {
			t.Fatal("Pulse after Housekeep promoted nothing: the test's general sink had no work waiting")
		}
		if err := e.p.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.p.Housekeep(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Housekeep after Close = %v, want ErrClosed", err)
		}
	})
}

// TestSetBudget: a new budget applies from the next pulse; a negative
// field changes nothing; zero fields take the defaults.
func TestSetBudget(t *testing.T) {
	var screens atomic.Int64
	e := newEnv(t, envConfig{opts: func(o *Options) {
		o.Budget.Candidates, o.Budget.Screens = 64, 32
		screen := o.Screen
		o.Screen = func(ctx context.Context, c geom.Chunk) (Screened, error) {
			screens.Add(1)
			return screen(ctx, c)
		}
	}})
	defer e.shutdown()
	if err := e.p.SetBudget(Budget{Candidates: 8, Screens: 3, MaxScreens: -1}); err == nil || !strings.Contains(err.Error(), "MaxScreens -1") {
		t.Fatalf("SetBudget with a negative field = %v, want an error naming it", err)
	}
	if b := e.p.Budget(); b.Candidates != 64 || b.Screens != 32 {
		t.Fatalf("budget after a refused SetBudget = %+v, want the one in force", b)
	}
	if err := e.p.SetBudget(Budget{Candidates: 8, Screens: 3}); err != nil {
		t.Fatal(err)
	}
	if b := e.p.Budget(); b.Candidates != 8 || b.Screens != 3 || b.MaxScreens != DefaultMaxScreens || b.LoginBurst != DefaultLoginBurst {
		t.Fatalf("Budget() = %+v, want 8 candidates, 3 screens and the defaults elsewhere", b)
	}
	e.cycle()
	if n := screens.Load(); n != 3 {
		t.Fatalf("a pulse under the new budget screened %d candidates, want 3", n)
	}
	if err := e.p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.p.SetBudget(Budget{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetBudget after Close = %v, want ErrClosed", err)
	}
}

// TestNetworkEndedTokenForgotten: an ended lease's record is dropped once
// its token is too old to take a lease, and the token is then refused for
// good (ErrLeaseExpired): it never takes a second lease.
func TestNetworkEndedTokenForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, n, tok := endedLease(t, nil)
		defer e.shutdown()
		e.cycle() // ends the lease
		e.cycle() // the token is 31 s old: its record goes
		if k := n.records(); k != 0 {
			t.Fatalf("%d lease records kept past the token's age, want 0", k)
		}
		e.fill(20, func() bool { return n.Len() == 2 })
		for range 3 {
			if _, err := n.Redeem(tok); !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Redeem of a forgotten token = %v, want ErrLeaseExpired", err)
			}
			if _, err := n.Reserve(tok); !errors.Is(err, ErrLeaseExpired) {
				t.Fatalf("Reserve of a forgotten token = %v, want ErrLeaseExpired", err)
			}
			bubble.Advance(time.Minute)
			e.cycle()
		}
		if n.Leased() != 0 {
			t.Fatalf("leased %d, want 0", n.Leased())
		}
	})
}

// TestPacedNeedsReserve pins when the refill may be paced: every sink at
// its quota (counting promotions in flight) and cold holding the sinks'
// next refill, the smaller of their quotas and a second of their demand.
func TestPacedNeedsReserve(t *testing.T) {
	for _, tc := range []struct {
		name              string
		need, cold, total int
		rate              float64
		want              bool
	}{
		{"a sink short", 1, 100000, 64, 10, false},
		{"full, cold holds the quotas", 0, 64, 64, 1000, true},
		{"full, cold under the quotas and a second of demand", 0, 63, 64, 1000, false},
		{"large cache, cold holds a second of demand", 0, 1000, 8692, 1000, true},
		{"large cache, cold under a second of demand", 0, 999, 8692, 1000, false},
		{"fractional demand rounds up", 0, 2, 8692, 2.5, false},
		{"fractional demand, enough", 0, 3, 8692, 2.5, true},
		{"no demand", 0, 0, 64, 0, true},
	} {
		if got := paced(tc.need, tc.cold, tc.total, tc.rate); got != tc.want {
			t.Errorf("%s: paced(need %d, cold %d, quotas %d, %v/s) = %v, want %v", tc.name, tc.need, tc.cold, tc.total, tc.rate, got, tc.want)
		}
	}
}
