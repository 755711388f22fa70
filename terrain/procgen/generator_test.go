package procgen

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/terrain"
)

// The tests stay inside testArea (x and z in [-3072, 3072)) where they can,
// so they share the drainage cells of one generator.
const testArea = 3072

var (
	sharedOnce sync.Once
	sharedGen  *Generator
)

// shared returns a default generator whose cache holds the whole test area.
func shared(t testing.TB) *Generator {
	t.Helper()
	sharedOnce.Do(func() {
		g, err := NewWithOptions(DefaultParams(), Options{CacheCells: 128})
		if err != nil {
			panic(err)
		}
		sharedGen = g
	})
	return sharedGen
}

func mustTile(t testing.TB, g *Generator, req terrain.Request) *terrain.Tile {
	t.Helper()
	tile, err := g.Tile(context.Background(), req)
	if err != nil {
		t.Fatalf("Tile(%v) = %v", req, err)
	}
	if err := tile.Validate(req); err != nil {
		t.Fatalf("Tile(%v) is invalid: %v", req, err)
	}
	return tile
}

func TestTilesValid(t *testing.T) {
	g := shared(t)
	r := rand.New(rand.NewPCG(1, 2))
	for range 30 {
		size := int32(1 + r.IntN(512))
		req := terrain.Request{
			OriginX:    int64(r.IntN(2*testArea-int(size))) - testArea,
			OriginZ:    int64(r.IntN(2*testArea-int(size))) - testArea,
			Size:       size,
			Resolution: int32(1 + r.IntN(48)),
			Border:     int32(r.IntN(4)),
		}
		tile := mustTile(t, g, req)
		res := int(req.Resolution)
		for k := range res * res {
			e := tile.Interior(k%res, k/res)
			if e < MinY || e > MaxY {
				t.Fatalf("%v: elevation %v outside [%d, %d]", req, e, MinY, MaxY)
			}
			w := tile.Water[k]
			wet := !math.IsNaN(float64(w))
			switch c := tile.Cover[k]; c {
			case terrain.CoverOcean, terrain.CoverRiver, terrain.CoverLake:
				if !wet || w < e {
					t.Fatalf("%v sample %d: cover %v with water %v over ground %v", req, k, c, w, e)
				}
			default:
				if wet {
					t.Fatalf("%v sample %d: dry cover %v with water %v", req, k, c, w)
				}
			}
			if c := tile.Cover[k]; c == terrain.CoverOcean && w != float32(DefaultParams().SeaLevel) {
				t.Fatalf("%v sample %d: ocean surface %v, want sea level", req, k, w)
			}
		}
	}
}

func tilesIdentical(t *testing.T, a, b *terrain.Tile) {
	t.Helper()
	if fa, fb := fingerprint(a), fingerprint(b); fa != fb {
		t.Fatalf("tiles differ: %s vs %s", fa, fb)
	}
}

func TestDeterminism(t *testing.T) {
	req := terrain.Request{OriginX: 700, OriginZ: -1200, Size: 512, Resolution: 48, Border: 2}
	warm := shared(t)
	a := mustTile(t, warm, req)
	b := mustTile(t, warm, req)
	tilesIdentical(t, a, b)
	fresh, err := NewWithOptions(DefaultParams(), Options{CacheCells: 1})
	if err != nil {
		t.Fatal(err)
	}
	// A one-cell cache recomputes cells as the tile crosses them.
	tilesIdentical(t, a, mustTile(t, fresh, req))

	other := DefaultParams()
	other.Seed = 42
	g2, err := New(other)
	if err != nil {
		t.Fatal(err)
	}
	if fingerprint(mustTile(t, g2, req)) == fingerprint(a) {
		t.Error("seeds 0 and 42 gave identical tiles")
	}
}

// sampleAt returns the elevation at sample (i, j) of tile, border included
// (i, j may be negative down to -Border).
func sampleAt(tile *terrain.Tile, i, j int) float32 {
	b := int(tile.Request.Border)
	return tile.Elevations[(j+b)*tile.Request.Side()+i+b]
}

// TestSeams checks that requests agree bit for bit wherever their samples
// fall on the same world position: different origins with one spacing,
// different resolutions, across drainage cell edges and the corner where
// four cells blend.
func TestSeams(t *testing.T) {
	g := shared(t)
	// Sample i of a request sits at origin + (i+0.5)*spacing. Requests below
	// all place samples on the lattice 1024 + 4k + 2 (spacing 4), around the
	// cell corner (1024, 1024).
	base := terrain.Request{OriginX: 1024 - 200, OriginZ: 1024 - 200, Size: 400, Resolution: 100, Border: 3}
	ref := mustTile(t, g, base)
	for _, req := range []terrain.Request{
		{OriginX: 1024 - 120, OriginZ: 1024 - 40, Size: 256, Resolution: 64, Border: 1},
		{OriginX: 1024 - 16, OriginZ: 1024 - 200, Size: 64, Resolution: 16, Border: 5},
		{OriginX: 1024 - 204, OriginZ: 1024 - 204, Size: 8, Resolution: 2, Border: 0},
		// Spacing 8 shifted by 2 blocks: every sample lands on every other
		// sample of the reference.
		{OriginX: 1024 - 202, OriginZ: 1024 - 202, Size: 400, Resolution: 50, Border: 1},
		// Spacing 2 offset by one block: every other sample lands on the
		// reference lattice.
		{OriginX: 1024 - 1, OriginZ: 1024 - 1, Size: 100, Resolution: 50, Border: 2},
	} {
		tile := mustTile(t, g, req)
		shared := 0
		side := req.Side()
		b := int(req.Border)
		for j := -b; j < side-b; j++ {
			for i := -b; i < side-b; i++ {
				// World position times 2*res, exactly.
				x2 := float64(req.OriginX) + (float64(i)+0.5)*float64(req.Size)/float64(req.Resolution)
				z2 := float64(req.OriginZ) + (float64(j)+0.5)*float64(req.Size)/float64(req.Resolution)
				ri := (x2-float64(base.OriginX))/4 - 0.5
				rj := (z2-float64(base.OriginZ))/4 - 0.5
				if ri != math.Trunc(ri) || rj != math.Trunc(rj) {
					continue
				}
				bi, bj := int(ri), int(rj)
				rb := int(base.Border)
				if bi < -rb || bj < -rb || bi >= int(base.Resolution)+rb || bj >= int(base.Resolution)+rb {
					continue
				}
				shared++
				if got, want := sampleAt(tile, i, j), sampleAt(ref, bi, bj); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v sample (%d,%d) at (%v,%v) = %v, reference says %v", req, i, j, x2, z2, got, want)
				}
				interior := i >= 0 && j >= 0 && i < int(req.Resolution) && j < int(req.Resolution)
				refInterior := bi >= 0 && bj >= 0 && bi < int(base.Resolution) && bj < int(base.Resolution)
				if interior && refInterior {
					k, rk := j*int(req.Resolution)+i, bj*int(base.Resolution)+bi
					if math.Float32bits(tile.Water[k]) != math.Float32bits(ref.Water[rk]) || tile.Cover[k] != ref.Cover[rk] {
						t.Fatalf("%v sample (%d,%d): water %v cover %v, reference %v %v", req, i, j, tile.Water[k], tile.Cover[k], ref.Water[rk], ref.Cover[rk])
					}
				}
			}
		}
		if shared < 4 {
			t.Fatalf("%v shares only %d positions with the reference; the test is miswired", req, shared)
		}
	}
}

// TestSeamContinuity checks that crossing a drainage cell edge produces no
// step bigger than the terrain's own roughness: the blend band works.
func TestSeamContinuity(t *testing.T) {
	g := shared(t)
	// A one-block-spacing strip across the edge x = 0, many rows.
	req := terrain.Request{OriginX: -32, OriginZ: -2048, Size: 64, Resolution: 64, Border: 0}
	for oz := int64(-2048); oz < 2048; oz += 512 {
		req.OriginZ = oz
		req.Size, req.Resolution = 64, 64
		tile := mustTile(t, g, req)
		for j := range 64 {
			for i := 1; i < 64; i++ {
				if d := math.Abs(float64(tile.Interior(i, j) - tile.Interior(i-1, j))); d > 12 {
					t.Errorf("step of %.1f blocks between x=%d and x=%d at z=%d", d, req.OriginX+int64(i)-1, req.OriginX+int64(i), oz+int64(j))
				}
			}
		}
	}
}

func TestColumnMatchesTile(t *testing.T) {
	g := shared(t)
	ctx := context.Background()
	// Spacing 1: sample i is the centre of block origin+i.
	req := terrain.Request{OriginX: 1000, OriginZ: 1010, Size: 48, Resolution: 48, Border: 0}
	tile := mustTile(t, g, req)
	for j := 0; j < 48; j += 3 {
		for i := 0; i < 48; i += 3 {
			c, err := g.Column(ctx, req.OriginX+int64(i), req.OriginZ+int64(j))
			if err != nil {
				t.Fatal(err)
			}
			k := j*48 + i
			if math.Float32bits(c.Elevation) != math.Float32bits(tile.Interior(i, j)) ||
				math.Float32bits(c.Water) != math.Float32bits(tile.Water[k]) || c.Cover != tile.Cover[k] {
				t.Fatalf("Column(%d,%d) = %+v, tile says %v %v %v", req.OriginX+int64(i), req.OriginZ+int64(j), c, tile.Interior(i, j), tile.Water[k], tile.Cover[k])
			}
			if c.Wet() != !math.IsNaN(float64(tile.Water[k])) {
				t.Fatalf("Column.Wet() = %v with water %v", c.Wet(), c.Water)
			}
		}
	}
}

// TestCoverDistribution samples the test area coarsely (spacing 32 over
// 6144 x 6144 blocks) and checks every cover occurs, the world is mostly
// land, and a meaningful share is unsafe to land on.
func TestCoverDistribution(t *testing.T) {
	g := shared(t)
	cov, steep := shares(t, g, -testArea, -testArea, 3, 2048, 64)
	unsafe := steep
	for c, v := range cov {
		t.Logf("%-10s %5.2f%%", terrain.Cover(c), 100*v)
		if v == 0 {
			t.Errorf("cover %v never occurs", terrain.Cover(c))
		}
		switch terrain.Cover(c) {
		case terrain.CoverOcean, terrain.CoverRiver, terrain.CoverLake, terrain.CoverLava:
			unsafe += v
		}
	}
	t.Logf("steep %.2f%%, unsafe %.2f%%", 100*steep, 100*unsafe)
	if o := cov[terrain.CoverOcean]; o < 0.1 || o > 0.6 {
		t.Errorf("ocean share %.2f, want between 0.1 and 0.6", o)
	}
	if unsafe < 0.25 || unsafe > 0.75 {
		t.Errorf("unsafe share %.2f, want between 0.25 and 0.75", unsafe)
	}
}

func TestSeabedClamp(t *testing.T) {
	p := DefaultParams()
	p.SeabedClamp = false
	flat, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	req := terrain.Request{OriginX: -3000, OriginZ: -3000, Size: 2048, Resolution: 32, Border: 1}
	seabed := mustTile(t, shared(t), req)
	clamped := mustTile(t, flat, req)
	wet := 0
	for k := range seabed.Cover {
		i, j := k%32, k/32
		if clamped.Cover[k] != seabed.Cover[k] {
			t.Fatalf("sample %d: cover %v with clamp off, %v with it on", k, clamped.Cover[k], seabed.Cover[k])
		}
		if !math.IsNaN(float64(clamped.Water[k])) {
			t.Fatalf("sample %d: water %v reported with SeabedClamp off", k, clamped.Water[k])
		}
		want := seabed.Interior(i, j)
		if w := seabed.Water[k]; !math.IsNaN(float64(w)) {
			wet++
			want = max(want, w)
		}
		if clamped.Interior(i, j) != want {
			t.Fatalf("sample %d: elevation %v with clamp off, want %v", k, clamped.Interior(i, j), want)
		}
	}
	if wet == 0 {
		t.Fatal("no water in the sampled area; the test is miswired")
	}
}

func TestBadRequests(t *testing.T) {
	g := shared(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  terrain.Request
		out  bool // wraps ErrOutOfRange
	}{
		{"zero", terrain.Request{}, false},
		{"negative size", terrain.Request{Size: -5, Resolution: 4}, false},
		{"zero resolution", terrain.Request{Size: 16}, false},
		{"resolution too big", terrain.Request{Size: 16, Resolution: terrain.MaxResolution + 1}, false},
		{"negative border", terrain.Request{Size: 16, Resolution: 4, Border: -1}, false},
		{"border too big", terrain.Request{Size: 16, Resolution: 4, Border: terrain.MaxBorder + 1}, false},
		{"span too big", terrain.Request{Size: MaxSpan + 1, Resolution: 4}, true},
		{"border spreads too far", terrain.Request{Size: MaxSpan, Resolution: 1, Border: 1}, true},
		{"far east", terrain.Request{OriginX: MaxCoordinate - 15, Size: 16, Resolution: 4}, true},
		{"far north", terrain.Request{OriginZ: -MaxCoordinate - 1, Size: 16, Resolution: 4}, true},
		{"int64 extremes", terrain.Request{OriginX: math.MinInt64, OriginZ: math.MaxInt64, Size: math.MaxInt32, Resolution: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tile, err := g.Tile(ctx, tc.req)
			if err == nil || tile != nil {
				t.Fatalf("Tile(%v) = %v, %v; want an error", tc.req, tile, err)
			}
			if errors.Is(err, ErrOutOfRange) != tc.out {
				t.Errorf("Tile(%v) = %v; wraps ErrOutOfRange %v, want %v", tc.req, err, !tc.out, tc.out)
			}
		})
	}
	// The largest legal coordinates still work.
	mustTile(t, g, terrain.Request{OriginX: MaxCoordinate - 16, OriginZ: -MaxCoordinate, Size: 16, Resolution: 4, Border: 2})
	for _, xz := range [][2]int64{{MaxCoordinate, 0}, {0, -MaxCoordinate - 1}, {math.MinInt64, math.MaxInt64}} {
		if _, err := g.Column(ctx, xz[0], xz[1]); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Column(%d, %d) = %v, want ErrOutOfRange", xz[0], xz[1], err)
		}
	}
	if _, err := g.Column(ctx, MaxCoordinate-1, -MaxCoordinate); err != nil {
		t.Errorf("Column at the edge = %v, want nil", err)
	}
}

func TestContextCancellation(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	g := shared(t)
	req := terrain.Request{OriginX: 0, OriginZ: 0, Size: 256, Resolution: 16}
	if _, err := g.Tile(cancelled, req); !errors.Is(err, context.Canceled) {
		t.Errorf("Tile(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := g.Column(cancelled, 5, 5); !errors.Is(err, context.Canceled) {
		t.Errorf("Column(cancelled) = %v, want context.Canceled", err)
	}

	// Cancel part-way through a request that needs dozens of cold cells.
	fresh, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	big := terrain.Request{OriginX: 100_000, OriginZ: 100_000, Size: 8192, Resolution: 256, Border: 1}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	if _, err := fresh.Tile(ctx, big); !errors.Is(err, context.Canceled) {
		t.Fatalf("Tile cancelled part-way = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Tile took %v to notice cancellation", d)
	}
	if fresh.cells.len() > 48 {
		t.Errorf("%d cells cached, want the cache bound", fresh.cells.len())
	}

	// A deadline reports DeadlineExceeded, and the cache is not poisoned:
	// the same generator then produces the same tile as a fresh one.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	small := terrain.Request{OriginX: 100_000, OriginZ: 100_000, Size: 128, Resolution: 16, Border: 1}
	g3, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g3.Tile(ctx, small); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Tile past deadline = %v, want context.DeadlineExceeded", err)
	}
	tilesIdentical(t, mustTile(t, g3, small), mustTile(t, fresh, small))
}

func TestConcurrentTiles(t *testing.T) {
	g, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	// Eight goroutines ask for tiles inside one drainage cell at once.
	reqs := make([]terrain.Request, 8)
	for i := range reqs {
		reqs[i] = terrain.Request{OriginX: -2900 + int64(i)*64, OriginZ: 2200, Size: 64, Resolution: 8, Border: 1}
	}
	tiles := make([]*terrain.Tile, len(reqs))
	var wg sync.WaitGroup
	for i := range reqs {
		wg.Go(func() { tiles[i] = mustTile(t, g, reqs[i]) })
	}
	wg.Wait()
	if n := g.cells.computes.Load(); n != 1 {
		t.Errorf("one cell computed %d times", n)
	}
	for i, req := range reqs {
		tilesIdentical(t, tiles[i], mustTile(t, shared(t), req))
	}
}
