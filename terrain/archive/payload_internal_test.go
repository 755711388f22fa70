package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// randomTile returns a valid tile for req with random samples, including
// zeros of both signs.
func randomTile(rng *rand.Rand, req terrain.Request) *terrain.Tile {
	side, res := req.Side(), int(req.Resolution)
	t := &terrain.Tile{Request: req, Elevations: make([]float32, side*side), Water: make([]float32, res*res), Cover: make([]terrain.Cover, res*res)}
	for i := range t.Elevations {
		switch rng.IntN(8) {
		case 0:
			t.Elevations[i] = float32(math.Copysign(0, -1))
		case 1:
			t.Elevations[i] = 0
		default:
			t.Elevations[i] = float32(rng.NormFloat64() * 100)
		}
	}
	for i := range t.Water {
		if rng.IntN(2) == 0 {
			t.Water[i] = float32(math.NaN())
		} else {
			t.Water[i] = float32(rng.NormFloat64())
		}
		t.Cover[i] = terrain.Cover(rng.IntN(terrain.NumCovers))
	}
	t.Min, t.Max = extremaOf(t)
	return t
}

// extremaOf returns the extrema of t's interior elevations as Validate
// computes them.
func extremaOf(t *terrain.Tile) (lo, hi float32) {
	side, res, b := t.Request.Side(), int(t.Request.Resolution), int(t.Request.Border)
	lo, hi = float32(math.Inf(1)), float32(math.Inf(-1))
	for j := range res {
		for i := range res {
			e := t.Elevations[(j+b)*side+i+b]
			lo, hi = min(lo, e), max(hi, e)
		}
	}
	return lo, hi
}

// shapes are kinds of terrain, applied to random elevations, that take
// each path of the check against the stored extrema (see
// interiorMatches), including zero extrema.
var shapes = []func(float32) float32{
	func(e float32) float32 { return e },                                  // both signs, zeros of both signs
	func(e float32) float32 { return float32(math.Abs(float64(e))) + 1 },  // positive
	func(e float32) float32 { return -float32(math.Abs(float64(e))) - 1 }, // negative
	func(e float32) float32 { return float32(math.Abs(float64(e))) },      // positive and zeros
	func(e float32) float32 { return -float32(math.Abs(float64(e))) },     // negative and zeros
	func(float32) float32 { return 0 },                                    // flat at sea level
	func(e float32) float32 { return e * 0 },                              // flat, zeros of both signs
}

// reshape applies shape to t's elevations and recomputes its extrema.
func reshape(t *terrain.Tile, shape func(float32) float32) {
	for i, e := range t.Elevations {
		t.Elevations[i] = shape(e)
	}
	t.Min, t.Max = extremaOf(t)
}

// decodeChecked must accept exactly what DecodeTile + Validate accept.
func checkEquivalent(t *testing.T, p []byte, req terrain.Request) (accepted bool) {
	t.Helper()
	fast, fastErr := decodeChecked(p, req)
	slow, slowErr := DecodeTile(p)
	if slowErr == nil {
		slowErr = slow.Validate(req)
	}
	if (fastErr == nil) != (slowErr == nil) {
		t.Fatalf("decodeChecked error %v, DecodeTile+Validate error %v", fastErr, slowErr)
	}
	if fastErr == nil && string(EncodeTile(fast)) != string(EncodeTile(slow)) {
		t.Fatalf("decodeChecked and DecodeTile decode differently")
	}
	return fastErr == nil
}

func TestDecodeCheckedMatchesValidate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := []terrain.Request{
		{Size: 16, Resolution: 4, Border: 1},
		{OriginX: -5, Size: 3, Resolution: 1},
		{Size: 64, Resolution: 9, Border: 3},
	}
	mutations := []func(*terrain.Tile){
		func(*terrain.Tile) {},
		func(x *terrain.Tile) { x.Elevations[rng.IntN(len(x.Elevations))] = float32(math.NaN()) },
		func(x *terrain.Tile) { x.Elevations[rng.IntN(len(x.Elevations))] = float32(math.Inf(-1)) },
		func(x *terrain.Tile) { x.Water[rng.IntN(len(x.Water))] = float32(math.Inf(1)) },
		func(x *terrain.Tile) {
			x.Cover[rng.IntN(len(x.Cover))] = terrain.Cover(terrain.NumCovers + rng.IntN(5))
		},
		func(x *terrain.Tile) { x.Min = float32(math.Copysign(0, float64(x.Min))) },
		func(x *terrain.Tile) { x.Max = -x.Max },
		func(x *terrain.Tile) { x.Max = math.Nextafter32(x.Max, 1e9) },
		func(x *terrain.Tile) { x.Elevations = x.Elevations[1:] },
		func(x *terrain.Tile) { x.Water = append(x.Water, 1) },
		func(x *terrain.Tile) { x.Cover = x.Cover[:len(x.Cover)-1] },
		func(x *terrain.Tile) { x.Request.Border++ },
		func(x *terrain.Tile) { x.Request.OriginZ-- },
		func(x *terrain.Tile) { // border samples count for finiteness but not extrema
			x.Elevations[0] = 1e30
		},
	}
	accepted := 0
	for range 600 {
		req := reqs[rng.IntN(len(reqs))]
		tile := randomTile(rng, req)
		reshape(tile, shapes[rng.IntN(len(shapes))])
		mutations[rng.IntN(len(mutations))](tile)
		if checkEquivalent(t, EncodeTile(tile), req) {
			accepted++
		}
	}
	if accepted < 100 || accepted > 500 {
		t.Fatalf("%d of 600 accepted: the cases do not exercise both outcomes", accepted)
	}
}

// A request with a negative border, which the archive never sends, gets an
// error rather than a panic.
func TestDecodeCheckedNegativeBorder(t *testing.T) {
	req := terrain.Request{Size: 16, Resolution: 4, Border: -1}
	side, res := req.Side(), int(req.Resolution)
	tile := &terrain.Tile{Request: req, Elevations: make([]float32, side*side), Water: make([]float32, res*res), Cover: make([]terrain.Cover, res*res)}
	if _, err := decodeChecked(EncodeTile(tile), req); !errors.Is(err, terrain.ErrInvalidTile) {
		t.Fatalf("decodeChecked(border -1) error %v, want %v", err, terrain.ErrInvalidTile)
	}
}

// A tile decoded from a misaligned payload is copied, not viewed, and
// still correct.
func TestDecodeCheckedMisaligned(t *testing.T) {
	req := terrain.Request{Size: 16, Resolution: 4, Border: 1}
	p := EncodeTile(randomTile(rand.New(rand.NewPCG(1, 1)), req))
	buf := make([]byte, len(p)+1)
	copy(buf[1:], p)
	if !checkEquivalent(t, buf[1:], req) {
		t.Fatal("valid misaligned payload rejected")
	}
}

func FuzzDecodeChecked(f *testing.F) {
	req := terrain.Request{Size: 16, Resolution: 4, Border: 1}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range shapes {
		tile := randomTile(rng, req)
		reshape(tile, shape)
		f.Add(EncodeTile(tile))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		checkEquivalent(t, p, req)
		// Most mutations fail the checksum; checking each input again with
		// a correct one lets the fuzzer explore the samples and extrema.
		if len(p) >= 4 {
			q := bytes.Clone(p)
			binary.LittleEndian.PutUint32(q[len(q)-4:], crc32.Checksum(q[:len(q)-4], castagnoli))
			checkEquivalent(t, q, req)
		}
	})
}

// A hit allocates the tile header only: the arrays view the payload.
func TestHitDecodeAllocations(t *testing.T) {
	req := terrain.Request{Size: 256, Resolution: 64, Border: 1}
	p := EncodeTile(randomTile(rand.New(rand.NewPCG(1, 2)), req))
	if !littleEndian {
		t.Skip("arrays are copied on big-endian machines")
	}
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := decodeChecked(p, req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("decodeChecked allocates %v times per call, want 1 (the Tile)", allocs)
	}
}

func TestRequestPlanMatchesReflection(t *testing.T) {
	if requestPlan == nil {
		t.Skip("terrain.Request has a field that is not fixed-width; appendRequest uses reflection")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 200 {
		req := terrain.Request{OriginX: int64(rng.Uint64()), OriginZ: -int64(rng.Uint64() >> 3), Size: int32(rng.Uint32()), Resolution: -int32(rng.IntN(100)), Border: int32(rng.IntN(70))}
		got := appendRequest(nil, req)
		want := appendU32(nil, 0)
		want = appendValue(want, reflect.ValueOf(req))
		binary.LittleEndian.PutUint32(want, uint32(len(want)-4))
		if !bytes.Equal(got, want) {
			t.Fatalf("appendRequest(%v) = %x, reflection gives %x", req, got, want)
		}
	}
}

// The branchless sample checks agree with plain ones on every byte value
// and on every interesting float pattern, in every lane position of runs
// long enough to reach the unrolled loops and their tails.
func TestBranchlessChecks(t *testing.T) {
	for v := range 256 {
		for _, n := range []int{1, 7, 8, 11, 31, 32, 33, 45} {
			for pos := range n {
				p := make([]byte, n)
				p[pos] = byte(v)
				for _, limit := range []int{0, terrain.NumCovers - 1, 127} {
					if got, want := anyAbove(p, limit), v > limit; got != want {
						t.Fatalf("anyAbove(byte %d at %d of %d, %d) = %v, want %v", v, pos, n, limit, got, want)
					}
				}
			}
		}
	}
	for _, x := range floatPatterns {
		f := math.Float32frombits(x)
		for n := 1; n <= 11; n++ {
			for pos := range n {
				p := make([]byte, 4*n)
				for i := range n {
					binary.LittleEndian.PutUint32(p[4*i:], 0x3f800000) // 1.0
				}
				binary.LittleEndian.PutUint32(p[4*pos:], x)
				nonFinite := math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)
				if got := finiteCheck(p)&finiteFlags != 0; got != nonFinite {
					t.Fatalf("finiteCheck(%#08x at %d of %d) flags %v, want %v", x, pos, n, got, nonFinite)
				}
				if got, want := anyInfinite(p), math.IsInf(float64(f), 0); got != want {
					t.Fatalf("anyInfinite(%#08x at %d of %d) = %v, want %v", x, pos, n, got, want)
				}
			}
		}
	}
	if finiteCheck(nil) != 0 || anyInfinite(nil) || anyAbove(nil, 0) {
		t.Fatal("a check failed on no samples")
	}
}

// floatPatterns are float32 bit patterns at the edges of the checks: both
// zeros, subnormals, the extreme finite values, infinities and NaNs.
var floatPatterns = []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x3f800000, 0xbf800000,
	0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001, 0x7fc00000, 0xffffffff, 0x7fffffff,
	0x7f000000, 0xfe800000}

// The elevation checks (border finiteness, the check of the interior
// against stored extrema and the exact measurement) agree with Validate's
// float loops on grids of several shapes whose samples are drawn from the
// edge patterns and from narrow and wide ranges of either sign, against
// the true extrema, their other-signed zeros and neighbours, and swapped
// or special stored values.
func TestElevationChecks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	shapes := []grid{{1, 1, 0}, {3, 1, 1}, {4, 4, 0}, {7, 5, 1}, {9, 3, 3}, {13, 9, 2}, {21, 19, 1}}
	draws := []func() uint32{
		func() uint32 { return floatPatterns[rng.IntN(len(floatPatterns))] },
		func() uint32 { return math.Float32bits(float32(rng.NormFloat64() * 100)) },
		func() uint32 { return math.Float32bits(float32(rng.NormFloat64()*3 + 200)) },       // positive
		func() uint32 { return math.Float32bits(float32(rng.NormFloat64()*3 - 200)) },       // negative
		func() uint32 { return math.Float32bits(float32(rng.IntN(3)-1) * 0) },               // zeros of both signs
		func() uint32 { return math.Float32bits(float32(rng.IntN(5))) },                     // +0 and small integers
		func() uint32 { return math.Float32bits(-float32(rng.IntN(5))) },                    // -0 and small integers
		func() uint32 { return uint32(rng.IntN(3)) | uint32(rng.IntN(2))<<31 },              // zeros and subnormals
		func() uint32 { return 0x7f7ffffe + uint32(rng.IntN(4)) | uint32(rng.IntN(2))<<31 }, // near and at infinity
	}
	for range 3000 {
		g := shapes[rng.IntN(len(shapes))]
		// Mostly one kind of sample, now and then another.
		main, other := draws[rng.IntN(len(draws))], draws[rng.IntN(len(draws))]
		elev := make([]byte, 4*g.side*g.side)
		floats := make([]float32, g.side*g.side)
		for i := range floats {
			b := main()
			if rng.IntN(10) == 0 {
				b = other()
			}
			binary.LittleEndian.PutUint32(elev[4*i:], b)
			floats[i] = math.Float32frombits(b)
		}
		// The model: Validate's loops.
		wantNonFinite := false
		for _, f := range floats {
			wantNonFinite = wantNonFinite || math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)
		}
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		interiorFinite, negZero := true, false
		for j := range g.res {
			for _, f := range floats[g.at(j) : g.at(j)+g.res] {
				lo, hi = min(lo, f), max(hi, f)
				interiorFinite = interiorFinite && !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
				negZero = negZero || math.Float32bits(f) == 0x80000000
			}
		}
		x := measureInterior(elev, g)
		if got := anyNonFiniteBorder(elev, g) || x.nonFinite(); got != wantNonFinite {
			t.Fatalf("grid %+v %v: non-finite %v, want %v", g, floats, got, wantNonFinite)
		}
		if interiorFinite {
			if l, h := x.extrema(); l != lo || h != hi {
				t.Fatalf("grid %+v %v: extrema %v..%v, want %v..%v", g, floats, l, h, lo, hi)
			}
		}
		nz := float32(math.Copysign(0, -1))
		up, down := float32(math.Inf(1)), float32(math.Inf(-1))
		candidates := [][2]float32{
			{lo, hi}, {hi, lo}, {lo, lo}, {hi, hi},
			{math.Nextafter32(lo, down), hi}, {lo, math.Nextafter32(hi, up)},
			{math.Nextafter32(lo, up), hi}, {lo, math.Nextafter32(hi, down)},
			{0, hi}, {nz, hi}, {lo, 0}, {lo, nz}, {0, 0}, {nz, nz}, {-hi, hi}, {lo, -lo},
			{float32(math.NaN()), hi}, {lo, up}, {down, hi},
		}
		for _, c := range candidates {
			want := interiorFinite && lo == c[0] && hi == c[1]
			got := interiorMatches(elev, g, c[0], c[1])
			if got && !want {
				t.Fatalf("grid %+v %v: interiorMatches(%v, %v) = true, want false (extrema %v..%v)", g, floats, c[0], c[1], lo, hi)
			}
			// A valid tile matches unless a zero extremum meets a -0 sample.
			if !got && want && (c[0] != 0 && c[1] != 0 || !negZero) {
				t.Fatalf("grid %+v %v: interiorMatches(%v, %v) = false for the true extrema", g, floats, c[0], c[1])
			}
		}
	}
}

// BenchmarkDecodeChecked is the checked decode of a hit on a typical
// screening tile (256 blocks, resolution 64, border 1: a 38 KB payload),
// with smooth elevations and NaN water, and with random elevations and
// water, whose extrema change unpredictably.
func BenchmarkDecodeChecked(b *testing.B) {
	req := terrain.Request{OriginX: 256, OriginZ: -512, Size: 256, Resolution: 64, Border: 1}
	smooth := randomTile(rand.New(rand.NewPCG(1, 1)), req)
	for i := range smooth.Elevations {
		smooth.Elevations[i] = float32(i%97) * 0.5
	}
	for i := range smooth.Water {
		smooth.Water[i] = float32(math.NaN())
	}
	smooth.Min, smooth.Max = extremaOf(smooth)
	tiles := []struct {
		name string
		tile *terrain.Tile
	}{
		{"smooth", smooth},
		{"random", randomTile(rand.New(rand.NewPCG(7, 8)), req)},
	}
	for _, tc := range tiles {
		b.Run(tc.name, func(b *testing.B) {
			p := EncodeTile(tc.tile)
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeChecked(p, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
