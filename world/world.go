package world

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/blockdata"
)

// Interner maps names to small integers and back. IDs are dense, start at
// 0 and are never reused. The zero value is not usable: use NewInterner.
// An Interner is safe for concurrent use; ID takes a read lock on the fast
// path.
type Interner struct {
	mu    sync.RWMutex // protects the following fields
	ids   map[string]uint32
	names []string
}

// NewInterner returns an interner whose first IDs are the given names, in
// order (so well-known names get fixed IDs).
func NewInterner(first ...string) *Interner {
	in := &Interner{ids: make(map[string]uint32)}
	for _, n := range first {
		in.ID(n)
	}
	return in
}

// ID returns the ID of name, adding it when new.
func (in *Interner) ID(name string) uint32 {
	in.mu.RLock()
	id, ok := in.ids[name]
	in.mu.RUnlock()
	if ok {
		return id
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if id, ok := in.ids[name]; ok {
		return id
	}
	id = uint32(len(in.names))
	in.ids[name] = id
	in.names = append(in.names, name)
	return id
}

// Lookup returns the ID of name without adding it.
func (in *Interner) Lookup(name string) (uint32, bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	id, ok := in.ids[name]
	return id, ok
}

// Name returns the name of id, or "" for an ID never handed out.
func (in *Interner) Name(id uint32) string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if int(id) < len(in.names) {
		return in.names[id]
	}
	return ""
}

// Len returns the number of names interned.
func (in *Interner) Len() int {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return len(in.names)
}

// BlockID is an interned block state: a namespaced block name, followed by
// its properties in brackets, sorted by key, when it has any
// ("minecraft:water[level=0]", "minecraft:oak_leaves[persistent=true,waterlogged=false]").
// Unknown names are ordinary IDs: never an error.
type BlockID uint32

// BiomeID is an interned namespaced biome name ("minecraft:plains").
type BiomeID uint32

// Blocks and Biomes are the process-wide name tables. Air is BlockID 0 and
// AirBlock; the void biome is BiomeID 0.
var (
	Blocks = NewInterner("minecraft:air", "minecraft:cave_air", "minecraft:void_air")
	Biomes = NewInterner("minecraft:the_void")
)

// Well-known IDs.
const (
	Air     BlockID = 0
	CaveAir BlockID = 1
	VoidAir BlockID = 2
)

// Block returns the ID of a block state name (see BlockID for the form).
func Block(name string) BlockID { return BlockID(Blocks.ID(name)) }

// Biome returns the ID of a biome name.
func Biome(name string) BiomeID { return BiomeID(Biomes.ID(name)) }

func (b BlockID) String() string { return Blocks.Name(uint32(b)) }
func (b BiomeID) String() string { return Biomes.Name(uint32(b)) }

// IsAir reports whether b is one of the air blocks.
func (b BlockID) IsAir() bool { return b <= VoidAir }

// IsFluid reports whether block state b is a fluid or holds one: water,
// lava, bubble columns, underwater plants, or any state with
// waterlogged=true. The answer is computed once per ID and cached, so it
// costs a slice index on the hot path.
//
// The cache is copied on write: readers index a published table without
// a lock, so a table is never written once it is published; a new answer
// goes into a copy (once per ID, a few thousand at most), published in
// its place.
func IsFluid(b BlockID) bool {
	if t := *fluidTable.Load(); int(b) < len(t) && t[b] != 0 {
		return t[b] == 2
	}
	fluidMu.Lock()
	defer fluidMu.Unlock()
	t := *fluidTable.Load()
	if int(b) < len(t) && t[b] != 0 {
		return t[b] == 2
	}
	n := max(len(t), 64)
	if int(b) >= n {
		n = max(int(b)+1, 2*len(t))
	}
	next := make([]uint8, n)
	copy(next, t)
	next[b] = 1
	if IsFluidName(b.String()) {
		next[b] = 2
	}
	fluidTable.Store(&next)
	return next[b] == 2
}

var (
	fluidMu    sync.Mutex // serialises the writers of fluidTable
	fluidTable = func() *atomic.Pointer[[]uint8] {
		var p atomic.Pointer[[]uint8]
		p.Store(new([]uint8))
		return &p
	}()
)

// IsFluidName reports whether a block state name (see BlockID) is a fluid
// or holds one, as IsFluid does for an interned ID.
func IsFluidName(state string) bool {
	name, props, _ := strings.Cut(state, "[")
	switch name {
	case "minecraft:water", "minecraft:lava", "minecraft:flowing_water", "minecraft:flowing_lava",
		"minecraft:bubble_column", "minecraft:seagrass", "minecraft:tall_seagrass",
		"minecraft:kelp", "minecraft:kelp_plant":
		return true
	}
	return strings.Contains(props, "waterlogged=true")
}

// NoTop is Column.Top for a column with no block at all (a void column).
const NoTop = -1 << 15

// Column summarises one block column for landing checks. Its fields are
// ordered for size (20 bytes, not 24): a resident chunk holds 256 of them.
type Column struct {
	// Ground is the block at Top; Above the blocks at Top+1 and Top+2 (Air
	// above the build limit).
	Ground BlockID
	Above  [2]BlockID
	// Biome is the biome at Top.
	Biome BiomeID
	// Top is the y of the highest block that is not air (for Minecraft
	// sources: the MOTION_BLOCKING heightmap's block, so leaves and fluids
	// count and tall grass does not), or NoTop.
	Top int16
	// Fluid reports a fluid on top: Ground is water, lava or a waterlogged
	// block (IsFluid), so the solid ground, if any, lies below Top.
	Fluid bool
}

// ChunkSize is the number of columns along a chunk edge.
const ChunkSize = geom.ChunkSize

// Chunk is one loaded chunk: its column summaries and, where the source
// has them, full blocks for vertical searches (a nether-like roof).
//
// A chunk either stores its summaries (Columns, as NewChunk makes them) or
// derives each on demand (Summaries): a procedural world keeps its terrain
// in memory anyway, and a chunk that only points at it costs a few hundred
// bytes instead of 5 KiB of summaries and as much of block profiles. A
// server keeps a chunk resident for every ready place, thousands of them.
// Read summaries through Column, which serves both.
//
// A Chunk is immutable once returned by a Source and safe for concurrent
// reads.
type Chunk struct {
	Pos geom.Chunk
	// MinY and MaxY bound the world's build height: MinY <= y < MaxY.
	MinY, MaxY int32
	// HasCeiling reports that the dimension has a roof (the Nether's
	// bedrock), and Ceiling is the y of the roof's top layer: a landing
	// lies wholly below it, feet and headroom, and the search for one
	// starts under it. Default false: no roof, MaxY bounds the landings.
	HasCeiling bool
	Ceiling    int32
	// Blocks gives any block of the chunk, or is nil when the source keeps
	// only column summaries.
	Blocks BlockReader
	// Data is the block collision data of the game version that saved the
	// chunk, or nil for the newest (sources without versions, such as the
	// procedural world).
	Data *blockdata.Table
	// Columns holds the stored column summaries, indexed z*16 + x in
	// chunk-local coordinates, or is nil when Summaries derives them.
	Columns *[ChunkSize * ChunkSize]Column
	// Summaries derives the column summaries of a chunk that does not
	// store them; it is used only when Columns is nil. It must give the
	// same summary for a column every time.
	Summaries ColumnReader
}

// ColumnReader derives column summaries: the summary of chunk-local
// column (x, z), 0 <= x, z < 16.
type ColumnReader interface {
	Column(x, z int) Column
}

// stored is a chunk and its column summaries in one allocation.
type stored struct {
	chunk Chunk
	cols  [ChunkSize * ChunkSize]Column
}

// NewChunk returns a chunk at pos with build height minY..maxY that
// stores its column summaries (Columns), all zero, for the caller to
// fill. The chunk and its summaries are one allocation.
func NewChunk(pos geom.Chunk, minY, maxY int32) *Chunk {
	s := new(stored)
	s.chunk = Chunk{Pos: pos, MinY: minY, MaxY: maxY, Columns: &s.cols}
	return &s.chunk
}

// Column returns the summary of local column (x, z), 0 <= x, z < 16: the
// stored one, or the one Summaries derives. A chunk with neither has zero
// summaries.
func (c *Chunk) Column(x, z int) Column {
	if c.Columns != nil {
		return c.Columns[z*ChunkSize+x]
	}
	if c.Summaries != nil {
		return c.Summaries.Column(x, z)
	}
	return Column{}
}

// AllColumns returns every column summary of c, indexed z*16 + x: a copy,
// whether c stores them or derives them.
func (c *Chunk) AllColumns() *[ChunkSize * ChunkSize]Column {
	all := new([ChunkSize * ChunkSize]Column)
	if c.Columns != nil {
		*all = *c.Columns
		return all
	}
	for z := range ChunkSize {
		for x := range ChunkSize {
			all[z*ChunkSize+x] = c.Column(x, z)
		}
	}
	return all
}

// BlockReader gives the block at chunk-local x, z (0..15) and world y.
// Outside the build height it returns Air.
type BlockReader interface {
	Block(x, y, z int) BlockID
}

// Errors a Source returns; callers branch on them. An ungenerated chunk
// and an unreadable one are rejections remembered for a while (until the
// chunk changes, for a watched world); an outside one is remembered for
// good.
var (
	ErrUngenerated = errors.New("world: chunk not generated")
	ErrOutside     = errors.New("world: chunk outside the world")
	// ErrUnreadable is matched (errors.Is) by the error of a chunk whose
	// stored data is damaged (corrupt or cut short) for good, as far as
	// the source can tell: reading it again will fail again until its
	// file changes. Other read errors (I/O) are transient.
	ErrUnreadable = errors.New("world: chunk unreadable")
)

// Source loads chunks. Implementations are safe for concurrent use and do
// their I/O on the calling goroutine: callers run them off any request path.
//
// Load returns the chunk at pos, ErrUngenerated (wrapped) when the world
// has no finished chunk there, ctx.Err() when ctx ends first, an error
// matching ErrUnreadable for damaged data, or another error for I/O (which
// callers treat as transient).
type Source interface {
	Load(ctx context.Context, pos geom.Chunk) (*Chunk, error)
}

// Screener is implemented by sources that can summarise a chunk's surface
// more cheaply than Load: the column summaries only (Blocks nil), for the
// backlog-to-cold screening stage, which holds no reservation. Errors are as
// for Load. Sources without a cheaper path need not implement it; callers
// fall back to Load (see Summary).
type Screener interface {
	Summary(ctx context.Context, pos geom.Chunk) (*Chunk, error)
}

// Summary returns the column summaries of the chunk at pos through src's
// Screener when it has one, or its Load otherwise.
func Summary(ctx context.Context, src Source, pos geom.Chunk) (*Chunk, error) {
	if s, ok := src.(Screener); ok {
		return s.Summary(ctx, pos)
	}
	return src.Load(ctx, pos)
}

// PosError wraps an error with the chunk it concerns.
type PosError struct {
	Pos geom.Chunk
	Err error
}

func (e *PosError) Error() string { return fmt.Sprintf("%v: %v", e.Pos, e.Err) }
func (e *PosError) Unwrap() error { return e.Err }
