package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

const region = config.DefaultRegionName

// TestRouting drives every way a location is handed out on one region
// with all its sinks: argument checks, the personal queue, network
// reservations, the login reserve and its fallthrough, pausing, Cancel and
// the handout lifespan. (One test, since filling a region under the race
// detector takes a while.)
func TestRouting(t *testing.T) {
	clock := new(fakeClock)
	cfg := testConfig(t)
	rc := cfg.Regions[region]
	rc.Sinks.Login = config.LoginSink{Enabled: true, PlayerCap: 2}
	rc.Sinks.Personal = config.PersonalSink{Enabled: true, Capacity: 1}
	rc.Sinks.Network = config.NetworkSink{Enabled: true, Capacity: 2, Lease: time.Minute}
	cfg.Regions[region] = rc
	e := newEngineOpts(t, cfg, engine.Options{Clock: clock.Now, HandoutLifespan: time.Minute})
	if err := e.Ready(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Ready before Run = %v, want not running", err)
	}
	stop := run(t, e)
	waitFor(t, "readiness", func() bool { return e.Ready() == nil })
	waitFor(t, "full sinks", func() bool {
		st := stats(t, e, region)
		return fill(st, "general") == 4 && fill(st, "login") == 2 && fill(st, "network") == 2
	})

	t.Run("invalid arguments", func(t *testing.T) {
		long := strings.Repeat("p", engine.MaxPlayerLen+1)
		for _, tc := range []struct {
			name, want string
			call       func() error
		}{
			{"join empty player", engine.ReasonInvalid, func() error { return e.Join(region, "") }},
			{"join long player", engine.ReasonInvalid, func() error { return e.Join(region, long) }},
			{"quit invalid UTF-8", engine.ReasonInvalid, func() error { return e.Quit(region, "\xff") }},
			{"negative capacity", engine.ReasonInvalid, func() error { return e.OpenQueue(region, "p", -1) }},
			{"too large capacity", engine.ReasonInvalid, func() error { return e.OpenQueue(region, "p", 1<<40) }},
			{"close queue empty player", engine.ReasonInvalid, func() error { return e.CloseQueue(region, "") }},
			{"join unknown region", engine.ReasonUnknownRegion, func() error { return e.Join("nowhere", "p") }},
			{"reserve unknown region", engine.ReasonUnknownRegion, func() error { _, err := e.Reserve("nowhere", ""); return err }},
			{"teleport empty player", engine.ReasonInvalid, func() error {
				_, err := e.Teleport(t.Context(), region, engine.Request{})
				return err
			}},
			{"teleport unknown sink", engine.ReasonUnknownSink, func() error {
				_, err := e.Teleport(t.Context(), region, engine.Request{Player: "p", Sink: "nosuch"})
				return err
			}},
			{"teleport network without token", engine.ReasonInvalid, func() error {
				_, err := e.Teleport(t.Context(), region, engine.Request{Player: "p", Sink: "network"})
				return err
			}},
			{"personal without a queue", engine.ReasonNoSink, func() error {
				_, err := e.Teleport(t.Context(), region, engine.Request{Player: "carol", Sink: "personal"})
				return err
			}},
			{"complete unknown", engine.ReasonUnknownID, func() error { return e.Complete(1 << 60) }},
			{"cancel unknown", engine.ReasonUnknownID, func() error { return e.Cancel(1 << 60) }},
		} {
			if err := tc.call(); reason(err) != tc.want {
				t.Errorf("%s: got %v, want reason %s", tc.name, err, tc.want)
			}
		}
	})

	t.Run("personal", func(t *testing.T) {
		if err := e.OpenQueue(region, "alice", 0); err != nil {
			t.Fatal(err)
		}
		// Asked explicitly, it waits for the queue to fill.
		loc := teleport(t, e, engine.Request{Player: "alice", Sink: "personal"})
		if loc.Sink != "personal" {
			t.Errorf("personal teleport served by %q", loc.Sink)
		}
		independentCheck(t, cfg, loc)
		// Complete it first: alice's next teleport would replace it.
		if err := e.Complete(loc.ID); err != nil {
			t.Error(err)
		}
		ps := e.Region(region).Pipeline().Personal()
		waitFor(t, "alice's queue refilled", func() bool { return ps.PlayerLen("alice") == 1 })
		// A plain request of a player whose queue holds one takes it.
		loc2 := teleport(t, e, engine.Request{Player: "alice"})
		if loc2.Sink != "personal" {
			t.Errorf("alice's plain teleport served by %q, want personal", loc2.Sink)
		}
		loc3 := teleport(t, e, engine.Request{Player: "bob"})
		if loc3.Sink != "general" {
			t.Errorf("bob's plain teleport served by %q, want general", loc3.Sink)
		}
		for _, l := range []engine.Location{loc2, loc3} {
			if err := e.Complete(l.ID); err != nil {
				t.Error(err)
			}
		}
		if err := e.CloseQueue(region, "nobody"); err != nil {
			t.Errorf("CloseQueue of a queue never opened = %v", err)
		}
		if err := e.Quit(region, "alice"); err != nil {
			t.Fatal(err)
		}
		if p := ps.Players(); len(p) != 0 {
			t.Errorf("after Quit, open queues %v, want none", p)
		}
	})

	t.Run("network", func(t *testing.T) {
		res, err := e.Reserve(region, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Token == "" || res.Location.Sink != "network" || res.Location.Biome == "" {
			t.Errorf("Reserve = %+v, want a token and a network location with its biome", res)
		}
		if d := res.Expires.Sub(clock.Now()); d < 59*time.Second || d > time.Minute {
			t.Errorf("Reserve expires in %v, want the 1m lease", d)
		}
		clock.Advance(10 * time.Second)
		again, err := e.Reserve(region, res.Token)
		if err != nil || again.Location != res.Location {
			t.Errorf("Reserve again = %+v, %v; want the same location %+v", again.Location, err, res.Location)
		}
		if !again.Expires.Equal(res.Expires) {
			t.Errorf("Reserve again 10s later expires at %v, want the lease's end %v", again.Expires, res.Expires)
		}
		loc, err := e.Teleport(t.Context(), region, engine.Request{Player: "dave", Token: res.Token})
		if err != nil {
			t.Fatal(err)
		}
		if loc.X != res.Location.X || loc.Y != res.Location.Y || loc.Z != res.Location.Z || loc.Sink != "network" || loc.ID == 0 {
			t.Errorf("redeemed %+v, want the reserved %+v with an ID", loc, res.Location)
		}
		independentCheck(t, cfg, loc)
		if err := e.Complete(loc.ID); err != nil {
			t.Error(err)
		}
		if _, err := e.Redeem(region, res.Token); reason(err) != engine.ReasonRedeemed {
			t.Errorf("second Redeem = %v, want %s", err, engine.ReasonRedeemed)
		}
		if _, err := e.Redeem(region, "not-a-token"); reason(err) != engine.ReasonInvalidToken {
			t.Errorf("Redeem of garbage = %v, want %s", err, engine.ReasonInvalidToken)
		}
		r2, err := e.Reserve(region, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Release(region, r2.Token); err != nil {
			t.Errorf("Release = %v", err)
		}
		if err := e.Release(region, r2.Token); reason(err) != engine.ReasonUnknownToken {
			t.Errorf("second Release = %v, want %s", err, engine.ReasonUnknownToken)
		}
		if _, err := e.Redeem(region, r2.Token); reason(err) != engine.ReasonUnknownToken {
			t.Errorf("Redeem after Release = %v, want %s", err, engine.ReasonUnknownToken)
		}
	})

	t.Run("login", func(t *testing.T) {
		if err := e.Join(region, "erin"); err != nil {
			t.Fatal(err)
		}
		if err := e.Quit(region, "erin"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a full login reserve", func() bool { return fill(stats(t, e, region), "login") == 2 })
		if err := e.ScanPause(region); err != nil {
			t.Fatal(err)
		}
		// Paused, nothing refills: the reserve serves its two, then the
		// general sink takes over.
		var sinks []string
		for range 3 {
			loc := teleport(t, e, engine.Request{Player: "frank", Sink: "login"})
			sinks = append(sinks, loc.Sink)
			if err := e.Complete(loc.ID); err != nil {
				t.Error(err)
			}
		}
		if want := []string{"login", "login", "general"}; strings.Join(sinks, ",") != strings.Join(want, ",") {
			t.Errorf("login teleports served by %v, want %v", sinks, want)
		}
		if st := stats(t, e, region); st.Pipeline.LoginExhaustion == 0 {
			t.Errorf("LoginExhaustion = 0 after the reserve ran dry")
		}
	})

	t.Run("paused", func(t *testing.T) {
		if !stats(t, e, region).Paused {
			t.Fatal("Stats.Paused = false after ScanPause")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		for range 10 {
			start := time.Now()
			loc, err := e.Teleport(ctx, region, engine.Request{Player: "gina"})
			if err == nil {
				_ = e.Complete(loc.ID)
				continue
			}
			if reason(err) != engine.ReasonPaused || time.Since(start) > 5*time.Second {
				t.Fatalf("Teleport on a drained paused region = %v after %v, want %s at once", err, time.Since(start), engine.ReasonPaused)
			}
			return
		}
		t.Fatal("a paused region kept serving")
	})

	t.Run("cancel", func(t *testing.T) {
		if err := e.ScanResume(region); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a general location", func() bool { return fill(stats(t, e, region), "general") > 0 })
		if err := e.ScanPause(region); err != nil {
			t.Fatal(err)
		}
		pipe := e.Region(region).Pipeline()
		if err := pipe.Settle(t.Context()); err != nil {
			t.Fatal(err)
		}
		loc := teleport(t, e, engine.Request{Player: "hank", Sink: "general"})
		if pipe.Cold().Len() == pipe.Cold().Cap() {
			pipe.Cold().Poll() // make room
		}
		cold := pipe.Cold().Len()
		if err := e.Cancel(loc.ID); err != nil {
			t.Fatal(err)
		}
		if got := pipe.Cold().Len(); got != cold+1 {
			t.Errorf("cold holds %d after Cancel, want %d (the location given back)", got, cold+1)
		}
		found := false
		for {
			l, ok := pipe.Cold().Poll()
			if !ok {
				break
			}
			found = found || l.X == loc.X && l.Y == loc.Y && l.Z == loc.Z
		}
		if !found {
			t.Errorf("the cancelled location %+v is not in cold", loc)
		}
		if st := stats(t, e, region); st.Handouts.Cancelled != 1 {
			t.Errorf("Handouts.Cancelled = %d, want 1", st.Handouts.Cancelled)
		}
		if err := e.Cancel(loc.ID); reason(err) != engine.ReasonUnknownID {
			t.Errorf("second Cancel = %v, want %s", err, engine.ReasonUnknownID)
		}
		if err := e.Complete(loc.ID); reason(err) != engine.ReasonUnknownID {
			t.Errorf("Complete after Cancel = %v, want %s", err, engine.ReasonUnknownID)
		}
		if err := e.ScanResume(region); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("lifespan", func(t *testing.T) {
		held := teleport(t, e, engine.Request{Player: "ivan"})
		before := stats(t, e, region)
		if before.Handouts.Open != 1 {
			t.Errorf("Handouts.Open = %d, want 1", before.Handouts.Open)
		}
		waitFor(t, "a network location", func() bool { return fill(stats(t, e, region), "network") > 0 })
		leased, err := e.Reserve(region, "")
		if err != nil {
			t.Fatal(err)
		}
		// A paused region still keeps time: the lease ends and its place
		// goes back to the network pool, with nothing screened meanwhile.
		if err := e.ScanPause(region); err != nil {
			t.Fatal(err)
		}
		if err := e.Region(region).Pipeline().Settle(t.Context()); err != nil {
			t.Fatal(err)
		}
		screened := stats(t, e, region).Pipeline.Screened
		leasedNow := func() int {
			for _, s := range stats(t, e, region).Pipeline.Sinks {
				if s.Name == "network" {
					return s.Leased
				}
			}
			return -1
		}
		if leasedNow() != 1 {
			t.Fatalf("network leases = %d before the lease ends, want 1", leasedNow())
		}
		clock.Advance(90 * time.Second) // past the 1m lease, within the next TTL
		waitFor(t, "the paused region to end the lease", func() bool { return leasedNow() == 0 })
		if _, err := e.Redeem(region, leased.Token); reason(err) != engine.ReasonLeaseExpired {
			t.Errorf("Redeem after the lease ended = %v, want %s", err, engine.ReasonLeaseExpired)
		}
		if got := stats(t, e, region).Pipeline.Screened; got != screened {
			t.Errorf("a paused region screened %d candidates", got-screened)
		}
		if err := e.ScanResume(region); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the lifespan to close the handout", func() bool { return stats(t, e, region).Handouts.Expired == 1 })
		if err := e.Complete(held.ID); reason(err) != engine.ReasonUnknownID {
			t.Errorf("Complete after the lifespan = %v, want %s", err, engine.ReasonUnknownID)
		}
		if st := stats(t, e, region); st.Handouts.Open != 0 {
			t.Errorf("Handouts.Open = %d after expiry, want 0", st.Handouts.Open)
		}
	})

	st := stats(t, e, region)
	for _, sink := range []string{"general", "login", "personal", "network"} {
		if st.Served[sink] == 0 {
			t.Errorf("Served[%q] = 0; served %v", sink, st.Served)
		}
	}
	if l := st.Latency; l.Count == 0 || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 || l.P99 > l.Max {
		t.Errorf("Latency = %+v, want ordered positive percentiles", l)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := e.Ready(); err == nil {
		t.Error("Ready after shutdown = nil")
	}
	if st := stats(t, e, region); st.Resident.Open != 0 {
		t.Errorf("after shutdown: %d reservations open", st.Resident.Open)
	}
}

// TestWaiting: a teleport on an empty sink waits and is served by the
// next promotion; a pause wakes a waiting teleport, which then fails with
// ReasonPaused.
func TestWaiting(t *testing.T) {
	cfg := testConfig(t)
	e := newEngine(t, cfg)
	type result struct {
		loc engine.Location
		err error
	}
	wait := func() chan result {
		ch := make(chan result, 1)
		go func() {
			loc, err := e.Teleport(t.Context(), region, engine.Request{Player: "p"})
			ch <- result{loc, err}
		}()
		return ch
	}
	// A teleport waits once it has counted its miss.
	misses := func() uint64 {
		for _, s := range stats(t, e, region).Pipeline.Sinks {
			if s.Name == "general" {
				return s.Misses
			}
		}
		return 0
	}
	first := wait()
	waitFor(t, "the first teleport waiting", func() bool { return misses() >= 1 })
	if err := e.ScanPause(region); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-first:
		if reason(r.err) != engine.ReasonPaused {
			t.Errorf("waiting teleport after ScanPause = %v, want %s", r.err, engine.ReasonPaused)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ScanPause did not wake the waiting teleport")
	}
	if err := e.ScanResume(region); err != nil {
		t.Fatal(err)
	}
	called := time.Now()
	second := wait()
	waitFor(t, "the second teleport waiting", func() bool { return misses() >= 2 })
	missAt := time.Now() // the teleport began before this
	runAt := time.Now()  // and is served after this
	run(t, e)
	select {
	case r := <-second:
		most := time.Since(called)
		if r.err != nil {
			t.Fatalf("waiting teleport = %v", r.err)
		}
		if least := runAt.Sub(missAt); r.loc.Waited < least || r.loc.Waited > most || r.loc.Sink != "general" {
			t.Errorf("waiting teleport = %+v, want served by general after a wait within [%v, %v]", r.loc, least, most)
		}
		independentCheck(t, cfg, r.loc)
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting teleport was not served")
	}
}
