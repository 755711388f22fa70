package memory

import (
	"math/rand/v2"
	"sort"
	"testing"
)

// TestSearchAgainstSortSearch checks both searches of a run set against
// sort.Search over plain arrays, on spread and on clustered runs (buckets
// holding more keys than one window scans, which take the fallback).
func TestSearchAgainstSortSearch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		gap, width int64 // gap and length ranges
		clustered  bool
	}{
		{"empty", 0, 1, 1, false},
		{"one", 1, 5, 3, false},
		{"spread", 5000, 64, 16, false},
		{"touching", 3000, 1, 4, false},
		{"clustered", 4000, 3, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), 3))
			runs := make([]Run, tc.n)
			var at int64
			for i := range runs {
				gap := 1 + rng.Int64N(tc.gap)
				if tc.clustered && i%500 == 0 {
					gap = 1_000_000 // dense clumps far apart: full buckets
				}
				at += gap
				runs[i] = Run{Start: at, Len: 1 + rng.Int64N(tc.width), Cause: CauseSafety}
				at += runs[i].Len
			}
			s := newRunSet(runs)
			starts := make([]int64, len(runs))
			goods := make([]int64, len(runs))
			var pre int64
			for i, r := range runs {
				starts[i], goods[i] = r.Start, r.Start-pre
				pre += r.Len
			}
			if s.bad() != pre {
				t.Fatalf("bad() = %d, want %d", s.bad(), pre)
			}
			if tc.clustered {
				full := 0
				for b := 0; b+1 < len(s.byIdx.first); b++ {
					if s.byIdx.first[b+1]-s.byIdx.first[b] > window {
						full++
					}
				}
				if full == 0 {
					t.Fatal("setup: no bucket fuller than a window; the fallback is not exercised")
				}
			}
			limit := at + 100
			probe := func(x int64) {
				want := sort.Search(len(starts), func(i int) bool { return starts[i] > x })
				if got := s.rankStart(x); got != want {
					t.Fatalf("rankStart(%d) = %d, want %d", x, got, want)
				}
				want = sort.Search(len(goods), func(i int) bool { return goods[i] > x })
				if got := s.rankGood(x); got != want {
					t.Fatalf("rankGood(%d) = %d, want %d", x, got, want)
				}
			}
			for range 20000 {
				probe(rng.Int64N(limit))
			}
			for _, r := range runs[:min(len(runs), 300)] {
				for _, x := range []int64{r.Start - 1, r.Start, r.End() - 1, r.End()} {
					if x >= 0 {
						probe(x)
					}
				}
			}
		})
	}
}
