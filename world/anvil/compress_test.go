package anvil

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// lz4Blocks writes data as lz4-java's LZ4BlockOutputStream does: blocks of
// at most blockSize bytes, LZ4-compressed or stored when that is not
// smaller, each with its header and masked XXH32, then the end block.
func lz4Blocks(tb testing.TB, data []byte, blockSize int) []byte {
	tb.Helper()
	level := max(0, bits.Len(uint(blockSize-1))-lz4LevelShift)
	var out []byte
	header := func(method byte, clen, olen int, check uint32) {
		out = append(out, lz4Magic...)
		out = append(out, method|byte(level))
		out = binary.LittleEndian.AppendUint32(out, uint32(clen))
		out = binary.LittleEndian.AppendUint32(out, uint32(olen))
		out = binary.LittleEndian.AppendUint32(out, check)
	}
	for len(data) > 0 {
		n := min(blockSize, len(data))
		blk := data[:n]
		data = data[n:]
		comp := make([]byte, lz4.CompressBlockBound(n))
		var c lz4.Compressor
		cn, err := c.CompressBlock(blk, comp)
		check := xxh32(blk, lz4Seed) & lz4CheckMask
		if err != nil || cn == 0 || cn >= n {
			header(lz4MethodRaw, n, n, check)
			out = append(out, blk...)
			continue
		}
		header(lz4MethodLZ4, cn, n, check)
		out = append(out, comp[:cn]...)
	}
	header(lz4MethodRaw, 0, 0, 0)
	return out
}

func TestXXH32(t *testing.T) {
	for _, tc := range []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0x02cc5d05},
		{"a", 0, 0x550d7456},
		{"abc", 0, 0x32d153ff},
		{"Nobody inspects the spammish repetition", 0, 0xe2293b2f},
	} {
		if got := xxh32([]byte(tc.in), tc.seed); got != tc.want {
			t.Errorf("xxh32(%q, %d) = %#x, want %#x", tc.in, tc.seed, got, tc.want)
		}
	}
	// Cross-check against the LZ4 frame format's content checksum (XXH32,
	// seed 0, the frame's last four bytes) as pierrec/lz4 writes it.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 15, 16, 17, 100, 4096, 70000} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rng.IntN(7))
		}
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if err := w.Apply(lz4.ChecksumOption(true)); err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		w.Close()
		frame := buf.Bytes()
		if got, want := xxh32(data, 0), binary.LittleEndian.Uint32(frame[len(frame)-4:]); got != want {
			t.Errorf("xxh32 of %d bytes = %#x, LZ4 frame checksum %#x", n, got, want)
		}
	}
}

func TestLZ4Blocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	compressible := bytes.Repeat([]byte("minecraft:stone minecraft:dirt "), 9000) // 279 KB: 5 blocks
	random := make([]byte, 100000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	for _, tc := range []struct {
		name      string
		data      []byte
		blockSize int
	}{
		{"compressible", compressible, 1 << 16},
		{"incompressible stored blocks", random, 1 << 16},
		{"small blocks", compressible[:5000], 1 << 10},
		{"empty", nil, 1 << 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := lz4Blocks(t, tc.data, tc.blockSize)
			got, err := Decompress(CompressionLZ4, enc, nil, DefaultMaxChunkBytes)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("round trip: %d bytes, want %d", len(got), len(tc.data))
			}
		})
	}

	good := lz4Blocks(t, compressible[:20000], 1<<16)
	bad := func(name string, mutate func([]byte) []byte) {
		t.Run(name, func(t *testing.T) {
			b := mutate(bytes.Clone(good))
			if _, err := Decompress(CompressionLZ4, b, nil, DefaultMaxChunkBytes); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decompress = %v, want ErrCorrupt", err)
			}
		})
	}
	bad("bad checksum", func(b []byte) []byte { b[17] ^= 1; return b })
	bad("bad magic", func(b []byte) []byte { b[0] = 'X'; return b })
	bad("corrupt data", func(b []byte) []byte { b[lz4HeaderLen+40] ^= 0xff; return b })
	bad("no end block", func(b []byte) []byte { return b[:len(b)-lz4HeaderLen] })
	bad("truncated block", func(b []byte) []byte { return b[:lz4HeaderLen+10] })
	bad("length past block size", func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[13:], 1<<17)
		return b
	})
	bad("unknown method", func(b []byte) []byte { b[8] = 0x30 | b[8]&15; return b })
}

func TestDecompressLimit(t *testing.T) {
	bomb := make([]byte, 4<<20) // 4 MiB of zeros: a few KiB compressed
	var zb bytes.Buffer
	zw := zlib.NewWriter(&zb)
	zw.Write(bomb)
	zw.Close()
	for _, tc := range []struct {
		name    string
		scheme  byte
		payload []byte
	}{
		{"zlib", CompressionZlib, zb.Bytes()},
		{"gzip", CompressionGzip, compress(t, CompressionGzip, bomb)},
		{"lz4", CompressionLZ4, lz4Blocks(t, bomb, 1<<16)},
		{"none", CompressionNone, bomb[:2<<20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 1 << 20
			got, err := Decompress(tc.scheme, tc.payload, nil, limit)
			if !errors.Is(err, ErrCorrupt) || got != nil {
				t.Fatalf("Decompress(%d-byte payload of 4 MiB, limit 1 MiB) = %d bytes, %v; want ErrCorrupt", len(tc.payload), len(got), err)
			}
		})
	}
	if _, err := Decompress(CompressionCustom, []byte{0, 1, 'x'}, nil, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("custom scheme: %v, want ErrCorrupt", err)
	}
	if _, err := Decompress(9, nil, nil, 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown scheme: %v, want ErrCorrupt", err)
	}
}

func TestDecompressSchemes(t *testing.T) {
	data := bytes.Repeat([]byte("sections palette data "), 5000)
	for _, scheme := range []byte{CompressionGzip, CompressionZlib, CompressionNone, CompressionLZ4} {
		got, err := Decompress(scheme, compress(t, scheme, data), make([]byte, 0, 10), DefaultMaxChunkBytes)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("scheme %d: %d bytes, %v", scheme, len(got), err)
		}
	}
	// A zlib stream cut after its data decodes what it holds (the game
	// reads no further than the NBT); one cut inside its data is short.
	full := compress(t, CompressionZlib, data)
	got, err := Decompress(CompressionZlib, full[:len(full)-4], nil, DefaultMaxChunkBytes)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("zlib without its checksum: %d bytes, %v", len(got), err)
	}
	if got, err := Decompress(CompressionZlib, full[:len(full)/2], nil, DefaultMaxChunkBytes); err == nil && len(got) >= len(data) {
		t.Errorf("zlib cut in half: %d bytes, want fewer than %d", len(got), len(data))
	}
	if _, err := Decompress(CompressionZlib, []byte{1, 2, 3}, nil, DefaultMaxChunkBytes); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zlib garbage: %v, want ErrCorrupt", err)
	}
}
