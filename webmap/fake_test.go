package webmap

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// fakeBackend is a Backend over synthetic terrain: world "proc"
// (procedural) and world "mc" (Minecraft), each with one region
// ("p" and "m") whose chunk box is [-64, 63]^2. Tops follow height(x, z);
// chunks in ungenerated are missing in "mc". It counts summary reads.
type fakeBackend struct {
	mu sync.Mutex
	// mu protects the following fields.
	ungenerated map[geom.Chunk]bool
	reliefs     atomic.Int64 // Relief calls
	epochs      map[geom.Chunk]uint32
	cells       []MemoryCell
	cached      []CachedLocation

	epoch   atomic.Uint64
	reads   atomic.Int64
	feed    Feed
	chunks  sync.Map // geom.Chunk -> *world.Chunk, per world prefix
	grass   world.BlockID
	water   world.BlockID
	plains  world.BiomeID
	failErr error // Summary fails with it when set (read-only after setup)
	// hook, when set, runs first in every Summary and fails it with its
	// error (read-only after setup).
	hook func(ctx context.Context) error
}

func newFake() *fakeBackend {
	return &fakeBackend{
		ungenerated: map[geom.Chunk]bool{},
		epochs:      map[geom.Chunk]uint32{},
		grass:       world.Block("minecraft:grass_block[snowy=false]"),
		water:       world.Block("minecraft:water[level=0]"),
		plains:      world.Biome("minecraft:plains"),
	}
}

// height is the synthetic terrain: gentle waves, water below 62.
func height(x, z int64) int16 {
	return int16(64 + (x%37+z%23)/6)
}

func (f *fakeBackend) Worlds() []World {
	return []World{
		{Name: "mc", Kind: KindMinecraft, Producer: SurfaceProducer, MinY: -64, MaxY: 320},
		{Name: "proc", Kind: KindProcedural, Producer: "procgen@test", MinY: -64, MaxY: 320},
	}
}

func (f *fakeBackend) Regions() []Region {
	box := [4]int64{-64, -64, 63, 63}
	return []Region{
		{Name: "m", World: "mc", Shape: geom.ShapeSpec{Kind: geom.ShapeCircle, Radius: 1024}, Chunks: box},
		{Name: "p", World: "proc", Shape: geom.ShapeSpec{Kind: geom.ShapeCircle, Radius: 1024}, Chunks: box, Border: &Border{Size: 4000}},
	}
}

func (f *fakeBackend) WorldEpoch(w string) uint64 {
	if w != "mc" {
		return 0
	}
	return f.epoch.Load()
}

func (f *fakeBackend) ChunkEpoch(w string, c geom.Chunk) uint32 {
	if w != "mc" {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epochs[c]
}

// bump marks chunks changed, as the engine's watcher does.
func (f *fakeBackend) bump(cs ...geom.Chunk) {
	f.mu.Lock()
	for _, c := range cs {
		f.epochs[c]++
		f.chunks.Delete(c)
	}
	f.mu.Unlock()
	f.epoch.Add(uint64(len(cs)))
}

func (f *fakeBackend) Summary(ctx context.Context, w string, c geom.Chunk) (*world.Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.reads.Add(1)
	if f.hook != nil {
		if err := f.hook(ctx); err != nil {
			return nil, err
		}
	}
	if f.failErr != nil {
		return nil, f.failErr
	}
	if w != "mc" && w != "proc" {
		return nil, fmt.Errorf("fake: %w: world %q", ErrNotFound, w)
	}
	f.mu.Lock()
	un := w == "mc" && f.ungenerated[c]
	ep := f.epochs[c]
	f.mu.Unlock()
	if un {
		return nil, &world.PosError{Pos: c, Err: world.ErrUngenerated}
	}
	if v, ok := f.chunks.Load(c); ok {
		return v.(*world.Chunk), nil
	}
	ch := world.NewChunk(c, -64, 320)
	o := c.Origin()
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			col := &ch.Columns[z*world.ChunkSize+x]
			col.Top = height(o.X+int64(x), o.Z+int64(z)) + int16(ep)
			col.Ground, col.Biome = f.grass, f.plains
			if col.Top < 62 {
				col.Ground, col.Fluid = f.water, true
			}
		}
	}
	f.chunks.Store(c, ch)
	return ch, nil
}

func (f *fakeBackend) Heightfield(ctx context.Context, w string, req terrain.Request) (*terrain.Tile, error) {
	return SurfaceTile(ctx, func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) { return f.Summary(ctx, w, c) }, req)
}

// Relief counts its calls and answers as Heightfield: the fake's worlds
// have no drainage.
func (f *fakeBackend) Relief(ctx context.Context, w string, req terrain.Request) (*terrain.Tile, error) {
	f.reliefs.Add(1)
	return f.Heightfield(ctx, w, req)
}

func (f *fakeBackend) checkRegion(r string) error {
	if r != "m" && r != "p" {
		return fmt.Errorf("fake: %w: region %q", ErrNotFound, r)
	}
	return nil
}

func (f *fakeBackend) Memory(r string, rect ChunkRect) (MemoryView, error) {
	if err := f.checkRegion(r); err != nil {
		return MemoryView{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v := MemoryView{Now: time.Unix(1733000000, 500e6)}
	for _, c := range f.cells {
		if c.X >= rect.MinX && c.X <= rect.MaxX && c.Z >= rect.MinZ && c.Z <= rect.MaxZ {
			v.Cells = append(v.Cells, c)
		}
	}
	return v, nil
}

func (f *fakeBackend) Cached(r string, limit int) ([]CachedLocation, bool, error) {
	if err := f.checkRegion(r); err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.cached) > limit {
		return append([]CachedLocation(nil), f.cached[:limit]...), true, nil
	}
	return append([]CachedLocation(nil), f.cached...), false, nil
}

func (f *fakeBackend) Deliveries(r string) ([]Delivery, error) {
	if err := f.checkRegion(r); err != nil {
		return nil, err
	}
	return f.feed.Recent(), nil
}

func (f *fakeBackend) SubscribeDeliveries(r string) (<-chan Delivery, func(), error) {
	if err := f.checkRegion(r); err != nil {
		return nil, nil, err
	}
	ch, cancel := f.feed.Subscribe()
	return ch, cancel, nil
}

func (f *fakeBackend) Inspect(_ context.Context, r string, b geom.Block) (Inspection, error) {
	if err := f.checkRegion(r); err != nil {
		return Inspection{}, err
	}
	c := b.Chunk()
	return Inspection{Block: XZ{b.X, b.Z}, Chunk: XZ{c.X, c.Z}, InShape: true, Biome: "minecraft:plains",
		Ground: "minecraft:grass_block[snowy=false]", Y: int(height(b.X, b.Z)) + 1, Safe: true, Reason: "accepted"}, nil
}
