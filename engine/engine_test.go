package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/world/anvil"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/world/procworld"
	"go.uber.org/goleak"
)

// sharedArchive is a terrain archive every test's procedural world uses
// (see TestMain): the archive is a disposable cache, and a warm one keeps
// the tests fast, as it keeps a restarted server fast.
var sharedArchive string

// testConfig is the default configuration with its data in a temporary
// folder, the shared archive, and a small default region (a circle of 512
// blocks) pulsing every 5 ms.
func testConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Archive.Path = sharedArchive
	cfg.Regions[config.DefaultRegionName] = smallRegion(512)
	return cfg
}

// smallRegion is the default region as a circle of radius blocks around
// 0, 0, pulsing every 5 ms, with a general sink of 4 and a memory rebuilt
// every 20 ms.
func smallRegion(radius int64) config.Region {
	rc := config.DefaultRegion()
	rc.Shape.Radius = radius
	rc.Pulse = 5 * time.Millisecond
	rc.Sinks.General.Capacity = 4
	// Little background work once the sinks are full: the tests share
	// two cores with the race detector.
	rc.Queues = config.Queues{Backlog: 32, Cold: 32}
	rc.Budget.Candidates, rc.Budget.Screens = 16, 8
	rc.Memory.RebuildInterval = 20 * time.Millisecond
	return rc
}

// fakeClock is the real time plus an offset that tests advance.
type fakeClock struct{ off atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// waitFor polls cond every 5 ms until it holds, failing the test after
// 30 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForUpTo(t, 30*time.Second, what, cond)
}

// waitForUpTo is waitFor with another bound.
func waitForUpTo(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, bound, what, cond)
}

// stats returns the stats of region.
func stats(t testing.TB, e *engine.Engine, region string) engine.Stats {
	t.Helper()
	st, err := e.Stats(region)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fill returns the fill of the sink named name.
func fill(st engine.Stats, name string) int {
	for _, s := range st.Pipeline.Sinks {
		if s.Name == name {
			return s.Fill
		}
	}
	return -1
}

// reason returns the Reason of err, an *engine.Error, or "" when it is
// not one.
func reason(err error) string {
	var ee *engine.Error
	if errors.As(err, &ee) {
		return ee.Reason
	}
	return ""
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEngine(t testing.TB, cfg *config.Config) *engine.Engine {
	t.Helper()
	return newEngineOpts(t, cfg, engine.Options{})
}

func newEngineOpts(t testing.TB, cfg *config.Config, opts engine.Options) *engine.Engine {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.ShutdownTimeout == 0 {
		// The tests check that a shutdown completes, not how fast: with
		// every package testing at once under the race detector, a
		// two-core machine can take longer than the production default.
		opts.ShutdownTimeout = time.Minute
	}
	e, err := engine.New(t.Context(), specOf(t, cfg), opts)
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// specOf returns the engine Spec of cfg.
func specOf(t testing.TB, cfg *config.Config) engine.Spec {
	t.Helper()
	s, err := cfg.Spec()
	if err != nil {
		t.Fatalf("config.Spec: %v", err)
	}
	return s
}

// run starts e.Run and returns a function that stops it and returns its
// error.
func run(t testing.TB, e *engine.Engine) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func teleport(t *testing.T, e *engine.Engine, req engine.Request) engine.Location {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	loc, err := e.Teleport(ctx, config.DefaultRegionName, req)
	if err != nil {
		t.Fatalf("Teleport: %v", err)
	}
	return loc
}

// independent holds a procedural world of its own (no archive, no
// engine) per generator parameters, shared by the tests: generating the
// terrain from scratch costs about a second under the race detector.
var independent struct {
	mu sync.Mutex
	m  map[procgen.Params]*procworld.World
}

func independentWorld(t *testing.T, p procgen.Params) *procworld.World {
	t.Helper()
	independent.mu.Lock()
	defer independent.mu.Unlock()
	if w := independent.m[p]; w != nil {
		return w
	}
	gen, err := procgen.New(p)
	if err != nil {
		t.Fatal(err)
	}
	pw, err := procworld.New(gen, procworld.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if independent.m == nil {
		independent.m = map[procgen.Params]*procworld.World{}
	}
	independent.m[p] = pw
	return pw
}

// independentCheck loads the location's chunk from a procedural world of
// its own (no archive, no engine) and checks the column with the region's
// rules, the biome and the shape.
func independentCheck(t *testing.T, cfg *config.Config, loc engine.Location) {
	t.Helper()
	pw := independentWorld(t, cfg.Worlds[loc.World].Procedural.Params())
	b := geom.Block{X: loc.X, Z: loc.Z}
	ch, err := pw.Load(t.Context(), b.Chunk())
	if err != nil {
		t.Fatalf("Load(%v): %v", b.Chunk(), err)
	}
	checker, err := safety.New(cfg.Regions[loc.Region].Safety)
	if err != nil {
		t.Fatal(err)
	}
	x, z := b.Local()
	res, ok := checker.CheckColumn(ch, x, z)
	if !ok || int64(res.Y) != loc.Y {
		t.Errorf("CheckColumn at %v = %+v, %v; want accepted at y %d", b, res, ok, loc.Y)
	}
	if got := ch.Column(x, z).Biome.String(); loc.Biome != got || got == "" {
		t.Errorf("location %+v: biome %q, want %q", loc, loc.Biome, got)
	}
	shape, err := cfg.Regions[loc.Region].BuildShape()
	if err != nil {
		t.Fatal(err)
	}
	if !shape.Contains(b.Chunk()) {
		t.Errorf("location %v outside the region's shape", b)
	}
}

// TestTeleportSafeClaimsShutdown runs the default region with a claim on
// its eastern half: every location must pass an independent safety check
// and avoid the claim, the claim's cells must be remembered under the
// source "claims", and shutdown must close every reservation. (One test,
// since filling a region under the race detector takes seconds.)
func TestTeleportSafeClaimsShutdown(t *testing.T) {
	cfg := testConfig(t)
	e := newEngine(t, cfg)
	if _, err := e.Claims().Add(t.Context(), claims.Claim{
		World: config.DefaultWorldName, Owner: "town",
		MinX: 0, MinZ: -1000, MaxX: 1000, MaxZ: 1000,
	}); err != nil {
		t.Fatal(err)
	}
	stop := run(t, e)
	if !e.Quiet(time.Hour) {
		t.Error("Quiet before any teleport = false")
	}

	const n = 5
	seen := map[uint64]bool{}
	for range n {
		loc := teleport(t, e, engine.Request{Player: "alice"})
		if seen[loc.ID] {
			t.Fatalf("ID %d handed out twice", loc.ID)
		}
		seen[loc.ID] = true
		if loc.World != config.DefaultWorldName || loc.Region != config.DefaultRegionName {
			t.Errorf("location %+v: want world %q region %q", loc, config.DefaultWorldName, config.DefaultRegionName)
		}
		independentCheck(t, cfg, loc)
		if loc.X >= 0 {
			t.Errorf("location %+v lies in the claim x >= 0", loc)
		}
		if loc.Sink != "general" || loc.Waited <= 0 {
			t.Errorf("location %+v: want served by general with its wait", loc)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Errorf("Complete(%d) = %v", loc.ID, err)
		}
		var ee *engine.Error
		if err := e.Complete(loc.ID); !errors.As(err, &ee) || ee.Reason != engine.ReasonUnknownID {
			t.Errorf("second Complete(%d) = %v, want reason %s", loc.ID, err, engine.ReasonUnknownID)
		}
	}
	if e.Quiet(time.Hour) {
		t.Error("Quiet within an hour of a teleport = true")
	}
	// The SQLite writer counts the writes of the locations handed out.
	waitFor(t, "the location writes committed", func() bool { return e.Locations().Written > 0 })
	if w := e.Locations(); w.Failing || w.Dropped != 0 || w.Failures != 0 {
		t.Errorf("location writes = %+v, want none failing nor dropped", w)
	}
	var st engine.Stats
	if _, ok := eventually.Within(30*time.Second, func() bool {
		st, _ = e.Stats(config.DefaultRegionName)
		return st.Memory.Rejections["safetyExternal[claims]"] > 0
	}); !ok {
		t.Fatalf("no rejection attributed to claims: %v", st.Memory.Rejections)
	}
	// One location left uncompleted: shutdown must close it too.
	held := teleport(t, e, engine.Request{Player: "bob", Sink: "general"})
	st, err := e.Stats(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resident.Open == 0 {
		t.Fatalf("before shutdown: resident Open = 0, want the held reservation (and the hot sink's) open")
	}
	if st.Served["general"] != n+1 || st.Latency.Count != n+1 || st.Handouts.Completed != n || st.Handouts.Open != 1 {
		t.Errorf("before shutdown: served %v, latency %+v, handouts %+v; want %d served, %d completed, 1 open",
			st.Served, st.Latency, st.Handouts, n+1, n)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run returned %v", err)
	}
	st, err = e.Stats(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if st.Resident.Open != 0 || st.Resident.Opened == 0 || st.Resident.Opened != st.Resident.Closed {
		t.Errorf("after shutdown: resident stats %+v, want Open 0 and Opened == Closed > 0", st.Resident)
	}
	if r := st.Pipeline.Reservations; r.DoubleReleases != 0 || r.ForeignClosed != 0 {
		t.Errorf("pipeline reservation stats %+v, want no double or foreign release", r)
	}
	var ee *engine.Error
	if _, err := e.Teleport(t.Context(), config.DefaultRegionName, engine.Request{}); !errors.As(err, &ee) || ee.Reason != engine.ReasonShutdown {
		t.Errorf("Teleport after shutdown = %v, want reason %s", err, engine.ReasonShutdown)
	}
	if err := e.Complete(held.ID); err == nil {
		t.Errorf("Complete(%d) after shutdown = nil, want unknown-id (shutdown closed it)", held.ID)
	}
}

func TestRestartRestoresColdAndMemory(t *testing.T) {
	cfg := testConfig(t)
	// Plains are common here: rejections come quickly.
	rc := cfg.Regions[config.DefaultRegionName]
	rc.Safety.Biomes.Deny = []string{"minecraft:plains"}
	cfg.Regions[config.DefaultRegionName] = rc
	e1, err := engine.New(t.Context(), specOf(t, cfg), engine.Options{Logger: quietLogger(), SaveInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e1.Close(context.Background()) })
	memPath := e1.Region(config.DefaultRegionName).MemoryPath()
	stop := run(t, e1)
	var st engine.Stats
	if _, ok := eventually.Within(30*time.Second, func() bool {
		var err error
		if st, err = e1.Stats(config.DefaultRegionName); err != nil {
			return false
		}
		_, statErr := os.Stat(memPath) // the periodic save wrote it
		return st.Pipeline.Cold.Fill >= 4 && len(st.Memory.Rejections) > 0 && statErr == nil
	}); !ok {
		t.Fatalf("no cold locations, rejections and saved memory file after 30s: %+v", st.Pipeline)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	before, _ := e1.Stats(config.DefaultRegionName)
	if _, err := os.Stat(memPath); err != nil {
		t.Fatalf("memory file after shutdown: %v", err)
	}
	if before.Memory.BadCount == 0 {
		t.Fatalf("memory has no bad cells after the run: %+v", before.Memory)
	}

	// The tile cache's size is not part of what the world holds: changing
	// it keeps the saved locations.
	w := cfg.Worlds[config.DefaultWorldName]
	w.TileCache++
	cfg.Worlds[config.DefaultWorldName] = w
	e2 := newEngine(t, cfg)
	after, err := e2.Stats(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	if after.Restored == 0 || after.Pipeline.Cold.Fill != after.Restored {
		t.Errorf("restart: restored %d, cold %d; want > 0 and equal", after.Restored, after.Pipeline.Cold.Fill)
	}
	if after.Memory.BadCount != before.Memory.BadCount {
		t.Errorf("restart: memory BadCount = %d, want %d (saved)", after.Memory.BadCount, before.Memory.BadCount)
	}
	// The restored locations serve teleports.
	run(t, e2)
	loc := teleport(t, e2, engine.Request{Player: "carol"})
	independentCheck(t, cfg, loc)
	if err := e2.Complete(loc.ID); err != nil {
		t.Error(err)
	}
}

func TestCorruptMemoryMovedAside(t *testing.T) {
	cfg := testConfig(t)
	dir := filepath.Join(cfg.DataDir, engine.MemoryDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, config.DefaultRegionName+".bin")
	if err := os.WriteFile(path, []byte("not a memory file"), 0o644); err != nil {
		t.Fatal(err)
	}
	newEngine(t, cfg)
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Errorf("files moved aside: %v, want one", aside)
	}
}

func TestErrors(t *testing.T) {
	cfg := testConfig(t)
	e := newEngine(t, cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	for _, tc := range []struct {
		name, region, sink, reason string
	}{
		{"unknown region", "nowhere", "", engine.ReasonUnknownRegion},
		{"unknown sink", config.DefaultRegionName, "nosuch", engine.ReasonUnknownSink},
		{"not running", config.DefaultRegionName, "", engine.ReasonNoLocation},
	} {
		_, err := e.Teleport(ctx, tc.region, engine.Request{Player: "p", Sink: tc.sink})
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Reason != tc.reason {
			t.Errorf("%s: Teleport = %v, want reason %s", tc.name, err, tc.reason)
		}
	}

	if err := e.Close(t.Context()); err != nil {
		t.Errorf("Close of an engine never run = %v", err)
	}
	if err := e.Run(t.Context()); err == nil {
		t.Error("Run after Close = nil, want an error")
	}

}

// minecraftConfig is testConfig with its one region, of the given shape,
// on the 1.16 fixture save (one region file, r.0.-1). It returns the save
// folder, the configuration and the region.
func minecraftConfig(t *testing.T, shape geom.ShapeSpec) (string, *config.Config, config.Region) {
	t.Helper()
	save := anvilfixture.Path(t, "prismarine-provider-anvil/1.16")
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: save, Dimension: config.Overworld}}
	rc := cfg.Regions[config.DefaultRegionName]
	rc.World = "mc"
	rc.Shape = shape
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	return save, cfg, rc
}

// TestMinecraftWorld serves a region over a real 1.16 region file: every
// location must be safe by an independent read of the same file.
func TestMinecraftWorld(t *testing.T) {
	// r.0.-1 holds chunks x 0..31, z -32..-1: a circle inside it.
	save, cfg, rc := minecraftConfig(t, geom.ShapeSpec{Kind: "circle", CenterX: 256, CenterZ: -256, Radius: 240})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cfg)
	stop := run(t, e)
	reader, err := anvil.Open(save, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	checker, err := safety.New(rc.Safety)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := rc.BuildShape()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		loc := teleport(t, e, engine.Request{Player: "p"})
		b := geom.Block{X: loc.X, Z: loc.Z}
		ch, err := reader.Load(t.Context(), b.Chunk())
		if err != nil {
			t.Fatalf("independent Load(%v): %v", b.Chunk(), err)
		}
		x, z := b.Local()
		if res, ok := checker.CheckColumn(ch, x, z); !ok || int64(res.Y) != loc.Y {
			t.Errorf("CheckColumn at %v = %+v, %v; want accepted at y %d", b, res, ok, loc.Y)
		}
		if !shape.Contains(b.Chunk()) {
			t.Errorf("location %v outside the region's shape", b)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// TestMinecraftUngenerated: a region reaching past the save's one region
// file draws chunks never generated. They are rejections remembered for a
// while (not screening errors), and locations still come from the
// generated part.
func TestMinecraftUngenerated(t *testing.T) {
	// r.0.-1 spans blocks x 0..511, z -512..-1; this square is four times
	// as large, centred on its corner.
	_, cfg, _ := minecraftConfig(t, geom.ShapeSpec{Kind: "square", CenterX: 256, CenterZ: -256, Radius: 512})
	e := newEngine(t, cfg)
	stop := run(t, e)
	for range 3 {
		loc := teleport(t, e, engine.Request{Player: "p"})
		if loc.X < 0 || loc.X > 511 || loc.Z < -512 || loc.Z > -1 {
			t.Errorf("location %+v outside the generated region file", loc)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}
	st, err := e.Stats(config.DefaultRegionName)
	if err != nil {
		t.Fatal(err)
	}
	rej := st.Pipeline.ScreenRejections
	if rej[stage.ReasonReservationFailed.String()] == 0 {
		t.Errorf("screen rejections %v: want ungenerated chunks counted as %v", rej, stage.ReasonReservationFailed)
	}
	if n := rej[stage.ReasonError.String()]; n != 0 {
		t.Errorf("screen rejections %v: %d screening errors, want none", rej, n)
	}
	waitFor(t, "ungenerated cells in memory", func() bool {
		return stats(t, e, config.DefaultRegionName).Memory.ByCause["ungenerated"] > 0
	})
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

func TestArchiveFailureDisablesIt(t *testing.T) {
	cfg := testConfig(t)
	// A directory where the archive database should be: opening fails.
	cfg.Archive.Path = "archive-dir"
	if err := os.MkdirAll(cfg.ArchivePath(), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	e, err := engine.New(t.Context(), specOf(t, cfg), engine.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatalf("New with an unopenable archive = %v, want it to run without one", err)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
	if n := strings.Count(buf.String(), "archive: no store available"); n != 1 {
		t.Errorf("log has %d lines about the missing archive store, want 1:\n%s", n, buf.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rtp-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedArchive = filepath.Join(dir, "archive.db")
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// TestNewWithoutStores: a Spec without Stores is refused, with an error
// that names the packages to pick from, and nothing is written.
func TestNewWithoutStores(t *testing.T) {
	dir := t.TempDir()
	e, err := engine.New(t.Context(), engine.Spec{DataDir: dir}, engine.Options{Logger: quietLogger()})
	if err == nil {
		_ = e.Close(context.Background())
		t.Fatal("New without Stores succeeded")
	}
	for _, want := range []string{"Spec.Stores", "stores/sqlite", "stores/fleet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New without Stores = %q, want it to name %s", err, want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("data folder after a refused New: %v, %v; want it empty", entries, err)
	}
}

// TestDrawEagerlyWithoutGate: an engine without a refill gate (a process
// answering no requests, ScreenWorkers negative) draws its full budget
// every pulse; one with a gate backs off in a crowded region.
func TestDrawEagerlyWithoutGate(t *testing.T) {
	for _, c := range []struct {
		workers int
		want    bool
	}{{-1, true}, {0, false}, {1, false}} {
		e := newEngineOpts(t, testConfig(t), engine.Options{ScreenWorkers: c.workers})
		for _, r := range e.Regions() {
			if got := engine.DrawsEagerly(e, r); got != c.want {
				t.Errorf("ScreenWorkers %d: region %s draws eagerly %v, want %v", c.workers, r, got, c.want)
			}
		}
	}
}

// TestArchiveAll: Options.ArchiveAll gives the procedural world's terrain
// archive a queue that waits for room instead of dropping writes, and
// only then (Engine.Archives reports which).
func TestArchiveAll(t *testing.T) {
	for _, all := range []bool{true, false} {
		cfg := testConfig(t)
		cfg.Archive.Path = filepath.Join(t.TempDir(), "archive.db")
		e := newEngineOpts(t, cfg, engine.Options{ArchiveAll: all})
		st, ok := e.Archives()[config.DefaultWorldName]
		if !ok || !st.Store || st.WaitForRoom != all {
			t.Errorf("ArchiveAll %v: Archives() = %+v, want world %q's archive with a store and WaitForRoom %v", all, e.Archives(), config.DefaultWorldName, all)
		}
	}
}
