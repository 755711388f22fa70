// Package sim simulates a region whose land is partly unsafe, laid out as
// patches, with claims that appear and disappear, and measures how many
// checks (chunk loads) each delivered location costs when candidates come
// from the spatial memory, against blind rerolling over the whole shape.
//
// It is what `rtp memory simulate` runs, and the evidence for the memory's
// learning target: at 75% unsafe, blind rerolling needs about four checks
// per delivery, the memory about one once it has learned.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
)

// Config describes a simulation. Zero fields take the defaults below.
type Config struct {
	Radius    int64         // circle radius in chunks; default 200
	Unsafe    float64       // fraction of the shape unsafe at any time, claims included; default 0.75
	Claims    float64       // fraction of the shape claimed at any time; default 0.05
	ClaimSize int64         // claim edge in chunks, 1..ClaimSize; default 6
	ClaimLife time.Duration // mean claim lifetime (exponential); default 30 days
	PatchSize float64       // unsafe patch scale in chunks; default 24
	Days      int           // simulated days; default 30
	PerHour   int           // deliveries per simulated hour; default 100
	Seed      uint64        // layout and draw seed; default 1
	TTL       memory.TTLFunc
	// Start is the simulated wall-clock start. Default: Days before the
	// start of the current day (UTC), so the run ends today and a saved
	// memory file is current when inspected. The figures do not depend on it.
	Start time.Time
}

func (c Config) withDefaults() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Radius == 0 {
		c.Radius = 200
	}
	def(&c.Unsafe, 0.75)
	def(&c.Claims, 0.05)
	def(&c.PatchSize, 24)
	if c.ClaimSize == 0 {
		c.ClaimSize = 6
	}
	if c.ClaimLife == 0 {
		c.ClaimLife = 30 * 24 * time.Hour
	}
	if c.Days == 0 {
		c.Days = 30
	}
	if c.PerHour == 0 {
		c.PerHour = 100
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Start.IsZero() {
		c.Start = time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -c.Days)
	}
	return c
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Radius < 1 || c.Radius > 4096 {
		errs = append(errs, fmt.Errorf("sim: radius %d outside [1, 4096]", c.Radius))
	}
	if !(c.Unsafe >= 0 && c.Unsafe < 1) {
		errs = append(errs, fmt.Errorf("sim: unsafe fraction %v outside [0, 1)", c.Unsafe))
	}
	if !(c.Claims >= 0 && c.Claims <= c.Unsafe) {
		errs = append(errs, fmt.Errorf("sim: claimed fraction %v outside [0, unsafe=%v]", c.Claims, c.Unsafe))
	}
	if c.ClaimSize < 1 || c.ClaimSize > 64 {
		errs = append(errs, fmt.Errorf("sim: claim size %d outside [1, 64]", c.ClaimSize))
	}
	if c.ClaimLife < time.Hour {
		errs = append(errs, fmt.Errorf("sim: claim life %v shorter than an hour", c.ClaimLife))
	}
	if !(c.PatchSize >= 1) {
		errs = append(errs, fmt.Errorf("sim: patch size %v below 1", c.PatchSize))
	}
	if c.Days < 1 || c.Days > 3650 {
		errs = append(errs, fmt.Errorf("sim: days %d outside [1, 3650]", c.Days))
	}
	if c.PerHour < 1 || c.PerHour > 100000 {
		errs = append(errs, fmt.Errorf("sim: deliveries per hour %d outside [1, 100000]", c.PerHour))
	}
	return errors.Join(errs...)
}

// Day is one simulated day's figures.
type Day struct {
	Day           int     `json:"day"`
	Deliveries    int64   `json:"deliveries"`
	MemoryChecks  float64 `json:"memoryChecksPerDelivery"`
	BlindChecks   float64 `json:"blindChecksPerDelivery"`
	KnownBad      float64 `json:"knownBad"` // memory's bad fraction at the end of the day
	TrueUnsafe    float64 `json:"trueUnsafe"`
	Runs          int     `json:"runs"`
	ProbationRuns int     `json:"probationRuns"`
	Restored      int64   `json:"restored"`
	Failures      int64   `json:"failures"` // deliveries that found nothing selectable
}

// Result is a whole simulation.
type Result struct {
	Days []Day
	// SteadyMemory and SteadyBlind average checks per delivery over the last
	// quarter of the days (at least one).
	SteadyMemory, SteadyBlind float64
	Table                     *memory.Table
}

// world is the ground truth: which indices are unsafe and which claimed.
type world struct {
	shape   geom.Shape
	static  []bool  // unsafe terrain, by index
	claimed []int32 // number of live claims covering the index
	claims  []claim // live claims, by end time
	cfg     Config
	rng     *rand.Rand
}

type claim struct {
	cells []int64
	end   time.Time
}

func (w *world) unsafe(i int64) (bool, memory.Cause, string) {
	switch {
	case w.static[i]:
		return true, memory.CauseSafety, ""
	case w.claimed[i] > 0:
		return true, memory.CauseSafetyExternal, "claims"
	}
	return false, 0, ""
}

// Run simulates cfg, calling progress (if not nil) after each day.
func Run(ctx context.Context, cfg Config, progress func(Day)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	shape, err := geom.NewCircle(geom.Chunk{}, cfg.Radius, 0)
	if err != nil {
		return nil, err
	}
	now := cfg.Start
	clock := func() time.Time { return now }
	tb, err := memory.New(memory.Options{Shape: shape, World: "sim", TTL: cfg.TTL, Clock: clock})
	if err != nil {
		return nil, err
	}
	w := newWorld(shape, cfg)
	n := shape.Len()
	for w.claimedCells() < int64(cfg.Claims*float64(n)) {
		w.addClaim(now)
	}
	drawRNG := rand.New(rand.NewPCG(cfg.Seed, 0xd1ce))
	blindRNG := rand.New(rand.NewPCG(cfg.Seed, 0xb11d))
	res := &Result{Table: tb}
	const rebuildEvery = 64
	for day := 1; day <= cfg.Days; day++ {
		d := Day{Day: day}
		var memChecks, blindChecks int64
		restoredBefore := tb.Stats().Restored
		for range 24 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for range cfg.PerHour {
				// Memory: draw among selectable cells until one is safe.
				delivered := false
				for tries := 0; tries < 1000; tries++ {
					i, ok := tb.Rand(drawRNG)
					if !ok {
						break
					}
					memChecks++
					bad, cause, src := w.unsafe(i)
					if !bad {
						delivered = true
						break
					}
					if err := tb.AddBad(i, cause, src); err != nil {
						return nil, err
					}
					if tb.Pending() >= rebuildEvery {
						tb.Rebuild()
					}
				}
				if !delivered {
					d.Failures++
				}
				// Blind rerolling over the whole shape.
				for tries := 0; tries < 1000; tries++ {
					blindChecks++
					if bad, _, _ := w.unsafe(blindRNG.Int64N(n)); !bad {
						break
					}
				}
				d.Deliveries++
			}
			now = now.Add(time.Hour)
			w.churn(now)
			tb.Rebuild()
		}
		st := tb.Stats()
		d.MemoryChecks = float64(memChecks) / float64(d.Deliveries)
		d.BlindChecks = float64(blindChecks) / float64(d.Deliveries)
		d.KnownBad = st.BadFraction
		d.TrueUnsafe = w.unsafeFraction()
		d.Runs, d.ProbationRuns = st.ActiveRuns, st.ProbationRuns
		d.Restored = st.Restored - restoredBefore
		res.Days = append(res.Days, d)
		if progress != nil {
			progress(d)
		}
	}
	tail := res.Days[len(res.Days)-max(1, len(res.Days)/4):]
	for _, d := range tail {
		res.SteadyMemory += d.MemoryChecks / float64(len(tail))
		res.SteadyBlind += d.BlindChecks / float64(len(tail))
	}
	return res, nil
}

func newWorld(shape geom.Shape, cfg Config) *world {
	n := shape.Len()
	w := &world{shape: shape, static: make([]bool, n), claimed: make([]int32, n), cfg: cfg,
		rng: rand.New(rand.NewPCG(cfg.Seed, 0xc1a1))}
	// Terrain: smooth noise over chunk positions, the highest values unsafe,
	// thresholded at the quantile that makes the static share come out exact.
	field := make([]float64, n)
	for i := range n {
		c := shape.Chunk(i)
		field[i] = fractal(cfg.Seed, float64(c.X)/cfg.PatchSize, float64(c.Z)/cfg.PatchSize)
	}
	sorted := slices.Clone(field)
	slices.Sort(sorted)
	staticShare := cfg.Unsafe - cfg.Claims
	k := int64(float64(n) * (1 - staticShare))
	if k < n {
		threshold := sorted[k]
		for i, v := range field {
			w.static[i] = v >= threshold
		}
	}
	return w
}

func (w *world) claimedCells() int64 {
	var c int64
	for _, cl := range w.claims {
		c += int64(len(cl.cells))
	}
	return c
}

func (w *world) unsafeFraction() float64 {
	var bad int64
	for i := range w.static {
		if w.static[i] || w.claimed[i] > 0 {
			bad++
		}
	}
	return float64(bad) / float64(len(w.static))
}

// addClaim places a rectangle on land that is safe terrain and unclaimed.
func (w *world) addClaim(now time.Time) {
	n := w.shape.Len()
	for range 100 {
		at := w.shape.Chunk(w.rng.Int64N(n))
		wx, wz := 1+w.rng.Int64N(w.cfg.ClaimSize), 1+w.rng.Int64N(w.cfg.ClaimSize)
		var cells []int64
		for dx := range wx {
			for dz := range wz {
				i, ok := w.shape.Index(geom.Chunk{X: at.X + dx, Z: at.Z + dz})
				if ok && !w.static[i] && w.claimed[i] == 0 {
					cells = append(cells, i)
				}
			}
		}
		if len(cells) == 0 {
			continue
		}
		for _, i := range cells {
			w.claimed[i]++
		}
		life := time.Duration(w.rng.ExpFloat64() * float64(w.cfg.ClaimLife))
		w.claims = append(w.claims, claim{cells: cells, end: now.Add(life)})
		return
	}
}

// churn ends expired claims and places new ones to keep the claimed share.
func (w *world) churn(now time.Time) {
	live := w.claims[:0]
	for _, cl := range w.claims {
		if now.Before(cl.end) {
			live = append(live, cl)
			continue
		}
		for _, i := range cl.cells {
			w.claimed[i]--
		}
	}
	w.claims = live
	target := int64(w.cfg.Claims * float64(w.shape.Len()))
	for w.claimedCells() < target {
		w.addClaim(now)
	}
}

// fractal is three octaves of value noise in [0, 1).
func fractal(seed uint64, x, z float64) float64 {
	var sum, amp, norm float64 = 0, 1, 0
	for o := range 3 {
		sum += amp * valueNoise(seed+uint64(o)*0x9e37, x, z)
		norm += amp
		amp *= 0.5
		x, z = x*2.03, z*2.03
	}
	return sum / norm
}

func valueNoise(seed uint64, x, z float64) float64 {
	x0, z0 := math.Floor(x), math.Floor(z)
	fx, fz := smooth(x-x0), smooth(z-z0)
	ix, iz := int64(x0), int64(z0)
	v00 := lattice(seed, ix, iz)
	v10 := lattice(seed, ix+1, iz)
	v01 := lattice(seed, ix, iz+1)
	v11 := lattice(seed, ix+1, iz+1)
	a := v00 + (v10-v00)*fx
	b := v01 + (v11-v01)*fx
	return a + (b-a)*fz
}

func smooth(t float64) float64 { return t * t * (3 - 2*t) }

func lattice(seed uint64, x, z int64) float64 {
	h := seed ^ uint64(x)*0x9e3779b97f4a7c15 ^ uint64(z)*0xc2b2ae3d27d4eb4f
	h ^= h >> 31
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 29
	return float64(h>>11) / (1 << 53)
}
