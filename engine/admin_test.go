package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
)

// TestScanControl pauses a region (its background work stops, teleports
// are still served), resets it (memory and caches emptied), exports its
// memory and resumes it.
func TestScanControl(t *testing.T) {
	cfg := testConfig(t)
	rc := cfg.Regions[region]
	rc.Safety.Biomes.Deny = []string{"minecraft:plains"} // rejections come quickly
	cfg.Regions[region] = rc
	e := newEngine(t, cfg)
	run(t, e)
	waitFor(t, "rejections and full caches", func() bool {
		st := stats(t, e, region)
		return st.Memory.BadCount > 0 && st.Pipeline.Cold.Fill > 0 && fill(st, "general") == 4
	})
	if err := e.ScanPause(region); err != nil {
		t.Fatal(err)
	}
	pipe := e.Region(region).Pipeline()
	if err := pipe.Settle(t.Context()); err != nil {
		t.Fatal(err)
	}
	before := stats(t, e, region)
	time.Sleep(100 * time.Millisecond)
	after := stats(t, e, region)
	if !after.Paused || after.Pipeline.Screened != before.Pipeline.Screened || after.Pipeline.Promotions != before.Pipeline.Promotions {
		t.Errorf("paused region: paused %v, screened %d -> %d, promotions %d -> %d; want no work",
			after.Paused, before.Pipeline.Screened, after.Pipeline.Screened, before.Pipeline.Promotions, after.Pipeline.Promotions)
	}
	loc := teleport(t, e, engine.Request{Player: "p"})
	if err := e.Complete(loc.ID); err != nil {
		t.Error(err)
	}

	if err := e.ScanReset(t.Context(), region); err != nil {
		t.Fatal(err)
	}
	st := stats(t, e, region)
	if st.Memory.BadCount != 0 || st.Memory.Probation != 0 || len(st.Memory.Rejections) != 0 {
		t.Errorf("memory after ScanReset: %+v, want empty", st.Memory)
	}
	if st.Pipeline.Cold.Fill != 0 || st.Pipeline.Backlog.Fill != 0 || fill(st, "general") != 0 {
		t.Errorf("pipeline after ScanReset: backlog %d cold %d general %d, want empty",
			st.Pipeline.Backlog.Fill, st.Pipeline.Cold.Fill, fill(st, "general"))
	}
	if st.Resident.Open != 0 {
		t.Errorf("%d reservations open after ScanReset, want 0", st.Resident.Open)
	}
	var buf bytes.Buffer
	if err := e.ExportMemory(region, &buf); err != nil {
		t.Fatal(err)
	}
	var ex memory.Export
	if err := json.Unmarshal(buf.Bytes(), &ex); err != nil {
		t.Fatalf("export %q: %v", buf.String(), err)
	}
	if ex.World != config.DefaultWorldName || ex.Len != e.Region(region).Shape().Len() || len(ex.Active) != 0 {
		t.Errorf("export after reset = %+v, want world %q, len %d, no runs", ex, config.DefaultWorldName, e.Region(region).Shape().Len())
	}

	if err := e.ScanResume(region); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "refilled caches and new rejections", func() bool {
		st := stats(t, e, region)
		return !st.Paused && st.Memory.BadCount > 0 && fill(st, "general") == 4
	})
	loc = teleport(t, e, engine.Request{Player: "p"})
	independentCheck(t, cfg, loc)

	for name, err := range map[string]error{
		"ScanReset":    e.ScanReset(t.Context(), "nowhere"),
		"ScanPause":    e.ScanPause("nowhere"),
		"ScanResume":   e.ScanResume("nowhere"),
		"ExportMemory": e.ExportMemory("nowhere", &buf),
	} {
		if reason(err) != engine.ReasonUnknownRegion {
			t.Errorf("%s of an unknown region = %v, want %s", name, err, engine.ReasonUnknownRegion)
		}
	}
}

// TestReload applies what can change live, and refuses (applying nothing)
// a configuration with changes that need a restart.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	ttlPath := filepath.Join(dir, "ttl.yml")
	writeTTL := func(s string) {
		t.Helper()
		if err := os.WriteFile(ttlPath, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeTTL("causes:\n  safetyExternal: 1h\n")
	mk := func() *config.Config {
		cfg := config.Default()
		cfg.DataDir = dir
		cfg.Archive.Path = sharedArchive
		rc := smallRegion(256)
		rc.Sinks.Login = config.LoginSink{Enabled: true, PlayerCap: 5}
		rc.Sinks.Network.Enabled = true
		cfg.Regions = map[string]config.Region{"default": rc, "b": smallRegion(256)}
		return cfg
	}
	e := newEngine(t, mk())
	r := e.Region("default")
	ttlOf := func(source string) int64 {
		t.Helper()
		if err := r.Memory().AddBad(0, memory.CauseSafetyExternal, source); err != nil {
			t.Fatal(err)
		}
		r.Memory().Rebuild()
		ex := r.Memory().Export()
		for _, run := range ex.Active {
			if run.Start == 0 {
				return run.Expires - ex.Now
			}
		}
		t.Fatalf("no run at index 0: %+v", ex.Active)
		return 0
	}
	if got := ttlOf("x"); got != 3600 {
		t.Fatalf("TTL before Reload = %ds, want 3600", got)
	}

	// Live changes.
	live := mk()
	rc := live.Regions["default"]
	rc.Sinks.General.Capacity = 7
	rc.Sinks.Login.PlayerCap = 9
	rc.Sinks.Network.Capacity = 3
	rc.Pulse = 7 * time.Millisecond
	rc.UniquePlacement.Radius = 32
	rc.Budget.Candidates, rc.Budget.MaxScreens = 5, 3
	live.Regions["default"] = rc
	live.Server.Listen = "127.0.0.1:9999" // the server's: ignored
	live.Verifiers = []config.Verifier{{Name: "claims", Kind: config.KindClaims, Regions: []string{"b"}}}
	writeTTL("causes:\n  safetyExternal: 2h\n")
	if err := e.Reload(t.Context(), specOf(t, live)); err != nil {
		t.Fatalf("Reload of live changes = %v", err)
	}
	p := r.Pipeline()
	if p.General().Cap() != 7 || p.Login().PlayerCap() != 9 || p.Network().Cap() != 3 || r.Pulse() != 7*time.Millisecond {
		t.Errorf("after Reload: general %d, player cap %d, network %d, pulse %v; want 7, 9, 3, 7ms",
			p.General().Cap(), p.Login().PlayerCap(), p.Network().Cap(), r.Pulse())
	}
	if b := p.Budget(); b.Candidates != 5 || b.MaxScreens != 3 {
		t.Errorf("budget after Reload: %d candidates, %d screens at once; want 5 and 3", b.Candidates, b.MaxScreens)
	}
	if st := stats(t, e, "default"); st.Unique.Radius != 32 {
		t.Errorf("unique radius %d after Reload, want 32", st.Unique.Radius)
	}
	if got := ttlOf("y"); got != 7200 {
		t.Errorf("TTL after Reload = %ds, want 7200 (the new ttl.yml)", got)
	}
	if got, want := r.Verifiers().Sources(), []string(nil); !slices.Equal(got, want) {
		t.Errorf("default's verifiers %v after its claims were listed away, want none", got)
	}
	if got := e.Region("b").Verifiers().Sources(); !slices.Equal(got, []string{"claims"}) {
		t.Errorf("b's verifiers %v, want [claims]", got)
	}
	back := mk()
	back.Regions["default"] = rc
	if err := e.Reload(t.Context(), specOf(t, back)); err != nil {
		t.Fatal(err)
	}
	if got := r.Verifiers().Sources(); !slices.Equal(got, []string{"claims"}) {
		t.Errorf("default's verifiers %v with no verifier configured, want [claims]", got)
	}

	// Restart needed: nothing is applied, every change is listed.
	restart := mk()
	rc2 := rc
	rc2.Sinks.General.Capacity = 11 // live, but not applied with the rest
	rc2.Shape.Radius = 300
	rc2.Budget.Candidates = 6 // live, but not applied with the rest
	restart.Regions["default"] = rc2
	restart.Regions["c"] = smallRegion(256)
	delete(restart.Regions, "b")
	w := restart.Worlds[config.DefaultWorldName]
	w.Procedural.Seed = 42
	restart.Worlds[config.DefaultWorldName] = w
	restart.Verifiers = []config.Verifier{{Name: "gp", Kind: config.KindHTTP, URL: "http://127.0.0.1:1/v", Timeout: time.Second}}
	restart.ScreenWorkers = 3
	err := e.Reload(t.Context(), specOf(t, restart))
	var re *engine.RestartError
	if reason(err) != engine.ReasonRestartNeeded || !errors.As(err, &re) {
		t.Fatalf("Reload with restart changes = %v, want %s with a *RestartError", err, engine.ReasonRestartNeeded)
	}
	for _, want := range []string{`world "world": Procedural`, `region "b" removed`, `region "c" added`, `region "default": Shape`, "http verifiers", "ScreenWorkers"} {
		if !slices.Contains(re.Changes, want) {
			t.Errorf("changes %q lack %q", re.Changes, want)
		}
	}
	if len(re.Changes) != 6 {
		t.Errorf("changes %q, want 6", re.Changes)
	}
	if p.General().Cap() != 7 || p.Budget().Candidates != 5 {
		t.Errorf("general capacity %d, %d candidates after a refused Reload, want 7 and 5 (unchanged)", p.General().Cap(), p.Budget().Candidates)
	}

	// Invalid: a bad config or ttl.yml applies nothing.
	bad := mk()
	rcb := bad.Regions["default"]
	rcb.Sinks.General.Capacity = -1
	bad.Regions["default"] = rcb
	if _, err := bad.Spec(); err == nil {
		t.Errorf("Spec of an invalid config: no error")
	}
	badSpec := specOf(t, mk())
	rsb := badSpec.Regions["default"]
	rsb.Live.GeneralCapacity = -1
	badSpec.Regions["default"] = rsb
	if err := e.Reload(t.Context(), badSpec); reason(err) != engine.ReasonInvalid {
		t.Errorf("Reload of an invalid spec = %v, want %s", err, engine.ReasonInvalid)
	}
	writeTTL("causes:\n  safetyExternal: forever\n")
	if err := e.Reload(t.Context(), specOf(t, live)); reason(err) != engine.ReasonInvalid || !strings.Contains(err.Error(), "ttl") {
		t.Errorf("Reload with a bad ttl.yml = %v, want %s naming ttl", err, engine.ReasonInvalid)
	}
	if got := ttlOf("z"); got != 7200 {
		t.Errorf("TTL after a refused Reload = %ds, want 7200 (unchanged)", got)
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(t.Context(), specOf(t, live)); reason(err) != engine.ReasonShutdown {
		t.Errorf("Reload after Close = %v, want %s", err, engine.ReasonShutdown)
	}
}

// TestArchivePerWorld: every procedural world has its own archive store,
// the first (in name order) at the configured path, the others beside it.
func TestArchivePerWorld(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	w2 := config.DefaultWorld()
	w2.Procedural.Seed = 7
	cfg.Worlds["x2"] = w2 // after "world" in name order
	r2 := smallRegion(256)
	r2.World = "x2"
	cfg.Regions["r2"] = r2
	cfg.Regions[region] = smallRegion(256)
	e := newEngine(t, cfg)
	for _, name := range []string{"archive.db", "archive-x2.db"} {
		if _, err := os.Stat(filepath.Join(cfg.DataDir, name)); err != nil {
			t.Errorf("archive store %s: %v", name, err)
		}
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
