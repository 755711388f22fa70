package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLayout: buckets are contiguous and ordered, cover every non-negative
// int64, every value maps to the bucket whose bounds hold it, and no
// bucket is wider than Precision of its lower edge.
func TestLayout(t *testing.T) {
	prevUpper := uint64(0)
	for i := range Buckets {
		up := upper(i)
		if i > 0 && up <= prevUpper {
			t.Fatalf("upper(%d) = %d <= upper(%d) = %d", i, up, i-1, prevUpper)
		}
		lo := lower(i)
		if i > 0 && lo != prevUpper+1 {
			t.Fatalf("lower(%d) = %d, want %d", i, lo, prevUpper+1)
		}
		for _, v := range []uint64{lo, lo + (up-lo)/2, up} {
			if got := bucket(v); got != i {
				t.Fatalf("bucket(%d) = %d, want %d", v, got, i)
			}
		}
		if lo >= 2*subCount && float64(up-lo+1) > float64(lo)*Precision {
			t.Fatalf("bucket %d [%d, %d] wider than Precision of its lower edge", i, lo, up)
		}
		prevUpper = up
	}
	if prevUpper != math.MaxInt64 {
		t.Errorf("last bucket ends at %d, want %d", prevUpper, uint64(math.MaxInt64))
	}
	// Every value up to 256 ns and every power of two is a lower edge.
	for v := uint64(0); v <= 2*subCount; v++ {
		if lower(bucket(v)) != v {
			t.Errorf("%d is not a lower edge", v)
		}
	}
	for k := range 63 {
		if v := uint64(1) << k; lower(bucket(v)) != v {
			t.Errorf("2^%d is not a lower edge", k)
		}
	}
}

// TestQuantilesModel compares quantiles with exact ones of a random
// sample, a few negative durations (counted as 0) included: each is at or
// above the exact value and within Precision of it.
func TestQuantilesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var sample []time.Duration
	for range 50000 {
		d := time.Duration(math.Exp(rng.Float64() * 24)) // 1 ns to 26 s, log-spread
		if rng.IntN(1000) == 0 {
			d = -d
		}
		h.Record(d)
		sample = append(sample, max(d, 0))
	}
	slices.Sort(sample)
	s := h.Snapshot()
	for _, q := range []float64{0.001, 0.01, 0.5, 0.9, 0.99, 0.999} {
		want := sample[int(math.Ceil(q*float64(len(sample))))-1]
		got := s.Quantile(q)
		if got < want || float64(got-want) > float64(want)*Precision+1 {
			t.Errorf("Quantile(%v) = %v, exact %v: want within [exact, exact*(1+Precision)]", q, got, want)
		}
	}
	var sum time.Duration
	for _, d := range sample {
		sum += d
	}
	if s.Count() != uint64(len(sample)) || s.Min() != sample[0] || s.Max() != sample[len(sample)-1] || s.Sum() != sum {
		t.Errorf("Count %d Min %v Max %v Sum %v; want %d %v %v %v", s.Count(), s.Min(), s.Max(), s.Sum(), len(sample), sample[0], sample[len(sample)-1], sum)
	}
	if s.Mean() != sum/time.Duration(len(sample)) || h.Mean() != s.Mean() {
		t.Errorf("Mean %v (live %v), want %v", s.Mean(), h.Mean(), sum/time.Duration(len(sample)))
	}
	if s.Quantile(1) != s.Max() || s.Quantile(0) != s.Min() || s.Quantile(math.NaN()) != s.Min() {
		t.Errorf("Quantile(1) = %v, Quantile(0) = %v, Quantile(NaN) = %v", s.Quantile(1), s.Quantile(0), s.Quantile(math.NaN()))
	}
}

// TestCountsBelowAndAbove checks the cumulative counts against exact ones
// of a random sample, with values on and next to every bound, at power of
// two bounds (where they are exact) and at the bucket precision elsewhere.
func TestCountsBelowAndAbove(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var h Histogram
	var sample []time.Duration
	add := func(d time.Duration) {
		h.Record(d)
		sample = append(sample, max(d, 0))
	}
	var bounds []time.Duration
	for k := 0; k < 40; k += 3 {
		b := time.Duration(1) << k
		bounds = append(bounds, b)
		add(b - 1)
		add(b)
		add(b + 1)
	}
	for range 20000 {
		add(time.Duration(float64(uint64(1)<<rng.IntN(40)) * (1 + rng.Float64())))
	}
	add(-time.Second)
	s := h.Snapshot()
	exactBelow := func(d time.Duration) (n uint64) {
		for _, v := range sample {
			if v < d {
				n++
			}
		}
		return n
	}
	cum := make([]uint64, len(bounds)+1)
	s.CumulativeBelow(append(bounds, 1<<62), cum)
	for i, b := range bounds {
		want := exactBelow(b)
		if got := s.CountBelow(b); got != want {
			t.Errorf("CountBelow(%v) = %d, want %d", b, got, want)
		}
		if cum[i] != want {
			t.Errorf("CumulativeBelow at %v = %d, want %d", b, cum[i], want)
		}
		if got := s.CountAbove(b - 1); got != uint64(len(sample))-want {
			t.Errorf("CountAbove(%v) = %d, want %d", b-1, got, uint64(len(sample))-want)
		}
	}
	if cum[len(bounds)] != s.Count() {
		t.Errorf("CumulativeBelow past every value = %d, want %d", cum[len(bounds)], s.Count())
	}
	// Off an edge, the value's own bucket counts as neither below nor
	// above: the two counts bracket the exact ones.
	for range 1000 {
		d := time.Duration(rng.Int64N(1 << 40))
		below, above := s.CountBelow(d), s.CountAbove(d)
		if below > exactBelow(d) || below+above > s.Count() {
			t.Fatalf("at %v: below %d (exact %d), above %d of %d", d, below, exactBelow(d), above, s.Count())
		}
	}
	if s.CountBelow(0) != 0 || s.CountBelow(-1) != 0 {
		t.Error("values counted below 0")
	}
}

func TestMergeAndEmpty(t *testing.T) {
	var a, b, empty Histogram
	if s := empty.Snapshot(); *s != (Snapshot{}) || empty.Quantile(0.5) != 0 || empty.Mean() != 0 || empty.Max() != 0 || empty.Min() != 0 {
		t.Fatal("an empty histogram reports values")
	}
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Microsecond)
	}
	b.Record(time.Second)
	b.Record(-5) // counts as 0
	a.Merge(&b)
	a.Merge(&empty)
	if a.Count() != 102 || a.Max() != time.Second || a.Min() != 0 {
		t.Fatalf("merged: Count %d Max %v Min %v", a.Count(), a.Max(), a.Min())
	}
	if got := a.CountAbove(100 * time.Microsecond); got != 1 {
		t.Fatalf("CountAbove(100µs) = %d, want 1", got)
	}
	if got := a.Quantile(0.5); got < 49*time.Microsecond || got > 51*time.Microsecond {
		t.Fatalf("Quantile(0.5) = %v, want about 50µs", got)
	}
	var c Histogram
	c.Merge(&b) // into an empty one: the extremes come along
	if c.Min() != 0 || c.Max() != time.Second || c.Count() != 2 {
		t.Fatalf("merged into empty: Count %d Min %v Max %v", c.Count(), c.Min(), c.Max())
	}
}

func TestConcurrent(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Record(time.Duration(g*1000 + i + 1))
			}
		})
	}
	wg.Wait()
	if s := h.Snapshot(); s.Count() != 8000 || s.Max() != 8000 || s.Min() != 1 || s.Sum() != 8000*8001/2 {
		t.Errorf("Count %d Min %v Max %v Sum %v, want 8000, 1ns, 8µs, %v", s.Count(), s.Min(), s.Max(), s.Sum(), time.Duration(8000*8001/2))
	}
}

func TestRecordAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Nanosecond) }); n != 0 {
		t.Errorf("Record allocates %v times, want 0", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	d := time.Duration(1)
	for b.Loop() {
		h.Record(d)
		d = (d*3 + 7) & (1<<30 - 1)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(0)
		for pb.Next() {
			d += 37
			h.Record(d)
		}
	})
}
