package memory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"
	"time"
)

// benchRuns returns n sorted disjoint runs spread like a real server's
// table: lengths 1..16, gaps 1..64, a mix of static and dynamic causes.
func benchRuns(n int, seed uint64) []Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	runs := make([]Run, n)
	var at int64
	for i := range runs {
		at += 1 + rng.Int64N(64)
		l := 1 + rng.Int64N(16)
		runs[i] = Run{Start: at, Len: l, Cause: CauseSafety}
		if rng.IntN(4) == 0 {
			runs[i].Cause = CauseSafetyExternal
			runs[i].Expires = 2_000_000_000
			runs[i].TTL = 14 * 86400
		}
		at += l
	}
	return runs
}

func benchTable(tb testing.TB, n int) *Table {
	runs := benchRuns(n, 7)
	last := runs[len(runs)-1]
	t, err := New(Options{Len: last.End() + 100, Clock: fixedClock(time.Unix(1_700_000_000, 0))})
	if err != nil {
		tb.Fatal(err)
	}
	t.install(runs, nil)
	return t
}

func fixedClock(at time.Time) func() time.Time { return func() time.Time { return at } }

var sizes = []int{33647, 1000000}

func BenchmarkRand(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			t := benchTable(b, n)
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				i, _ := t.Rand(rng)
				sink += i
			}
			_ = sink
		})
	}
}

func BenchmarkIsBad(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			t := benchTable(b, n)
			rng := rand.New(rand.NewPCG(1, 2))
			max := t.Len()
			b.ReportAllocs()
			bad := 0
			for b.Loop() {
				bad += b2i(t.IsBad(rng.Int64N(max)))
			}
			_ = bad
		})
	}
}

// BenchmarkSortSearch is the baseline: one plain sort.Search over n sorted
// int64 keys at a random probe (drawn with the same generator as Rand).
func BenchmarkSortSearch(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			runs := benchRuns(n, 7)
			keys := make([]int64, n)
			for i, r := range runs {
				keys[i] = r.Start
			}
			max := runs[n-1].End() + 100
			rng := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			var sink int
			for b.Loop() {
				x := rng.Int64N(max)
				sink += sort.Search(n, func(i int) bool { return keys[i] > x })
			}
			_ = sink
		})
	}
}

func BenchmarkAddBad(b *testing.B) {
	t := benchTable(b, 33647)
	rng := rand.New(rand.NewPCG(3, 4))
	max := t.Len()
	b.ReportAllocs()
	for b.Loop() {
		if t.Pending() >= DefaultPendingThreshold-1 {
			b.StopTimer()
			t.Rebuild()
			b.StartTimer()
		}
		if err := t.AddBad(rng.Int64N(max), CauseSafetyExternal, "claims"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRebuild(b *testing.B) {
	for _, n := range sizes[:1] {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			t := benchTable(b, n)
			rng := rand.New(rand.NewPCG(5, 6))
			max := t.Len()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range 1000 {
					_ = t.AddBad(rng.Int64N(max), CauseSafetyExternal, "claims")
				}
				b.StartTimer()
				t.Rebuild()
			}
		})
	}
}

// BenchmarkResident reports the memory a table of n runs holds, per run.
func BenchmarkResident(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			var t *Table
			for b.Loop() {
				t = benchTable(b, n)
			}
			runtime.KeepAlive(t)
			b.ReportMetric(float64(t.Stats().ResidentBytes)/float64(n), "bytes/run")
		})
	}
}
