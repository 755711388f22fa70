package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// TestPlacementsModel checks claim, release, excluded and sweep against a
// plain list of the spots handed out, over random operations near chunk
// corners (where the neighbour chunks matter).
func TestPlacementsModel(t *testing.T) {
	for _, radius := range []int64{1, 2, 5, 17, maxColumnRadius + 1} {
		rng := rand.New(rand.NewPCG(uint64(radius), 7))
		p := newPlacements()
		// The model: the spots handed out by chunk, and each chunk's latest
		// hand-out, after which all its spots expire at once.
		type chunkModel struct {
			spots []geom.Block
			last  time.Time
		}
		model := map[geom.Chunk]*chunkModel{}
		now := time.Unix(1_000_000, 0)
		const ttl = time.Hour
		near := func(b geom.Block, since time.Time) bool {
			for _, cm := range model {
				if cm.last.Before(since) {
					continue
				}
				for _, s := range cm.spots {
					dx, dz := s.X-b.X, s.Z-b.Z
					if radius > maxColumnRadius {
						if dx == 0 && dz == 0 {
							return true
						}
						continue
					}
					if dx*dx+dz*dz < radius*radius {
						return true
					}
				}
			}
			return false
		}
		randBlock := func() geom.Block {
			return geom.Block{X: rng.Int64N(96) - 48, Z: rng.Int64N(96) - 48}
		}
		var handed []geom.Block
		for step := range 3000 {
			now = now.Add(time.Duration(rng.IntN(5)) * time.Second)
			since := now.Add(-ttl)
			switch op := rng.IntN(10); {
			case op < 6:
				b := randBlock()
				want := !near(b, since)
				if got := p.claim(b, radius, now, since); got != want {
					t.Fatalf("radius %d step %d: claim(%v) = %v, want %v", radius, step, b, got, want)
				}
				if want {
					cm := model[b.Chunk()]
					if cm == nil || cm.last.Before(since) {
						cm = &chunkModel{}
						model[b.Chunk()] = cm
					}
					cm.spots = append(cm.spots, b)
					cm.last = now
					handed = append(handed, b)
				}
			case op < 7 && len(handed) > 0:
				i := rng.IntN(len(handed))
				b := handed[i]
				handed = append(handed[:i], handed[i+1:]...)
				p.release(b)
				if cm := model[b.Chunk()]; cm != nil {
					for k, s := range cm.spots {
						if s == b {
							cm.spots = append(cm.spots[:k], cm.spots[k+1:]...)
							break
						}
					}
					if len(cm.spots) == 0 {
						delete(model, b.Chunk())
					}
				}
			case op < 9:
				c := randBlock().Chunk()
				ex := p.excluded(c, radius, since)
				o := c.Origin()
				for i := range world.ChunkSize * world.ChunkSize {
					b := geom.Block{X: o.X + int64(i%world.ChunkSize), Z: o.Z + int64(i/world.ChunkSize)}
					got := ex[i>>6]&(1<<(i&63)) != 0
					if want := near(b, since); got != want {
						t.Fatalf("radius %d step %d: excluded(%v) has %v = %v, want %v", radius, step, c, b, got, want)
					}
				}
			default:
				p.sweep(since)
				for c, cm := range model {
					if cm.last.Before(since) {
						delete(model, c)
					}
				}
			}
			if got, want := p.len(), len(model); got != want {
				t.Fatalf("radius %d step %d: %d chunks hold spots, want %d", radius, step, got, want)
			}
		}
	}
}

func TestMarksChunks(t *testing.T) {
	for _, c := range []struct {
		radius int64
		want   bool
	}{{0, false}, {2, false}, {11, false}, {12, true}, {64, true}, {1024, true}} {
		if got := marksChunks(c.radius); got != c.want {
			t.Errorf("marksChunks(%d) = %v, want %v", c.radius, got, c.want)
		}
	}
}

func BenchmarkPlacementClaim(b *testing.B) {
	p := newPlacements()
	now := time.Unix(1_000_000, 0)
	since := now.Add(-time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		p.claim(geom.Block{X: rng.Int64N(8192) - 4096, Z: rng.Int64N(8192) - 4096}, 2, now, since)
	}
}
