package anvil

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Tnze/go-mc/nbt"

	"github.com/rtpengine/rtp/world"
)

// The oracle: an independent reading of the fixtures for the tests. It
// decodes chunks with a general reflective NBT library (go-mc) into maps and
// unpacks block data bit by bit, sharing no code with the reader except the
// legacy name tables (definitions, not decoding).

// oracleChunk is one chunk as the oracle reads it.
type oracleChunk struct {
	lv          *oracleLevel
	dataVersion int32
	status      string
	hasStatus   bool
	terrainPop  int8
	hasTP       bool
	x, z        int32
	minY, maxY  int
	straddle    bool
	// Per section, indexed by Y+128:
	palettes  [256][]string // block-state names
	paletteID [256][]world.BlockID
	indices   [256][]uint16       // 4096 palette indices (y, z, x order)
	legacyIDs [256][]int          // 4096 numeric id<<4|meta (before 1.13)
	biomes    [256][]string       // 64 biome names (1.18 on)
	blocking  [256][]bool         // 4096 oracleBlocking values
	raw       [256]*oracleSection // as decoded, unpacked by ensure
	hasBiomes bool
	secYs     []int    // section Ys holding blocks, descending
	heights   []uint16 // unpacked MOTION_BLOCKING, nil when absent
}

// The oracle's typed view of a chunk, decoded reflectively by go-mc: the
// root holds 1.18+ chunks and DataVersion, Level the older ones.
type oracleNBT struct {
	DataVersion int32        `nbt:"DataVersion"`
	Level       *oracleLevel `nbt:"Level"`
	oracleLevel
}

type oracleLevel struct {
	Status           *string `nbt:"Status"`
	XPos             *int32  `nbt:"xPos"`
	ZPos             *int32  `nbt:"zPos"`
	YPos             *int32  `nbt:"yPos"`
	TerrainPopulated *int8   `nbt:"TerrainPopulated"`
	Heightmaps       struct {
		MotionBlocking []int64 `nbt:"MOTION_BLOCKING"`
	} `nbt:"Heightmaps"`
	HeightMap []int32         `nbt:"HeightMap"`
	Biomes    any             `nbt:"Biomes"`
	Sections  []oracleSection `nbt:"Sections"`
	Sections2 []oracleSection `nbt:"sections"`
}

type oracleSection struct {
	Y           int8          `nbt:"Y"`
	Palette     []oracleState `nbt:"Palette"`
	BlockStates []int64       `nbt:"BlockStates"`
	States      *oracleStates `nbt:"block_states"`
	Biomes      *oracleBiomes `nbt:"biomes"`
	Blocks      []byte        `nbt:"Blocks"`
	Add         []byte        `nbt:"Add"`
	Data        []byte        `nbt:"Data"`
}

type oracleStates struct {
	Palette []oracleState `nbt:"palette"`
	Data    []int64       `nbt:"data"`
}

type oracleBiomes struct {
	Palette []string `nbt:"palette"`
	Data    []int64  `nbt:"data"`
}

type oracleState struct {
	Name       string            `nbt:"Name"`
	Properties map[string]string `nbt:"Properties"`
}

// oracleRaw returns the compressed payload of every chunk of a region
// file, by slot, reading the file with nothing but encoding/binary.
func oracleRaw(tb testing.TB, file string) map[int][]byte {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[int][]byte{}
	for i := range 1024 {
		loc := binary.BigEndian.Uint32(b[4*i:])
		if loc == 0 {
			continue
		}
		off := int(loc>>8) * 4096
		n := int(binary.BigEndian.Uint32(b[off:]))
		if b[off+4] != 2 {
			tb.Fatalf("%s slot %d: scheme %d, the fixtures are all zlib", file, i, b[off+4])
		}
		out[i] = b[off+5 : off+4+n]
	}
	return out
}

// oracleInflater decompresses payloads with the standard library into one
// reused buffer, and reports whether a zlib stream stops without its final
// block and checksum (the game never reads that far). The bytes returned
// are valid until the next call.
type oracleInflater struct {
	src bytes.Reader
	zr  io.ReadCloser
	buf bytes.Buffer
}

func (z *oracleInflater) inflate(tb testing.TB, payload []byte) ([]byte, bool) {
	tb.Helper()
	z.src.Reset(payload)
	var err error
	if z.zr == nil {
		z.zr, err = zlib.NewReader(&z.src)
	} else {
		err = z.zr.(zlib.Resetter).Reset(&z.src, nil)
	}
	if err != nil {
		tb.Fatal(err)
	}
	z.buf.Reset()
	_, err = z.buf.ReadFrom(z.zr)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return z.buf.Bytes(), true
	}
	if err != nil {
		tb.Fatal(err)
	}
	return z.buf.Bytes(), false
}

func oracleDecode(tb testing.TB, raw []byte) *oracleChunk {
	tb.Helper()
	var n oracleNBT
	if err := nbt.Unmarshal(raw, &n); err != nil {
		tb.Fatalf("oracle: %v", err)
	}
	o := &oracleChunk{lv: &n.oracleLevel, dataVersion: n.DataVersion, minY: 0, maxY: 256}
	if n.Level != nil {
		o.lv = n.Level
	}
	lv := o.lv
	if lv.Status != nil {
		o.status, o.hasStatus = *lv.Status, true
	}
	if lv.TerrainPopulated != nil {
		o.terrainPop, o.hasTP = *lv.TerrainPopulated, true
	}
	if lv.XPos == nil || lv.ZPos == nil {
		tb.Fatal("oracle: chunk without xPos/zPos")
	}
	o.x, o.z = *lv.XPos, *lv.ZPos
	if !o.full() {
		return o
	}
	o.straddle = o.dataVersion < 2529
	if lv.YPos != nil {
		o.minY = int(*lv.YPos) * 16
	}
	top := o.minY/16 + 1
	for _, sec := range append(lv.Sections, lv.Sections2...) {
		y := int(sec.Y)
		pal := sec.Palette
		if sec.States != nil {
			pal = sec.States.Palette
		}
		if pal != nil || sec.Blocks != nil {
			o.raw[y+128] = &sec
			o.secYs = append(o.secYs, y)
			if pal != nil {
				top = max(top, y+1)
			}
		}
		if b := sec.Biomes; b != nil {
			bits := 0
			if len(b.Palette) > 1 {
				bits = bitsFor(len(b.Palette))
			}
			out := make([]string, 64)
			for i, k := range oracleUnpack(b.Data, bits, 64, false) {
				out[i] = b.Palette[k]
			}
			o.biomes[y+128] = out
			o.hasBiomes = true
		}
	}
	if lv.YPos != nil {
		o.maxY = top * 16
	}
	sort.Sort(sort.Reverse(sort.IntSlice(o.secYs)))
	return o
}

// ensure unpacks section sy on first use: most sections of a chunk lie
// below every column's top and are never looked at.
func (o *oracleChunk) ensure(sy int) {
	if sy < -128 || sy > 127 || o.raw[sy+128] == nil || o.blocking[sy+128] != nil {
		return
	}
	sec := o.raw[sy+128]
	y := sy
	pal, data := sec.Palette, sec.BlockStates
	if sec.States != nil {
		pal, data = sec.States.Palette, sec.States.Data
	}
	if pal != nil {
		names := make([]string, len(pal))
		for i, e := range pal {
			names[i] = oracleStateName(e)
		}
		bits := 0
		if len(pal) > 1 {
			bits = max(4, bitsFor(len(pal)))
		}
		idx := oracleUnpack(data, bits, 4096, o.straddle)
		o.palettes[y+128], o.indices[y+128] = names, idx
		ids := make([]world.BlockID, len(names))
		for i, n := range names {
			ids[i] = world.Block(n)
		}
		o.paletteID[y+128] = ids
		bl := make([]bool, 4096)
		pb := make([]bool, len(names))
		for i, n := range names {
			pb[i] = oracleBlocking(n)
		}
		for i, k := range idx {
			bl[i] = pb[k]
		}
		o.blocking[y+128] = bl
		return
	}
	out := make([]int, 4096)
	for i := range out {
		id := int(sec.Blocks[i])
		if sec.Add != nil {
			id |= int(sec.Add[i/2]>>(4*(i%2))&15) << 8
		}
		m := 0
		if sec.Data != nil {
			m = int(sec.Data[i/2] >> (4 * (i % 2)) & 15)
		}
		out[i] = id<<4 | m
	}
	o.legacyIDs[y+128] = out
	bl := make([]bool, 4096)
	for i, k := range out {
		bl[i] = legacyBlocking(k)
	}
	o.blocking[y+128] = bl
}

func bitsFor(n int) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// oracleUnpack reads n values of width bits. It walks the longs as one
// bit stream (straddling) or in whole values per long, with a running
// position rather than the reader's index arithmetic.
func oracleUnpack(data []int64, bits, n int, straddle bool) []uint16 {
	out := make([]uint16, n)
	if bits == 0 {
		return out
	}
	mask := uint64(1)<<bits - 1
	if straddle {
		var acc uint64 // bits not yet consumed, lowest first
		have, w := 0, 0
		for i := range n {
			if have >= bits {
				out[i] = uint16(acc & mask)
				acc >>= bits
				have -= bits
				continue
			}
			next := uint64(data[w])
			w++
			out[i] = uint16((acc | next<<have) & mask)
			used := bits - have
			acc, have = 0, 64-used
			if used < 64 {
				acc = next >> used
			}
		}
		return out
	}
	per := 64 / bits
	i := 0
	for _, word := range data {
		u := uint64(word)
		for k := 0; k < per && i < n; k++ {
			out[i] = uint16(u & mask)
			u >>= bits
			i++
		}
	}
	return out
}

func oracleStateName(e oracleState) string {
	name, props := e.Name, e.Properties
	if len(props) == 0 {
		return name
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(name + "[")
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s=%s", k, props[k])
	}
	sb.WriteByte(']')
	return sb.String()
}

// full applies the documented rule: status full (or the 1.13 names), a 1.13
// upgrade of a populated chunk, before 1.13 TerrainPopulated, or neither
// a status nor TerrainPopulated recorded.
func (o *oracleChunk) full() bool {
	if !o.hasStatus && !o.hasTP {
		return true
	}
	switch o.status {
	case "full", "minecraft:full", "postprocessed", "fullchunk":
		return true
	case "mobs_spawned", "finalized":
		return o.hasTP && o.terrainPop == 1
	case "":
		return o.hasTP && o.terrainPop == 1
	}
	return false
}

func (o *oracleChunk) legacy() bool {
	for _, s := range o.legacyIDs {
		if s != nil {
			return true
		}
	}
	return false
}

var legacyBlockingMemo [1 << 16]atomic.Int32 // 0 unknown, 1 no, 2 yes

func legacyBlocking(k int) bool {
	if v := legacyBlockingMemo[k].Load(); v != 0 {
		return v == 2
	}
	b := oracleBlocking(legacyStateName(k>>4, k&15))
	legacyBlockingMemo[k].Store(map[bool]int32{false: 1, true: 2}[b])
	return b
}

// block returns the block name at local x, z and world y ("" for numeric
// chunks: use legacyID).
func (o *oracleChunk) block(x, y, z int) string {
	if y < o.minY || y >= o.maxY {
		return "minecraft:air"
	}
	o.ensure(y >> 4)
	if ix := o.indices[y>>4+128]; ix != nil {
		return o.palettes[y>>4+128][ix[(y&15)*256+z*16+x]]
	}
	if s := o.legacyIDs[y>>4+128]; s != nil {
		k := s[(y&15)*256+z*16+x]
		return legacyStateName(k>>4, k&15)
	}
	return "minecraft:air"
}

// blockID is block as an interned ID.
func (o *oracleChunk) blockID(x, y, z int) world.BlockID {
	if y < o.minY || y >= o.maxY {
		return world.Air
	}
	o.ensure(y >> 4)
	if ix := o.indices[y>>4+128]; ix != nil {
		return o.paletteID[y>>4+128][ix[(y&15)*256+z*16+x]]
	}
	if s := o.legacyIDs[y>>4+128]; s != nil {
		k := s[(y&15)*256+z*16+x]
		return legacyState(k>>4, k&15).id
	}
	return world.Air
}

func (o *oracleChunk) legacyID(x, y, z int) int {
	if y < 0 || y > 255 {
		return 0
	}
	o.ensure(y >> 4)
	if s := o.legacyIDs[y>>4+128]; s != nil {
		return s[(y&15)*256+z*16+x] >> 4
	}
	return 0
}

// motionTop returns the oracle's MOTION_BLOCKING top (-1 << 15 for none)
// from the stored heightmap, and whether there is one.
func (o *oracleChunk) motionTop(x, z int) (int, bool) {
	if o.heights == nil {
		d := o.lv.Heightmaps.MotionBlocking
		if d == nil {
			return 0, false
		}
		bits := 9
		if o.straddle {
			bits = len(d) / 4
		}
		o.heights = oracleUnpack(d, bits, 256, o.straddle)
	}
	v := int(o.heights[z*16+x])
	if v == 0 {
		return -1 << 15, true
	}
	return o.minY + v - 1, true
}

// oracleNonBlocking lists the names the fixtures hold above their
// MOTION_BLOCKING tops: plants, snow layers, redstone dust and comparators.
var oracleNonBlocking = []string{"air", "cave_air", "void_air", "grass", "short_grass",
	"tall_grass", "fern", "large_fern", "dead_bush", "dandelion", "poppy", "blue_orchid",
	"azure_bluet", "oxeye_daisy", "cornflower", "lily_of_the_valley", "lilac", "rose_bush",
	"peony", "sunflower", "snow", "sugar_cane", "brown_mushroom", "redstone_wire",
	"comparator", "vine", "lily_pad"}

func baseName(state string) string {
	n, _, _ := strings.Cut(state, "[")
	return strings.TrimPrefix(n, "minecraft:")
}

func oracleBlocking(state string) bool { return !slices.Contains(oracleNonBlocking, baseName(state)) }

// scanTop is the oracle's top-down scan for the highest blocking block.
func (o *oracleChunk) scanTop(x, z int) int {
	for _, sy := range o.secYs {
		o.ensure(sy)
		bl := o.blocking[sy+128]
		for y := 15; y >= 0; y-- {
			if wy := sy*16 + y; wy >= o.minY && wy < o.maxY && bl[y<<8|z<<4|x] {
				return wy
			}
		}
	}
	return -1 << 15
}

// Light opacity 0 in 1.8-1.12 (what the legacy HeightMap passes through):
// air, plants, glass, fences, rails, torches, redstone, snow layers...
var legacyTransparent = []int{0, 6, 20, 26, 27, 28, 31, 32, 37, 38, 39, 40, 50, 51, 55, 59,
	63, 64, 65, 66, 68, 69, 70, 71, 72, 75, 76, 77, 78, 83, 85, 90, 93, 94, 96, 101, 102,
	104, 105, 106, 107, 111, 113, 115, 117, 119, 127, 131, 132, 140, 141, 142, 143, 144,
	147, 148, 149, 150, 157, 160, 171, 175, 176, 177, 183, 184, 185, 186, 187, 188, 189,
	190, 191, 192, 193, 194, 195, 196, 197, 198, 207, 209, 217}

// lightTop scans for the highest block that stops sky light (numeric chunks).
func (o *oracleChunk) lightTop(x, z int) int {
	for y := 255; y >= 0; y-- {
		if !slices.Contains(legacyTransparent, o.legacyID(x, y, z)) {
			return y
		}
	}
	return -1 << 15
}

// biome returns the oracle's biome name at local x, z and world y.
func (o *oracleChunk) biome(x, y, z int) string {
	y = max(o.minY, min(y, o.maxY-1))
	if o.hasBiomes {
		s := o.biomes[y>>4+128]
		if s == nil {
			return "minecraft:the_void"
		}
		return s[((y&15)>>2)*16+(z>>2)*4+x>>2]
	}
	switch b := o.lv.Biomes.(type) {
	case []byte:
		return legacyBiomeName(int(b[z*16+x]))
	case []int32:
		if len(b) == 256 {
			return legacyBiomeName(int(b[z*16+x]))
		}
		if len(b) == 1024 {
			return legacyBiomeName(int(b[((y-o.minY)>>2)*16+(z>>2)*4+x>>2]))
		}
	}
	return "minecraft:the_void"
}

func legacyBiomeName(id int) string {
	if n, ok := legacyBiomeNames[id]; ok {
		return "minecraft:" + n
	}
	return fmt.Sprintf("minecraft:legacy_biome_%d", id)
}

// Hazards and air for checking landings against raw blocks.
var oracleHazard = []string{"lava", "water", "magma_block", "cactus", "fire", "soul_fire",
	"powder_snow", "seagrass", "tall_seagrass", "kelp", "kelp_plant", "bubble_column"}

var oracleAirLike = []string{"air", "cave_air", "void_air", "grass", "short_grass", "tall_grass",
	"fern", "large_fern", "dead_bush", "dandelion", "poppy", "blue_orchid", "allium",
	"azure_bluet", "red_tulip", "orange_tulip", "white_tulip", "pink_tulip", "oxeye_daisy",
	"cornflower", "lily_of_the_valley", "sunflower", "lilac", "rose_bush", "peony"}

func oracleSafeGround(state string) bool {
	b := baseName(state)
	return oracleBlocking(state) && !slices.Contains(oracleHazard, b) &&
		!strings.HasSuffix(b, "_leaves") && !strings.Contains(state, "waterlogged=true")
}

func oracleAir(state string) bool {
	b := baseName(state)
	if b == "snow" {
		return !strings.Contains(state, "layers=") || strings.Contains(state, "layers=1]") || strings.Contains(state, "layers=1,")
	}
	return slices.Contains(oracleAirLike, b)
}
