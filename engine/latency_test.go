package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/hist"
	"github.com/rtpengine/rtp/world"
)

// TestHistogramQuantiles compares the region histogram's summary with
// exact quantiles of a random sample: each reported quantile is at or
// above the exact one and within hist.Precision of it.
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
		if q.got < want || float64(q.got) > float64(want)*(1+hist.Precision)+1 {
			t.Errorf("%s = %v, exact %v: want within [exact, exact*(1+hist.Precision)]", q.name, q.got, want)
		}
	}
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
