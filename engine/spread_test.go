package engine_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// flatSave writes a save of n x n chunks from chunk (0, 0), every column
// grass on stone with open sky: every column is a safe landing.
func flatSave(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	var chunks []*anviltest.Chunk
	for cz := range n {
		for cx := range n {
			c := anviltest.NewChunk(cx, cz, anvil.Overworld)
			if err := c.Fill(0, 60, 0, 15, 62, 15, "minecraft:stone"); err != nil {
				t.Fatal(err)
			}
			if err := c.Fill(0, 63, 0, 15, 63, 15, "minecraft:grass_block[snowy=false]"); err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, c)
		}
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSpread hands out 1,000 locations from a region of about 45,000 safe
// columns (45 times as many) with the default unique placement, and checks
// that no exact spot repeats, that no two places are closer than the
// default radius, that the landing columns spread over the whole chunk
// (not its centre), and that the density over the region stays uniform:
// a chi-square test over rings of equal area.
func TestSpread(t *testing.T) {
	save := flatSave(t, 16) // blocks 0..255 on both axes
	cfg := testConfig(t)
	cfg.Worlds = map[string]config.World{"flat": {Kind: config.KindMinecraft, Path: save, Dimension: config.Overworld}}
	rc := config.DefaultRegion()
	rc.World = "flat"
	rc.Shape = geom.ShapeSpec{Kind: "circle", CenterX: 128, CenterZ: 128, Radius: 120}
	rc.Pulse = 2 * time.Millisecond
	rc.Sinks.General.Capacity = 64
	cfg.Regions = map[string]config.Region{config.DefaultRegionName: rc}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	radius := rc.UniquePlacement.Radius
	if radius <= 0 {
		t.Fatalf("the default unique-placement radius is %d, want a small positive one", radius)
	}
	e := newEngine(t, cfg)
	run(t, e)
	shape, err := rc.BuildShape()
	if err != nil {
		t.Fatal(err)
	}

	const n = 1000
	locs := make([]engine.Location, 0, n)
	for i := range n {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		loc, err := e.Teleport(ctx, config.DefaultRegionName, engine.Request{Player: fmt.Sprintf("p%d", i)})
		cancel()
		if err != nil {
			t.Fatalf("teleport %d: %v", i, err)
		}
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
		locs = append(locs, loc)
	}

	// No exact repeat, and no pair closer than the radius.
	spots := map[geom.Block]int{}
	byChunk := map[geom.Chunk][]geom.Block{}
	var local [256]int
	for i, loc := range locs {
		b := geom.Block{X: loc.X, Z: loc.Z}
		if j, dup := spots[b]; dup {
			t.Errorf("delivery %d repeats delivery %d at %v", i, j, b)
		}
		spots[b] = i
		for dz := int64(-1); dz <= 1; dz++ {
			for dx := int64(-1); dx <= 1; dx++ {
				for _, o := range byChunk[geom.Chunk{X: b.Chunk().X + dx, Z: b.Chunk().Z + dz}] {
					if ddx, ddz := o.X-b.X, o.Z-b.Z; ddx*ddx+ddz*ddz < radius*radius {
						t.Errorf("delivery %d at %v is closer than %d blocks to %v", i, b, radius, o)
					}
				}
			}
		}
		byChunk[b.Chunk()] = append(byChunk[b.Chunk()], b)
		if !shape.Contains(b.Chunk()) {
			t.Errorf("delivery %d at %v is outside the region", i, b)
		}
		x, z := b.Local()
		local[z*16+x]++
	}

	// The chunk-local columns are uniform: chi-square over the 256
	// columns (255 degrees of freedom; 330.5 is the 0.1% critical value).
	var chiLocal float64
	exp := float64(n) / 256
	for _, c := range local {
		chiLocal += (float64(c) - exp) * (float64(c) - exp) / exp
	}
	if chiLocal > 330.5 {
		t.Errorf("chunk-local columns are not uniform: chi-square %.1f over 255 degrees of freedom (> 330.5)", chiLocal)
	}
	t.Logf("exact repeats: 0 of %d; chunk-local column histogram (z rows, x columns):\n%s", n, histogram(local))
	t.Logf("chunk-local chi-square %.1f (255 df); busiest column %d deliveries, centre (7, 7) %d", chiLocal, maxOf(local[:]), local[7*16+7])

	// Equal-area rings by the columns the shape holds.
	const rings = 5
	var cols [rings]float64
	var got [rings]float64
	ring := func(b geom.Block) int {
		dx, dz := float64(b.X)+0.5-128, float64(b.Z)+0.5-128
		k := int(math.Floor((dx*dx + dz*dz) / (130 * 130) * rings))
		return min(max(k, 0), rings-1)
	}
	for cz := int64(0); cz < 16; cz++ {
		for cx := int64(0); cx < 16; cx++ {
			c := geom.Chunk{X: cx, Z: cz}
			if !shape.Contains(c) {
				continue
			}
			o := c.Origin()
			for i := range 256 {
				cols[ring(geom.Block{X: o.X + int64(i%16), Z: o.Z + int64(i/16)})]++
			}
		}
	}
	var total float64
	for _, c := range cols {
		total += c
	}
	for _, loc := range locs {
		got[ring(geom.Block{X: loc.X, Z: loc.Z})]++
	}
	var chi float64
	for k := range rings {
		e := cols[k] / total * n
		chi += (got[k] - e) * (got[k] - e) / e
	}
	// 4 degrees of freedom: 18.47 is the 0.1% critical value.
	if chi > 18.47 {
		t.Errorf("ring densities %v for column shares %v: chi-square %.1f over 4 degrees of freedom (> 18.47)", got, cols, chi)
	}
	t.Logf("rings: delivered %v, columns %v, chi-square %.2f (4 df); %d safe columns in the region", got, cols, chi, int(total))
	if total < 10*n {
		t.Fatalf("the region holds %v columns, want at least %d (10x the deliveries)", total, 10*n)
	}
	if st := stats(t, e, config.DefaultRegionName); st.Unique.SpotChunks == 0 {
		t.Errorf("stats show no chunk holding handed-out spots: %+v", st.Unique)
	}
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func histogram(h [256]int) string {
	var b strings.Builder
	for z := range 16 {
		for x := range 16 {
			fmt.Fprintf(&b, "%3d", h[z*16+x])
		}
		b.WriteByte('\n')
	}
	return b.String()
}
