package archive

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// randomTile returns a valid tile for req with random samples, including
// zeros of both signs.
func randomTile(rng *rand.Rand, req terrain.Request) *terrain.Tile {
	side, res, b := req.Side(), int(req.Resolution), int(req.Border)
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
	t.Min, t.Max = float32(math.Inf(1)), float32(math.Inf(-1))
	for j := range res {
		for i := range res {
			e := t.Elevations[(j+b)*side+i+b]
			t.Min, t.Max = min(t.Min, e), max(t.Max, e)
		}
	}
	return t
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
	for range 300 {
		req := reqs[rng.IntN(len(reqs))]
		tile := randomTile(rng, req)
		mutations[rng.IntN(len(mutations))](tile)
		if checkEquivalent(t, EncodeTile(tile), req) {
			accepted++
		}
	}
	if accepted == 0 || accepted == 300 {
		t.Fatalf("%d of 300 accepted: the cases do not exercise both outcomes", accepted)
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
	for range 4 {
		f.Add(EncodeTile(randomTile(rng, req)))
	}
	f.Fuzz(func(t *testing.T, p []byte) { checkEquivalent(t, p, req) })
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
// and on every interesting float pattern, in every lane position.
func TestBranchlessChecks(t *testing.T) {
	for v := range 256 {
		for pos := range 11 {
			p := make([]byte, 11)
			p[pos] = byte(v)
			for _, limit := range []int{0, terrain.NumCovers - 1, 127} {
				if got, want := anyAbove(p, limit), v > limit; got != want {
					t.Fatalf("anyAbove(byte %d at %d, %d) = %v, want %v", v, pos, limit, got, want)
				}
			}
		}
	}
	patterns := []uint32{0, 0x80000000, 1, 0x007fffff, 0x00800000, 0x3f800000, 0x7f7fffff, 0xff7fffff,
		0x7f800000, 0xff800000, 0x7f800001, 0x7fc00000, 0xffffffff, 0x7fffffff, 0x7f000000, 0xfe800000}
	for _, x := range patterns {
		f := math.Float32frombits(x)
		for n := 1; n <= 3; n++ {
			for pos := range n {
				p := make([]byte, 4*n)
				for i := range n {
					binary.LittleEndian.PutUint32(p[4*i:], 0x3f800000) // 1.0
				}
				binary.LittleEndian.PutUint32(p[4*pos:], x)
				nonFinite := math.IsNaN(float64(f)) || math.IsInf(float64(f), 0)
				if got := anyNonFinite(p); got != nonFinite {
					t.Fatalf("anyNonFinite(%#08x at %d of %d) = %v, want %v", x, pos, n, got, nonFinite)
				}
				if got, want := anyInfinite(p), math.IsInf(float64(f), 0); got != want {
					t.Fatalf("anyInfinite(%#08x at %d of %d) = %v, want %v", x, pos, n, got, want)
				}
			}
		}
	}
	if anyNonFinite(nil) || anyInfinite(nil) || anyAbove(nil, 0) {
		t.Fatal("a check failed on no samples")
	}
}
