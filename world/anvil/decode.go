package anvil

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/blockdata"
)

// Data versions where the chunk layout changed.
const (
	// DataVersionFlattening (17w47a, 1.13) replaced numeric block ids by
	// block-state palettes and the light-based HeightMap by Heightmaps.
	DataVersionFlattening = 1451
	// DataVersionNoStraddle (20w17a, 1.16) stopped packed values from
	// straddling two longs.
	DataVersionNoStraddle = 2529
	// DataVersionTopLevel (21w43a, 1.18) moved the chunk out of the Level
	// compound, added yPos and per-section biome palettes.
	DataVersionTopLevel = 2844
)

// Info describes one stored chunk as its own data does. It is a plain
// value.
type Info struct {
	Pos geom.Chunk
	// DataVersion is the chunk's DataVersion, 0 when it has none (before
	// 1.9).
	DataVersion int32
	// Status is the chunk's generation status ("minecraft:full", "full",
	// "postprocessed", ...), "" before 1.13.
	Status string
	// Full reports whether the chunk is finished: status full (or the 1.13
	// equivalents), before 1.13 TerrainPopulated set, or NoStatus.
	Full bool
	// NoStatus reports that the chunk records neither a status nor
	// TerrainPopulated. The game writes one of them in every chunk it
	// saves (TerrainPopulated 0 until a chunk is decorated), so such a
	// chunk was written whole by a generator outside the game (a
	// pre-1.13 server's custom generator, a map tool): it is read as
	// finished, and Full is set.
	NoStatus bool
}

// DecodeOptions selects what Decode builds. The zero value builds column
// summaries only.
type DecodeOptions struct {
	// Blocks attaches a world.BlockReader with every block of the chunk.
	// Default false: column summaries only.
	Blocks bool
}

// Decode decodes one chunk from its uncompressed NBT. It returns the chunk
// and its Info; an error wrapping world.ErrUngenerated (with Info filled)
// when the chunk is not finished; an error wrapping ErrCorrupt when the data
// is malformed. Decode never panics and allocates nothing in proportion to
// lengths it has not checked against the input.
func Decode(data []byte, opts DecodeOptions) (*world.Chunk, Info, error) {
	d := decoders.Get().(*decoder)
	defer d.release()
	return d.decode(data, opts)
}

var decoders = sync.Pool{New: func() any { return new(decoder) }}

// decoder holds one decode's state; it is pooled and reused.
type decoder struct {
	parsed
	minY, maxY int
	straddle   bool
	hasSecBio  bool // some section has a biome palette (1.18 and later)
	topSection int  // highest section Y holding blocks
	heights    [world.ChunkSize * world.ChunkSize]int32
	grounds    [world.ChunkSize * world.ChunkSize]stateInfo
}

// maxPooledSpans keeps a hostile chunk's slices from staying in the pool.
const maxPooledSpans = 1 << 14

func (d *decoder) release() {
	d.b = nil
	if cap(d.spans) > maxPooledSpans || cap(d.sections) > 1024 || cap(d.infos) > maxPooledSpans {
		return
	}
	decoders.Put(d)
}

func (d *decoder) decode(b []byte, opts DecodeOptions) (*world.Chunk, Info, error) {
	if err := d.parse(b); err != nil {
		return nil, Info{}, err
	}
	info := Info{DataVersion: d.dataVersion, Status: statusString(d.status)}
	if !d.hasX || !d.hasZ {
		return nil, info, corrupt("chunk without xPos and zPos")
	}
	info.Pos = geom.Chunk{X: int64(d.x), Z: int64(d.z)}
	info.Full, info.NoStatus = d.full(), d.noStatus()
	if !info.Full {
		return nil, info, fmt.Errorf("%w: %s", world.ErrUngenerated, d.statusText())
	}
	if err := d.layout(); err != nil {
		return nil, info, err
	}
	ch := world.NewChunk(info.Pos, int32(d.minY), int32(d.maxY))
	// Chunks saved before 1.9 have no DataVersion: ForDataVersion(0) is
	// the 1.8 data.
	ch.Data = blockdata.ForDataVersion(d.dataVersion)
	if err := d.columns(ch); err != nil {
		return nil, info, err
	}
	if opts.Blocks {
		br, err := d.blockReader()
		if err != nil {
			return nil, info, err
		}
		ch.Blocks = br
	}
	return ch, info, nil
}

// info parses only what Info holds. An unfinished chunk is no error here.
func (d *decoder) info(b []byte) (Info, error) {
	if err := d.parse(b); err != nil {
		return Info{}, err
	}
	info := Info{DataVersion: d.dataVersion, Status: statusString(d.status)}
	if !d.hasX || !d.hasZ {
		return info, corrupt("chunk without xPos and zPos")
	}
	info.Pos = geom.Chunk{X: int64(d.x), Z: int64(d.z)}
	info.Full, info.NoStatus = d.full(), d.noStatus()
	return info, nil
}

// knownStatuses are returned without allocating.
var knownStatuses = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"empty", "structure_starts", "structure_references", "biomes", "noise",
		"surface", "carvers", "liquid_carvers", "features", "initialize_light", "light", "spawn",
		"heightmaps", "full", "base", "carved", "liquid_carved", "decorated", "lighted",
		"mobs_spawned", "finalized", "fullchunk", "postprocessed"} {
		m[s] = s
		m["minecraft:"+s] = "minecraft:" + s
	}
	return m
}()

func statusString(b []byte) string {
	if s, ok := knownStatuses[string(b)]; ok {
		return s
	}
	return string(b)
}

func (d *decoder) statusText() string {
	if d.hasStatus {
		return fmt.Sprintf("status %q", d.status)
	}
	return "terrain not populated"
}

// noStatus reports whether the chunk records neither a status nor
// TerrainPopulated (see Info.NoStatus).
func (d *decoder) noStatus() bool { return !d.hasStatus && !d.hasTerrainPop }

// full reports whether the chunk is finished.
func (d *decoder) full() bool {
	if d.noStatus() {
		return true
	}
	if d.hasStatus {
		switch string(d.status) {
		case "minecraft:full", "full", "postprocessed", "fullchunk":
			return true
		case "mobs_spawned", "finalized":
			// 1.13 upgrading a populated pre-1.13 chunk writes this status
			// and keeps TerrainPopulated: the terrain is final.
			return d.hasTerrainPop && d.terrainPop == 1
		}
		return false
	}
	return d.hasTerrainPop && d.terrainPop == 1
}

// layout derives the build height and packing from the chunk.
func (d *decoder) layout() error {
	d.straddle = d.hasDataVersion && d.dataVersion < DataVersionNoStraddle
	d.minY, d.maxY = 0, 256
	d.topSection = -1 << 10
	d.hasSecBio = false
	for i := range d.sections {
		s := &d.sections[i]
		if s.hasPal || s.hasBlocks {
			d.topSection = max(d.topSection, s.y)
		}
		d.hasSecBio = d.hasSecBio || s.hasBiomes
	}
	if d.hasYPos {
		if d.yPos < -128 || d.yPos > 127 {
			return corrupt("yPos %d out of range", d.yPos)
		}
		d.minY = int(d.yPos) * 16
		d.maxY = max(d.minY+16, (d.topSection+1)*16)
	}
	return nil
}

// columns fills the 256 column summaries.
func (d *decoder) columns(ch *world.Chunk) error {
	hm := d.heightmap()
	if !hm {
		if err := d.scanAll(min(d.maxY-1, (d.topSection+1)*16-1)); err != nil {
			return err
		}
	}
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			i := z*world.ChunkSize + x
			top, ground := world.NoTop, stateInfo{}
			var err error
			switch {
			case !hm:
				top, ground = int(d.heights[i]), d.grounds[i]
			case d.heights[i] > 0:
				top = d.minY + int(d.heights[i]) - 1
				ground, err = d.blockAt(x, top, z)
				if err == nil && ground.id.IsAir() {
					// A stale heightmap: find the ground below it.
					top, ground, err = d.scan(x, z, top)
				}
			}
			if err != nil {
				return err
			}
			col := &ch.Columns[i]
			if top == world.NoTop {
				col.Top = world.NoTop
				col.Biome, err = d.biomeAt(x, d.minY, z)
				if err != nil {
					return err
				}
				continue
			}
			col.Top = int16(top)
			col.Ground = ground.id
			col.Fluid = world.IsFluid(ground.id)
			for k := range col.Above {
				a, err := d.blockAt(x, top+1+k, z)
				if err != nil {
					return err
				}
				col.Above[k] = a.id
			}
			if col.Biome, err = d.biomeAt(x, top, z); err != nil {
				return err
			}
		}
	}
	return nil
}

// heightmap decodes MOTION_BLOCKING into d.heights, reporting whether the
// chunk has a usable one.
func (d *decoder) heightmap() bool {
	if !d.hasMotion {
		return false
	}
	height := d.maxY - d.minY
	n := d.motion.n
	var bits int
	if d.straddle {
		if n == 0 || n%4 != 0 || n/4 > 32 {
			return false
		}
		bits = n / 4 // 256 values * bits / 64
	} else {
		// The width follows from the build height; a chunk from a world
		// with another height says so by its length.
		bits = lenBits(height)
		if longsFor(256, bits) != n {
			bits = 0
			for w := 1; w <= 32 && bits == 0; w++ {
				if longsFor(256, w) == n {
					bits = w
				}
			}
			if bits == 0 {
				return false
			}
		}
	}
	for i := range d.heights {
		v := d.packed(d.motion, i, bits, d.straddle)
		if v > uint64(height) {
			return false
		}
		d.heights[i] = int32(v)
	}
	return true
}

// lenBits is the number of bits needed to hold 0..n.
func lenBits(n int) int { return max(1, bits.Len(uint(n))) }

// longsFor is the number of longs holding count values of width bits
// without straddling.
func longsFor(count, bits int) int {
	per := 64 / bits
	return (count + per - 1) / per
}

// packed reads value i of width bits from the long array v. The caller has
// checked v's length for i.
func (d *decoder) packed(v view, i, width int, straddle bool) uint64 {
	mask := uint64(1)<<width - 1
	if straddle {
		bit := i * width
		li, sh := bit>>6, bit&63
		x := binary.BigEndian.Uint64(d.b[v.off+8*li:]) >> sh
		if sh+width > 64 {
			x |= binary.BigEndian.Uint64(d.b[v.off+8*li+8:]) << (64 - sh)
		}
		return x & mask
	}
	li, k := divPer(i, width)
	return binary.BigEndian.Uint64(d.b[v.off+8*li:]) >> (k * width) & mask
}

// divPer returns i / per and i % per for per = 64/width, the values in one
// long, by a multiplication with a precomputed reciprocal instead of two
// divisions (exact for i < 1<<16, see TestDivPer).
func divPer(i, width int) (int, int) {
	q := int(uint64(i) * perMagic[width] >> 32)
	return q, i - q*perCount[width]
}

// perCount[w] is 64/w; perMagic[w] is 2^32/perCount[w] + 1.
var perCount, perMagic = func() (c [65]int, m [65]uint64) {
	for w := 1; w <= 64; w++ {
		c[w] = 64 / w
		m[w] = 1<<32/uint64(c[w]) + 1
	}
	return
}()

// scanAll finds every column's highest blocking block at or below from,
// for chunks without a heightmap, into d.heights (as y, or world.NoTop) and
// d.grounds. It sweeps layers downwards: a layer of numeric blocks is 256
// contiguous bytes, so eight columns of air cost one load.
func (d *decoder) scanAll(from int) error {
	var done [world.ChunkSize * world.ChunkSize]bool
	for i := range d.heights {
		d.heights[i] = world.NoTop
	}
	left := len(done)
	for y := from; y >= d.minY && left > 0; {
		si := d.byY[(y>>4)+128]
		if si == noSection {
			y = y&^15 - 1
			continue
		}
		s := &d.sections[si]
		var layer []byte
		if !s.hasPal && s.hasBlocks && s.blocks.n == 4096 && !s.hasAdd {
			off := s.blocks.off + (y&15)<<8
			layer = d.b[off : off+256]
		}
		for w := 0; w < 256; w += 8 {
			if layer != nil && binary.LittleEndian.Uint64(layer[w:]) == 0 {
				continue
			}
			for i := w; i < w+8; i++ {
				if done[i] || layer != nil && layer[i] == 0 {
					continue
				}
				st, err := d.blockAt(i&15, y, i>>4)
				if err != nil {
					return err
				}
				if st.class&blocking != 0 {
					done[i] = true
					left--
					d.heights[i], d.grounds[i] = int32(y), st
				}
			}
		}
		y--
	}
	return nil
}

// scan finds the highest blocking block of column (x, z) at or below from.
func (d *decoder) scan(x, z, from int) (int, stateInfo, error) {
	for y := min(from, d.maxY-1); y >= d.minY; {
		if d.byY[(y>>4)+128] == noSection {
			y = y&^15 - 1
			continue
		}
		s, err := d.blockAt(x, y, z)
		if err != nil {
			return 0, s, err
		}
		if s.class&blocking != 0 {
			return y, s, nil
		}
		y--
	}
	return world.NoTop, stateInfo{}, nil
}

var airState = stateInfo{id: world.Air, class: airLike}

// blockAt returns the block state at chunk-local x, z and world y.
func (d *decoder) blockAt(x, y, z int) (stateInfo, error) {
	if y < d.minY || y >= d.maxY {
		return airState, nil
	}
	si := d.byY[(y>>4)+128]
	if si == noSection {
		return airState, nil
	}
	s := &d.sections[si]
	idx := (y&15)<<8 | z<<4 | x
	switch {
	case s.hasPal:
		if s.resolved < 0 {
			if err := d.prepare(s); err != nil {
				return stateInfo{}, err
			}
		}
		pi := 0
		if s.palN > 1 {
			pi = int(d.packed(s.data, idx, s.bits, d.straddle))
			if pi >= s.palN {
				return stateInfo{}, corrupt("section %d: palette index %d of %d", s.y, pi, s.palN)
			}
		}
		return d.infos[s.resolved+pi], nil
	case s.hasBlocks:
		id, meta, err := d.legacyAt(s, idx)
		if err != nil {
			return stateInfo{}, err
		}
		return legacyState(id, meta), nil
	}
	return airState, nil
}

// legacyAt reads numeric block idx of a pre-1.13 section.
func (d *decoder) legacyAt(s *section, idx int) (id, meta int, err error) {
	if s.blocks.n != 4096 {
		return 0, 0, corrupt("section %d: %d block ids, want 4096", s.y, s.blocks.n)
	}
	id = int(d.b[s.blocks.off+idx])
	if s.hasAdd && s.add.n == 2048 {
		id |= int(d.b[s.add.off+idx>>1]>>(4*(idx&1))&15) << 8
	}
	if s.hasMeta && s.meta.n == 2048 {
		meta = int(d.b[s.meta.off+idx>>1] >> (4 * (idx & 1)) & 15)
	}
	return id, meta, nil
}

// prepare checks a palette section's packing and resolves its palette.
func (d *decoder) prepare(s *section) error {
	if s.palN == 0 {
		return corrupt("section %d: empty block palette", s.y)
	}
	if s.palN > 1 {
		s.bits = max(4, bits.Len(uint(s.palN-1)))
		want := longsFor(4096, s.bits)
		if d.straddle {
			want = 4096 * s.bits / 64
		}
		if !s.hasData || s.data.n != want {
			return corrupt("section %d: %d longs of block data for a palette of %d, want %d", s.y, s.data.n, s.palN, want)
		}
	}
	s.resolved = len(d.infos)
	for _, sp := range d.spans[s.pal : s.pal+s.palN] {
		st, err := resolveState(d.b[sp.start:sp.end])
		if err != nil {
			return fmt.Errorf("section %d: %w", s.y, err)
		}
		d.infos = append(d.infos, st)
	}
	return nil
}

// prepareBiomes checks a section's biome packing and resolves its palette.
func (d *decoder) prepareBiomes(s *section) error {
	if s.bpalN == 0 {
		return corrupt("section %d: empty biome palette", s.y)
	}
	if s.bpalN > 1 {
		s.bbits = bits.Len(uint(s.bpalN - 1))
		if want := longsFor(64, s.bbits); !s.hasBData || s.bdata.n != want {
			return corrupt("section %d: %d longs of biome data for a palette of %d, want %d", s.y, s.bdata.n, s.bpalN, want)
		}
	}
	s.bresolved = len(d.biomeIDs)
	for _, sp := range d.spans[s.bpal : s.bpal+s.bpalN] {
		d.biomeIDs = append(d.biomeIDs, resolveBiome(d.b[sp.start:sp.end]))
	}
	return nil
}

// biomeAt returns the biome at chunk-local x, z and world y.
func (d *decoder) biomeAt(x, y, z int) (world.BiomeID, error) {
	y = max(d.minY, min(y, d.maxY-1))
	if d.hasSecBio {
		si := d.byY[(y>>4)+128]
		if si == noSection || !d.sections[si].hasBiomes {
			return 0, nil
		}
		s := &d.sections[si]
		if s.bresolved < 0 {
			if err := d.prepareBiomes(s); err != nil {
				return 0, err
			}
		}
		pi := 0
		if s.bpalN > 1 {
			idx := (y&15)>>2<<4 | z>>2<<2 | x>>2
			pi = int(d.packed(s.bdata, idx, s.bbits, false))
			if pi >= s.bpalN {
				return 0, corrupt("section %d: biome palette index %d of %d", s.y, pi, s.bpalN)
			}
		}
		return d.biomeIDs[s.bresolved+pi], nil
	}
	n := d.biomes.n
	switch d.biomesTag {
	case tagByteArray:
		if n == 256 {
			return legacyBiome(int(d.b[d.biomes.off+(z<<4|x)])), nil
		}
	case tagIntArray:
		idx := -1
		switch {
		case n == 256: // 1.13 and 1.14: one per column
			idx = z<<4 | x
		case n >= 64 && n%16 == 0: // 1.15 to 1.17: 4x4x4 cells
			cell := min((y-d.minY)>>2, n/16-1)
			idx = cell<<4 | z>>2<<2 | x>>2
		}
		if idx >= 0 {
			v := int32(binary.BigEndian.Uint32(d.b[d.biomes.off+4*idx:]))
			return legacyBiome(int(v)), nil
		}
	}
	return 0, nil
}
