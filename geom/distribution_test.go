package geom

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func distributions() []struct {
	name string
	d    Distribution
} {
	return []struct {
		name string
		d    Distribution
	}{
		{"flat", Flat{}},
		{"weighted 2", Weighted{Exponent: 2}},
		{"weighted 0.3", Weighted{Exponent: 0.3}},
		{"weighted zero value", Weighted{}},
		{"weighted NaN", Weighted{Exponent: math.NaN()}},
		{"normal 0.5 0.1", Normal{Mean: 0.5, Deviation: 0.1}},
		{"normal 0 0.01", Normal{Mean: 0, Deviation: 0.01}},
		{"normal 1 1e-9", Normal{Mean: 1, Deviation: 1e-9}},
		{"normal huge deviation", Normal{Mean: 0.3, Deviation: 1e300}},
		{"normal infinite deviation", Normal{Mean: 0.3, Deviation: math.Inf(1)}},
		{"normal zero value", Normal{}},
		{"normal invalid", Normal{Mean: math.NaN(), Deviation: -1}},
		{"normal mean above 1", Normal{Mean: 7, Deviation: 0.2}},
		{"expand zero value", Expand{}},
		{"expand weighted", Expand{Ranks: Weighted{Exponent: 3}}},
	}
}

// TestPickRange feeds every distribution the edge draws and edge sizes: the
// rank is always in [0, n).
func TestPickRange(t *testing.T) {
	us := []float64{0, math.SmallestNonzeroFloat64, 1e-300, 1e-17, 0.25, 0.5, 0.999999,
		math.Nextafter(1, 0), 1, 1.5, math.Copysign(0, -1), -1e-300, -3, math.NaN(), math.Inf(1), math.Inf(-1)}
	ns := []int64{1, 2, 3, 7, 1000, 1 << 53, 1<<53 + 1, math.MaxInt64 - 1, math.MaxInt64}
	for _, dc := range distributions() {
		for _, n := range ns {
			for _, u := range us {
				if r := dc.d.Pick(u, n); r < 0 || r >= n {
					t.Errorf("%s: Pick(%v, %d) = %d, outside [0, %d)", dc.name, u, n, r, n)
				}
			}
		}
		for _, n := range []int64{0, -1, math.MinInt64} {
			if r := dc.d.Pick(0.5, n); r != 0 {
				t.Errorf("%s: Pick(0.5, %d) = %d, want 0", dc.name, n, r)
			}
		}
	}
}

// TestPickMonotone checks that ranks never decrease as u grows, and that
// the extreme draws reach the extreme ranks of a spread distribution.
func TestPickMonotone(t *testing.T) {
	const n = 1000
	for _, dc := range distributions() {
		prev := int64(-1)
		for k := range 100_001 {
			u := float64(k) / 100_001
			r := dc.d.Pick(u, n)
			if r < prev {
				t.Fatalf("%s: Pick(%v, %d) = %d, below the rank %d of a smaller u", dc.name, u, n, r, prev)
			}
			prev = r
		}
	}
	for _, d := range []Distribution{Flat{}, Weighted{Exponent: 2}, Normal{Mean: 0.5, Deviation: 0.3}} {
		if lo, hi := d.Pick(0, n), d.Pick(math.Nextafter(1, 0), n); lo != 0 || hi != n-1 {
			t.Errorf("%#v: Pick(0) = %d, Pick(1-) = %d, want 0 and %d", d, lo, hi, n-1)
		}
	}
}

// chiSquare draws count ranks from d over n bins with a seeded source and
// returns the chi-square statistic against the probabilities p.
func chiSquare(d Distribution, n int64, count int, p func(r int64) float64) float64 {
	rng := rand.New(rand.NewPCG(42, 7))
	hist := make([]int, n)
	for range count {
		hist[d.Pick(rng.Float64(), n)]++
	}
	var x2 float64
	for r, o := range hist {
		e := float64(count) * p(int64(r))
		x2 += (float64(o) - e) * (float64(o) - e) / e
	}
	return x2
}

// chi2Crit99 is the 0.999 quantile of chi-square with 99 degrees of
// freedom: a correct distribution exceeds it once in a thousand seeds.
const chi2Crit99 = 148.23

func TestFlatChiSquare(t *testing.T) {
	const n = 100
	if x2 := chiSquare(Flat{}, n, 200_000, func(int64) float64 { return 1.0 / n }); x2 > chi2Crit99 {
		t.Errorf("Flat: chi-square %.1f over %d bins, want <= %.1f", x2, n, chi2Crit99)
	}
	// The test has teeth: a slightly tilted distribution fails it.
	tilted := Weighted{Exponent: 1.05}
	if x2 := chiSquare(tilted, n, 200_000, func(int64) float64 { return 1.0 / n }); x2 <= chi2Crit99 {
		t.Errorf("Weighted{1.05} passes as flat: chi-square %.1f", x2)
	}
}

func TestWeightedChiSquare(t *testing.T) {
	const n = 100
	for _, e := range []float64{2, 3.5, 0.5} {
		p := func(r int64) float64 {
			return math.Pow(float64(r+1)/n, 1/e) - math.Pow(float64(r)/n, 1/e)
		}
		if x2 := chiSquare(Weighted{Exponent: e}, n, 200_000, p); x2 > chi2Crit99 {
			t.Errorf("Weighted{%v}: chi-square %.1f over %d bins, want <= %.1f", e, x2, n, chi2Crit99)
		}
	}
	// The zero value is Flat.
	if x2 := chiSquare(Weighted{}, n, 200_000, func(int64) float64 { return 1.0 / n }); x2 > chi2Crit99 {
		t.Errorf("Weighted{}: chi-square %.1f against flat, want <= %.1f", x2, chi2Crit99)
	}
}

// TestNormalMoments compares the sample mean and deviation of Normal's
// ranks with the truncated normal's own.
func TestNormalMoments(t *testing.T) {
	const n = 1_000_000
	pdf := func(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	for _, d := range []Normal{
		{Mean: 0.5, Deviation: 0.1},
		{Mean: 0.1, Deviation: 0.2}, // heavily truncated at 0
		{Mean: 0.9, Deviation: 0.05},
		{Mean: 0, Deviation: 0.3}, // half-normal
		{Mean: 1, Deviation: 0.001},
	} {
		// Moments of the normal truncated to [0, 1], in fractions of n.
		a, b := -d.Mean/d.Deviation, (1-d.Mean)/d.Deviation
		zmass := cdf(b) - cdf(a)
		mu := d.Mean + d.Deviation*(pdf(a)-pdf(b))/zmass
		variance := d.Deviation * d.Deviation * (1 + (a*pdf(a)-b*pdf(b))/zmass - math.Pow((pdf(a)-pdf(b))/zmass, 2))
		sigma := math.Sqrt(variance)

		rng := rand.New(rand.NewPCG(9, 9))
		const count = 200_000
		var sum, sum2 float64
		for range count {
			x := (float64(d.Pick(rng.Float64(), n)) + 0.5) / n // bin centre
			sum += x
			sum2 += x * x
		}
		gotMu := sum / count
		gotSigma := math.Sqrt(sum2/count - gotMu*gotMu)
		// Five standard errors of the mean, and 2% of the deviation
		// (plus the binning, 1/n).
		if tol := 5 * sigma / math.Sqrt(count); math.Abs(gotMu-mu) > tol {
			t.Errorf("%+v: mean %.6f, want %.6f ± %.6f", d, gotMu, mu, tol)
		}
		if tol := 0.02*sigma + 1.0/n; math.Abs(gotSigma-sigma) > tol {
			t.Errorf("%+v: deviation %.6f, want %.6f ± %.6f", d, gotSigma, sigma, tol)
		}
	}
}

func TestNormalDegenerate(t *testing.T) {
	const n = 100
	tests := []struct {
		d    Normal
		u    float64
		want int64
	}{
		{Normal{}, 0.9, 0},                                    // zero value: the rank at Mean
		{Normal{Mean: 0.42}, 0.9, 42},                         // no deviation: the rank at Mean
		{Normal{Mean: 2, Deviation: -1}, 0.1, n - 1},          // Mean clamped to 1
		{Normal{Mean: 0.5, Deviation: math.Inf(1)}, 0.37, 37}, // infinite deviation: Flat
		{Normal{Mean: 0.5, Deviation: 1e300}, 0.37, 37},       // flat to float precision
	}
	for _, tt := range tests {
		if got := tt.d.Pick(tt.u, n); got != tt.want {
			t.Errorf("%+v.Pick(%v, %d) = %d, want %d", tt.d, tt.u, n, got, tt.want)
		}
	}
}

func TestDistributionValidate(t *testing.T) {
	tests := []struct {
		name string
		v    interface{ Validate() error }
		want []string // empty: valid
	}{
		{"weighted ok", Weighted{Exponent: 2}, nil},
		{"weighted zero", Weighted{}, []string{"geom: weighted exponent 0 is not finite and positive"}},
		{"weighted negative", Weighted{Exponent: -1}, []string{"geom: weighted exponent -1"}},
		{"weighted inf", Weighted{Exponent: math.Inf(1)}, []string{"geom: weighted exponent +Inf"}},
		{"normal ok", Normal{Mean: 0.3, Deviation: 0.2}, nil},
		{"normal edges ok", Normal{Mean: 1, Deviation: 1e-12}, nil},
		{"normal both bad", Normal{Mean: -0.1, Deviation: 0},
			[]string{"geom: normal mean -0.1 outside [0, 1]", "geom: normal deviation 0 is not finite and positive"}},
		{"normal NaN", Normal{Mean: math.NaN(), Deviation: math.NaN()},
			[]string{"geom: normal mean NaN", "geom: normal deviation NaN"}},
		{"expand flat", Expand{}, nil},
		{"expand bad weighted", Expand{Ranks: Weighted{Exponent: -2}}, []string{"geom: weighted exponent -2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestExpand plays the expand mode against a bitmap standing in for the
// memory table: with bad cells marked anywhere along the extended spiral,
// every rank in [0, N) selects a good cell, ranks beyond the shape land on
// its extension, and IndexOf maps the chosen chunk back.
func TestExpand(t *testing.T) {
	s, err := NewCircle(Chunk{10, 10}, 30, 5)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Len()
	rng := rand.New(rand.NewPCG(1, 1))
	bad := map[int64]bool{}
	for range n / 3 {
		bad[rng.Int64N(n)] = true
	}
	for range 200 {
		bad[n+rng.Int64N(n)] = true // bad cells already found past the shape
	}
	u := ExpandedUniverse(s, int64(len(bad)))
	// The table: the selectable indices of [0, U), in order.
	var good []int64
	for i := range u {
		if !bad[i] {
			good = append(good, i)
		}
	}
	if int64(len(good)) < n {
		t.Fatalf("universe %d holds %d selectable indices, want at least N = %d", u, len(good), n)
	}
	e := Expand{Ranks: Weighted{Exponent: 2}}
	var past int
	for k := range 10_000 {
		r := e.Pick(float64(k)/10_000, n)
		if r < 0 || r >= n {
			t.Fatalf("Pick = %d, outside [0, %d)", r, n)
		}
		i := good[r]
		c := ChunkAt(s, i)
		if i >= n {
			past++
			if _, ok := s.BeyondIndex(c); !ok || s.Contains(c) {
				t.Fatalf("index %d = %v is not in the extension", i, c)
			}
		}
		if back, ok := IndexOf(s, c); back != i || !ok {
			t.Fatalf("IndexOf(ChunkAt(%d) = %v) = (%d, %v)", i, c, back, ok)
		}
	}
	if past == 0 {
		t.Error("no rank reached past the shape although a third of it is bad")
	}
	if got := ExpandedUniverse(s, -5); got != n {
		t.Errorf("ExpandedUniverse(s, -5) = %d, want %d", got, n)
	}
	if got := ExpandedUniverse(s, math.MaxInt64); got != n+MaxBeyond {
		t.Errorf("ExpandedUniverse(s, MaxInt64) = %d, want %d", got, n+MaxBeyond)
	}
}
