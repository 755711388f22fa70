package procgen

import (
	"context"
	"math"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// TestReliefAgreesAcrossScales checks that a coarse relief tile and a fine
// one whose samples fall on the same positions hold the same values, bit
// for bit: the relief is a function of position, not of the request.
func TestReliefAgreesAcrossScales(t *testing.T) {
	ctx := context.Background()
	g, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	r := g.Relief()
	// Coarse: 64 samples 64 blocks apart; fine: the 8 x 8 of them in the
	// 512-block square at (1024, -2048).
	coarse, err := r.Tile(ctx, terrain.Request{OriginX: 0, OriginZ: -4096, Size: 4096, Resolution: 64, Border: 1})
	if err != nil {
		t.Fatal(err)
	}
	fine, err := r.Tile(ctx, terrain.Request{OriginX: 1024, OriginZ: -2048, Size: 512, Resolution: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := coarse.Validate(coarse.Request); err != nil {
		t.Fatal(err)
	}
	for j := range 8 {
		for i := range 8 {
			ci, cj := 16+i, 32+j
			a, b := coarse.Interior(ci, cj), fine.Interior(i, j)
			if math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("sample (%d, %d): coarse %v, fine %v", i, j, a, b)
			}
			if ca, fa := coarse.Cover[cj*64+ci], fine.Cover[j*8+i]; ca != fa {
				t.Fatalf("cover (%d, %d): coarse %v, fine %v", i, j, ca, fa)
			}
		}
	}
}

// TestReliefIsGeneratorWithoutDrainage checks the relief against the
// generator: equal where the drainage neither carves nor floods (no
// carving, and no water surface above both the ground and the sea), and
// never a river or lake; and that it computes no drainage cell.
func TestReliefIsGeneratorWithoutDrainage(t *testing.T) {
	ctx := context.Background()
	g, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	req := terrain.Request{OriginX: -3000, OriginZ: 1500, Size: 2048, Resolution: 128}
	rt, err := g.Relief().Tile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if n := g.cells.len(); n != 0 {
		t.Fatalf("the relief computed %d drainage cells, want 0", n)
	}
	gt, err := g.Tile(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	cs := cellSet{g: g}
	same, drained := 0, 0
	for j := range 128 {
		for i := range 128 {
			k := j*128 + i
			if c := rt.Cover[k]; c == terrain.CoverRiver || c == terrain.CoverLake {
				t.Fatalf("relief sample (%d, %d) is %v", i, j, c)
			}
			x := samplePos(req.OriginX, i, req.Size, req.Resolution)
			z := samplePos(req.OriginZ, j, req.Size, req.Resolution)
			dr, err := g.drainageAt(ctx, &cs, x, z)
			if err != nil {
				t.Fatal(err)
			}
			ground := clampY(g.f.at(x, z).h)
			if dr.carve != 0 || dr.water > ground && dr.water > g.f.sea {
				drained++
				continue
			}
			same++
			if rt.Interior(i, j) != gt.Interior(i, j) || rt.Cover[k] != gt.Cover[k] ||
				math.Float32bits(rt.Water[k]) != math.Float32bits(gt.Water[k]) {
				t.Fatalf("undrained sample (%d, %d): relief %v %v %v, generator %v %v %v", i, j,
					rt.Interior(i, j), rt.Cover[k], rt.Water[k], gt.Interior(i, j), gt.Cover[k], gt.Water[k])
			}
		}
	}
	if same == 0 || drained == 0 {
		t.Fatalf("%d undrained and %d drained samples: the test needs both", same, drained)
	}
}

// TestReliefProducer checks that the relief never shares the generator's
// identity.
func TestReliefProducer(t *testing.T) {
	g, err := New(DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	r := g.Relief()
	if r.Producer() == g.Producer() || r.Producer().Name != ReliefName || r.Producer().Version != Version {
		t.Fatalf("relief producer %v, generator %v", r.Producer(), g.Producer())
	}
	if r.Params() != g.Params() {
		t.Fatalf("relief params %v, generator %v", r.Params(), g.Params())
	}
}
