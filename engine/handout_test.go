package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// TestStaleIDAfterRestart: an ID handed out before a restart names no
// handout after it, even once the new run has handed out others: Complete
// and Cancel of it are ReasonUnknownID and leave the new handouts open.
// The IDs of the two runs never meet.
func TestStaleIDAfterRestart(t *testing.T) {
	cfg := testConfig(t)
	ids := map[uint64]int{}
	var stale []uint64
	for run := range 2 {
		e := newEngine(t, cfg)
		stop := run2(t, e)
		var open []engine.Location
		for i := range 6 {
			loc := teleport(t, e, engine.Request{Player: "p" + strconv.Itoa(i)})
			if loc.ID == 0 || loc.ID > engine.MaxID {
				t.Fatalf("ID %d outside [1, 2^53-1]", loc.ID)
			}
			if r, ok := ids[loc.ID]; ok {
				t.Fatalf("ID %d handed out in run %d and again in run %d", loc.ID, r, run)
			}
			ids[loc.ID] = run
			open = append(open, loc)
		}
		if run == 0 {
			for _, l := range open {
				stale = append(stale, l.ID)
			}
		} else {
			for _, id := range stale {
				if err := e.Complete(id); reason(err) != engine.ReasonUnknownID {
					t.Errorf("Complete(%d) of the earlier run = %v, want %s", id, err, engine.ReasonUnknownID)
				}
				if err := e.Cancel(id); reason(err) != engine.ReasonUnknownID {
					t.Errorf("Cancel(%d) of the earlier run = %v, want %s", id, err, engine.ReasonUnknownID)
				}
			}
			for guess := uint64(1); guess <= 64; guess++ {
				if err := e.Complete(guess); reason(err) != engine.ReasonUnknownID {
					t.Fatalf("Complete(%d), a guessed ID = %v, want %s", guess, err, engine.ReasonUnknownID)
				}
			}
			if st := stats(t, e, region); st.Handouts.Open != int64(len(open)) || st.Handouts.Completed != 0 || st.Handouts.Cancelled != 0 {
				t.Fatalf("after the stale calls: %+v, want %d open, none closed", st.Handouts, len(open))
			}
			for _, l := range open {
				if err := e.Complete(l.ID); err != nil {
					t.Errorf("Complete of this run's %d: %v", l.ID, err)
				}
			}
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// run2 is run for tests that run an engine more than once on one data
// folder: it closes the engine when stopped.
func run2(t *testing.T, e *engine.Engine) func() error {
	t.Helper()
	stop := run(t, e)
	return func() error {
		err := stop()
		if cerr := e.Close(context.Background()); err == nil {
			err = cerr
		}
		return err
	}
}

// networkConfig is testConfig with a network sink of 2.
func networkConfig(t *testing.T) *config.Config {
	cfg := testConfig(t)
	rc := cfg.Regions[region]
	rc.Sinks.Network = config.NetworkSink{Enabled: true, Capacity: 2, Lease: time.Minute}
	cfg.Regions[region] = rc
	return cfg
}

// TestTokenReplay: a redeemed token never redeems again, under its own
// text (ReasonRedeemed) or a respelling of it (a newline inserted,
// padding, a character changed: ReasonInvalidToken), by Redeem, Reserve or
// Teleport. A token minted before a restart is still good after it: the
// secret is kept in the data folder.
func TestTokenReplay(t *testing.T) {
	cfg := networkConfig(t)
	e := newEngine(t, cfg)
	stop := run2(t, e)
	waitFor(t, "a full network sink", func() bool { return fill(stats(t, e, region), "network") == 2 })
	res, err := e.Reserve(region, "")
	if err != nil {
		t.Fatal(err)
	}
	tok := res.Token
	loc, err := e.Redeem(region, tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Complete(loc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Redeem(region, tok); reason(err) != engine.ReasonRedeemed {
		t.Errorf("Redeem of the redeemed token = %v, want %s", err, engine.ReasonRedeemed)
	}
	if _, err := e.Reserve(region, tok); reason(err) != engine.ReasonRedeemed {
		t.Errorf("Reserve of the redeemed token = %v, want %s", err, engine.ReasonRedeemed)
	}
	flipped := []byte(tok)
	flipped[len(flipped)/2] ^= 0x01
	for _, bad := range []string{tok + "\n", tok[:20] + "\n" + tok[20:], "\r\n" + tok, tok + "=", tok + "==", string(flipped), tok[1:], tok + "A"} {
		if _, err := e.Redeem(region, bad); reason(err) != engine.ReasonInvalidToken {
			t.Errorf("Redeem(%q) = %v, want %s", bad, err, engine.ReasonInvalidToken)
		}
		if _, err := e.Reserve(region, bad); reason(err) != engine.ReasonInvalidToken {
			t.Errorf("Reserve(%q) = %v, want %s", bad, err, engine.ReasonInvalidToken)
		}
		if _, err := e.Teleport(t.Context(), region, engine.Request{Player: "mallory", Token: bad}); reason(err) != engine.ReasonInvalidToken {
			t.Errorf("Teleport with token %q = %v, want %s", bad, err, engine.ReasonInvalidToken)
		}
	}
	if st := stats(t, e, region); st.Handouts.Open != 0 {
		t.Errorf("%d handouts open after the replays, want 0", st.Handouts.Open)
	}

	// A token leased before a restart: the lease ends with the run, the
	// token does not.
	waitFor(t, "a refilled network sink", func() bool { return fill(stats(t, e, region), "network") >= 1 })
	before, err := e.Reserve(region, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(cfg.DataDir, engine.NetworkSecretFile))
	if err != nil {
		t.Skipf("no %s in the data folder (%v): engine.New does not take the network secret from networkSecret yet", engine.NetworkSecretFile, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", engine.NetworkSecretFile, fi.Mode().Perm())
	}
	e2 := newEngine(t, cfg)
	stop2 := run2(t, e2)
	defer func() { _ = stop2() }()
	waitFor(t, "a full network sink", func() bool { return fill(stats(t, e2, region), "network") == 2 })
	if _, err := e2.Reserve(region, before.Token); err != nil {
		t.Fatalf("Reserve after a restart of a token minted before = %v, want a lease", err)
	}
	loc2, err := e2.Redeem(region, before.Token)
	if err != nil {
		t.Fatalf("Redeem after a restart = %v", err)
	}
	if _, err := e2.Redeem(region, before.Token); reason(err) != engine.ReasonRedeemed {
		t.Errorf("second Redeem after a restart = %v, want %s", err, engine.ReasonRedeemed)
	}
	if err := e2.Complete(loc2.ID); err != nil {
		t.Error(err)
	}
}

// TestHandoutReplacedPerPlayer: a player's new teleport replaces their
// open one: the old ID is unknown from then on, one handout stays open,
// and the replacement is counted.
func TestHandoutReplacedPerPlayer(t *testing.T) {
	e := newEngine(t, testConfig(t))
	run(t, e)
	l1 := teleport(t, e, engine.Request{Player: "alice"})
	l2 := teleport(t, e, engine.Request{Player: "alice"})
	bob := teleport(t, e, engine.Request{Player: "bob"})
	if err := e.Complete(l1.ID); reason(err) != engine.ReasonUnknownID {
		t.Errorf("Complete of the replaced handout = %v, want %s", err, engine.ReasonUnknownID)
	}
	if err := e.Cancel(l1.ID); reason(err) != engine.ReasonUnknownID {
		t.Errorf("Cancel of the replaced handout = %v, want %s", err, engine.ReasonUnknownID)
	}
	st := stats(t, e, region)
	if replaced, _ := engine.HandoutCounts(e, region); st.Handouts.Open != 2 || replaced != 1 || st.Handouts.Cancelled != 0 {
		t.Fatalf("handouts %+v, replaced %d; want 2 open (alice's second, bob's), 1 replaced, none cancelled", st.Handouts, replaced)
	}
	for _, l := range []engine.Location{l2, bob} {
		if err := e.Complete(l.ID); err != nil {
			t.Errorf("Complete(%d): %v", l.ID, err)
		}
	}
	if n := engine.OpenHandouts(e); n != 0 {
		t.Errorf("%d handouts open at the end, want 0", n)
	}
}

// TestHandoutTotalCap: with the engine's open handouts at the total cap, a
// new player's teleport fails at once with ReasonTooManyOpen, a player
// replacing their own still succeeds, and a slot freed serves again.
func TestHandoutTotalCap(t *testing.T) {
	e := newEngine(t, testConfig(t))
	engine.SetHandoutLimits(e, engine.HandoutLimits{Total: 3})
	run(t, e)
	var locs []engine.Location
	for i := range 3 {
		locs = append(locs, teleport(t, e, engine.Request{Player: "p" + strconv.Itoa(i)}))
	}
	start := time.Now()
	if _, err := e.Teleport(t.Context(), region, engine.Request{Player: "p3"}); reason(err) != engine.ReasonTooManyOpen {
		t.Fatalf("a fourth player's teleport = %v, want %s", err, engine.ReasonTooManyOpen)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v: it should not wait", d)
	}
	again := teleport(t, e, engine.Request{Player: "p0"})
	if err := e.Complete(locs[1].ID); err != nil {
		t.Fatal(err)
	}
	p3 := teleport(t, e, engine.Request{Player: "p3"})
	replaced, refused := engine.HandoutCounts(e, region)
	if st := stats(t, e, region); st.Handouts.Open != 3 || replaced != 1 || refused != 1 {
		t.Fatalf("handouts %+v, replaced %d, refused %d; want 3 open, 1 replaced, 1 refused", st.Handouts, replaced, refused)
	}
	for _, l := range []engine.Location{again, locs[2], p3} {
		if err := e.Complete(l.ID); err != nil {
			t.Error(err)
		}
	}
}

// TestHandoutsBounded: teleports never completed leave at most the
// limits open: many by a few players hold one each, many by distinct
// players hold the total cap, and the resident store holds no more
// reserved chunks than the open handouts and the sinks account for.
func TestHandoutsBounded(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 1_000 // the full count takes tens of seconds under the race detector
	}
	const players, total = 3, 64
	e := newEngine(t, testConfig(t))
	engine.SetHandoutLimits(e, engine.HandoutLimits{Total: total})
	run(t, e)
	for i := range n {
		teleport(t, e, engine.Request{Player: "p" + strconv.Itoa(i%players)})
		if open := engine.OpenHandouts(e); open > players {
			t.Fatalf("after %d teleports by %d players, %d handouts open", i+1, players, open)
		}
	}
	st := stats(t, e, region)
	replaced, _ := engine.HandoutCounts(e, region)
	if st.Handouts.Open != players || replaced != uint64(n-players) {
		t.Fatalf("handouts %+v, replaced %d; want %d open, %d replaced", st.Handouts, replaced, players, n-players)
	}
	checkResident(t, st, players)

	for i := range n {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := e.Teleport(ctx, region, engine.Request{Player: "q" + strconv.Itoa(i)})
		cancel()
		if err != nil && reason(err) != engine.ReasonTooManyOpen {
			t.Fatalf("teleport %d of distinct players: %v", i, err)
		}
		if open := engine.OpenHandouts(e); open > total {
			t.Fatalf("after %d teleports by distinct players, %d handouts open, cap %d", i+1, open, total)
		}
	}
	st = stats(t, e, region)
	_, refused := engine.HandoutCounts(e, region)
	if st.Handouts.Open != total || refused != uint64(n-(total-players)) {
		t.Fatalf("handouts %+v, refused %d; want %d open, %d refused", st.Handouts, refused, total, n-(total-players))
	}
	checkResident(t, st, total)
}

// checkResident fails the test when the resident store holds more reserved
// chunks than open handouts and full sinks hold, with room for the
// entries being promoted.
func checkResident(t *testing.T, st engine.Stats, open int) {
	t.Helper()
	held := open + 64 // a budget of promotions in flight
	for _, s := range st.Pipeline.Sinks {
		held += s.Capacity
	}
	if st.Resident.Reserved > held {
		t.Errorf("%d chunks reserved, more than %d (open handouts, sinks, promotions)", st.Resident.Reserved, held)
	}
	if un := st.Resident.Resident - st.Resident.Reserved; un > 4096 {
		t.Errorf("%d unreserved chunks resident, over the default budget", un)
	}
}

// TestHandoutPerClientCap: one client cannot hold more open handouts than
// HandoutLimits.PerClient with made-up player names; its refusal comes at
// once, says when its oldest handout ends its lifespan, and leaves other
// clients, and its own players replacing their handouts, served.
func TestHandoutPerClientCap(t *testing.T) {
	e := newEngine(t, testConfig(t))
	engine.SetHandoutLimits(e, engine.HandoutLimits{Total: 16, PerClient: 2})
	run(t, e)
	a1 := teleport(t, e, engine.Request{Player: "a1", Client: "192.0.2.1"})
	teleport(t, e, engine.Request{Player: "a2", Client: "192.0.2.1"})
	_, err := e.Teleport(t.Context(), region, engine.Request{Player: "a3", Client: "192.0.2.1"})
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Reason != engine.ReasonTooManyOpen {
		t.Fatalf("a third player of one client = %v, want %s", err, engine.ReasonTooManyOpen)
	}
	// The oldest handout ends its lifespan (5 min by default) at the latest.
	if ee.RetryAfter < 4*time.Minute || ee.RetryAfter > engine.DefaultHandoutLifespan {
		t.Errorf("RetryAfter = %v, want about the handout lifespan %v", ee.RetryAfter, engine.DefaultHandoutLifespan)
	}
	// A player of that client replacing their own handout is served.
	a1again := teleport(t, e, engine.Request{Player: "a1", Client: "192.0.2.1"})
	if err := e.Complete(a1.ID); reason(err) != engine.ReasonUnknownID {
		t.Errorf("Complete of the replaced handout = %v, want %s", err, engine.ReasonUnknownID)
	}
	// Another client, and a caller naming none, are served.
	teleport(t, e, engine.Request{Player: "b1", Client: "192.0.2.2"})
	teleport(t, e, engine.Request{Player: "c1"})
	// A slot the client frees serves it again.
	if err := e.Complete(a1again.ID); err != nil {
		t.Fatal(err)
	}
	teleport(t, e, engine.Request{Player: "a3", Client: "192.0.2.1"})
	if _, err := e.Teleport(t.Context(), region, engine.Request{Player: "a4", Client: "192.0.2.1"}); reason(err) != engine.ReasonTooManyOpen {
		t.Fatalf("a player past the client's cap again = %v, want %s", err, engine.ReasonTooManyOpen)
	}
	_, refused := engine.HandoutCounts(e, region)
	if st := stats(t, e, region); st.Handouts.Open != 4 || refused != 2 {
		t.Fatalf("handouts %+v, refused %d; want 4 open (a2, a3, b1, c1), 2 refused", st.Handouts, refused)
	}
}

// TestHandoutLimitsDefaults: the per-client cap is a quarter of the total
// by default, and has no bound when the total has none.
func TestHandoutLimitsDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   engine.HandoutLimits
		want int
	}{
		{engine.HandoutLimits{}, engine.DefaultMaxOpen / 4},
		{engine.HandoutLimits{Total: 100}, 25},
		{engine.HandoutLimits{Total: 2}, 1},
		{engine.HandoutLimits{Total: -1}, -1},
		{engine.HandoutLimits{Total: 100, PerClient: 7}, 7},
		{engine.HandoutLimits{PerClient: -1}, -1},
	} {
		if got := engine.HandoutLimitsWithDefaults(tc.in).PerClient; got != tc.want {
			t.Errorf("defaults of %+v: PerClient %d, want %d", tc.in, got, tc.want)
		}
	}
}
