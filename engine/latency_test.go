package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/world"
)

func TestHistIndex(t *testing.T) {
	// Buckets are contiguous and ordered, and every value lies within its
	// bucket's bounds, which are at most 12.5% apart.
	prevUpper := uint64(0)
	for i := range histBuckets {
		up := histUpper(i)
		if i > 0 && up <= prevUpper {
			t.Fatalf("histUpper(%d) = %d <= histUpper(%d) = %d", i, up, i-1, prevUpper)
		}
		lo := uint64(0)
		if i > 0 {
			lo = prevUpper + 1
		}
		for _, v := range []uint64{lo, up} {
			if got := histIndex(v); got != i {
				t.Fatalf("histIndex(%d) = %d, want %d", v, got, i)
			}
		}
		if lo >= 16 && float64(up-lo+1) > float64(lo)/8 {
			t.Fatalf("bucket %d [%d, %d] wider than 1/8 of its lower bound", i, lo, up)
		}
		prevUpper = up
	}
	if prevUpper != 1<<63-1 {
		t.Errorf("last bucket ends at %d, want %d", prevUpper, uint64(1<<63-1))
	}
}

// TestHistogramQuantiles compares the histogram with exact quantiles of a
// random sample: each reported quantile is at or above the exact one and
// within one bucket (12.5%) of it.
func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	if l := h.Latency(); l != (Latency{}) {
		t.Errorf("empty Latency() = %+v, want zero", l)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var sample []time.Duration
	for range 100000 {
		// Log-uniform from 100 ns to 10 ms, and a few negatives (count 0).
		d := time.Duration(100 * float64(uint64(1)<<rng.IntN(17)) * (1 + rng.Float64()))
		if rng.IntN(1000) == 0 {
			d = -d
		}
		h.Record(d)
		sample = append(sample, max(d, 0))
	}
	slices.Sort(sample)
	exact := func(p float64) time.Duration { return sample[int(p*float64(len(sample))+0.999999)-1] }
	l := h.Latency()
	if l.Count != uint64(len(sample)) || l.Max != sample[len(sample)-1] {
		t.Errorf("Count %d, Max %v; want %d, %v", l.Count, l.Max, len(sample), sample[len(sample)-1])
	}
	for _, q := range []struct {
		name string
		p    float64
		got  time.Duration
	}{{"p50", 0.5, l.P50}, {"p90", 0.9, l.P90}, {"p99", 0.99, l.P99}} {
		want := exact(q.p)
		if q.got < want || float64(q.got) > float64(want)*1.125+1 {
			t.Errorf("%s = %v, exact %v: want within [exact, exact*1.125]", q.name, q.got, want)
		}
	}
}

func TestHistogramConcurrent(t *testing.T) {
	var h histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i))
			}
		})
	}
	wg.Wait()
	if l := h.Latency(); l.Count != 8000 || l.Max != 7999 {
		t.Errorf("Latency() = %+v, want Count 8000, Max 7999ns", l)
	}
}

func TestHistogramRecordAllocs(t *testing.T) {
	var h histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Nanosecond) }); n != 0 {
		t.Errorf("Record allocates %v times, want 0", n)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(0)
		for pb.Next() {
			d += 37
			h.Record(d)
		}
	})
}

func TestBiomeName(t *testing.T) {
	for _, name := range []string{"minecraft:plains", "minecraft:desert", "test:biome-name-cache"} {
		id := world.Biome(name)
		for range 2 { // a miss, then a hit
			if got := biomeName(id); got != name {
				t.Errorf("biomeName(%d) = %q, want %q", id, got, name)
			}
		}
	}
	if got := biomeName(world.BiomeID(1 << 30)); got != "" {
		t.Errorf("biomeName of an ID never handed out = %q, want \"\"", got)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			name := fmt.Sprintf("test:concurrent-%d", g)
			id := world.Biome(name)
			for range 100 {
				if got := biomeName(id); got != name {
					t.Errorf("biomeName(%d) = %q, want %q", id, got, name)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHistogramBuckets checks the exported distribution against exact
// counts of a random sample, values on and next to every bound included,
// and the exact sum.
func TestHistogramBuckets(t *testing.T) {
	var h histogram
	rng := rand.New(rand.NewPCG(5, 6))
	var sample []time.Duration
	add := func(d time.Duration) {
		h.Record(d)
		sample = append(sample, max(d, 0))
	}
	for i := range LatencyBuckets {
		b := LatencyBound(i)
		add(b - 1)
		add(b)
		add(b + 1)
	}
	for range 50000 {
		add(time.Duration(float64(uint64(1)<<rng.IntN(40)) * (1 + rng.Float64())))
	}
	add(-time.Second)
	l := h.Latency()
	var sum time.Duration
	for _, d := range sample {
		sum += d
	}
	if l.Sum != sum || l.Count != uint64(len(sample)) {
		t.Fatalf("Sum, Count = %v, %d; want %v, %d", l.Sum, l.Count, sum, len(sample))
	}
	for i := range LatencyBuckets {
		var want uint64
		for _, d := range sample {
			if d < LatencyBound(i) {
				want++
			}
		}
		if l.Buckets[i] != want {
			t.Errorf("Buckets[%d] (below %v) = %d, want %d", i, LatencyBound(i), l.Buckets[i], want)
		}
	}
	if LatencyBound(0) != 8192*time.Nanosecond || LatencyBound(LatencyBuckets) != 0 || LatencyBound(-1) != 0 {
		t.Errorf("LatencyBound edges: %v, %v, %v", LatencyBound(0), LatencyBound(LatencyBuckets), LatencyBound(-1))
	}
}
