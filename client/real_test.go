package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/server"
)

// TestAgainstServer drives every route of a real server over a real
// engine (procedural world, every sink enabled) through the client.
func TestAgainstServer(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Shape = geom.ShapeSpec{Kind: geom.ShapeSquare, Radius: 256}
	rc.Pulse = 10 * time.Millisecond
	rc.Sinks.Login.Enabled = true
	rc.Sinks.Network.Enabled = true
	rc.Sinks.Personal.Enabled = true
	cfg.Regions[config.DefaultRegionName] = rc
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	const token = "client-test-token-0123456789"
	srv, err := server.New(e, server.Options{Logger: quiet, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	t.Cleanup(func() {
		hs.Close()
		stop()
		if err := <-done; err != nil {
			t.Errorf("engine Run: %v", err)
		}
	})

	ctx := t.Context()
	c := client.New(hs.URL, client.Options{Token: token, HTTPClient: hs.Client()})
	anon := client.New(hs.URL, client.Options{HTTPClient: hs.Client()})
	if err := c.Healthz(ctx); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 30*time.Second, "the server ready", func() bool { return c.Readyz(ctx) == nil })
	regs, err := anon.Regions(ctx)
	if err != nil || len(regs) != 1 || regs[0].Name != "default" || regs[0].World != "world" {
		t.Fatalf("Regions = %+v, %v", regs, err)
	}

	// Teleports.
	_, err = anon.Teleport(ctx, "default", client.TeleportRequest{Player: "alex"})
	if client.Code(err) != client.CodeUnauthorized {
		t.Fatalf("Teleport without the token = %v", err)
	}
	tp, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: "alex", Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if tp.ID == 0 || tp.Region != "default" || tp.World != "world" || tp.Sink != "general" {
		t.Fatalf("Teleport = %+v", tp)
	}
	if err := c.Complete(ctx, tp.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, tp.ID); client.Code(err) != client.CodeUnknownID {
		t.Fatalf("second Complete = %v", err)
	}
	tp, err = c.Teleport(ctx, "default", client.TeleportRequest{Player: "alex", Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, tp.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Teleport(ctx, "default", client.TeleportRequest{Player: "alex", Sink: "vip"})
	if client.Code(err) != client.CodeUnknownSink {
		t.Fatalf("Teleport from an unknown sink = %v", err)
	}
	_, err = c.Teleport(ctx, "nowhere", client.TeleportRequest{Player: "alex"})
	if client.Code(err) != client.CodeUnknownRegion {
		t.Fatalf("Teleport to an unknown region = %v", err)
	}
	_, err = c.Teleport(ctx, "default", client.TeleportRequest{Player: ""})
	if client.Code(err) != client.CodeBadRequest {
		t.Fatalf("Teleport without a player = %v", err)
	}

	// Group teleports: one place per player, in order, each a teleport
	// of its own.
	g, err := c.GroupTeleport(ctx, "default", client.GroupTeleportRequest{Players: []string{"ann", "bob", "cy"}, Wait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Locations) != 3 || g.Locations[0].Player != "ann" || g.Locations[2].Player != "cy" || g.Locations[1].ID == 0 {
		t.Fatalf("GroupTeleport = %+v", g)
	}
	for _, p := range g.Locations {
		if err := c.Complete(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	players := make([]string, 9)
	for i := range players {
		players[i] = string(rune('a' + i))
	}
	_, err = c.GroupTeleport(ctx, "default", client.GroupTeleportRequest{Players: players})
	if client.Code(err) != client.CodeGroupTooLarge {
		t.Fatalf("GroupTeleport of 9 = %v", err)
	}
	_, err = c.GroupTeleport(ctx, "default", client.GroupTeleportRequest{})
	if client.Code(err) != client.CodeBadRequest {
		t.Fatalf("GroupTeleport of nobody = %v", err)
	}

	// Player events.
	if err := c.Join(ctx, "default", "steve"); err != nil {
		t.Fatal(err)
	}
	if err := c.Quit(ctx, "default", "steve"); err != nil {
		t.Fatal(err)
	}
	if err := c.OpenQueue(ctx, "default", "steve", 1); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseQueue(ctx, "default", "steve"); err != nil {
		t.Fatal(err)
	}

	// Network reservations: wait for the network pool to hold a place.
	var res client.Reservation
	if _, ok := eventually.Within(30*time.Second, func() bool {
		res, err = c.Reserve(ctx, "default", "")
		return err == nil || client.Code(err) != client.CodeNoLocation
	}); !ok || err != nil {
		t.Fatalf("Reserve = %v", err)
	}
	if res.Token == "" || res.Location.World != "world" || !res.Expires.After(time.Now()) {
		t.Fatalf("Reserve = %+v", res)
	}
	got, err := c.Redeem(ctx, "default", res.Token)
	if err != nil || got.X != res.Location.X || got.Z != res.Location.Z {
		t.Fatalf("Redeem = %+v, %v; want the leased %+v", got, err, res.Location)
	}
	if _, err := c.Redeem(ctx, "default", res.Token); client.Code(err) != client.CodeTokenRedeemed && client.Code(err) != client.CodeUnknownToken {
		t.Fatalf("second Redeem = %v", err)
	}
	c.Complete(ctx, got.ID)
	if err := c.Release(ctx, "default", "no-such-token"); err == nil {
		t.Fatal("Release of a token never minted succeeded")
	}

	// Claims.
	cl, err := c.AddClaim(ctx, "world", client.NewClaim{Owner: "town", MinX: 1, MinZ: 2, MaxX: 30, MaxZ: 40})
	if err != nil || cl.ID == 0 || cl.World != "world" || cl.Owner != "town" || cl.MaxZ != 40 {
		t.Fatalf("AddClaim = %+v, %v", cl, err)
	}
	list, err := anon.Claims(ctx, "world")
	if err != nil || len(list) != 1 || list[0].ID != cl.ID {
		t.Fatalf("Claims = %+v, %v", list, err)
	}
	if _, err := anon.Claims(ctx, "mars"); client.Code(err) != client.CodeUnknownWorld {
		t.Fatalf("Claims of an unknown world = %v", err)
	}
	if err := c.RemoveClaim(ctx, "world", cl.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveClaim(ctx, "world", cl.ID); client.Code(err) != client.CodeUnknownClaim {
		t.Fatalf("second RemoveClaim = %v", err)
	}

	// Stats, typed.
	st, err := anon.Stats(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if st.Region != "default" || st.World != "world" || st.Latency.Count < 2 ||
		st.Latency.Max() <= 0 || len(st.Pipeline.Sinks) < 2 || st.Pipeline.Cold.Capacity == 0 || st.Memory.Len == 0 {
		t.Fatalf("Stats = %+v (latency %+v)", st, st.Latency)
	}

	// Admin.
	if err := c.ScanPause(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if regs, _ := anon.Regions(ctx); !regs[0].Paused {
		t.Fatal("Regions does not show the pause")
	}
	if err := c.ScanResume(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	if err := c.ScanReset(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := c.ExportMemory(ctx, "default", &buf); err != nil {
		t.Fatal(err)
	}
	var exp struct {
		World string `json:"world"`
		Len   int64  `json:"len"`
	}
	if err := json.Unmarshal(buf.Bytes(), &exp); err != nil || exp.World != "world" || exp.Len != st.Memory.Len {
		t.Fatalf("ExportMemory = %q (%v)", buf.String(), err)
	}
	if err := anon.ExportMemory(ctx, "default", &buf); client.Code(err) != client.CodeUnauthorized {
		t.Fatalf("ExportMemory without the token = %v", err)
	}
	// Without a reload function the server cannot reload.
	if err := c.Reload(ctx); client.Code(err) != client.CodeRestartNeeded {
		t.Fatalf("Reload = %v, want restart-needed", err)
	}
}
