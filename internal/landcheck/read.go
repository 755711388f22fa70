package landcheck

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/Tnze/go-mc/nbt"
	"github.com/Tnze/go-mc/save/region"
)

// Data versions where the chunk layout changed.
const (
	dataVersionNoStraddle = 2529 // 1.16: packed values stop straddling longs
	dataVersionTopLevel   = 2844 // 1.18: the chunk leaves the Level compound
)

// maxChunkBytes caps a chunk's decompressed size.
const maxChunkBytes = 16 << 20

// chunkNBT is the part of a stored chunk the checker reads, in every
// layout: 1.18+ at the top level, older ones inside Level.
type chunkNBT struct {
	DataVersion int32        `nbt:"DataVersion"`
	Status      string       `nbt:"Status"`
	XPos        int32        `nbt:"xPos"`
	ZPos        int32        `nbt:"zPos"`
	Sections    []sectionNBT `nbt:"sections"`
	Level       levelNBT     `nbt:"Level"`
}

type levelNBT struct {
	Status           string       `nbt:"Status"`
	XPos             int32        `nbt:"xPos"`
	ZPos             int32        `nbt:"zPos"`
	TerrainPopulated int8         `nbt:"TerrainPopulated"`
	Sections         []sectionNBT `nbt:"Sections"`
}

// sectionNBT is one 16-block cube in any layout: block_states (1.18+),
// Palette and BlockStates (1.13 to 1.17), Blocks, Add and Data (before
// 1.13).
type sectionNBT struct {
	Y           int8         `nbt:"Y"`
	States      containerNBT `nbt:"block_states"`
	Palette     []stateNBT   `nbt:"Palette"`
	BlockStates []int64      `nbt:"BlockStates"`
	Blocks      []byte       `nbt:"Blocks"`
	Add         []byte       `nbt:"Add"`
	Data        []byte       `nbt:"Data"`
}

type containerNBT struct {
	Palette []stateNBT `nbt:"palette"`
	Data    []int64    `nbt:"data"`
}

type stateNBT struct {
	Name       string            `nbt:"Name"`
	Properties map[string]string `nbt:"Properties"`
}

// chunk is a decoded chunk: its sections by Y, each resolved to a way of
// reading one block.
type chunk struct {
	dataVersion int32
	status      string
	full        bool
	sections    map[int]*section
}

// section reads blocks of one cube: by palette, or by numeric id.
type section struct {
	palette  []raw // for palette layouts
	data     []int64
	width    int
	straddle bool
	blocks   []byte // numeric ids, before 1.13
	add      []byte
	meta     []byte
}

// raw is one block as stored: a state string, or a numeric id and
// metadata for chunks saved before 1.13.
type raw struct {
	state       string // as shown and as looked up in blockdata
	name        string // the name alone ("minecraft:water")
	waterlogged bool
	legacy      bool
	id, meta    int
}

var air = raw{state: "minecraft:air", name: "minecraft:air"}

// readChunk reads chunk (cx, cz) from the region folder dir.
func readChunk(dir string, cx, cz int) (*chunk, error) {
	name := filepath.Join(dir, fmt.Sprintf("r.%d.%d.mca", cx>>5, cz>>5))
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := region.Load(f)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", filepath.Base(name), err)
	}
	lx, lz := region.In(cx, cz)
	if !r.ExistSector(lx, lz) {
		return nil, errNotGenerated
	}
	data, err := r.ReadSector(lx, lz)
	if err != nil {
		return nil, fmt.Errorf("%s: chunk %d, %d: %w", filepath.Base(name), cx, cz, err)
	}
	if len(data) < 1 {
		return nil, fmt.Errorf("chunk %d, %d: empty payload", cx, cz)
	}
	scheme := data[0]
	payload := data[1:]
	if scheme&0x80 != 0 {
		if payload, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("c.%d.%d.mcc", cx, cz))); err != nil {
			return nil, err
		}
		scheme &^= 0x80
	}
	body, err := decompress(scheme, payload)
	if err != nil {
		return nil, fmt.Errorf("chunk %d, %d: %w", cx, cz, err)
	}
	var c chunkNBT
	if err := nbt.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("chunk %d, %d: %w", cx, cz, err)
	}
	return build(&c, cx, cz)
}

var errNotGenerated = errors.New("chunk not generated")

func decompress(scheme byte, payload []byte) ([]byte, error) {
	var r io.Reader
	var err error
	switch scheme {
	case 1:
		r, err = gzip.NewReader(bytes.NewReader(payload))
	case 2:
		r, err = zlib.NewReader(bytes.NewReader(payload))
	case 3:
		return payload, nil
	default:
		return nil, fmt.Errorf("compression scheme %d not supported", scheme)
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(r, maxChunkBytes+1))
	if err != nil && !(errors.Is(err, io.ErrUnexpectedEOF) && len(b) > 0) {
		// Some tools end a chunk's stream without its checksum: what
		// came out is checked by the NBT decoder.
		return nil, err
	}
	if len(b) > maxChunkBytes {
		return nil, fmt.Errorf("chunk over %d bytes decompressed", maxChunkBytes)
	}
	return b, nil
}

// build checks the decoded chunk and indexes its sections.
func build(c *chunkNBT, cx, cz int) (*chunk, error) {
	top := c.DataVersion >= dataVersionTopLevel
	out := &chunk{dataVersion: c.DataVersion, sections: map[int]*section{}}
	secs := c.Level.Sections
	x, z := c.Level.XPos, c.Level.ZPos
	out.status = c.Level.Status
	if top {
		secs, x, z, out.status = c.Sections, c.XPos, c.ZPos, c.Status
	}
	if int(x) != cx || int(z) != cz {
		return nil, fmt.Errorf("slot of chunk %d, %d holds chunk %d, %d", cx, cz, x, z)
	}
	switch strings.TrimPrefix(out.status, "minecraft:") {
	case "full", "fullchunk", "postprocessed":
		out.full = true
	case "":
		out.full = c.Level.TerrainPopulated == 1
	default:
		// 1.13 upgrading a populated older chunk keeps TerrainPopulated.
		out.full = !top && c.Level.TerrainPopulated == 1
	}
	straddle := c.DataVersion < dataVersionNoStraddle
	for i := range secs {
		s := &secs[i]
		sec := &section{straddle: straddle}
		switch {
		case len(s.States.Palette) > 0:
			sec.palette, sec.data = states(s.States.Palette), s.States.Data
			sec.straddle = false
		case len(s.Palette) > 0:
			sec.palette, sec.data = states(s.Palette), s.BlockStates
		case len(s.Blocks) > 0:
			if len(s.Blocks) != 4096 {
				return nil, fmt.Errorf("section %d: %d block ids, want 4096", s.Y, len(s.Blocks))
			}
			sec.blocks, sec.add, sec.meta = s.Blocks, s.Add, s.Data
		default:
			continue // no blocks: air (a light-only section)
		}
		if n := len(sec.palette); n > 1 {
			sec.width = max(4, bits.Len(uint(n-1)))
			want := (4096 + 64/sec.width - 1) / (64 / sec.width)
			if sec.straddle {
				want = 4096 * sec.width / 64
			}
			if len(sec.data) != want {
				return nil, fmt.Errorf("section %d: %d longs for a palette of %d, want %d", s.Y, len(sec.data), n, want)
			}
		}
		out.sections[int(s.Y)] = sec
	}
	return out, nil
}

// states resolves palette entries.
func states(pal []stateNBT) []raw {
	out := make([]raw, len(pal))
	for i, p := range pal {
		out[i] = raw{state: stateString(p.Name, p.Properties), name: p.Name, waterlogged: p.Properties["waterlogged"] == "true"}
	}
	return out
}

func stateString(name string, props map[string]string) string {
	if len(props) == 0 {
		return name
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + props[k]
	}
	return name + "[" + strings.Join(parts, ",") + "]"
}

// at returns the block at world (x, y, z) of the chunk; air where no
// section is stored.
func (c *chunk) at(x, y, z int64) (raw, error) {
	s := c.sections[int(y>>4)]
	if s == nil {
		return air, nil
	}
	return s.at(int(y&15)<<8 | int(z&15)<<4 | int(x&15))
}

// at returns block idx (y, z, x order) of the section.
func (s *section) at(idx int) (raw, error) {
	if s.blocks != nil {
		id := int(s.blocks[idx])
		if len(s.add) == 2048 {
			id |= int(s.add[idx>>1]>>(4*(idx&1))&15) << 8
		}
		meta := 0
		if len(s.meta) == 2048 {
			meta = int(s.meta[idx>>1] >> (4 * (idx & 1)) & 15)
		}
		name := legacyNames[id]
		if name == "" {
			name = "legacy"
		}
		return raw{legacy: true, id: id, meta: meta, name: name, state: name + "(id " + strconv.Itoa(id) + ":" + strconv.Itoa(meta) + ")"}, nil
	}
	if len(s.palette) == 1 {
		return s.palette[0], nil
	}
	i := unpack(s.data, idx, s.width, s.straddle)
	if i >= len(s.palette) {
		return raw{}, fmt.Errorf("palette index %d of %d", i, len(s.palette))
	}
	return s.palette[i], nil
}

// unpack reads value idx of width bits. The caller has checked data's
// length.
func unpack(data []int64, idx, width int, straddle bool) int {
	mask := uint64(1)<<width - 1
	if straddle {
		bit := idx * width
		w, sh := bit/64, bit%64
		v := uint64(data[w]) >> sh
		if sh+width > 64 {
			v |= uint64(data[w+1]) << (64 - sh)
		}
		return int(v & mask)
	}
	per := 64 / width
	return int(uint64(data[idx/per]) >> (idx % per * width) & mask)
}

// legacyNames name the numeric ids whose names the judgement needs
// (fluids, hazards, leaves, barrier, air); others are named by number.
var legacyNames = map[int]string{
	0: "minecraft:air", 8: "minecraft:water", 9: "minecraft:water", 10: "minecraft:lava",
	11: "minecraft:lava", 18: "minecraft:oak_leaves", 30: "minecraft:cobweb",
	51: "minecraft:fire", 81: "minecraft:cactus", 90: "minecraft:nether_portal",
	119: "minecraft:end_portal", 161: "minecraft:acacia_leaves", 166: "minecraft:barrier",
	209: "minecraft:end_gateway", 213: "minecraft:magma_block",
}
