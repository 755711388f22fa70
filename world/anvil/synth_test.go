package anvil

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"math/bits"
	"os"
	"path/filepath"
	"testing"

	"github.com/Tnze/go-mc/nbt"
	"github.com/rtpengine/rtp/geom"
)

// Synthetic chunks for cases the fixtures lack, encoded with go-mc's NBT
// encoder and packed by the helpers below.

// pack packs values of width bits into longs, straddling or not.
func pack(values []int, width int, straddle bool) []int64 {
	if width == 0 {
		return nil
	}
	var out []uint64
	if straddle {
		out = make([]uint64, (len(values)*width+63)/64)
		for i, v := range values {
			for b := range width {
				if v>>b&1 == 1 {
					bit := i*width + b
					out[bit/64] |= 1 << (bit % 64)
				}
			}
		}
	} else {
		per := 64 / width
		out = make([]uint64, (len(values)+per-1)/per)
		for i, v := range values {
			out[i/per] |= uint64(v) << ((i % per) * width)
		}
	}
	res := make([]int64, len(out))
	for i, u := range out {
		res[i] = int64(u)
	}
	return res
}

func width(n int, min int) int {
	if n <= 1 {
		return 0
	}
	return max(min, bits.Len(uint(n-1)))
}

// state is a palette entry.
func state(name string, props map[string]string) map[string]any {
	m := map[string]any{"Name": name}
	if props != nil {
		m["Properties"] = props
	}
	return m
}

// modernSection is a 1.18+ section: blocks as palette indices (y, z, x
// order) and optional biomes.
type modernSection struct {
	y        int8
	palette  []map[string]any
	blocks   []int // 4096, nil: all palette[0]
	biomes   []string
	biomeIdx []int // 64
}

func (s modernSection) nbt() map[string]any {
	bs := map[string]any{"palette": s.palette}
	if len(s.palette) > 1 {
		bs["data"] = pack(s.blocks, width(len(s.palette), 4), false)
	}
	m := map[string]any{"Y": s.y, "block_states": bs}
	if s.biomes != nil {
		bm := map[string]any{"palette": s.biomes}
		if len(s.biomes) > 1 {
			bm["data"] = pack(s.biomeIdx, width(len(s.biomes), 1), false)
		}
		m["biomes"] = bm
	}
	return m
}

// modernChunk builds a 1.18+ chunk at (x, z) with the given sections and,
// when heights is not nil, a MOTION_BLOCKING heightmap (values count from
// the bottom, 9 bits).
func modernChunk(tb testing.TB, x, z, yPos int32, status string, heights []int, secs ...modernSection) []byte {
	tb.Helper()
	var ss []map[string]any
	for _, s := range secs {
		ss = append(ss, s.nbt())
	}
	m := map[string]any{
		"DataVersion": int32(3955), "Status": status, "xPos": x, "zPos": z, "yPos": yPos,
		"sections": ss, "block_entities": []map[string]any{{"id": "minecraft:chest", "x": int32(1)}},
		"structures": map[string]any{"References": map[string]any{}, "starts": map[string]any{}},
	}
	if heights != nil {
		m["Heightmaps"] = map[string]any{"MOTION_BLOCKING": pack(heights, 9, false), "WORLD_SURFACE": pack(heights, 9, false)}
	}
	return marshal(tb, m)
}

func marshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := nbt.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// regionChunk is one chunk to write into a synthetic region file.
type regionChunk struct {
	pos      geom.Chunk
	nbt      []byte
	scheme   byte
	external bool
	stamp    uint32
}

// compress encodes data in a scheme; LZ4 uses lz4Blocks.
func compress(tb testing.TB, scheme byte, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	switch scheme {
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(data)
		w.Close()
	case CompressionZlib:
		w := zlib.NewWriter(&buf)
		w.Write(data)
		w.Close()
	case CompressionNone:
		buf.Write(data)
	case CompressionLZ4:
		buf.Write(lz4Blocks(tb, data, 1<<16))
	default:
		tb.Fatalf("scheme %d", scheme)
	}
	return buf.Bytes()
}

// writeRegion writes a region file (and .mcc files) into dir.
func writeRegion(tb testing.TB, dir string, r geom.Region, chunks []regionChunk) string {
	tb.Helper()
	file := make([]byte, HeaderSize)
	for _, c := range chunks {
		payload := compress(tb, c.scheme, c.nbt)
		slot := Slot(c.pos)
		sector := len(file) / SectorSize
		var body []byte
		if c.external {
			if err := os.WriteFile(filepath.Join(dir, ExternalName(c.pos)), payload, 0o644); err != nil {
				tb.Fatal(err)
			}
			body = binary.BigEndian.AppendUint32(nil, 1)
			body = append(body, c.scheme|externalFlag)
		} else {
			body = binary.BigEndian.AppendUint32(nil, uint32(len(payload)+1))
			body = append(body, c.scheme)
			body = append(body, payload...)
		}
		n := (len(body) + SectorSize - 1) / SectorSize
		body = append(body, make([]byte, n*SectorSize-len(body))...)
		file = append(file, body...)
		binary.BigEndian.PutUint32(file[4*slot:], uint32(sector)<<8|uint32(n))
		binary.BigEndian.PutUint32(file[SectorSize+4*slot:], c.stamp)
	}
	name := filepath.Join(dir, RegionName(r))
	if err := os.WriteFile(name, file, 0o644); err != nil {
		tb.Fatal(err)
	}
	return name
}

// flatSections builds 1.18-style sections from minSec to maxSec where
// column (x, z) is stone up to top(x, z) and air above, with one biome
// palette per section.
func flatSections(minSec, maxSec int, top func(x, z int) int, biomes func(sy int) ([]string, []int)) []modernSection {
	var out []modernSection
	for sy := minSec; sy <= maxSec; sy++ {
		s := modernSection{y: int8(sy), palette: []map[string]any{state("minecraft:air", nil), state("minecraft:stone", nil)}, blocks: make([]int, 4096)}
		any := false
		for i := range 4096 {
			x, y, z := i&15, sy*16+i>>8, i>>4&15
			if y <= top(x, z) {
				s.blocks[i] = 1
				any = true
			}
		}
		if !any {
			s.palette, s.blocks = s.palette[:1], nil
		}
		if biomes != nil {
			s.biomes, s.biomeIdx = biomes(sy)
		} else {
			s.biomes = []string{"minecraft:plains"}
		}
		out = append(out, s)
	}
	return out
}

func heightsOf(minY int, top func(x, z int) int) []int {
	h := make([]int, 256)
	for i := range h {
		h[i] = top(i&15, i>>4) - minY + 1
	}
	return h
}
