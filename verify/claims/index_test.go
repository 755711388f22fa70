package claims

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomClaim draws claims of every scale, from one block to the whole
// int64 plane, often straddling cell boundaries and the origin.
func randomClaim(rng *rand.Rand, id int64, worlds []string) *Claim {
	coord := func() int64 {
		switch rng.IntN(6) {
		case 0:
			return rng.Int64N(64) - 32 // near the origin
		case 1:
			return int64(rng.IntN(64)-32) << (4 + rng.IntN(20)) // on a cell edge
		case 2:
			return rng.Int64() // anywhere
		case 3:
			return math.MinInt64 + rng.Int64N(100)
		default:
			return rng.Int64N(20000) - 10000
		}
	}
	side := func() int64 {
		switch rng.IntN(5) {
		case 0:
			return 1
		case 1:
			return 1 << rng.IntN(63)
		default:
			return 1 + rng.Int64N(200)
		}
	}
	axis := func() (lo, hi int64) {
		lo = coord()
		d := side() - 1
		if lo > math.MaxInt64-d {
			return math.MaxInt64 - d, math.MaxInt64
		}
		return lo, lo + d
	}
	c := &Claim{ID: id, World: worlds[rng.IntN(len(worlds))], Owner: "o"}
	c.MinX, c.MaxX = axis()
	c.MinZ, c.MaxZ = axis()
	if rng.IntN(50) == 0 {
		c.MinX, c.MaxX = math.MinInt64, math.MaxInt64
	}
	return c
}

func TestLevelCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		c := randomClaim(rng, int64(i+1), []string{"w"})
		k := levelOf(c)
		n := 0
		cells(c, k, func(cell) { n++ })
		if n < 1 || n > 4 {
			t.Fatalf("%v at level %d overlaps %d cells, want 1 to 4", c, k, n)
		}
		if k > 0 {
			// The level below would not do: its edge is shorter than a side.
			edge := uint64(1) << shift(k-1)
			if max(span(c.MinX, c.MaxX), span(c.MinZ, c.MaxZ)) < edge {
				t.Fatalf("%v at level %d, but fits level %d", c, k, k-1)
			}
		}
	}
}

// The index against a naive list on random operations, checked after
// every step by probes at random points and around claim corners.
func TestIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worlds := []string{"overworld", "nether", "ünï"}
	for round := range 8 {
		ix := newIndex()
		var model []*Claim
		nextID := int64(1)
		probe := func(step int, world string, x, z int64) {
			var want *Claim
			for _, c := range model {
				if c.World == world && c.Contains(x, z) && (want == nil || c.ID < want.ID) {
					want = c
				}
			}
			if got := ix.lookup(world, x, z, false); got != want {
				t.Fatalf("round %d step %d: lookup(%q, %d, %d) = %v, want %v", round, step, world, x, z, got, want)
			}
			got := ix.lookup(world, x, z, true)
			if (got == nil) != (want == nil) || got != nil && (got.World != world || !got.Contains(x, z)) {
				t.Fatalf("round %d step %d: lookup first (%q, %d, %d) = %v, want a claim there: %t", round, step, world, x, z, got, want != nil)
			}
		}
		for step := range 300 {
			if len(model) == 0 || rng.IntN(3) != 0 {
				c := randomClaim(rng, nextID, worlds)
				nextID++
				ix.add(c)
				model = append(model, c)
			} else {
				i := rng.IntN(len(model))
				id := model[i].ID
				if rng.IntN(10) == 0 {
					id = nextID + 100 // not there
				} else {
					model = append(model[:i], model[i+1:]...)
				}
				got := ix.remove(id)
				if (got != nil) != (id <= nextID) || got != nil && got.ID != id {
					t.Fatalf("round %d step %d: remove(%d) = %v", round, step, id, got)
				}
			}
			if ix.len() != len(model) {
				t.Fatalf("round %d step %d: len = %d, want %d", round, step, ix.len(), len(model))
			}
			for range 20 {
				w := worlds[rng.IntN(len(worlds))]
				probe(step, w, rng.Int64N(40000)-20000, rng.Int64N(40000)-20000)
				probe(step, w, rng.Int64(), rng.Int64())
			}
			for range min(len(model), 12) {
				c := model[rng.IntN(len(model))]
				for _, dx := range []int64{-1, 0, 1} {
					for _, dz := range []int64{-1, 0, 1} {
						probe(step, c.World, sat(c.MinX, dx), sat(c.MinZ, dz))
						probe(step, c.World, sat(c.MaxX, dx), sat(c.MaxZ, dz))
					}
				}
			}
		}
		// Removing everything leaves nothing behind.
		for _, c := range model {
			ix.remove(c.ID)
		}
		if len(ix.worlds) != 0 || len(ix.byID) != 0 {
			t.Fatalf("round %d: empty index still holds %d worlds, %d ids", round, len(ix.worlds), len(ix.byID))
		}
	}
}

// sat returns v+d clamped to the int64 range.
func sat(v, d int64) int64 {
	switch {
	case d > 0 && v > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && v < math.MinInt64-d:
		return math.MinInt64
	}
	return v + d
}
