package procgen

import (
	"math"

	"github.com/rtpengine/rtp/terrain"
)

// field evaluates the terrain before drainage: a pure function of Params
// and world position. It is immutable after newField and safe for
// concurrent use.
type field struct {
	sea, relief float64
	snowLine    float64
	tempOff     float64
	moistOff    float64
	tempFreq    float64
	moistFreq   float64
	volcChance  uint64 // a grid square holds a volcano when its hash is below this
	seed        struct {
		warpX, warpZ, cont, hills, mask, ridge, detail, volc, lava, temp, moist, meanderX, meanderZ, jitter, cliff uint64
	}
}

// Shape constants. They are part of the arithmetic pinned by Version.
const (
	warpFreq     = 1.0 / 1200
	warpAmp      = 280.0
	contFreq     = 1.0 / 4000
	contShift    = 0.09 // added to continentalness: more land than sea
	contStd      = 0.2  // approximate standard deviation of a 5-octave fbm
	hillsFreq    = 1.0 / 500
	hillsAmp     = 30.0
	maskFreq     = 1.0 / 3000
	ridgeFreq    = 1.0 / 800
	mountainAmp  = 190.0
	detailFreq   = 1.0 / 40
	detailAmp    = 1.8
	volcGrid     = 2048 // one candidate volcano per square of this many blocks
	volcMargin   = 460  // a volcano's centre keeps this far from its square's edges
	volcMinR     = 220.0
	volcMaxR     = 440.0
	coneAmp      = 75.0
	craterK      = 0.8
	lavaK        = 0.84
	calderaAmp   = 14.0
	lavaFreq     = 1.0 / 150
	climateAmp   = 3.5 // fbm std 0.2 -> climate std about 0.7
	lapse        = 1.0 / 90
	meanderFreq  = 1.0 / 56
	meanderAmp   = 7.0
	jitterFreq   = 1.0 / 160
	jitterAmp    = 1.2
	cliffFreq    = 1.0 / 1400
	cliffStep    = 12.0 // blocks between terrace benches
	cliffRiserLo = 0.42 // a riser spans the middle 16% of each step
)

func newField(p Params) *field {
	f := &field{
		sea:       float64(p.SeaLevel),
		relief:    p.Relief,
		snowLine:  p.Biome.SnowLine,
		tempOff:   p.Biome.TemperatureOffset,
		moistOff:  p.Biome.MoistureOffset,
		tempFreq:  1 / p.Biome.TemperatureScale,
		moistFreq: 1 / p.Biome.MoistureScale,
	}
	// VolcanicFrequency is the chance a grid square holds a volcano.
	switch c := uint64(p.Biome.VolcanicFrequency * (1 << 53)); {
	case c >= 1<<53:
		f.volcChance = math.MaxUint64
	default:
		f.volcChance = c << 11
	}
	s := uint64(p.Seed)
	layer := func(i uint64) uint64 { return mix(s ^ mix(i*0x2545f4914f6cdd1d)) }
	f.seed.warpX, f.seed.warpZ = layer(1), layer(2)
	f.seed.cont, f.seed.hills = layer(3), layer(4)
	f.seed.mask, f.seed.ridge = layer(5), layer(6)
	f.seed.detail, f.seed.volc = layer(7), layer(8)
	f.seed.lava, f.seed.temp = layer(9), layer(10)
	f.seed.moist = layer(11)
	f.seed.meanderX, f.seed.meanderZ = layer(12), layer(13)
	f.seed.jitter, f.seed.cliff = layer(14), layer(15)
	return f
}

// coastSpline maps continentalness (in standard deviations) to a base
// height relative to sea level, in blocks at relief 1.
var coastSpline = [...][2]float64{
	{-4, -55}, {-2, -40}, {-1, -26}, {-0.35, -9}, {0, -1.5},
	{0.15, 2}, {0.6, 7}, {1.5, 20}, {4, 42},
}

func spline(pts []([2]float64), v float64) float64 {
	if v <= pts[0][0] {
		return pts[0][1]
	}
	for i := 1; i < len(pts); i++ {
		if v <= pts[i][0] {
			a, b := pts[i-1], pts[i]
			return lerp(a[1], b[1], float64(v-a[0])/float64(b[0]-a[0]))
		}
	}
	return pts[len(pts)-1][1]
}

// base is the terrain at one position before drainage.
type base struct {
	h     float64 // ground height, block y
	coast float64 // continentalness in standard deviations: < 0 is sea floor
	volc  float64 // volcanic intensity: 0 outside a province, up to 1 at a crater
	lava  bool
}

// at evaluates the base terrain at (x, z).
func (f *field) at(x, z float64) base {
	qx := fbm(f.seed.warpX, x, z, warpFreq, 3)
	qz := fbm(f.seed.warpZ, x, z, warpFreq, 3)
	wx, wz := x+float64(warpAmp*qx), z+float64(warpAmp*qz)

	s := float64(fbm(f.seed.cont, wx, wz, contFreq, 5)+contShift) / contStd
	land := ramp(s, -0.2, 0.8)
	rel := spline(coastSpline[:], s)
	rel += float64(float64(fbm(f.seed.hills, wx, wz, hillsFreq, 4)*hillsAmp) * float64(0.3+float64(0.7*land)))

	mask := float64(ramp(fbm(f.seed.mask, wx, wz, maskFreq, 3), -0.15, 0.15) * land)
	if mask > 0 {
		r := ridged(f.seed.ridge, wx, wz, ridgeFreq, 5)
		rel += float64(float64(mask*float64(r*r)) * mountainAmp)
	}
	// Terraced cliffs where the cliff noise allows: flat benches joined by
	// steep risers, stronger on higher ground.
	if c := float64(ramp(fbm(f.seed.cliff, wx, wz, cliffFreq, 2), -0.05, 0.1) * land); c > 0 && rel > 20 {
		t := rel / cliffStep
		fl := math.Floor(t)
		terraced := float64(float64(fl+smoothstep(float64(float64(t-fl)-cliffRiserLo)/(1-2*cliffRiserLo))) * cliffStep)
		rel = lerp(rel, terraced, float64(c*ramp(rel, 20, 50)))
	}
	rel += float64(fbm(f.seed.detail, x, z, detailFreq, 3) * detailAmp)

	b := base{coast: s}
	if k := f.volcano(wx, wz); k > 0 && s > -1.5 {
		// A cone rising to a crater rim at k = 0.85, lava pooled inside it
		// and in channels down its flanks.
		b.volc = k
		rel += float64(smoothstep(float64(k*1.18)) * coneAmp)
		if k > craterK {
			rel -= float64(float64(k-craterK) * (calderaAmp / (1 - craterK)))
		}
		b.lava = k > lavaK || (k > 0.12 && k < craterK && ridged(f.seed.lava, x, z, lavaFreq, 2) > 0.8)
	}
	b.h = clampY(f.sea + float64(f.relief*rel))
	return b
}

// volcano returns the volcanic intensity at (x, z): 0 outside every cone,
// rising linearly to 1 at a volcano's centre. Each volcGrid square holds at
// most one volcano, placed so that its whole cone lies inside the square,
// so only the square containing (x, z) needs to be consulted.
func (f *field) volcano(x, z float64) float64 {
	gx, gz := math.Floor(x/volcGrid), math.Floor(z/volcGrid)
	h := latticeHash(f.seed.volc, int64(gx), int64(gz))
	if h >= f.volcChance {
		return 0
	}
	h2 := mix(h)
	unit := func(bits uint64) float64 { return float64(bits>>11) / (1 << 53) }
	span := float64(volcGrid - 2*volcMargin)
	cx := float64(gx*volcGrid) + volcMargin + float64(unit(h2)*span)
	cz := float64(gz*volcGrid) + volcMargin + float64(unit(mix(h2))*span)
	r := volcMinR + float64(unit(mix(h2^0x5bd1e995))*(volcMaxR-volcMinR))
	dx, dz := x-cx, z-cz
	d := math.Sqrt(float64(dx*dx)+float64(dz*dz)) / r
	return max(1-d, 0)
}

// height is at(x, z).h.
func (f *field) height(x, z float64) float64 { return f.at(x, z).h }

func clampY(h float64) float64 { return min(max(h, MinY+1), MaxY-1) }

// moisture is the moisture half of climate.
func (f *field) moisture(x, z float64) float64 {
	return float64(fbm(f.seed.moist, x, z, f.moistFreq, 4)*climateAmp) + f.moistOff
}

// climate returns temperature and moisture at (x, z), each about N(0, 0.7)
// plus the offsets; temperature falls with elevation h.
func (f *field) climate(x, z, h float64) (temp, moist float64) {
	temp = float64(fbm(f.seed.temp, x, z, f.tempFreq, 4)*climateAmp) + f.tempOff
	temp -= float64(max(h-f.sea, 0) * lapse)
	return temp, f.moisture(x, z)
}

// rainfall is the water a drainage node contributes, from its moisture.
func rainfall(moist float64) float64 {
	return 0.25 + clamp01(float64(moist+1.5)/3)
}

// landCover chooses the cover of a dry sample with ground h, base b,
// slope (rise over run) and climate.
func (f *field) landCover(h float64, b base, slope, temp, moist float64) terrain.Cover {
	above := h - f.sea
	switch {
	case b.lava:
		return terrain.CoverLava
	case b.volc > 0:
		return terrain.CoverVolcanic
	case above > float64(f.snowLine+float64(temp*40)) || (temp < -1.3 && slope < 0.9):
		return terrain.CoverSnow
	case slope > 0.7 || above > float64(f.snowLine*0.8):
		return terrain.CoverMountains
	case above < 3 && b.coast < 0.4 && slope < 0.5:
		return terrain.CoverBeach
	case temp > 0.5 && moist < -0.2:
		return terrain.CoverDesert
	case moist > 0.55 && above < 7 && temp > -0.3 && slope < 0.25:
		return terrain.CoverSwamp
	case moist > -0.1:
		return terrain.CoverForest
	default:
		return terrain.CoverPlains
	}
}
