package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	// Every value falls in a bucket whose range holds it, and buckets are
	// ordered.
	vals := []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345, math.MaxInt64, math.MaxUint64}
	for _, v := range vals {
		i := bucket(v)
		if i < 0 || i >= bucketCount {
			t.Fatalf("bucket(%d) = %d out of range", v, i)
		}
		lo := uint64(0)
		if i > 0 {
			lo = upper(i-1) + 1
		}
		if v < lo || v > upper(i) {
			t.Fatalf("bucket(%d) = %d covering [%d, %d]", v, i, lo, upper(i))
		}
		if hi := upper(i); v >= subCount && float64(hi-lo) > float64(lo)/subCount+1 {
			t.Fatalf("bucket %d [%d, %d] wider than 1/128 of its start", i, lo, hi)
		}
	}
	for i := 1; i < bucketCount; i++ {
		if upper(i) <= upper(i-1) {
			t.Fatalf("upper(%d) = %d <= upper(%d) = %d", i, upper(i), i-1, upper(i-1))
		}
	}
}

// TestQuantilesModel checks quantiles against a sorted list of the same
// values: within the bucket precision.
func TestQuantilesModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []time.Duration
	for range 20000 {
		d := time.Duration(math.Exp(r.Float64()*20)) * time.Nanosecond // 1 ns .. 0.5 s, log-spread
		h.Record(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		want := all[int(math.Ceil(q*float64(len(all))))-1]
		got := h.Quantile(q)
		if got < want || float64(got-want) > float64(want)/subCount+1 {
			t.Errorf("Quantile(%v) = %v, want %v (within 1/128 above)", q, got, want)
		}
	}
	if h.Max() != all[len(all)-1] || h.Min() != all[0] || h.Count() != 20000 {
		t.Errorf("Max %v Min %v Count %d, want %v %v 20000", h.Max(), h.Min(), h.Count(), all[len(all)-1], all[0])
	}
	if h.Quantile(1) != h.Max() || h.Quantile(0) != h.Min() {
		t.Errorf("Quantile(1) = %v, Quantile(0) = %v", h.Quantile(1), h.Quantile(0))
	}
}

func TestMergeAndEmpty(t *testing.T) {
	var a, b, empty Histogram
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 || empty.Max() != 0 {
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
}

func BenchmarkRecord(b *testing.B) {
	b.ReportAllocs()
	var h Histogram
	d := time.Duration(1)
	for b.Loop() {
		h.Record(d)
		d = (d*3 + 7) & (1<<30 - 1)
	}
}
