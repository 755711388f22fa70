package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/internal/landcheck"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// landingSave is one save the landing test serves a region of.
type landingSave struct {
	name string
	dir  string
	dim  string // config.Overworld, config.Nether or config.End
	// shape covers the save's chunks (one region file, or the synthetic
	// save's extent).
	shape geom.ShapeSpec
	// want is how many locations the test asks for; min how many it
	// must get within the time bound (0 for a save that may have no safe
	// place at all).
	want, min int
	// builds: no location may stand on a sign, banner, pressure plate or
	// piston part.
	builds bool
}

// Bounds of the landing test: per save; for the first location (the
// engine starts, screens its first chunks); for each later one, after
// which a save that has given its minimum is taken to have given all it
// has; and how many saves are served at once (their time is mostly
// waiting).
const (
	landingSaveBudget  = 30 * time.Second
	landingFirstBudget = 10 * time.Second
	landingWaitBudget  = 2 * time.Second
	landingConcurrency = 8
)

// fixtureSaves lists every real fixture save, one entry per region file
// (the files of one save can lie far apart).
func fixtureSaves(t *testing.T) []landingSave {
	t.Helper()
	var out []landingSave
	for _, s := range anvilfixture.Saves(t) {
		save := s.Dir
		files, _ := filepath.Glob(filepath.Join(save, "r.*.*.mca"))
		sort.Strings(files)
		for _, f := range files {
			var rx, rz int64
			if _, err := fmt.Sscanf(filepath.Base(f), "r.%d.%d.mca", &rx, &rz); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, landingSave{
				name: s.Name + "/" + filepath.Base(f),
				dir:  save,
				dim:  config.Overworld,
				// A square over the region file's 512 x 512 blocks.
				shape: geom.ShapeSpec{Kind: geom.ShapeSquare, CenterX: rx*512 + 256, CenterZ: rz*512 + 256, Radius: 255},
				want:  30,
			})
		}
	}
	return out
}

// syntheticSaves writes the three hard-case saves.
func syntheticSaves(t *testing.T) []landingSave {
	t.Helper()
	dir := t.TempDir()
	var out []landingSave
	for _, s := range []struct {
		name, dim string
		write     func(string) (anviltest.Scene, error)
		builds    bool
	}{
		{"builds", config.Overworld, anviltest.WriteBuildsSave, true},
		{"nether", config.Nether, anviltest.WriteNetherSave, false},
		{"end", config.End, anviltest.WriteEndSave, false},
	} {
		save := filepath.Join(dir, s.name)
		sc, err := s.write(save)
		if err != nil {
			t.Fatal(err)
		}
		// A rectangle exactly over the chunks written.
		x0, z0 := int64(sc.MinChunkX)*16, int64(sc.MinChunkZ)*16
		x1, z1 := int64(sc.MaxChunkX+1)*16-1, int64(sc.MaxChunkZ+1)*16-1
		out = append(out, landingSave{
			name: "synthetic/" + s.name,
			dir:  save,
			dim:  s.dim,
			shape: geom.ShapeSpec{Kind: geom.ShapeRectangle, CenterX: (x0 + x1 + 1) / 2, CenterZ: (z0 + z1 + 1) / 2,
				RadiusX: (x1 - x0) / 2, RadiusZ: (z1 - z0) / 2},
			want: 100, min: 20,
			builds: s.builds,
		})
	}
	return out
}

func landcheckDim(dim string) landcheck.Dimension {
	switch dim {
	case config.Nether:
		return landcheck.Nether
	case config.End:
		return landcheck.End
	}
	return landcheck.Overworld
}

// TestLandingsIndependentlySafe serves a region of every real fixture
// save and of the three synthetic hard-case saves, and checks every
// location handed out with package landcheck, which reads the region
// files itself and judges them by collision data: no failure is allowed,
// and on the builds save no location may stand on a block one falls
// through (sign, banner, pressure plate, piston part).
func TestLandingsIndependentlySafe(t *testing.T) {
	saves := append(syntheticSaves(t), fixtureSaves(t)...)
	// Subtests run from goroutines of their own rather than by
	// t.Parallel, whose bound (-parallel, GOMAXPROCS by default) would
	// serialise saves that mostly wait.
	var wg sync.WaitGroup
	sem := make(chan struct{}, landingConcurrency)
	for _, s := range saves {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(s.name, func(t *testing.T) { testLandings(t, s) })
		})
	}
	wg.Wait()
}

func testLandings(t *testing.T, s landingSave) {
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"mc": {Kind: config.KindMinecraft, Path: s.dir, Dimension: s.dim}}
	rc := smallRegion(0)
	rc.World = "mc"
	rc.Shape = s.shape
	if s.dim == config.Nether {
		rc.Safety = safety.Nether()
	}
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	checker, err := landcheck.Open(s.dir, landcheckDim(s.dim))
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cfg)
	stop := run(t, e)

	deadline := time.Now().Add(landingSaveBudget)
	var got int
	byProblem := map[string]int{}
	var examples []string
	for got < s.want && time.Now().Before(deadline) {
		wait := landingWaitBudget
		if got == 0 {
			wait = landingFirstBudget
		}
		wait = min(wait, time.Until(deadline))
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		loc, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: fmt.Sprintf("p%d", got)})
		cancel()
		if err != nil {
			r := reason(err)
			if r == engine.ReasonExhausted || (r == engine.ReasonNoLocation && got >= s.min) {
				break // the save gives no more (within the bound)
			}
			if r == engine.ReasonNoLocation {
				// Short of the save's minimum, a wait that ran out says
				// the refill is behind (a loaded machine), not that the
				// save is spent: the engine says that (exhausted).
				continue
			}
			t.Fatalf("Teleport: %v", err)
		}
		got++
		var problems []string
		if err := checker.Check(loc.X, loc.Y, loc.Z); err != nil {
			for _, f := range landcheck.Failures(err) {
				problems = append(problems, f.Error())
				byProblem[problemKey(f)]++
			}
			if len(landcheck.Failures(err)) == 0 {
				problems = append(problems, err.Error())
				byProblem[err.Error()]++
			}
		}
		if s.builds {
			ground, _, _, err := checker.Blocks(loc.X, loc.Y, loc.Z)
			if err == nil && fallThrough(ground) {
				problems = append(problems, fmt.Sprintf("stands on %s", ground))
				byProblem["stands on "+baseName(ground)]++
			}
		}
		if len(problems) > 0 && len(examples) < 10 {
			examples = append(examples, fmt.Sprintf("location (%d,%d,%d): %s", loc.X, loc.Y, loc.Z, strings.Join(problems, "; ")))
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	t.Logf("%s: %d locations checked", s.name, got)
	if got < s.min {
		t.Errorf("%d locations within %v, want at least %d", got, landingSaveBudget, s.min)
	}
	if len(byProblem) > 0 {
		keys := make([]string, 0, len(byProblem))
		for k := range byProblem {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "\n  %4d x %s", byProblem[k], k)
		}
		t.Errorf("%d locations checked; unsafe landings by problem:%s\nfirst ones:\n  %s", got, b.String(), strings.Join(examples, "\n  "))
	}
}

// problemKey groups failures: part, reason and the block's name.
func problemKey(f *landcheck.Failure) string {
	return fmt.Sprintf("%s %s %s", f.Part, baseName(f.State), f.Reason)
}

func baseName(state string) string {
	n, _, _ := strings.Cut(state, "[")
	return n
}

// fallThrough reports whether a block state is one of those the engine
// once took for ground: signs, banners, pressure plates, moving pistons
// and piston heads.
func fallThrough(state string) bool {
	n := baseName(state)
	return strings.HasSuffix(n, "_sign") || strings.HasSuffix(n, "_banner") ||
		strings.HasSuffix(n, "_pressure_plate") || n == "minecraft:moving_piston" || n == "minecraft:piston_head"
}
