package enginemap_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/webmap/enginemap"
)

// sharedArchive is the terrain archive every test's procedural world
// uses, so that the terrain is generated once for the package.
var sharedArchive string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rtp-enginemap-test-")
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

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testConfig is the default configuration with the default region a
// circle of 512 blocks around 0, 0, pulsing every 5 ms, with a general
// sink of 4 and little background work once the sinks are full.
func testConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Archive.Path = sharedArchive
	rc := config.DefaultRegion()
	rc.Shape.Radius = 512
	rc.Pulse = 5 * time.Millisecond
	rc.Sinks.General.Capacity = 4
	rc.Queues = config.Queues{Backlog: 32, Cold: 32}
	rc.Budget.Candidates, rc.Budget.Screens = 16, 8
	rc.Memory.RebuildInterval = 20 * time.Millisecond
	cfg.Regions[config.DefaultRegionName] = rc
	return cfg
}

// minecraftConfig is testConfig on a real 1.16 save, world "mc", its
// default region of the given shape.
func minecraftConfig(t *testing.T, shape geom.ShapeSpec) *config.Config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: anvilfixture.Path(t, "prismarine-provider-anvil/1.16"), Dimension: config.Overworld}}
	rc := cfg.Regions[config.DefaultRegionName]
	rc.World = "mc"
	rc.Shape = shape
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	return cfg
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

// newEngine opens the engine of cfg, closed at the test's end.
func newEngine(t testing.TB, cfg *config.Config) *engine.Engine {
	t.Helper()
	// A shutdown bound for two busy cores under the race detector.
	e, err := engine.New(t.Context(), specOf(t, cfg), engine.Options{Logger: quietLogger(), ShutdownTimeout: time.Minute})
	if err != nil {
		t.Fatalf("engine.New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// newBackend returns the map's view of e, closed at the test's end.
func newBackend(t testing.TB, e *engine.Engine) *enginemap.Backend {
	t.Helper()
	b := enginemap.New(e)
	t.Cleanup(b.Close)
	return b
}

// run runs e until the test ends.
func run(t testing.TB, e *engine.Engine) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, 30*time.Second, what, cond)
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

// teleport hands out a place of the default region.
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
