package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// TestTokenSingleUseAcrossRestart checks that a single node keeps its
// network leases in its data folder: a token redeemed before a restart is
// refused as redeemed after it (for Redeem and for Reserve, which must not
// lease it a second place), and a token reserved before the restart is
// still redeemable after it, at the place reserved.
func TestTokenSingleUseAcrossRestart(t *testing.T) {
	const region = config.DefaultRegionName
	cfg := testConfig(t)
	rc := cfg.Regions[region]
	rc.Sinks.Network = config.NetworkSink{Enabled: true, Capacity: 2, Lease: time.Minute}
	cfg.Regions[region] = rc

	start := func() (*engine.Engine, func() error) {
		e := newEngine(t, cfg)
		stop := run(t, e)
		waitFor(t, "a full network sink", func() bool { return fill(stats(t, e, region), "network") == 2 })
		return e, stop
	}
	e, stop := start()
	used, err := e.Reserve(region, "")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := e.Reserve(region, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Redeem(region, used.Token); err != nil {
		t.Fatalf("Redeem = %v", err)
	}
	if _, err := e.Redeem(region, used.Token); reason(err) != engine.ReasonRedeemed {
		t.Fatalf("second Redeem = %v, want %s", err, engine.ReasonRedeemed)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	e, _ = start()
	if _, err := e.Redeem(region, used.Token); reason(err) != engine.ReasonRedeemed {
		t.Errorf("Redeem of a token redeemed before the restart = %v, want %s", err, engine.ReasonRedeemed)
	}
	if res, err := e.Reserve(region, used.Token); reason(err) != engine.ReasonRedeemed {
		t.Errorf("Reserve of a token redeemed before the restart = %+v, %v; want %s", res, err, engine.ReasonRedeemed)
	}
	loc, err := e.Redeem(region, kept.Token)
	if err != nil {
		t.Fatalf("Redeem of a token reserved before the restart = %v", err)
	}
	if loc.World != kept.Location.World || loc.X != kept.Location.X || loc.Y != kept.Location.Y || loc.Z != kept.Location.Z {
		t.Errorf("Redeem after the restart = %+v, want the place reserved before it %+v", loc, kept.Location)
	}
	if _, err := e.Redeem(region, kept.Token); reason(err) != engine.ReasonRedeemed {
		t.Errorf("second Redeem after the restart = %v, want %s", err, engine.ReasonRedeemed)
	}
}
