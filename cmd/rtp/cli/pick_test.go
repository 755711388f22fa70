package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world/anvil"
)

// TestPickMinecraftWorld picks 20 locations from a real 1.16 region file
// and checks each against an independent read of the same file.
func TestPickMinecraftWorld(t *testing.T) {
	save := anvilfixture.Path(t, "prismarine-provider-anvil/1.16")
	out, stderr, err := run(t, "pick", "--world", save, "-n", "20", "--x", "256", "--z", "-256", "--radius", "240", "--json")
	if err != nil {
		t.Fatalf("pick: %v\n%s", err, stderr)
	}
	var locs []struct {
		World   string
		X, Y, Z int64
	}
	if err := json.Unmarshal([]byte(out), &locs); err != nil {
		t.Fatalf("pick --json printed %q: %v", out, err)
	}
	if len(locs) != 20 {
		t.Fatalf("pick printed %d locations, want 20", len(locs))
	}
	reader, err := anvil.Open(save, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	checker, err := safety.New(config.DefaultRegion().Safety)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locs {
		b := geom.Block{X: l.X, Z: l.Z}
		ch, err := reader.Load(t.Context(), b.Chunk())
		if err != nil {
			t.Fatalf("Load(%v): %v", b.Chunk(), err)
		}
		x, z := b.Local()
		if res, ok := checker.CheckColumn(ch, x, z); !ok || int64(res.Y) != l.Y {
			t.Errorf("location %v y %d: CheckColumn = %+v, %v", b, l.Y, res, ok)
		}
		if dx, dz := l.X-256, l.Z+256; dx*dx+dz*dz > 260*260 {
			t.Errorf("location %v outside the requested circle", b)
		}
	}
}

func TestPickProceduralText(t *testing.T) {
	t.Parallel()
	out, stderr, err := run(t, "pick", "-n", "3")
	if err != nil {
		t.Fatalf("pick: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], config.DefaultWorldName+" ") {
		t.Fatalf("pick -n 3 printed %q, want 3 lines naming the world", out)
	}
}

func TestPickUsage(t *testing.T) {
	for _, args := range [][]string{{"pick", "-n", "0"}, {"pick", "--region", "nope"}, {"pick", "--world", "x", "--dimension", "moon"}} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v: %v (exit %d), want a usage error", args, err, ExitCode(err))
		}
	}
}

// TestPickGroups: rtp pick --group N places -n groups of N, each printed
// one place a line and closed by an empty line, every place of a group
// distinct and within the default group radius of the group's centre;
// with --json, the HTTP API's group answers.
func TestPickGroups(t *testing.T) {
	t.Parallel()
	out, stderr, err := run(t, "pick", "--group", "4", "-n", "2")
	if err != nil {
		t.Fatalf("pick --group 4 -n 2: %v\n%s", err, stderr)
	}
	blocks := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("pick --group 4 -n 2 printed %d groups:\n%s", len(blocks), out)
	}
	for _, b := range blocks {
		lines := strings.Split(strings.TrimSpace(b), "\n")
		if len(lines) != 4 {
			t.Fatalf("a group of %d places, want 4:\n%s", len(lines), b)
		}
		var xs, zs []float64
		seen := map[string]bool{}
		for _, l := range lines {
			var w string
			var x, y, z int64
			if _, err := fmt.Sscanf(l, "%s %d %d %d", &w, &x, &y, &z); err != nil || w != config.DefaultWorldName {
				t.Fatalf("line %q: %v", l, err)
			}
			col := fmt.Sprint(x, z)
			if seen[col] {
				t.Fatalf("column %s twice in one group:\n%s", col, b)
			}
			seen[col] = true
			xs, zs = append(xs, float64(x)), append(zs, float64(z))
		}
		checkWithin(t, xs, zs, config.DefaultGroupRadius)
	}

	out, stderr, err = run(t, "pick", "--group", "3", "--json")
	if err != nil {
		t.Fatalf("pick --group 3 --json: %v\n%s", err, stderr)
	}
	var groups []api.GroupTeleport
	if err := json.Unmarshal([]byte(out), &groups); err != nil || len(groups) != 1 || len(groups[0].Locations) != 3 {
		t.Fatalf("pick --group 3 --json printed %s (%v), want one group of 3", out, err)
	}
	var xs, zs []float64
	for i, p := range groups[0].Locations {
		if p.Player != fmt.Sprintf("rtp-pick-%d", i+1) || !strings.HasPrefix(p.Sink, "group/") {
			t.Errorf("place %d: %+v", i, p)
		}
		xs, zs = append(xs, float64(p.X)), append(zs, float64(p.Z))
	}
	checkWithin(t, xs, zs, config.DefaultGroupRadius)
}

// checkWithin checks that every point lies within radius of the points'
// centroid.
func checkWithin(t *testing.T, xs, zs []float64, radius int) {
	t.Helper()
	var cx, cz float64
	for i := range xs {
		cx += xs[i] / float64(len(xs))
		cz += zs[i] / float64(len(zs))
	}
	for i := range xs {
		if d := math.Hypot(xs[i]-cx, zs[i]-cz); d > float64(radius)+1e-9 {
			t.Errorf("place %v, %v is %.2f blocks from its group's centre, radius %d", xs[i], zs[i], d, radius)
		}
	}
}

// TestPickGroupErrors: a group size out of range is a usage error; more
// players than the region's group size, or a region without a group
// sink, fail with a message saying so.
func TestPickGroupErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"pick", "--group", "65"}, {"pick", "--group", "-1"}} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v: %v (exit %d), want a usage error", args, err, ExitCode(err))
		}
	}
	if _, _, err := run(t, "pick", "--group", "9", "--timeout", "30s"); err == nil || !strings.Contains(err.Error(), "group-too-large") {
		t.Errorf("pick --group 9 = %v, want group-too-large", err)
	}
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	if err := os.WriteFile(cfg, []byte("regions:\n  default:\n    sinks:\n      group:\n        enabled: false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "pick", "--config", cfg, "--group", "2", "--timeout", "30s"); err == nil || !strings.Contains(err.Error(), "no group sink") {
		t.Errorf("pick --group 2 without a group sink = %v", err)
	}
}
