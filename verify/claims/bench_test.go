package claims_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/claims"
)

const benchClaims = 10_000

// benchStore fills a store with benchClaims claims on a 100,000-block
// square world: mostly player claims of 8 to 256 blocks, one in ten a town
// of 256 to 2,048. It returns the claims and probe points, half of them
// inside some claim.
func benchStore(b *testing.B) (*claims.Store, []claims.Claim, [][2]int64) {
	b.Helper()
	s := open(b, filepath.Join(b.TempDir(), "claims.db"), claims.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	all := make([]claims.Claim, 0, benchClaims)
	for i := range benchClaims {
		side := 8 + rng.Int64N(248)
		if i%10 == 0 {
			side = 256 + rng.Int64N(1792)
		}
		x, z := rng.Int64N(100_000)-50_000, rng.Int64N(100_000)-50_000
		c, err := s.Add(ctx, rect("overworld", fmt.Sprint("player", i), x, z, x+side-1, z+side*3/4))
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, c)
	}
	probes := make([][2]int64, 4096)
	for i := range probes {
		if i%2 == 0 {
			c := all[rng.IntN(len(all))]
			probes[i] = [2]int64{c.MinX + rng.Int64N(c.MaxX-c.MinX+1), c.MinZ + rng.Int64N(c.MaxZ-c.MinZ+1)}
		} else {
			probes[i] = [2]int64{rng.Int64N(100_000) - 50_000, rng.Int64N(100_000) - 50_000}
		}
	}
	return s, all, probes
}

// BenchmarkContains: one lookup among 10,000 claims.
func BenchmarkContains(b *testing.B) {
	s, _, probes := benchStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := probes[i&(len(probes)-1)]
		s.Contains("overworld", p[0], p[1])
		i++
	}
}

// BenchmarkVerifier is the verifier's question (any claim?) through the
// registry-facing func.
func BenchmarkVerifier(b *testing.B) {
	s, _, probes := benchStore(b)
	v := s.Verifier()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := probes[i&(len(probes)-1)]
		v(verify.Location{World: "overworld", X: p[0], Y: 64, Z: p[1]})
		i++
	}
}

func BenchmarkContainsParallel(b *testing.B) {
	s, _, probes := benchStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			p := probes[i&(len(probes)-1)]
			s.Contains("overworld", p[0], p[1])
			i++
		}
	})
}

// BenchmarkContainsLinear is the baseline: a scan of the same 10,000
// claims, as a verifier without an index would do.
func BenchmarkContainsLinear(b *testing.B) {
	_, all, probes := benchStore(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		p := probes[i&(len(probes)-1)]
		for j := range all {
			if all[j].Contains(p[0], p[1]) {
				break
			}
		}
		i++
	}
}
