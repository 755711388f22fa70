package cli

import (
	"encoding/json"
	"strings"
	"testing"

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
