package geom

import (
	"fmt"
	"math"
)

// Limits on shape parameters and on the spiral's extension.
const (
	// MaxRadius is the largest radius, inner radius or rectangle half-extent
	// a shape accepts, in chunks: 2,097,152 chunks (33,554,432 blocks), past
	// Minecraft's world border at 29,999,984 blocks. A shape keeps two int64
	// per Chebyshev ring (see the design note below), so the largest
	// circle holds 32 MiB of tables and the largest rotated rectangle about
	// 45 MiB; no Len exceeds (2·MaxRadius+1)² < 2^45, far from overflowing
	// int64.
	MaxRadius int64 = 1 << 21

	// MaxCenter bounds the magnitude of both coordinates of a shape's centre
	// chunk, so that no chunk of a shape or of its extension overflows.
	MaxCenter int64 = 1 << 32

	// MaxBeyond bounds the extension of every shape: Beyond accepts j in
	// [0, MaxBeyond). Its chunks lie within about 2^30 chunks of the centre.
	MaxBeyond int64 = 1 << 62
)

// Design note: the ring-clipped spiral.
//
// A shape's chunks are numbered ring by ring, where ring k is the square
// annulus of offsets (dx, dz) from the centre with max(|dx|, |dz|) == k. Ring
// 0 is the centre alone; ring k >= 1 has 8k cells on four sides of 2k cells,
// walked turning from +x towards +z (the +x side going +z, the +z side going
// -x, the -x side going -z, the -z side going +x). Position p in [0, 2k) on
// a side maps to the offset
//
//	side 0: ( k,       p-k+1)     side 2: (-k,       k-1-p)
//	side 1: ( k-1-p,   k    )     side 3: ( p-k+1,  -k    )
//
// so consecutive cells of a whole ring are neighbours, and the last cell of
// ring k, (k, -k), neighbours the first of ring k+1, (k+1, -k). Side 2 is
// side 0 turned by 180 degrees and side 3 is side 1 turned, position for
// position; side 1 is side 0 turned by 90 degrees.
//
// Each shape is a convex outer region minus a convex hole, both symmetric
// under a half turn about the centre. A side is a straight run of cells, so
// its cells inside the outer region form one interval of positions and those
// inside the hole another; the shape's cells on the side are the outer
// interval minus the hole interval, at most two intervals, and the cells
// outside the outer region (the extension) its complement, again at most
// two. A shape only has to say, for a ring k, where those intervals lie on
// sides 0 and 1 (a clip): sides 2 and 3 repeat them by symmetry, and the
// circle and square, symmetric under a quarter turn, repeat side 0 on side 1.
// Clips compute the intervals in exact integer arithmetic (an integer square
// root for the circle, fixed-point half-planes for the rotated rectangle),
// so the intervals agree with Contains cell for cell and need no correction
// pass; the exhaustive tests check that against a brute-force scan.
//
// The spiral stores, per ring, the number of the shape's cells and the number
// of outer-region cells in all earlier rings (two []int64 of the bound + 2
// entries, O(R) memory, built in O(R) time). Chunk(i) binary-searches the
// first table for i's ring, then asks the clip for that ring's intervals and
// walks at most eight of them: O(log R) with a small constant. Index(c) reads
// c's ring and side from its offset, asks the clip once, and sums at most
// three side counts: O(1). The extension uses the same tables, since the
// outside cells before ring k are (2k-1)^2 minus the outer cells before it;
// past the last ring that meets the outer region, rings are whole and the
// j-th outside cell is decoded in closed form from the global ring-order
// position j + (outer region's size).
//
// Rejected alternatives. Decoding a circle from an angle and a radius (an
// Archimedean spiral) only reaches some of each ring's cells, so it is not a
// bijection and cannot be inverted exactly. Enumerating the cells into an
// index table costs O(R^2) memory (823,000 entries at radius 512, 3x10^8 at
// 10,000). Closed forms exist for the square but not for the circle or the
// rotated rectangle, and one engine for all three keeps one set of
// invariants to test.

// span is the closed interval [lo, hi] of side positions. It is empty when
// hi < lo; empty spans are kept canonical as emptySpan, so the formulas in
// inside and outside need no special cases.
type span struct{ lo, hi int64 }

var emptySpan = span{0, -1}

func (s span) len() int64 {
	if s.hi < s.lo {
		return 0
	}
	return s.hi - s.lo + 1
}

func (s span) has(p int64) bool { return s.lo <= p && p <= s.hi }

// clipSpan returns [lo, hi] intersected with the positions [0, 2k) of a side
// of ring k, canonical when empty.
func clipSpan(lo, hi, k int64) span {
	lo, hi = max(lo, 0), min(hi, 2*k-1)
	if hi < lo {
		return emptySpan
	}
	return span{lo, hi}
}

// sides holds where one side of a ring meets the outer region and the hole.
// Both spans lie in [0, 2k) and are canonical when empty.
type sides struct{ outer, hole span }

// inside returns the side's cells in the shape: outer minus hole, as two
// spans (either may be empty), in walking order.
func (sd sides) inside() (a, b span) {
	o, h := sd.outer, sd.hole
	return span{o.lo, min(o.hi, h.lo-1)}, span{max(o.lo, h.hi+1), o.hi}
}

// count returns the number of the side's cells in the shape.
func (sd sides) count() int64 {
	a, b := sd.inside()
	return a.len() + b.len()
}

// outside returns the side's cells outside the outer region, a side of ring
// k, as two spans in walking order.
func (sd sides) outside(k int64) (a, b span) {
	o := sd.outer
	if o.hi < o.lo {
		return emptySpan, span{0, 2*k - 1}
	}
	return span{0, o.lo - 1}, span{o.hi + 1, 2*k - 1}
}

// clip is what a shape tells the spiral. All three methods are called only
// for offsets and rings within the bound the shape gave newSpiral.
type clip interface {
	// ring returns the spans of sides 0 and 1 of ring k >= 1; sides 2 and 3
	// repeat them (the outer region and the hole are symmetric under a half
	// turn).
	ring(k int64) [2]sides
	// outer reports whether the offset is inside the outer boundary.
	outer(dx, dz int64) bool
	// hole reports whether the offset is strictly inside the hole.
	hole(dx, dz int64) bool
}

// spiral is the ring-clipped spiral of a clip around a centre. The zero
// value is not usable; it is immutable once built.
type spiral[C clip] struct {
	clip   C
	center Chunk
	// bound is the last ring that meets the outer region: rings past it are
	// entirely outside.
	bound int64
	// cum[k] is the number of the shape's cells in rings before k, and
	// outer[k] the number of cells inside the outer boundary (hole
	// included) in rings before k; both have bound+2 entries.
	cum, outer []int64
}

// newSpiral builds the tables of c around center. bound must be at least
// the last ring that meets the outer region; trailing rings that do not are
// dropped.
func newSpiral[C clip](c C, center Chunk, bound int64) spiral[C] {
	s := spiral[C]{
		clip:   c,
		center: center,
		cum:    make([]int64, bound+2),
		outer:  make([]int64, bound+2),
	}
	if c.outer(0, 0) {
		s.outer[1] = 1
		if !c.hole(0, 0) {
			s.cum[1] = 1
		}
	}
	for k := int64(1); k <= bound; k++ {
		r := c.ring(k)
		n := 2 * (r[0].count() + r[1].count())
		o := 2 * (r[0].outer.len() + r[1].outer.len())
		s.cum[k+1] = s.cum[k] + n
		s.outer[k+1] = s.outer[k] + o
	}
	for bound > 0 && s.outer[bound+1] == s.outer[bound] {
		bound--
	}
	s.bound = bound
	s.cum = s.cum[: bound+2 : bound+2]
	s.outer = s.outer[: bound+2 : bound+2]
	return s
}

func (s *spiral[C]) len() int64 { return s.cum[len(s.cum)-1] }

// farLimit bounds the coordinates offset accepts: past it, a chunk is
// farther from any centre (|centre| <= MaxCenter) than any shape or any
// extension index reaches, and subtracting could overflow.
const farLimit = 1 << 62

// offset returns c relative to the centre, or false when c is too far away
// to matter (see farLimit).
func (s *spiral[C]) offset(c Chunk) (dx, dz int64, ok bool) {
	if c.X > farLimit || c.X < -farLimit || c.Z > farLimit || c.Z < -farLimit {
		return 0, 0, false
	}
	return c.X - s.center.X, c.Z - s.center.Z, true
}

// at returns the chunk at position p of side j of ring k >= 1.
func (s *spiral[C]) at(k int64, j int, p int64) Chunk {
	var dx, dz int64
	switch j {
	case 0:
		dx, dz = k, p-k+1
	case 1:
		dx, dz = k-1-p, k
	case 2:
		dx, dz = -k, k-1-p
	default:
		dx, dz = p-k+1, -k
	}
	return Chunk{s.center.X + dx, s.center.Z + dz}
}

// ringOf returns the Chebyshev ring of an offset.
func ringOf(dx, dz int64) int64 { return max(abs(dx), abs(dz)) }

// sideOf returns the side and position of an offset on its ring k >= 1; it
// inverts spiral.at.
func sideOf(k, dx, dz int64) (int, int64) {
	switch {
	case dx == k && dz > -k:
		return 0, dz + k - 1
	case dz == k && dx < k:
		return 1, k - 1 - dx
	case dx == -k && dz < k:
		return 2, k - 1 - dz
	default: // dz == -k && dx > -k
		return 3, dx + k - 1
	}
}

// cellsBefore returns the number of cells in rings before k: (2k-1)^2.
func cellsBefore(k int64) int64 {
	if k == 0 {
		return 0
	}
	return (2*k - 1) * (2*k - 1)
}

// outsideBefore returns the number of cells outside the outer boundary in
// rings before k, for k <= bound+1.
func (s *spiral[C]) outsideBefore(k int64) int64 { return cellsBefore(k) - s.outer[k] }

func (s *spiral[C]) chunk(i int64) Chunk {
	n := s.len()
	if i < 0 || i >= n {
		panic(fmt.Sprintf("geom: Chunk(%d) outside [0, %d)", i, n))
	}
	// Find the ring k with cum[k] <= i < cum[k+1]. Invariant: cum[lo] <= i
	// and cum[hi+1] > i, true at the start since cum[0] == 0 and
	// cum[bound+1] == n; each step halves [lo, hi] and keeps both.
	lo, hi := int64(0), s.bound
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if s.cum[mid+1] > i {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	k, r := lo, i-s.cum[lo]
	if k == 0 {
		return s.center
	}
	ring := s.clip.ring(k)
	for j := range 4 {
		a, b := ring[j&1].inside()
		if r < a.len() {
			return s.at(k, j, a.lo+r)
		}
		r -= a.len()
		if r < b.len() {
			return s.at(k, j, b.lo+r)
		}
		r -= b.len()
	}
	panic("geom: spiral tables disagree with their clip")
}

func (s *spiral[C]) index(c Chunk) (int64, bool) {
	dx, dz, ok := s.offset(c)
	if !ok {
		return 0, false
	}
	k := ringOf(dx, dz)
	if k > s.bound {
		return 0, false
	}
	if k == 0 {
		return 0, s.cum[1] == 1
	}
	j, p := sideOf(k, dx, dz)
	ring := s.clip.ring(k)
	i := s.cum[k]
	for jj := range j {
		i += ring[jj&1].count()
	}
	a, b := ring[j&1].inside()
	switch {
	case a.has(p):
		return i + p - a.lo, true
	case b.has(p):
		return i + a.len() + p - b.lo, true
	}
	return 0, false
}

func (s *spiral[C]) contains(c Chunk) bool {
	dx, dz, ok := s.offset(c)
	if !ok || ringOf(dx, dz) > s.bound {
		return false
	}
	return s.clip.outer(dx, dz) && !s.clip.hole(dx, dz)
}

// maxBeyondRing is past the last ring the extension reaches: Beyond(j) for
// j < MaxBeyond decodes a global position t = j + (outer region's size)
// < 2^62 + 2^46, whose ring (isqrt(t)+1)/2 is below 2^30 + 2^14. Rings up to
// it keep (2k+1)^2 below 2^62 + 2^53, inside int64; BeyondIndex answers
// false past it without computing anything that could overflow.
const maxBeyondRing = 1<<30 + 1<<20

func (s *spiral[C]) beyond(j int64) Chunk {
	if j < 0 || j >= MaxBeyond {
		panic(fmt.Sprintf("geom: Beyond(%d) outside [0, %d)", j, MaxBeyond))
	}
	last := s.bound + 1
	if j >= s.outsideBefore(last) {
		// Past the table every ring is whole: number all cells in ring
		// order and skip the outer region, which lies before ring last.
		t := j + s.outer[last]
		k := (isqrt(t) + 1) / 2
		r := t - cellsBefore(k)
		return s.at(k, int(r/(2*k)), r%(2*k))
	}
	// Find the ring k with outsideBefore(k) <= j < outsideBefore(k+1), with
	// the same invariant as in chunk.
	lo, hi := int64(0), s.bound
	for lo < hi {
		mid := int64(uint64(lo+hi) >> 1)
		if s.outsideBefore(mid+1) > j {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	k, r := lo, j-s.outsideBefore(lo)
	if k == 0 {
		return s.center
	}
	ring := s.clip.ring(k)
	for side := range 4 {
		a, b := ring[side&1].outside(k)
		if r < a.len() {
			return s.at(k, side, a.lo+r)
		}
		r -= a.len()
		if r < b.len() {
			return s.at(k, side, b.lo+r)
		}
		r -= b.len()
	}
	panic("geom: spiral tables disagree with their clip")
}

func (s *spiral[C]) beyondIndex(c Chunk) (int64, bool) {
	dx, dz, ok := s.offset(c)
	if !ok {
		return 0, false
	}
	k := ringOf(dx, dz)
	if k > s.bound {
		if k > maxBeyondRing {
			return 0, false
		}
		side, p := sideOf(k, dx, dz)
		j := cellsBefore(k) + int64(side)*2*k + p - s.outer[s.bound+1]
		return j, j < MaxBeyond
	}
	if k == 0 {
		return 0, s.outer[1] == 0
	}
	side, p := sideOf(k, dx, dz)
	ring := s.clip.ring(k)
	j := s.outsideBefore(k)
	for jj := range side {
		j += 2*k - ring[jj&1].outer.len()
	}
	a, b := ring[side&1].outside(k)
	switch {
	case a.has(p):
		return j + p - a.lo, true
	case b.has(p):
		return j + a.len() + p - b.lo, true
	}
	return 0, false
}

// ChunkAt returns the chunk at index i of the shape's spiral extended past
// the shape: s.Chunk(i) for i < s.Len(), s.Beyond(i-s.Len()) from there on.
// It panics for i outside [0, s.Len()+MaxBeyond).
func ChunkAt(s Shape, i int64) Chunk {
	n := s.Len()
	if i < n {
		return s.Chunk(i)
	}
	return s.Beyond(i - n)
}

// IndexOf inverts ChunkAt: it returns i such that ChunkAt(s, i) == c, or
// false when c is in the shape's hole or beyond the extension's reach.
func IndexOf(s Shape, c Chunk) (int64, bool) {
	if i, ok := s.Index(c); ok {
		return i, true
	}
	if j, ok := s.BeyondIndex(c); ok {
		return s.Len() + j, true
	}
	return 0, false
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// isqrt returns floor(sqrt(n)) for n >= 0. The float estimate is within one
// of the answer; the loops make it exact, and (r+1)^2 cannot overflow uint64
// since r <= 3,037,000,500.
func isqrt(n int64) int64 {
	u := uint64(n)
	r := uint64(math.Sqrt(float64(u)))
	for r*r > u {
		r--
	}
	for (r+1)*(r+1) <= u {
		r++
	}
	return int64(r)
}

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// ceilDiv returns ceil(a / b) for b > 0.
func ceilDiv(a, b int64) int64 { return -floorDiv(-a, b) }
