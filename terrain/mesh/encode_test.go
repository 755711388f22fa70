package mesh

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// closeEnough reports how got differs from want beyond the encoding's
// documented error: positions within half a quantum plus float32 rounding,
// normals within maxNormalErrorDeg, everything else exact.
func closeEnough(want, got *Mesh) error {
	if got.Quality != want.Quality || got.OriginX != want.OriginX || got.OriginZ != want.OriginZ || got.Bounds != want.Bounds {
		return fmt.Errorf("header: got %v %d %d %v, want %v %d %d %v",
			got.Quality, got.OriginX, got.OriginZ, got.Bounds, want.Quality, want.OriginX, want.OriginZ, want.Bounds)
	}
	if len(got.Vertices) != len(want.Vertices) || len(got.Normals) != len(want.Normals) || !slicesEqual(got.Indices, want.Indices) {
		return fmt.Errorf("counts or indices differ: got %d/%d/%d, want %d/%d/%d",
			len(got.Vertices), len(got.Normals), len(got.Indices), len(want.Vertices), len(want.Normals), len(want.Indices))
	}
	var tol [3]float64
	for a := range 3 {
		lo, hi := float64(want.Bounds.Min[a]), float64(want.Bounds.Max[a])
		mag := max(math.Abs(lo), math.Abs(hi))
		ulp := math.Nextafter32(float32(mag), float32(math.Inf(1))) - float32(mag)
		tol[a] = (hi-lo)/(2*quantMax) + float64(ulp)
	}
	for v := range want.Vertices {
		if d := math.Abs(float64(got.Vertices[v]) - float64(want.Vertices[v])); d > tol[v%3] {
			return fmt.Errorf("vertex %d axis %d: got %v, want %v (error %v > %v)", v/3, v%3, got.Vertices[v], want.Vertices[v], d, tol[v%3])
		}
	}
	for v := 0; v < len(want.Normals); v += 3 {
		w, g := want.Normals[v:v+3], got.Normals[v:v+3]
		if w[0] == 0 && w[1] == 0 && w[2] == 0 {
			continue // a zero normal has no direction to keep
		}
		if a := angleDeg(float64(w[0]), float64(w[1]), float64(w[2]), float64(g[0]), float64(g[1]), float64(g[2])); a > maxNormalErrorDeg {
			return fmt.Errorf("normal %d: got %v, want %v (%v degrees)", v/3, g, w, a)
		}
	}
	return nil
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		req    terrain.Request
		step   int
		wide   bool
		height func(x, z float64) float64
	}{
		{"single vertex", terrain.Request{Size: 1, Resolution: 1}, 1, false, hills},
		{"flat", terrain.Request{OriginX: -7, OriginZ: 9, Size: 16, Resolution: 8, Border: 1}, 1, false, func(x, z float64) float64 { return -12 }},
		{"hills", terrain.Request{OriginX: 29_999_872, OriginZ: -29_999_872, Size: 128, Resolution: 64, Border: 1}, 1, false, hills},
		{"hills low", terrain.Request{OriginX: 4096, OriginZ: 4096, Size: 128, Resolution: 64, Border: 1}, LowStep, false, hills},
		{"cliffs", terrain.Request{Size: 64, Resolution: 32, Border: 2}, 1, false, func(x, z float64) float64 {
			return math.Floor(x/8) * 40 * math.Sin(z)
		}},
		{"max 16-bit", terrain.Request{Size: 256, Resolution: 256, Border: 1}, 1, false, hills},
		{"32-bit indices", terrain.Request{Size: 257, Resolution: 257, Border: 1}, 1, true, hills},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := mustBuild(t, makeTile(tc.req, tc.height), tc.step)
			b, err := Encode(m)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			iw := 2
			if tc.wide {
				iw = 4
			}
			if want := headerSize + 8*m.VertexCount() + iw*len(m.Indices) + trailerSize; len(b) != want {
				t.Errorf("len(Encode) = %d, want %d", len(b), want)
			}
			if got := b[6]&flagIndex32 != 0; got != tc.wide {
				t.Errorf("32-bit index flag = %v, want %v", got, tc.wide)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := closeEnough(m, got); err != nil {
				t.Error(err)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("decoded mesh invalid: %v", err)
			}
			// AppendEncode keeps the prefix and writes the same bytes.
			prefix := []byte("prefix")
			out, err := AppendEncode(prefix, m)
			if err != nil {
				t.Fatalf("AppendEncode: %v", err)
			}
			if !bytes.Equal(out[:len(prefix)], []byte("prefix")) || !bytes.Equal(out[len(prefix):], b) {
				t.Error("AppendEncode(prefix, m) != prefix + Encode(m)")
			}
		})
	}
}

func TestEncodeInvalid(t *testing.T) {
	bad := mustBuild(t, makeTile(terrain.Request{Size: 4, Resolution: 2}, hills), 1)
	bad.Indices[0] = 100
	for _, m := range []*Mesh{nil, bad, {Quality: Low, Vertices: []float32{1, 2, 3}}} {
		dst := []byte{1, 2, 3}
		out, err := AppendEncode(dst, m)
		if err == nil {
			t.Errorf("AppendEncode(invalid mesh) succeeded")
		}
		if !bytes.Equal(out, []byte{1, 2, 3}) {
			t.Errorf("AppendEncode(invalid mesh) returned %v, want dst unchanged", out)
		}
	}
}

// fixCRC rewrites the trailing checksum so that a deliberately edited
// encoding reaches the checks behind it.
func fixCRC(b []byte) []byte {
	if len(b) < trailerSize {
		return b
	}
	b = bytes.Clone(b)
	body := b[:len(b)-trailerSize]
	binary.LittleEndian.PutUint32(b[len(body):], crc32.Checksum(body, castagnoli))
	return b
}

func smallEncoding(t testing.TB) []byte {
	t.Helper()
	b, err := Encode(mustBuild(t, makeTile(terrain.Request{OriginX: 3, OriginZ: 5, Size: 12, Resolution: 3, Border: 1}, hills), 1))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	good := smallEncoding(t)
	edit := func(f func(b []byte) []byte) []byte { return fixCRC(f(bytes.Clone(good))) }
	put32 := func(off int, v uint32) func(b []byte) []byte {
		return func(b []byte) []byte { binary.LittleEndian.PutUint32(b[off:], v); return b }
	}
	tests := []struct {
		name string
		in   []byte
		err  error
		msg  string
	}{
		{"empty", nil, ErrTruncated, "0 bytes"},
		{"magic only", []byte("RTPM"), ErrTruncated, "4 bytes"},
		{"bad magic", append([]byte("GLTF"), good[4:]...), ErrCorrupt, "bad magic"},
		{"version", edit(func(b []byte) []byte { b[4] = 2; return b }), ErrVersion, "version 2"},
		{"quality", edit(func(b []byte) []byte { b[5] = 0; return b }), ErrCorrupt, "quality(0)"},
		{"flags", edit(func(b []byte) []byte { b[6] = 0x80; return b }), ErrCorrupt, "flags"},
		{"reserved", edit(func(b []byte) []byte { b[7] = 1; return b }), ErrCorrupt, "reserved"},
		{"nan bounds", edit(put32(28, math.Float32bits(float32(math.NaN())))), ErrCorrupt, "bounds axis 1"},
		{"inverted bounds", edit(put32(24, math.Float32bits(1e9))), ErrCorrupt, "bounds axis 0"},
		{"partial triangle", edit(put32(52, 4)), ErrCorrupt, "not a multiple of 3"},
		{"wide flag", edit(func(b []byte) []byte { b[6] = flagIndex32; return b }), ErrCorrupt, "index width"},
		{"hostile vertex count", edit(put32(48, 60000)), ErrTruncated, "need"},
		{"hostile 32-bit counts", edit(func(b []byte) []byte {
			b[6] = flagIndex32
			binary.LittleEndian.PutUint32(b[48:], math.MaxUint32)
			binary.LittleEndian.PutUint32(b[52:], math.MaxUint32)
			return b
		}), ErrTruncated, "need"},
		{"fewer vertices claimed", edit(put32(48, 8)), ErrCorrupt, "trailing"},
		{"trailing byte", fixCRC(append(bytes.Clone(good), 0, 0, 0, 0, 0)), ErrCorrupt, "trailing"},
		{"checksum", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(), ErrCorrupt, "checksum"},
		{"body bit flip", func() []byte { b := bytes.Clone(good); b[headerSize+3] ^= 0x10; return b }(), ErrCorrupt, "checksum"},
		{"index out of range", edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[len(b)-trailerSize-2:], 9)
			return b
		}), ErrCorrupt, "index 23 is 9, only 9 vertices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Decode(tc.in)
			if m != nil || !errors.Is(err, tc.err) {
				t.Fatalf("Decode = %v, %v; want nil, %v", m, err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Decode error %q, want it to contain %q", err, tc.msg)
			}
		})
	}
	// Every proper prefix is an error, never a panic or a shorter mesh.
	for n := range len(good) {
		if m, err := Decode(good[:n]); err == nil || m != nil {
			t.Fatalf("Decode(first %d of %d bytes) = %v, %v; want an error", n, len(good), m, err)
		}
	}
	// Every single-bit flip is detected.
	for i := range len(good) {
		for bit := range 8 {
			b := bytes.Clone(good)
			b[i] ^= 1 << bit
			if m, err := Decode(b); err == nil || m != nil {
				t.Fatalf("Decode with byte %d bit %d flipped = %v, %v; want an error", i, bit, m, err)
			}
		}
	}
}

// TestDecodeHostileAllocation: a header claiming the largest counts makes
// Decode fail before allocating for them.
func TestDecodeHostileAllocation(t *testing.T) {
	b := make([]byte, headerSize+trailerSize)
	copy(b, magic)
	b[4], b[5], b[6] = Version, byte(Full), flagIndex32
	binary.LittleEndian.PutUint32(b[48:], math.MaxUint32)
	binary.LittleEndian.PutUint32(b[52:], math.MaxUint32-math.MaxUint32%3)
	b = fixCRC(b)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := Decode(b); !errors.Is(err, ErrTruncated) {
			t.Fatalf("Decode(hostile counts) = %v, want ErrTruncated", err)
		}
	})
	// The error value itself allocates a little; 4G vertices would not fit.
	if allocs > 10 {
		t.Errorf("Decode(hostile counts) made %v allocations", allocs)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = Decode(b)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("10 hostile decodes allocated %d bytes, want well under 1 MiB", grew)
	}
}

// golden is a hand-made mesh covering every field of the format: a negative
// origin beyond float32 precision, an upward, a tilted, a horizontal and a
// downward normal (folded octahedral corner), and two triangles.
func golden() *Mesh {
	return &Mesh{
		Quality: Full,
		OriginX: -30_000_000,
		OriginZ: 123_456_789,
		Vertices: []float32{
			0.5, 62, 0.5,
			15.5, 70.25, 0.5,
			0.5, 63, 15.5,
			15.5, 80, 15.5,
		},
		Normals: []float32{
			0, 1, 0,
			-0.6, 0.8, 0,
			0, 0, 1,
			0.36, -0.48, 0.8,
		},
		Indices: []uint32{0, 2, 1, 1, 2, 3},
		Bounds:  Bounds{Min: [3]float32{0.5, 62, 0.5}, Max: [3]float32{15.5, 80, 15.5}},
	}
}

func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden_v1.mesh")
	b, err := Encode(golden())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		i := 0
		for i < min(len(b), len(want)) && b[i] == want[i] {
			i++
		}
		t.Fatalf("Encode(golden) differs from %s at byte %d (len %d, want %d); if the format change is intended, bump Version and run with -update", path, i, len(b), len(want))
	}
	m, err := Decode(want)
	if err != nil {
		t.Fatalf("Decode(%s): %v", path, err)
	}
	if err := closeEnough(golden(), m); err != nil {
		t.Error(err)
	}
	// Spot-check the documented layout on the stored bytes.
	if string(want[:4]) != "RTPM" || want[4] != 1 || want[5] != 1 || want[6] != 0 {
		t.Errorf("header bytes % x", want[:8])
	}
	if int64(binary.LittleEndian.Uint64(want[8:])) != -30_000_000 || binary.LittleEndian.Uint32(want[48:]) != 4 || binary.LittleEndian.Uint32(want[52:]) != 6 {
		t.Errorf("origin or counts wrong in % x", want[8:56])
	}
	// Vertex 1 x is the bounds maximum: quantized to 65535. Vertex 1 y is
	// (70.25-62)/18 of the way up: round(0.458333*65535) = 30037.
	if x, y := binary.LittleEndian.Uint16(want[56+6:]), binary.LittleEndian.Uint16(want[56+8:]); x != 65535 || y != 30037 {
		t.Errorf("vertex 1 quantized to x=%d y=%d, want 65535, 30037", x, y)
	}
	// The upward normal of vertex 0 is the octahedron's centre: (0, 0).
	if u, w := want[56+24], want[56+25]; u != 0 || w != 0 {
		t.Errorf("normal 0 encoded as %d, %d, want 0, 0", u, w)
	}
}
