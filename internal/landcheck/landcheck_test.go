package landcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/internal/landcheck"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// saves are the synthetic saves, written once for every test.
var saves struct {
	once                   sync.Once
	err                    error
	builds, nether, end    string
	buildsSc, netherSc, ec anviltest.Scene
}

func scenes(t *testing.T) {
	t.Helper()
	saves.once.Do(func() {
		dir, err := os.MkdirTemp("", "landcheck-test-")
		if err != nil {
			saves.err = err
			return
		}
		saves.builds, saves.nether, saves.end = filepath.Join(dir, "builds"), filepath.Join(dir, "nether"), filepath.Join(dir, "end")
		if saves.buildsSc, saves.err = anviltest.WriteBuildsSave(saves.builds); saves.err != nil {
			return
		}
		if saves.netherSc, saves.err = anviltest.WriteNetherSave(saves.nether); saves.err != nil {
			return
		}
		saves.ec, saves.err = anviltest.WriteEndSave(saves.end)
	})
	if saves.err != nil {
		t.Fatal(saves.err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if saves.builds != "" {
		_ = os.RemoveAll(filepath.Dir(saves.builds))
	}
	os.Exit(code)
}

func open(t *testing.T, save string, dim landcheck.Dimension) *landcheck.Checker {
	t.Helper()
	c, err := landcheck.Open(save, dim)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func caseOf(t *testing.T, name string) anviltest.Case {
	t.Helper()
	for _, c := range saves.buildsSc.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return anviltest.Case{}
}

// wantFailure checks that err holds a failure of part and reason, and
// that its message names the state.
func wantFailure(t *testing.T, err error, part landcheck.Part, reason landcheck.Reason, state string) {
	t.Helper()
	for _, f := range landcheck.Failures(err) {
		if f.Part == part && f.Reason == reason && strings.Contains(f.Error(), state) {
			return
		}
	}
	t.Errorf("Check = %v; want a %s failure of the %s naming %q", err, reason, part, state)
}

func TestBuilds(t *testing.T) {
	scenes(t)
	c := open(t, saves.builds, landcheck.Overworld)
	check := func(name string, dy int64) error {
		cs := caseOf(t, name)
		return c.Check(cs.X, int64(cs.Y)+dy, cs.Z)
	}

	// Standing on the sign (the engine's former mistake).
	sign := caseOf(t, "oak_sign")
	err := c.Check(sign.X, int64(sign.Y)+1, sign.Z)
	wantFailure(t, err, landcheck.Ground, landcheck.NoCollision, "minecraft:oak_sign[rotation=0,waterlogged=false]")
	if fs := landcheck.Failures(err); len(fs) != 1 || !strings.Contains(fs[0].Error(), "ground minecraft:oak_sign[rotation=0,waterlogged=false] at (") || !strings.HasSuffix(fs[0].Error(), "has no collision") {
		t.Errorf("sign failures = %v", fs)
	}
	for _, name := range []string{"oak_wall_sign", "white_banner", "white_wall_banner", "stone_pressure_plate",
		"heavy_weighted_pressure_plate", "moving_piston", "torch", "snow_1", "sign_on_pillar"} {
		n, _, _ := strings.Cut(caseOf(t, name).State, "[")
		wantFailure(t, check(name, 1), landcheck.Ground, landcheck.NoCollision, n)
	}
	for _, name := range []string{"oak_fence", "chest", "piston_head"} {
		wantFailure(t, check(name, 1), landcheck.Ground, landcheck.NoFloor, "minecraft:"+name)
	}
	// Hazards and fluids as ground.
	wantFailure(t, check("lava_pool", 1), landcheck.Ground, landcheck.Hazard, "minecraft:lava")
	wantFailure(t, check("lava_pool", 1), landcheck.Ground, landcheck.Fluid, "minecraft:lava")
	wantFailure(t, check("magma_block", 1), landcheck.Ground, landcheck.Hazard, "minecraft:magma_block")
	wantFailure(t, check("water_pool", 1), landcheck.Ground, landcheck.Fluid, "minecraft:water")
	wantFailure(t, check("waterlogged_top_slab", 1), landcheck.Ground, landcheck.Fluid, "waterlogged=true")
	wantFailure(t, check("powder_snow", 1), landcheck.Ground, landcheck.Hazard, "minecraft:powder_snow")
	// Hazards at the feet, on good ground.
	for _, name := range []string{"fire", "campfire", "cactus", "sweet_berry_bush", "wither_rose", "cobweb", "nether_portal", "pointed_dripstone"} {
		wantFailure(t, check(name, 0), landcheck.Feet, landcheck.Hazard, "minecraft:"+name)
	}
	// In water: feet and head in the deep pool, on its stone floor.
	deep := caseOf(t, "deep_water")
	err = c.Check(deep.X, int64(anviltest.GroundY-3), deep.Z)
	wantFailure(t, err, landcheck.Feet, landcheck.Fluid, "minecraft:water")
	wantFailure(t, err, landcheck.Head, landcheck.Fluid, "minecraft:water")
	// Inside the ground.
	wantFailure(t, c.Check(sign.X+1, anviltest.GroundY, sign.Z), landcheck.Feet, landcheck.Blocked, "minecraft:grass_block")

	// Good landings: grass beside a case, a bottom slab, a top slab, a
	// deep snow layer, a carpet.
	for _, good := range []struct {
		x, y, z int64
	}{
		{sign.X + 1, anviltest.GroundY + 1, sign.Z},
		{caseOf(t, "bottom_slab").X, anviltest.GroundY + 2, caseOf(t, "bottom_slab").Z},
		{caseOf(t, "top_slab").X, anviltest.GroundY + 2, caseOf(t, "top_slab").Z},
		{caseOf(t, "snow_8").X, anviltest.GroundY + 2, caseOf(t, "snow_8").Z},
		{caseOf(t, "white_carpet").X, anviltest.GroundY + 2, caseOf(t, "white_carpet").Z},
		{caseOf(t, "torch").X, anviltest.GroundY + 1, caseOf(t, "torch").Z}, // feet in the torch
	} {
		if err := c.Check(good.x, good.y, good.z); err != nil {
			t.Errorf("Check(%d, %d, %d) = %v, want a safe landing", good.x, good.y, good.z, err)
		}
	}

	// Outside the save.
	wantFailure(t, c.Check(10_000, 64, 10_000), landcheck.Location, landcheck.Unreadable, "")
	g, f, h, err := c.Blocks(sign.X, int64(sign.Y)+1, sign.Z)
	if err != nil || !strings.HasPrefix(g, "minecraft:oak_sign") || f != "minecraft:air" || h != "minecraft:air" {
		t.Errorf("Blocks = %q, %q, %q, %v", g, f, h, err)
	}
}

func TestNether(t *testing.T) {
	scenes(t)
	c := open(t, saves.nether, landcheck.Nether)
	// On the roof: bedrock below, air above, but above the roof.
	wantFailure(t, c.Check(3, 128, 5), landcheck.Location, landcheck.AboveRoof, "")
	if fs := landcheck.Failures(c.Check(3, 128, 5)); len(fs) != 1 {
		t.Errorf("roof landing failures = %v, want only the roof", fs)
	}
	// Some cave floor of netherrack with room above is safe; lava-sea
	// surfaces are not.
	good, lava := 0, 0
	for x := int64(-32); x < 32; x += 3 {
		for z := int64(-32); z < 32; z += 3 {
		column:
			for y := int64(2); y < 122; y++ {
				g, f, h, err := c.Blocks(x, y, z)
				if err != nil {
					t.Fatal(err)
				}
				if f != "minecraft:air" || h != "minecraft:air" {
					continue
				}
				switch g {
				case "minecraft:netherrack":
					good++
					if err := c.Check(x, y, z); err != nil {
						t.Errorf("cave floor: %v", err)
					}
				case "minecraft:lava[level=0]":
					lava++
					wantFailure(t, c.Check(x, y, z), landcheck.Ground, landcheck.Hazard, "minecraft:lava")
				}
				break column
			}
		}
	}
	if good == 0 || lava == 0 {
		t.Errorf("%d cave floors and %d lava surfaces found, want some of each", good, lava)
	}
}

func TestEnd(t *testing.T) {
	scenes(t)
	c := open(t, saves.end, landcheck.End)
	if err := c.Check(0, 61, 0); err != nil {
		t.Errorf("island landing: %v", err)
	}
	err := c.Check(-60, 61, -60)
	wantFailure(t, err, landcheck.Location, landcheck.Void, "")
	if fs := landcheck.Failures(err); len(fs) != 1 {
		t.Errorf("void failures = %v, want only the void", fs)
	}
	// Under the floating island: air below, the island above the head.
	wantFailure(t, c.Check(0, 30, 0), landcheck.Location, landcheck.Void, "")
}

func TestOpen(t *testing.T) {
	if _, err := landcheck.Open(t.TempDir(), landcheck.Overworld); err == nil {
		t.Error("Open of an empty folder = nil error")
	}
	for _, d := range []landcheck.Dimension{"../x", "mymod:../../x", "Nether"} {
		if _, err := landcheck.Open(t.TempDir(), d); err == nil {
			t.Errorf("Open of dimension %q = nil error", string(d))
		}
	}
}

// TestFixtures reads real region files of every layout and checks the
// reader against the project's own decoder: the block under the top's
// headroom is the top block (by name for palettes; not air for numeric
// ids).
func TestFixtures(t *testing.T) {
	for _, s := range anvilfixture.Saves(t) {
		save := s.Dir
		t.Run(s.Name, func(t *testing.T) {
			w, err := anvil.Open(save, anvil.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c := open(t, save, landcheck.Overworld)
			regions, err := w.Regions()
			if err != nil {
				t.Fatal(err)
			}
			compared := 0
			for _, r := range regions {
				h, err := w.Header(r)
				if err != nil {
					t.Fatal(err)
				}
				for i, pos := range h.Chunks(r) {
					if i%7 != 0 {
						continue
					}
					ch, err := w.Load(context.Background(), pos)
					if err != nil {
						continue // unfinished
					}
					for _, xz := range [][2]int{{0, 0}, {7, 9}, {15, 15}} {
						col := ch.Column(xz[0], xz[1])
						if col.Top < -64 {
							continue
						}
						b := geom.Block{X: pos.X*16 + int64(xz[0]), Z: pos.Z*16 + int64(xz[1])}
						g, _, _, err := c.Blocks(b.X, int64(col.Top)+1, b.Z)
						if err != nil {
							t.Fatalf("Blocks at %v: %v", b, err)
						}
						want, _, _ := strings.Cut(col.Ground.String(), "[")
						got, _, _ := strings.Cut(g, "[")
						if strings.HasPrefix(g, "legacy(") || strings.Contains(g, "(id ") {
							if strings.HasPrefix(g, "minecraft:air") {
								t.Errorf("%v top %d: read air, the decoder read %s", b, col.Top, want)
							}
						} else if got != want {
							t.Errorf("%v top %d: read %s, the decoder read %s", b, col.Top, g, col.Ground)
						}
						compared++
					}
				}
			}
			if compared == 0 && !strings.Contains(save, "1.17.1") {
				t.Errorf("no column compared")
			}
		})
	}
}
