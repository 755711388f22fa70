package anviltest

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/Tnze/go-mc/nbt"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/blockdata"
)

// DefaultDataVersion is the data version chunks are written with unless
// told otherwise: 3955, Minecraft 1.21.1.
const DefaultDataVersion = 3955

// Air is the block every position holds until it is set.
const Air = "minecraft:air"

// Chunk is one 1.18+ chunk being built: 16 x 16 columns over the
// dimension's build height, every block air until set. Coordinates of its
// methods are chunk-local x and z (0..15) and world y.
//
// Create one with NewChunk; the zero value is not usable. A Chunk is not
// safe for concurrent use.
type Chunk struct {
	// X and Z are the chunk's position (block x >> 4, z >> 4).
	X, Z int
	// Dim is the dimension the chunk belongs to; it selects the region
	// folder WriteSave puts it in.
	Dim anvil.Dimension
	// DataVersion is written as the chunk's DataVersion and selects the
	// blockdata table the heightmap is computed with. Default
	// DefaultDataVersion; it must be at least anvil.DataVersionTopLevel
	// (1.18), the only layout written.
	DataVersion int32
	// Status is the generation status. Default "minecraft:full".
	Status string
	// Biome is every section's single biome. Default minecraft:plains,
	// nether_wastes or the_end by dimension.
	Biome string
	// Modified is the save time written in the region header. Default:
	// the time of writing.
	Modified time.Time
	// NoHeightmaps leaves the Heightmaps compound out (as an unfinished
	// chunk has none). Default false.
	NoHeightmaps bool
	// Legacy, when not nil, writes the chunk in the layout saved before
	// 1.13 instead (see Legacy); DataVersion and Status are then not
	// written. Default nil.
	Legacy *Legacy
	// GzipAsZlib makes the region writers compress the chunk with gzip
	// but declare zlib (scheme 2) in front of it, as some third-party
	// tools have written chunks: the game, and the reader, fail on it.
	// Default false.
	GzipAsZlib bool

	minY, height int
	sections     []section // bottom up
}

// section is one 16 x 16 x 16 cube: a palette of canonical state strings
// and, once it holds more than air, an index per block (y, z, x order).
type section struct {
	palette []string
	index   map[string]uint16
	blocks  *[4096]uint16
}

// Build heights of the dimensions as the game sets them.
const (
	OverworldMinY, OverworldHeight = -64, 384
	NetherMinY, NetherHeight       = 0, 256
	EndMinY, EndHeight             = 0, 256
)

// NewChunk returns an all-air chunk at chunk position (x, z) of dimension
// dim, with the game's build height for it: y -64..319 in the overworld
// (and any dimension not vanilla), 0..255 in the nether and the end.
func NewChunk(x, z int, dim anvil.Dimension) *Chunk {
	c := &Chunk{X: x, Z: z, Dim: dim, DataVersion: DefaultDataVersion, Status: "minecraft:full"}
	switch anvil.Dimension(dim.ID()) {
	case anvil.Nether:
		c.minY, c.height, c.Biome = NetherMinY, NetherHeight, "minecraft:nether_wastes"
	case anvil.End:
		c.minY, c.height, c.Biome = EndMinY, EndHeight, "minecraft:the_end"
	default:
		c.minY, c.height, c.Biome = OverworldMinY, OverworldHeight, "minecraft:plains"
	}
	c.alloc()
	return c
}

// NewChunkIn is NewChunk with the build height given: y from minY up to
// minY+height-1 (height a positive multiple of 16, minY of 16).
func NewChunkIn(x, z int, dim anvil.Dimension, minY, height int) (*Chunk, error) {
	if minY%16 != 0 || height <= 0 || height%16 != 0 {
		return nil, fmt.Errorf("anviltest: build height from %d over %d blocks: want multiples of 16", minY, height)
	}
	c := NewChunk(x, z, dim)
	c.minY, c.height = minY, height
	c.alloc()
	return c, nil
}

// alloc makes the chunk's sections, all air.
func (c *Chunk) alloc() {
	c.sections = make([]section, c.height/16)
	for i := range c.sections {
		c.sections[i] = section{palette: []string{Air}, index: map[string]uint16{Air: 0}}
	}
}

// MinY returns the lowest block y of the chunk.
func (c *Chunk) MinY() int { return c.minY }

// MaxY returns one above the highest block y of the chunk.
func (c *Chunk) MaxY() int { return c.minY + c.height }

// inside reports whether the chunk-local position exists.
func (c *Chunk) inside(x, y, z int) bool {
	return x >= 0 && x < 16 && z >= 0 && z < 16 && y >= c.minY && y < c.MaxY()
}

// Set puts block state at chunk-local (x, z) and world y. It fails on a
// position outside the chunk or a malformed state.
func (c *Chunk) Set(x, y, z int, state string) error {
	if !c.inside(x, y, z) {
		return fmt.Errorf("anviltest: (%d, %d, %d) is outside chunk %d, %d (local x and z 0..15, y %d..%d)", x, y, z, c.X, c.Z, c.minY, c.MaxY()-1)
	}
	st, err := canonical(state)
	if err != nil {
		return err
	}
	s := &c.sections[(y-c.minY)>>4]
	i, ok := s.index[st]
	if !ok {
		i = uint16(len(s.palette))
		s.palette = append(s.palette, st)
		s.index[st] = i
	}
	if s.blocks == nil {
		if i == 0 {
			return nil
		}
		s.blocks = new([4096]uint16)
	}
	s.blocks[(y&15)<<8|z<<4|x] = i
	return nil
}

// Fill sets every block of the box from (x0, y0, z0) to (x1, y1, z1),
// both corners included, to state.
func (c *Chunk) Fill(x0, y0, z0, x1, y1, z1 int, state string) error {
	if x0 > x1 || y0 > y1 || z0 > z1 {
		return fmt.Errorf("anviltest: fill from (%d, %d, %d) to (%d, %d, %d) is empty", x0, y0, z0, x1, y1, z1)
	}
	if !c.inside(x0, y0, z0) || !c.inside(x1, y1, z1) {
		return fmt.Errorf("anviltest: fill from (%d, %d, %d) to (%d, %d, %d) leaves chunk %d, %d", x0, y0, z0, x1, y1, z1, c.X, c.Z)
	}
	if _, err := canonical(state); err != nil {
		return err
	}
	for y := y0; y <= y1; y++ {
		for z := z0; z <= z1; z++ {
			for x := x0; x <= x1; x++ {
				if err := c.Set(x, y, z, state); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Get returns the block state at chunk-local (x, z) and world y in
// FormatState's form; Air outside the chunk.
func (c *Chunk) Get(x, y, z int) string {
	if !c.inside(x, y, z) {
		return Air
	}
	s := &c.sections[(y-c.minY)>>4]
	if s.blocks == nil {
		return s.palette[0]
	}
	return s.palette[s.blocks[(y&15)<<8|z<<4|x]]
}

// BlocksMotion reports whether a block state counts towards the
// MOTION_BLOCKING heightmap, approximating the game's rule (the state
// blocks motion, or holds a fluid) with the collision shapes of table t:
//
//   - a fluid (HoldsFluid) blocks;
//   - signs, banners, pressure plates and the moving piston block: the
//     game forces them solid though they have no collision, which is why
//     real heightmaps stop on them;
//   - cobweb and bamboo_sapling do not (the game excepts them);
//   - otherwise a state blocks when it has collision, except floors lower
//     than 3/16 of a block (carpet, thin snow), which the game does not
//     count as solid;
//   - a state t does not know blocks, as most unknown (modded) blocks are
//     solid cubes.
func BlocksMotion(t *blockdata.Table, state string) bool {
	name, props, err := ParseState(state)
	if err != nil || IsAir(name) {
		return false
	}
	switch {
	case HoldsFluid(name, props), forcedSolid(name):
		return true
	case name == "minecraft:cobweb" || name == "minecraft:bamboo_sapling":
		return false
	}
	sh, ok := t.State(FormatState(name, props))
	if !ok {
		return true
	}
	if sh == blockdata.Empty {
		return false
	}
	if h, ok := sh.FloorHeight(); ok && !sh.FullCube() && h < 3 {
		return false
	}
	return true
}

// table returns the blockdata table of the chunk's data version.
func (c *Chunk) table() (*blockdata.Table, error) {
	t := blockdata.ForDataVersion(c.DataVersion)
	if t == nil {
		return nil, fmt.Errorf("anviltest: no block data for data version %d", c.DataVersion)
	}
	return t, nil
}

// Heights returns the chunk's MOTION_BLOCKING values, x + 16 z order:
// one above the highest block that BlocksMotion, counted from MinY (0 for
// a column without one).
func (c *Chunk) Heights() ([256]int, error) {
	var out [256]int
	t, err := c.table()
	if err != nil {
		return out, err
	}
	memo := map[string]bool{}
	blocks := func(st string) bool {
		b, ok := memo[st]
		if !ok {
			b = BlocksMotion(t, st)
			memo[st] = b
		}
		return b
	}
	c.heights(&out, blocks)
	return out, nil
}

// heights fills out with one above the highest y where pred holds, from
// MinY (0: none).
func (c *Chunk) heights(out *[256]int, pred func(string) bool) {
	for i := range out {
		x, z := i&15, i>>4
		out[i] = 0
		for y := c.MaxY() - 1; y >= c.minY; y-- {
			if s := &c.sections[(y-c.minY)>>4]; s.blocks == nil && !pred(s.palette[0]) {
				y = y &^ 15 // skip the section (the loop steps below it)
				continue
			}
			if pred(c.Get(x, y, z)) {
				out[i] = y - c.minY + 1
				break
			}
		}
	}
}

// Top returns the world y of the highest block of column (x, z) that
// BlocksMotion, and false when it has none.
func (c *Chunk) Top(x, z int) (int, bool, error) {
	h, err := c.Heights()
	if err != nil {
		return 0, false, err
	}
	v := h[z<<4|x]
	return c.minY + v - 1, v > 0, nil
}

// Encode returns the chunk's uncompressed NBT in the 1.18+ layout, or
// the pre-1.13 one when Legacy is set.
func (c *Chunk) Encode() ([]byte, error) {
	if c.Legacy != nil {
		return c.encodeLegacy()
	}
	if c.DataVersion < anvil.DataVersionTopLevel {
		return nil, fmt.Errorf("anviltest: data version %d is older than the 1.18 layout (%d), the only one written", c.DataVersion, anvil.DataVersionTopLevel)
	}
	m := map[string]any{
		"DataVersion":    c.DataVersion,
		"Status":         c.Status,
		"xPos":           int32(c.X),
		"zPos":           int32(c.Z),
		"yPos":           int32(c.minY >> 4),
		"LastUpdate":     int64(0),
		"InhabitedTime":  int64(0),
		"isLightOn":      byte(1),
		"sections":       c.encodeSections(),
		"block_entities": []map[string]any{},
		"structures":     map[string]any{"References": map[string]any{}, "starts": map[string]any{}},
	}
	if !c.NoHeightmaps {
		motion, err := c.Heights()
		if err != nil {
			return nil, err
		}
		var surface [256]int
		c.heights(&surface, func(st string) bool { name, _, _ := ParseState(st); return !IsAir(name) })
		w := bits.Len(uint(c.height))
		m["Heightmaps"] = map[string]any{
			"MOTION_BLOCKING": Pack(motion[:], w),
			"WORLD_SURFACE":   Pack(surface[:], w),
		}
	}
	b, err := nbt.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("anviltest: chunk %d, %d: %w", c.X, c.Z, err)
	}
	return b, nil
}

func (c *Chunk) encodeSections() []map[string]any {
	out := make([]map[string]any, 0, len(c.sections))
	for i := range c.sections {
		s := &c.sections[i]
		pal, data := s.compact()
		entries := make([]map[string]any, len(pal))
		for k, st := range pal {
			name, props, _ := ParseState(st) // canonical strings parse
			e := map[string]any{"Name": name}
			if len(props) > 0 {
				e["Properties"] = props
			}
			entries[k] = e
		}
		bs := map[string]any{"palette": entries}
		if len(pal) > 1 {
			bs["data"] = Pack(data, max(4, bits.Len(uint(len(pal)-1))))
		}
		out = append(out, map[string]any{
			"Y":            int8(c.minY>>4 + i),
			"block_states": bs,
			"biomes":       map[string]any{"palette": []string{c.Biome}},
		})
	}
	return out
}

// compact returns the palette entries the section uses, in first-use
// order, and the blocks indexed into it (nil for a single entry).
func (s *section) compact() ([]string, []int) {
	if s.blocks == nil {
		return s.palette[:1], nil
	}
	remap := make([]int, len(s.palette))
	for i := range remap {
		remap[i] = -1
	}
	var pal []string
	data := make([]int, 4096)
	for i, b := range s.blocks {
		if remap[b] < 0 {
			remap[b] = len(pal)
			pal = append(pal, s.palette[b])
		}
		data[i] = remap[b]
	}
	if len(pal) == 1 {
		return pal, nil
	}
	return pal, data
}

// Pack packs values of width bits into longs the way the game does from
// 1.16 on: 64/width values per long, lowest bits first, none straddling
// two longs.
func Pack(values []int, width int) []int64 {
	if width <= 0 || width > 32 {
		return nil
	}
	per := 64 / width
	out := make([]int64, (len(values)+per-1)/per)
	mask := uint64(1)<<width - 1
	for i, v := range values {
		out[i/per] |= int64((uint64(v) & mask) << ((i % per) * width))
	}
	return out
}
