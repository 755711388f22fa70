package procworld

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
)

// The build height of the procedural world: MinY <= y < MaxY.
const (
	MinY = procgen.MinY
	MaxY = procgen.MaxY
)

// Tile grid bounds and defaults (see the package documentation for the
// measurement behind DefaultTileSize).
const (
	MinTileSize       = world.ChunkSize
	MaxTileSize       = 1024
	DefaultTileSize   = 64
	DefaultCacheTiles = 64
)

// MaxChunk bounds chunk coordinates: a chunk is inside the world when
// -MaxChunk <= X, Z < MaxChunk, so that every block of it lies within the
// generator's supported range (±procgen.MaxCoordinate).
const MaxChunk = procgen.MaxCoordinate / world.ChunkSize

// Options configure a World. The zero value gives the defaults.
type Options struct {
	// TileSize is the edge in blocks of the tiles the World reads: a power
	// of two from MinTileSize to MaxTileSize. Tiles sit on a fixed grid
	// (origins are multiples of TileSize) at one sample per block, so a
	// chunk's columns are samples of exactly one tile. The World's output
	// does not depend on it; the archive's keys and the cost of a chunk
	// do. Default (0): DefaultTileSize.
	TileSize int
	// CacheTiles bounds how many recently used tiles the World keeps in
	// memory so neighbouring chunks do not read the archive again. A tile
	// of size T holds about 5*T*T bytes (21 KiB at 64), 3*T*T (13 KiB)
	// where no water lies on it. Default (0):
	// DefaultCacheTiles.
	CacheTiles int
}

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if t := o.TileSize; t != 0 && (t < MinTileSize || t > MaxTileSize || bits.OnesCount(uint(t)) != 1) {
		errs = append(errs, fmt.Errorf("procworld: tile size %d: want 0 (default) or a power of two from %d to %d", t, MinTileSize, MaxTileSize))
	}
	if o.CacheTiles < 0 {
		errs = append(errs, fmt.Errorf("procworld: cache tiles %d: want 0 (default) or more", o.CacheTiles))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.TileSize == 0 {
		o.TileSize = DefaultTileSize
	}
	if o.CacheTiles == 0 {
		o.CacheTiles = DefaultCacheTiles
	}
	return o
}

// World is the procedural world as a chunk source: it reads heightfield
// tiles from a terrain.Source (normally an archive in front of the
// procedural generator) and turns their samples into chunks. It implements
// world.Source and world.Screener.
//
// Create one with New; the zero value is not usable. A World is safe for
// concurrent use; concurrent reads that need the same tile load it once.
type World struct {
	src   terrain.Source
	size  int64 // tile edge in blocks
	shift uint  // log2(size / ChunkSize): chunk -> tile index
	seed  uint64
	tiles *tileCache
}

var (
	_ world.Source   = (*World)(nil)
	_ world.Screener = (*World)(nil)
)

// New returns a World reading tiles from src. When src's Params are
// procgen.Params (as for a procgen.Generator or an archive wrapping one),
// their Seed also seeds the decorations; other sources decorate with seed
// 0. Elevations are read as block y and clamped to the build height.
func New(src terrain.Source, opts Options) (*World, error) {
	var errs []error
	if src == nil {
		errs = append(errs, errors.New("procworld: nil terrain source"))
	}
	if err := opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	w := &World{
		src:   src,
		size:  int64(opts.TileSize),
		shift: uint(bits.TrailingZeros(uint(opts.TileSize / world.ChunkSize))),
	}
	if p, ok := src.Params().(procgen.Params); ok {
		w.seed = uint64(p.Seed)
	}
	w.tiles = newTileCache(opts.CacheTiles, w.loadTile)
	return w, nil
}

// TileRequest returns the request whose tile holds chunk pos's columns,
// for pre-generating an area or inspecting the archive. It returns
// world.ErrOutside (in a *world.PosError) for a chunk outside the world.
func (w *World) TileRequest(pos geom.Chunk) (terrain.Request, error) {
	if !inside(pos) {
		return terrain.Request{}, &world.PosError{Pos: pos, Err: world.ErrOutside}
	}
	return w.request(w.tileOf(pos)), nil
}

func inside(pos geom.Chunk) bool {
	return pos.X >= -MaxChunk && pos.X < MaxChunk && pos.Z >= -MaxChunk && pos.Z < MaxChunk
}

func (w *World) tileOf(pos geom.Chunk) tileKey {
	return tileKey{pos.X >> w.shift, pos.Z >> w.shift}
}

func (w *World) request(k tileKey) terrain.Request {
	return terrain.Request{
		OriginX:    k.x * w.size,
		OriginZ:    k.z * w.size,
		Size:       int32(w.size),
		Resolution: int32(w.size),
		Border:     1,
	}
}

// loadTile asks the source for tile k, checks what it returns, so a
// faulty source cannot make chunk building index out of range, and keeps
// its grid.
func (w *World) loadTile(ctx context.Context, k tileKey) (*grid, error) {
	req := w.request(k)
	t, err := w.src.Tile(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("procworld: %v: %w", req, err)
	}
	if err := t.Validate(req); err != nil {
		return nil, fmt.Errorf("procworld: %v from %v: %w", req, w.src.Producer(), err)
	}
	return newGrid(t), nil
}

// Load implements world.Source: the chunk's column summaries and a
// world.BlockReader that synthesises every block on demand. Errors are
// wrapped in *world.PosError: world.ErrOutside for a chunk beyond
// ±MaxChunk, and the source's errors (prefixed "procworld:") or an invalid
// tile's; ctx.Err() comes unwrapped when ctx has ended. The procedural
// world is generated everywhere, so Load never returns
// world.ErrUngenerated.
func (w *World) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	t, err := w.tile(ctx, pos)
	if err != nil {
		return nil, err
	}
	return w.newChunk(t, pos, true), nil
}

// Summary implements world.Screener: the same column summaries as Load,
// with Blocks nil. Errors are as for Load.
func (w *World) Summary(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	t, err := w.tile(ctx, pos)
	if err != nil {
		return nil, err
	}
	return w.newChunk(t, pos, false), nil
}

func (w *World) tile(ctx context.Context, pos geom.Chunk) (*grid, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !inside(pos) {
		return nil, &world.PosError{Pos: pos, Err: world.ErrOutside}
	}
	t, err := w.tiles.get(ctx, w.tileOf(pos))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, ctxErr
		}
		return nil, &world.PosError{Pos: pos, Err: err}
	}
	return t, nil
}

// Stats are a World's tile cache counters (since New) and gauge.
type Stats struct {
	// TileHits counts chunk reads answered by a cached tile.
	TileHits int64
	// TileShared counts chunk reads that waited for another read's load of
	// the same tile.
	TileShared int64
	// TileLoads counts tiles requested from the source (one per
	// single-flight group, failed ones included).
	TileLoads int64
	// Tiles is the number of tiles cached now.
	Tiles int
}

// Stats returns the World's counters.
func (w *World) Stats() Stats {
	return Stats{
		TileHits:   w.tiles.hits.Load(),
		TileShared: w.tiles.shared.Load(),
		TileLoads:  w.tiles.loads.Load(),
		Tiles:      w.tiles.len(),
	}
}
