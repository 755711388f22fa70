package webmap

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// ErrNotFound is wrapped by Backend errors for an unknown world or region;
// the Handler answers them with 404.
var ErrNotFound = errors.New("webmap: not found")

// World kinds (World.Kind).
const (
	KindProcedural = "procedural"
	KindMinecraft  = "minecraft"
)

// World describes one world of the Backend.
type World struct {
	Name string `json:"name"`
	// Kind is KindProcedural or KindMinecraft; it selects the renderer.
	Kind string `json:"kind"`
	// Producer names what computes the world's terrain, "name@version"
	// (terrain.Producer.String); it is part of every cached tile's key.
	Producer string `json:"producer"`
	// MinY and MaxY bound the build height: MinY <= y < MaxY.
	MinY int `json:"minY"`
	MaxY int `json:"maxY"`
}

// Border is a square world border (safety.Border).
type Border struct {
	CenterX float64 `json:"centerX"`
	CenterZ float64 `json:"centerZ"`
	Size    float64 `json:"size"`
}

// Region describes one region of the Backend. Its JSON form is what the
// map's page reads (see MarshalJSON).
type Region struct {
	Name  string
	World string
	// Shape is the region's area, in blocks, as configured.
	Shape geom.ShapeSpec
	// Chunks is the chunk bounding box of the shape, inclusive:
	// minCX, minCZ, maxCX, maxCZ.
	Chunks [4]int64
	// Border is the region's world border, or nil.
	Border *Border
}

// MarshalJSON encodes r as the page reads it: "name", "world", "shape",
// "chunks" and "border". The shape is an object with "kind", "centerX"
// and "centerZ"; a circle's or square's "radius" and "innerRadius" (its
// hole); a rectangle's "radiusX", "radiusZ", "rotation" and, as
// "innerRadius", the larger of its hole's half-extents (the page outlines
// the hole as a square). Zeros other than the centre are left out.
func (r Region) MarshalJSON() ([]byte, error) {
	return json.Marshal(regionJSON{Name: r.Name, World: r.World, Shape: shapeView(r.Shape), Chunks: r.Chunks, Border: r.Border})
}

// regionJSON is a Region as the page reads it: every field of Region.
type regionJSON struct {
	Name   string    `json:"name"`
	World  string    `json:"world"`
	Shape  shapeJSON `json:"shape"`
	Chunks [4]int64  `json:"chunks"`
	Border *Border   `json:"border"`
}

// shapeJSON is a shape as the page reads it.
type shapeJSON struct {
	Kind        string  `json:"kind"`
	CenterX     int64   `json:"centerX"`
	CenterZ     int64   `json:"centerZ"`
	Radius      int64   `json:"radius,omitempty"`
	RadiusX     int64   `json:"radiusX,omitempty"`
	RadiusZ     int64   `json:"radiusZ,omitempty"`
	Rotation    float64 `json:"rotation,omitempty"`
	InnerRadius int64   `json:"innerRadius,omitempty"`
}

// shapeView is the one conversion of a shape to the page's view.
func shapeView(s geom.ShapeSpec) shapeJSON {
	v := shapeJSON{Kind: s.Kind, CenterX: s.CenterX, CenterZ: s.CenterZ}
	if s.Kind == geom.ShapeRectangle {
		v.RadiusX, v.RadiusZ, v.Rotation = s.RadiusX, s.RadiusZ, s.Rotation
		v.InnerRadius = max(s.InnerX, s.InnerZ)
	} else {
		v.Radius, v.InnerRadius = s.Radius, s.Inner
	}
	return v
}

// ChunkRect is an inclusive rectangle of chunks.
type ChunkRect struct {
	MinX, MinZ, MaxX, MaxZ int64
}

// Len returns the number of chunks in r (0 when r is empty), saturating at
// the largest int64.
func (r ChunkRect) Len() int64 {
	if r.MaxX < r.MinX || r.MaxZ < r.MinZ {
		return 0
	}
	w, h := uint64(r.MaxX-r.MinX)+1, uint64(r.MaxZ-r.MinZ)+1
	if w != 0 && h > (1<<63-1)/w {
		return 1<<63 - 1
	}
	return int64(w * h)
}

// Memory cell states.
const (
	StateActive    = "active"    // the chunk is excluded from draws
	StateProbation = "probation" // expired, drawable, remembered for a while
)

// MemoryCell is the spatial memory's verdict on one chunk that holds a
// rejection.
type MemoryCell struct {
	X     int64  `json:"x"`
	Z     int64  `json:"z"`
	Cause string `json:"cause"` // memory.Cause name
	Tier  string `json:"tier"`  // static or dynamic
	State string `json:"state"` // StateActive or StateProbation
	// TTLLeft is the time left in State, in seconds: until an active
	// dynamic cell goes on probation, until a probation cell is forgotten;
	// -1 for static cells, which never expire.
	TTLLeft float64 `json:"ttlLeft"`
}

// MemoryView is the memory of a chunk rectangle at one instant.
type MemoryView struct {
	Now   time.Time
	Cells []MemoryCell
}

// Cache stages (CachedLocation.Stage).
const (
	StageCold = "cold"
	StageHot  = "hot"
)

// CachedLocation is one checked place waiting in a region's pipeline.
type CachedLocation struct {
	X     int64  `json:"x"`
	Y     int64  `json:"y"`
	Z     int64  `json:"z"`
	Stage string `json:"stage"` // StageCold or StageHot
	// Sink names the hot sink holding it ("general", "login", ...); empty
	// for cold entries.
	Sink string `json:"sink"`
	// Group, when positive, numbers the cached group subspace the place
	// belongs to: the places of one subspace share it (within one
	// answer). Radius is then their group radius, in blocks: every place
	// of a group served from the subspace lies within it of the group's
	// centre. Both are absent (0) for single places.
	Group  int `json:"group,omitempty"`
	Radius int `json:"radius,omitempty"`
}

// Delivery is one place handed out.
type Delivery struct {
	X    int64     `json:"x"`
	Y    int64     `json:"y"`
	Z    int64     `json:"z"`
	Sink string    `json:"sink"`
	At   time.Time `json:"at"` // encoded RFC 3339 with nanoseconds
}

// MemoryState is the memory's verdict on one chunk (Inspection.Memory).
type MemoryState struct {
	Cause   string  `json:"cause"`
	State   string  `json:"state"`
	TTLLeft float64 `json:"ttlLeft"`
}

// XZ is a pair of block or chunk coordinates.
type XZ struct {
	X int64 `json:"x"`
	Z int64 `json:"z"`
}

// Inspection is what a region says about one block column.
type Inspection struct {
	Block   XZ     `json:"block"`
	Chunk   XZ     `json:"chunk"`
	InShape bool   `json:"inShape"`
	Biome   string `json:"biome"`
	// Ground is the block state stood on ("" when unknown); Y the landing
	// y (the block the feet occupy) or the column's top + 1.
	Ground string `json:"ground"`
	Y      int    `json:"y"`
	// Safe and Reason are the region's safety checker's result on the
	// column ("accepted", "ground unsafe", ..., or "not generated" and
	// "outside the world" when the chunk cannot be read).
	Safe   bool             `json:"safe"`
	Reason string           `json:"reason"`
	Memory *MemoryState     `json:"memory"`
	Cached []CachedLocation `json:"cached"`
}

// Backend is what the map reads: the engine's worlds and regions, seen
// read-only. Package webmap/enginemap implements it over an
// *engine.Engine.
//
// Implementations are safe for concurrent use. Methods naming an unknown
// world or region return an error wrapping ErrNotFound.
type Backend interface {
	// Worlds returns every world, sorted by name.
	Worlds() []World
	// Regions returns every region, sorted by name.
	Regions() []Region
	// WorldEpoch returns a counter that changes whenever any terrain of
	// the world changed on disk (0 for a world that never changes). It
	// must not allocate or block: it is read on every tile request.
	WorldEpoch(world string) uint64
	// ChunkEpoch returns the change count of one chunk (world.Epochs.Of):
	// a chunk whose count is unchanged has unchanged terrain. Lock-free.
	ChunkEpoch(world string, c geom.Chunk) uint32
	// Summary returns the column summaries of a chunk (world.Summary
	// through the world's source), or an error wrapping
	// world.ErrUngenerated or world.ErrOutside where there is no terrain.
	Summary(ctx context.Context, world string, c geom.Chunk) (*world.Chunk, error)
	// Heightfield returns the terrain tile of req for meshes: the
	// procedural world's heightfield, a Minecraft world's column tops
	// (see SurfaceTile).
	Heightfield(ctx context.Context, world string, req terrain.Request) (*terrain.Tile, error)
	// Relief returns the terrain of req for a zoomed-out tile of a
	// procedural world, sampled directly at the request's spacing: the
	// heightfield without the features narrower than a few blocks that
	// would make a coarse request cost more than a fine one (the
	// procedural world's drainage: procgen.Relief). It is asked only of
	// worlds of KindProcedural, at 8 or more blocks per sample.
	Relief(ctx context.Context, world string, req terrain.Request) (*terrain.Tile, error)
	// Memory returns the cells of the region's memory within r that hold
	// a rejection (active or on probation).
	Memory(region string, r ChunkRect) (MemoryView, error)
	// Cached returns up to limit cached locations of the region, and
	// whether there were more.
	Cached(region string, limit int) ([]CachedLocation, bool, error)
	// Deliveries returns the region's latest deliveries, oldest first (at
	// most FeedSize).
	Deliveries(region string) ([]Delivery, error)
	// SubscribeDeliveries returns a channel receiving every later
	// delivery of the region (dropped when the channel's buffer is full)
	// and a function that ends the subscription and closes the channel.
	SubscribeDeliveries(region string) (<-chan Delivery, func(), error)
	// Inspect describes block column b of the region.
	Inspect(ctx context.Context, region string, b geom.Block) (Inspection, error)
}

// Ungenerated reports whether err says there is no terrain to draw
// (world.ErrUngenerated or world.ErrOutside).
func Ungenerated(err error) bool {
	return errors.Is(err, world.ErrUngenerated) || errors.Is(err, world.ErrOutside)
}
