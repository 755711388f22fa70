package anvil

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world"
)

// The seeds include real chunks of tens of kilobytes, which the fuzzing
// engine minimizes slowly; run the targets with a short minimization, e.g.
//
//	go test ./world/anvil -run '^$' -fuzz '^FuzzDecode$' -fuzztime 5m -fuzzminimizetime 1s

// fuzzLimit bounds decompressed chunks in the fuzz targets, so a target's
// memory stays small whatever the input claims.
const fuzzLimit = 1 << 20

// seedChunks returns a few real chunks (decompressed) when the fixtures
// are present, and synthetic ones always.
func seedChunks(f *testing.F) [][]byte {
	var out [][]byte
	top := func(x, z int) int { return 3 + x }
	out = append(out, modernChunk(f, 0, 0, -4, "minecraft:full", heightsOf(-64, top), flatSections(-4, 1, top, nil)...))
	for _, p := range []string{"NBT/1_18/r.15.-9.mca", "NBT/root/r.0.0.mca", "NBT/root/r.2.2.mca", "NBT/1_17_1/r.-3.-2.mca"} {
		file, err := anvilfixture.Lookup(p)
		if err != nil {
			continue // fixtures absent: synthetic seeds only
		}
		for _, payload := range oracleRaw(f, file) {
			var z oracleInflater
			raw, _ := z.inflate(f, payload)
			out = append(out, raw)
		}
	}
	return out
}

// FuzzDecode: the NBT walk and chunk decoding never panic, never allocate
// beyond their input, and a decoded chunk is self-consistent.
func FuzzDecode(f *testing.F) {
	for _, c := range seedChunks(f) {
		f.Add(c)
	}
	f.Add([]byte{10, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, blocks := range []bool{false, true} {
			ch, _, err := Decode(data, DecodeOptions{Blocks: blocks})
			if err != nil {
				continue
			}
			for i, col := range ch.Columns {
				if col.Top != world.NoTop && (int32(col.Top) < ch.MinY || int32(col.Top) >= ch.MaxY) {
					t.Fatalf("column %d top %d outside %d..%d", i, col.Top, ch.MinY, ch.MaxY)
				}
			}
			if blocks {
				for y := ch.MinY - 1; y <= ch.MaxY; y += 7 {
					ch.Blocks.Block(int(y)&15, int(y), 3)
				}
			}
		}
	})
}

// FuzzRegion: any bytes as a region file read without panicking; every
// present chunk is read, decompressed (bounded) and decoded.
func FuzzRegion(f *testing.F) {
	dir := f.TempDir()
	pos := geom.Chunk{X: 2, Z: 1}
	chunk := seedChunks(f)[0]
	var seeds []string
	for i, scheme := range []byte{CompressionZlib, CompressionGzip, CompressionNone, CompressionLZ4} {
		sub := filepath.Join(dir, string(rune('a'+i)))
		os.Mkdir(sub, 0o755)
		seeds = append(seeds, writeRegion(f, sub, geom.Region{}, []regionChunk{{pos: pos, nbt: chunk, scheme: scheme, stamp: 7}}))
	}
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(b)
	}
	f.Add(make([]byte, HeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf := NewRegionFile(geom.Region{}, bytes.NewReader(data), int64(len(data)), nil, fuzzLimit)
		h, err := rf.Header()
		if err != nil {
			return
		}
		var raw, out []byte
		for _, c := range h.Chunks(geom.Region{}) {
			var nbt []byte
			nbt, raw, err = rf.ReadChunk(c, raw, out)
			if err != nil {
				continue
			}
			if len(nbt) > fuzzLimit {
				t.Fatalf("chunk of %d bytes past the limit %d", len(nbt), fuzzLimit)
			}
			out = nbt
			Decode(nbt, DecodeOptions{})
		}
	})
}

// FuzzDecompress: every scheme on any payload stays within the limit.
func FuzzDecompress(f *testing.F) {
	data := seedChunks(f)[0]
	for _, s := range []byte{CompressionGzip, CompressionZlib, CompressionNone, CompressionLZ4} {
		f.Add(s, compress(f, s, data))
	}
	f.Fuzz(func(t *testing.T, scheme byte, payload []byte) {
		out, err := Decompress(scheme, payload, nil, fuzzLimit)
		if err == nil && len(out) > fuzzLimit {
			t.Fatalf("%d bytes past the limit %d", len(out), fuzzLimit)
		}
	})
}

// FuzzLevel: level.dat parsing never panics.
func FuzzLevel(f *testing.F) {
	f.Add(marshal(f, map[string]any{"Data": map[string]any{"SpawnX": int32(1), "BorderSize": 10.0, "Version": map[string]any{"Name": "x"}}}))
	f.Add(marshal(f, map[string]any{"Data": map[string]any{"spawn": map[string]any{"pos": []int32{1, 2, 3}}}}))
	f.Add(marshal(f, map[string]any{"Data": map[string]any{"DataPacks": map[string]any{"Enabled": []string{"vanilla", "file/a.zip"}, "Disabled": []int32{1}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseLevel(data)
		var pl packList
		lv, err := parseLevel(data, &pl)
		if err == nil && (len(pl.enabled) > maxLevelPacks || len(pl.disabled) > maxLevelPacks) {
			t.Fatalf("%d and %d packs kept, over %d", len(pl.enabled), len(pl.disabled), maxLevelPacks)
		}
		if again, err2 := ParseLevel(data); (err == nil) != (err2 == nil) || err == nil && again != lv {
			t.Fatalf("reading the packs changed the level: %+v, %v; %+v, %v", lv, err, again, err2)
		}
	})
}
