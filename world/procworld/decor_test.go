package procworld

import (
	"math/rand/v2"
	"testing"

	"github.com/rtpengine/rtp/world"
)

// The naive references below decide one column at a time from the
// definition (every cell around it); the stamps must agree with them.

func blobAt(b blob, seed uint64, x, z int64) bool {
	cx, cz := floorDiv(x, b.cell), floorDiv(z, b.cell)
	for dz := int64(-1); dz <= 1; dz++ {
		for dx := int64(-1); dx <= 1; dx++ {
			x0, z0, r, ok := b.disc(seed, cx+dx, cz+dz)
			if ok && (x-x0)*(x-x0)+(z-z0)*(z-z0) <= r*r {
				return true
			}
		}
	}
	return false
}

func canopyAt(seed uint64, x, z int64) canopyCell {
	var c canopyCell
	cx, cz := floorDiv(x, treeCell), floorDiv(z, treeCell)
	for dz := int64(-1); dz <= 1; dz++ {
		for dx := int64(-1); dx <= 1; dx++ {
			tx, tz, h, ok := trunk(seed, cx+dx, cz+dz)
			if !ok {
				continue
			}
			d2 := (x-tx)*(x-tx) + (z-tz)*(z-tz)
			if d2 > canopyR2 {
				continue
			}
			if d2 > 2 {
				h--
			}
			c.height = max(c.height, uint8(h))
			c.trunk = c.trunk || d2 == 0
		}
	}
	return c
}

func TestStampsMatchReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	origins := [][2]int64{{0, 0}, {-16, -16}, {-1 << 32, 1<<32 - 16}, {1 << 20, -(1 << 20)}}
	for range 60 {
		origins = append(origins, [2]int64{rng.Int64N(1<<20) * 16, -rng.Int64N(1<<20) * 16})
	}
	var trees, swamp, powder, trunks int
	for _, seed := range []uint64{0, 12345} {
		for _, o := range origins {
			d := chunkDecor{seed: seed, ox: o[0], oz: o[1]}
			for i := range chunkColumns {
				x, z := o[0]+int64(i%world.ChunkSize), o[1]+int64(i/world.ChunkSize)
				if got, want := d.tree(i), canopyAt(seed, x, z); got != want {
					t.Fatalf("seed %d: canopy at (%d, %d) = %+v, reference %+v", seed, x, z, got, want)
				}
				if got, want := d.swamp(i), blobAt(swampWater, seed, x, z); got != want {
					t.Fatalf("seed %d: swamp water at (%d, %d) = %v, reference %v", seed, x, z, got, want)
				}
				if got, want := d.powder(i), blobAt(powderSnow, seed, x, z); got != want {
					t.Fatalf("seed %d: powder snow at (%d, %d) = %v, reference %v", seed, x, z, got, want)
				}
				if d.tree(i).height > 0 {
					trees++
				}
				if d.tree(i).trunk {
					trunks++
				}
				if d.swamp(i) {
					swamp++
				}
				if d.powder(i) {
					powder++
				}
			}
		}
	}
	// The streams must actually place something for the comparison to
	// mean anything, and not cover everything.
	total := 2 * len(origins) * chunkColumns
	for _, c := range []struct {
		name string
		n    int
	}{{"canopy", trees}, {"trunk", trunks}, {"swamp water", swamp}, {"powder snow", powder}} {
		if c.n == 0 || c.n == total {
			t.Errorf("%s covers %d of %d columns", c.name, c.n, total)
		}
	}
	t.Logf("canopy %.1f%%, trunks %.1f%%, swamp water %.1f%%, powder snow %.1f%%",
		pct(trees, total), pct(trunks, total), pct(swamp, total), pct(powder, total))
}

func pct(n, total int) float64 { return 100 * float64(n) / float64(total) }

func TestHashSeedsAndSalts(t *testing.T) {
	// Different seeds, salts and positions give different values.
	seen := map[uint64]bool{}
	for _, in := range [][4]int64{{0, 1, 5, 7}, {1, 1, 5, 7}, {0, 2, 5, 7}, {0, 1, 7, 5}, {0, 1, -5, 7}, {0, 1, 5, -7}} {
		h := hash3(uint64(in[0]), uint64(in[1]), in[2], in[3])
		if seen[h] {
			t.Fatalf("hash3%v collides with another input", in)
		}
		seen[h] = true
	}
}

func TestFloorDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{0, 5, 0}, {4, 5, 0}, {5, 5, 1}, {-1, 5, -1}, {-5, 5, -1}, {-6, 5, -2}, {-1 << 40, 8, -1 << 37},
	} {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
