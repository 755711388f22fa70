package procgen

import "math"

// This file holds the deterministic scalar arithmetic every sample is built
// from. Each product that feeds a sum is wrapped in an explicit float64
// conversion so the compiler cannot fuse it into a fused multiply-add (the
// Go spec allows fusion on arm64, ppc64le, s390x and amd64 with GOAMD64=v3,
// which would change results in the last bits). Only +, -, *, /, math.Floor,
// math.Abs and math.Sqrt appear here: all are correctly rounded or exact on
// every platform. TestNoFusedMultiplyAdd checks the compiled code.

// mix is the SplitMix64 finaliser: a bijective avalanche of 64 bits.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// latticeHash hashes one integer lattice point under a seed.
func latticeHash(seed uint64, ix, iz int64) uint64 {
	return mix(seed ^ (uint64(ix) * 0x9e3779b97f4a7c15) ^ (uint64(iz) * 0xc2b2ae3d27d4eb4f))
}

// gradients are 16 unit vectors at multiples of 22.5 degrees, written as
// literals so no trigonometry runs at start-up either.
var gradients = [16][2]float64{
	{1, 0},
	{0.9238795325112867, 0.3826834323650898},
	{0.7071067811865476, 0.7071067811865476},
	{0.3826834323650898, 0.9238795325112867},
	{0, 1},
	{-0.3826834323650898, 0.9238795325112867},
	{-0.7071067811865476, 0.7071067811865476},
	{-0.9238795325112867, 0.3826834323650898},
	{-1, 0},
	{-0.9238795325112867, -0.3826834323650898},
	{-0.7071067811865476, -0.7071067811865476},
	{-0.3826834323650898, -0.9238795325112867},
	{0, -1},
	{0.3826834323650898, -0.9238795325112867},
	{0.7071067811865476, -0.7071067811865476},
	{0.9238795325112867, -0.3826834323650898},
}

// lerp returns a + t*(b-a) without fusion.
func lerp(a, b, t float64) float64 { return a + float64(t*float64(b-a)) }

// fade is Perlin's quintic 6t^5 - 15t^4 + 10t^3, evaluated in Horner form
// with every product rounded.
func fade(t float64) float64 {
	inner := float64(t*6) - 15
	inner = float64(t*inner) + 10
	return float64(float64(float64(t*t)*t) * inner)
}

// smoothstep is 3t^2 - 2t^3 for t clamped to [0, 1].
func smoothstep(t float64) float64 {
	t = clamp01(t)
	return float64(float64(t*t) * float64(3-float64(2*t)))
}

func clamp01(t float64) float64 { return min(max(t, 0), 1) }

// ramp maps v from [lo, hi] onto [0, 1], clamped and smoothed.
func ramp(v, lo, hi float64) float64 { return smoothstep(float64(v-lo) / float64(hi-lo)) }

func dot(g [2]float64, x, z float64) float64 { return float64(g[0]*x) + float64(g[1]*z) }

// gradientNoise is 2D Perlin gradient noise with lattice spacing 1, in
// roughly [-1, 1] and 0 at every lattice point.
func gradientNoise(seed uint64, x, z float64) float64 {
	fx, fz := math.Floor(x), math.Floor(z)
	ix, iz := int64(fx), int64(fz)
	tx, tz := x-fx, z-fz
	n00 := dot(gradients[latticeHash(seed, ix, iz)&15], tx, tz)
	n10 := dot(gradients[latticeHash(seed, ix+1, iz)&15], tx-1, tz)
	n01 := dot(gradients[latticeHash(seed, ix, iz+1)&15], tx, tz-1)
	n11 := dot(gradients[latticeHash(seed, ix+1, iz+1)&15], tx-1, tz-1)
	u, v := fade(tx), fade(tz)
	// Scale so the extreme of 2D Perlin noise (1/sqrt 2) maps near 1.
	return float64(lerp(lerp(n00, n10, u), lerp(n01, n11, u), v) * 1.4142135623730951)
}

// Octave rotation: each octave turns the domain by about 36.87 degrees (a
// 3-4-5 triangle, so the constants are exact) to break lattice alignment.
const (
	rotC = 0.8
	rotS = 0.6
)

// fbm sums octaves of gradient noise at frequency freq (cycles per block),
// doubling frequency and halving amplitude each octave. The result is
// normalised by the total amplitude, so it stays within [-1, 1].
func fbm(seed uint64, x, z, freq float64, octaves int) float64 {
	x, z = float64(x*freq), float64(z*freq)
	sum, amp, norm := 0.0, 1.0, 0.0
	for o := range octaves {
		sum += float64(amp * gradientNoise(seed+uint64(o)*0x632be59bd9b4e019, x, z))
		norm += amp
		amp = float64(amp * 0.5)
		x, z = rotate(x, z)
		// Offset each octave so lattice zeros of successive octaves do not coincide.
		x += 17.31
		z -= 9.77
	}
	return sum / norm
}

// ridged is ridged multifractal noise in [0, 1]: sharp crests where the
// underlying noise crosses zero, each octave weighted by the one before so
// detail gathers along ridges.
func ridged(seed uint64, x, z, freq float64, octaves int) float64 {
	x, z = float64(x*freq), float64(z*freq)
	sum, amp, norm, weight := 0.0, 1.0, 0.0, 1.0
	for o := range octaves {
		r := 1 - math.Abs(gradientNoise(seed+uint64(o)*0x9e6c63d0676a9a99, x, z))
		r = float64(r * r)
		r = float64(r * weight)
		weight = clamp01(float64(r * 1.6))
		sum += float64(amp * r)
		norm += amp
		amp = float64(amp * 0.5)
		x, z = rotate(x, z)
		x -= 5.13
		z += 23.9
	}
	return sum / norm
}

// rotate turns (x, z) by the octave rotation and doubles its frequency.
func rotate(x, z float64) (float64, float64) {
	rx := float64(float64(rotC*x)-float64(rotS*z)) * 2
	rz := float64(float64(rotS*x)+float64(rotC*z)) * 2
	return float64(rx), float64(rz)
}
