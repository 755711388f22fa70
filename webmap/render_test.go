package webmap

import (
	"context"
	"errors"
	"image/color"
	"math"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// flatSurface returns a present surface of grass at height h everywhere.
func flatSurface(size int, h int16) *Surface {
	s := NewSurface(size, -64, 320)
	g := world.Block("minecraft:grass_block[snowy=false]")
	p := world.Biome("minecraft:plains")
	for i := range s.Top {
		s.Top[i], s.Ground[i], s.Biome[i], s.Present[i] = h, g, p, true
	}
	return s
}

func brightness(c color.NRGBA) int { return int(c.R) + int(c.G) + int(c.B) }

func TestBlockColor(t *testing.T) {
	for _, tc := range []struct {
		state string
		want  color.RGBA
	}{
		{"minecraft:grass_block[snowy=false]", color.RGBA{106, 156, 62, 255}},
		{"minecraft:water[level=0]", waterColor},
		{"minecraft:oak_leaves[distance=1,persistent=false,waterlogged=false]", color.RGBA{58, 118, 40, 255}},
		{"minecraft:birch_leaves", color.RGBA{110, 150, 70, 255}},
		{"minecraft:sand", color.RGBA{220, 208, 160, 255}},
		{"minecraft:red_sand", color.RGBA{190, 102, 42, 255}},
		{"minecraft:sandstone", color.RGBA{216, 203, 155, 255}},
		{"minecraft:snow[layers=1]", color.RGBA{242, 246, 250, 255}},
		{"minecraft:packed_ice", color.RGBA{158, 188, 248, 255}},
		{"minecraft:stone", color.RGBA{122, 122, 124, 255}},
		{"minecraft:deepslate", color.RGBA{80, 80, 86, 255}},
		{"minecraft:oak_log[axis=y]", color.RGBA{104, 82, 50, 255}},
		{"somemod:strange_block", unknownColor},
		{"", unknownColor},
	} {
		if got := BlockColor(tc.state); got != tc.want {
			t.Errorf("BlockColor(%q) = %v, want %v", tc.state, got, tc.want)
		}
	}
}

func TestRenderBlocksShading(t *testing.T) {
	// A step up at x = 8 (64 -> 70), a step down at x = 16 (70 -> 60,
	// water from x = 24), one absent column.
	s := flatSurface(32, 64)
	water := world.Block("minecraft:water[level=0]")
	for z := range 32 {
		for x := 8; x < 32; x++ {
			i := z*32 + x
			switch {
			case x < 16:
				s.Top[i] = 70
			default:
				s.Top[i] = 60
			}
			if x >= 24 {
				s.Ground[i], s.Fluid[i] = water, true
			}
		}
	}
	s.Present[5*32+3] = false
	img := RenderBlocks(s)
	flat := img.NRGBAAt(3, 10)
	if want := BlockColor("minecraft:grass_block"); flat.R != want.R || flat.G != want.G || flat.B != want.B || flat.A != 255 {
		t.Errorf("flat grass pixel %v, want the grass colour %v unshaded", flat, want)
	}
	up, top, down := img.NRGBAAt(8, 10), img.NRGBAAt(12, 10), img.NRGBAAt(16, 10)
	if !(brightness(up) > brightness(top) && brightness(top) > brightness(down)) {
		t.Errorf("brightness: step up %d, plateau %d, step down %d: want decreasing", brightness(up), brightness(top), brightness(down))
	}
	if brightness(top) != brightness(flat) {
		t.Errorf("a plateau pixel %v differs from a flat one %v", top, flat)
	}
	if w := img.NRGBAAt(28, 10); w.B <= w.R || w.B <= w.G {
		t.Errorf("water pixel %v is not blue", w)
	}
	if a := img.NRGBAAt(3, 5).A; a != 0 {
		t.Errorf("absent column alpha %d, want 0", a)
	}
}

func TestRenderReliefHillshade(t *testing.T) {
	// Rising towards +x faces the north-western light: brighter than
	// falling towards +x; a high plateau is brighter than a low one.
	rise, fall := flatSurface(16, 64), flatSurface(16, 64)
	for z := range 16 {
		for x := range 16 {
			rise.Top[z*16+x] = int16(64 + 2*x)
			fall.Top[z*16+x] = int16(96 - 2*x)
		}
	}
	r, f := RenderRelief(rise).NRGBAAt(8, 8), RenderRelief(fall).NRGBAAt(8, 8)
	if brightness(r) <= brightness(f) {
		t.Errorf("slope facing the light %v not brighter than facing away %v", r, f)
	}
	lo, hi := RenderRelief(flatSurface(4, 0)).NRGBAAt(1, 1), RenderRelief(flatSurface(4, 200)).NRGBAAt(1, 1)
	if brightness(hi) <= brightness(lo) {
		t.Errorf("high plateau %v not brighter than low %v", hi, lo)
	}
	if hi.G <= hi.R || hi.G <= hi.B {
		t.Errorf("plains pixel %v is not green", hi)
	}
}

func TestSurfaceTile(t *testing.T) {
	f := newFake()
	f.ungenerated[geom.Chunk{X: 1, Z: 0}] = true
	summary := func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) { return f.Summary(ctx, "mc", c) }
	req := terrain.Request{OriginX: 0, OriginZ: 0, Size: 32, Resolution: 16, Border: 1}
	tile, err := SurfaceTile(context.Background(), summary, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := tile.Validate(req); err != nil {
		t.Fatal(err)
	}
	// Sample (i, j) is block (2i+1, 2j+1).
	if got, want := tile.Interior(2, 3), float32(height(5, 7)+1); got != want {
		t.Errorf("sample (2, 3) = %v, want top+1 = %v", got, want)
	}
	// Chunk (1, 0) (blocks 16..31) is ungenerated: the lowest elevation.
	lowest := float32(math.Inf(1))
	for _, e := range tile.Elevations {
		lowest = min(lowest, e)
	}
	if got := tile.Interior(12, 3); got != lowest {
		t.Errorf("ungenerated sample = %v, want the lowest elevation %v", got, lowest)
	}
	for cz := int64(-1); cz <= 2; cz++ {
		for cx := int64(-1); cx <= 2; cx++ {
			f.ungenerated[geom.Chunk{X: cx, Z: cz}] = true
		}
	}
	if _, err := SurfaceTile(context.Background(), summary, req); !errors.Is(err, world.ErrUngenerated) {
		t.Errorf("all ungenerated: err %v, want ErrUngenerated", err)
	}
	if _, err := SurfaceTile(context.Background(), summary, terrain.Request{}); err == nil {
		t.Error("an invalid request is accepted")
	}
}

func TestFeed(t *testing.T) {
	var f Feed
	ch, cancel := f.Subscribe()
	for i := range FeedSize + 10 {
		f.Publish(Delivery{X: int64(i)})
	}
	r := f.Recent()
	if len(r) != FeedSize || r[0].X != 10 || r[len(r)-1].X != FeedSize+9 {
		t.Fatalf("recent: %d entries from %d to %d, want %d from 10 to %d", len(r), r[0].X, r[len(r)-1].X, FeedSize, FeedSize+9)
	}
	if got := len(ch); got != feedBuffer {
		t.Errorf("subscriber buffered %d, want %d", got, feedBuffer)
	}
	if got, want := f.Dropped(), uint64(FeedSize+10-feedBuffer); got != want {
		t.Errorf("dropped %d, want %d", got, want)
	}
	if d := <-ch; d.X != 0 {
		t.Errorf("first delivery %d, want 0", d.X)
	}
	cancel()
	cancel()
	for range ch {
	}
	f.Publish(Delivery{}) // no subscriber left: must not panic or block
}
