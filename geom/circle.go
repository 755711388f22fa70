package geom

import (
	"errors"
	"fmt"
)

// Circle is a disc of chunks, optionally with a round hole: the chunk at
// offset (dx, dz) from the centre is inside iff
//
//	inner² <= dx² + dz² <= radius²
//
// so chunks strictly nearer the centre than the inner radius are excluded.
// Its spiral is described on Shape.
//
// Create one with NewCircle; the zero value is not usable. A Circle is
// immutable and safe for concurrent use. It holds 16 bytes per unit of
// radius.
type Circle struct {
	radius, inner int64
	s             spiral[circleClip]
}

var _ Shape = (*Circle)(nil)

// NewCircle returns the circle of the given radius and inner radius (0 for
// no hole) around center, in chunks. It reports every invalid parameter:
// radius outside [0, MaxRadius], inner outside [0, radius], a centre
// coordinate beyond ±MaxCenter.
func NewCircle(center Chunk, radius, inner int64) (*Circle, error) {
	if err := errors.Join(
		checkCenter("circle", center),
		checkRadius("circle", "radius", radius),
		checkInner("circle", "inner radius", inner, "radius", radius),
	); err != nil {
		return nil, err
	}
	c := &Circle{radius: radius, inner: inner}
	c.s = newSpiral(circleClip{r2: radius * radius, in2: inner * inner}, center, radius)
	return c, nil
}

// Center returns the centre chunk.
func (c *Circle) Center() Chunk { return c.s.center }

// Radius returns the outer radius in chunks.
func (c *Circle) Radius() int64 { return c.radius }

// Inner returns the inner radius in chunks (0 when there is no hole).
func (c *Circle) Inner() int64 { return c.inner }

// Len returns the number of chunks in the circle.
func (c *Circle) Len() int64 { return c.s.len() }

// Index returns the spiral index of ch, or false when ch is outside.
func (c *Circle) Index(ch Chunk) (int64, bool) { return c.s.index(ch) }

// Chunk returns the chunk at spiral index i; it panics unless 0 <= i < Len().
func (c *Circle) Chunk(i int64) Chunk { return c.s.chunk(i) }

// Contains reports whether ch is inside the circle.
func (c *Circle) Contains(ch Chunk) bool { return c.s.contains(ch) }

// Beyond returns the j-th chunk outside the outer radius; it panics unless
// 0 <= j < MaxBeyond.
func (c *Circle) Beyond(j int64) Chunk { return c.s.beyond(j) }

// BeyondIndex inverts Beyond; it returns false for chunks within the outer
// radius.
func (c *Circle) BeyondIndex(ch Chunk) (int64, bool) { return c.s.beyondIndex(ch) }

// String describes the circle, as "circle(center=chunk(x, z), radius=r,
// inner=i)".
func (c *Circle) String() string {
	return fmt.Sprintf("circle(center=%v, radius=%d, inner=%d)", c.s.center, c.radius, c.inner)
}

// circleClip clips rings to a disc of squared radius r2 minus an open disc
// of squared radius in2.
type circleClip struct{ r2, in2 int64 }

func (c circleClip) ring(k int64) [2]sides {
	k2 := k * k
	// Outer: z² <= r² - k². Hole: z² < in² - k², that is z² <= in² - k² - 1.
	sd := sides{outer: chord(c.r2-k2, k), hole: chord(c.in2-k2-1, k)}
	return [2]sides{sd, sd}
}

func (c circleClip) outer(dx, dz int64) bool { return dx*dx+dz*dz <= c.r2 }
func (c circleClip) hole(dx, dz int64) bool  { return dx*dx+dz*dz < c.in2 }

// chord returns the positions on side 0 of ring k (offsets (k, z) with z in
// [1-k, k], position z+k-1) where z² <= q. Side 1 has the same positions,
// a quarter turn away.
func chord(q, k int64) span {
	if q < 0 {
		return emptySpan
	}
	h := isqrt(q)
	return clipSpan(-h+k-1, h+k-1, k)
}
