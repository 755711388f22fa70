package procworld_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/procgen"
)

func newGenerator(tb testing.TB) *procgen.Generator {
	tb.Helper()
	g, err := procgen.New(procgen.DefaultParams())
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// newArchive wraps a fresh generator in an archive over store, closed at
// the end of the test.
func newArchive(tb testing.TB, store archive.Store) *archive.Archive {
	tb.Helper()
	a, err := archive.Wrap(newGenerator(tb), store, archive.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := a.Close(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return a
}

// shared is one generator for the tests that only read terrain, so its
// drainage cells are computed once per test binary.
var shared = sync.OnceValues(func() (*procgen.Generator, error) {
	return procgen.New(procgen.DefaultParams())
})

func sharedGenerator(tb testing.TB) *procgen.Generator {
	tb.Helper()
	g, err := shared()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// fixtureArea is a 1024-block square of the default world (one drainage
// cell: chunks x -64..-1, z 128..191) where every cover occurs.
const (
	fixtureX0, fixtureZ0 = -64, 128
	fixtureChunks        = 64
)

// fixture is a chunk whose centre column has a given cover (for
// mountains, a chunk with a cliff: a slope of 3 blocks or more).
type fixture struct {
	cover terrain.Cover
	pos   geom.Chunk
}

var fixtureList = sync.OnceValues(func() ([]fixture, error) {
	g, err := shared()
	if err != nil {
		return nil, err
	}
	found := make(map[terrain.Cover]geom.Chunk)
	for cz := range int64(fixtureChunks) {
		for cx := range int64(fixtureChunks) {
			pos := geom.Chunk{X: fixtureX0 + cx, Z: fixtureZ0 + cz}
			c := pos.Center()
			col, err := g.Column(context.Background(), c.X, c.Z)
			if err != nil {
				return nil, err
			}
			if _, ok := found[col.Cover]; ok {
				continue
			}
			if col.Cover == terrain.CoverMountains {
				// Take a cliff, to see steep ground.
				if steep, err := steepIn(g, pos); err != nil {
					return nil, err
				} else if !steep {
					continue
				}
			}
			found[col.Cover] = pos
		}
	}
	var out []fixture
	for cv := range terrain.Cover(terrain.NumCovers) {
		if pos, ok := found[cv]; ok {
			out = append(out, fixture{cv, pos})
		}
	}
	if len(out) != terrain.NumCovers {
		return out, fmt.Errorf("fixture area holds %d of %d covers: %v (has the generator changed?)", len(out), terrain.NumCovers, out)
	}
	return out, nil
})

// steepIn reports whether chunk pos holds a mountain column whose ground
// lies 3 or more blocks from a neighbour's.
func steepIn(g *procgen.Generator, pos geom.Chunk) (bool, error) {
	o := pos.Origin()
	req := terrain.Request{OriginX: o.X, OriginZ: o.Z, Size: 16, Resolution: 16, Border: 1}
	t, err := g.Tile(context.Background(), req)
	if err != nil {
		return false, err
	}
	side := req.Side()
	fl := func(k int) float64 { return math.Floor(float64(t.Elevations[k])) }
	for j := range 16 {
		for i := range 16 {
			if t.Cover[j*16+i] != terrain.CoverMountains {
				continue
			}
			e := (j+1)*side + i + 1
			for _, n := range []int{e - 1, e + 1, e - side, e + side} {
				if math.Abs(fl(n)-fl(e)) >= 3 {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// fixtures returns one chunk for each cover, all in the fixture area.
func fixtures(tb testing.TB) []fixture {
	tb.Helper()
	f, err := fixtureList()
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// fixtureFor returns the fixture chunk of cover cv.
func fixtureFor(tb testing.TB, cv terrain.Cover) geom.Chunk {
	tb.Helper()
	for _, f := range fixtures(tb) {
		if f.cover == cv {
			return f.pos
		}
	}
	tb.Fatalf("no fixture for %v", cv)
	return geom.Chunk{}
}

// fakeSource is a terrain.Source of flat plains tiles that counts its
// calls, can hold them until released, and can fail or corrupt tiles.
type fakeSource struct {
	calls   atomic.Int64
	release chan struct{} // when not nil, Tile waits for it to close (or ctx)
	err     error         // when not nil, Tile fails with it
	corrupt func(*terrain.Tile)
	// tile, when not nil, builds the tile instead of flatTile.
	tile func(terrain.Request) *terrain.Tile
}

func (f *fakeSource) Producer() terrain.Producer { return terrain.Producer{Name: "fake", Version: "1"} }
func (f *fakeSource) Params() any                { return struct{}{} }

func (f *fakeSource) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	f.calls.Add(1)
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	var t *terrain.Tile
	if f.tile != nil {
		t = f.tile(req)
	} else {
		t = flatTile(req)
	}
	if f.corrupt != nil {
		f.corrupt(t)
	}
	return t, nil
}

// flatTile is a valid plains tile at y 70.
func flatTile(req terrain.Request) *terrain.Tile {
	side, res := req.Side(), int(req.Resolution)
	t := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, side*side),
		Water:      make([]float32, res*res),
		Cover:      make([]terrain.Cover, res*res),
		Min:        70.5, Max: 70.5,
	}
	for i := range t.Elevations {
		t.Elevations[i] = 70.5
	}
	for i := range t.Water {
		t.Water[i] = float32(math.NaN())
		t.Cover[i] = terrain.CoverPlains
	}
	return t
}
