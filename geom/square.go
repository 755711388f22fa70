package geom

import (
	"errors"
	"fmt"
)

// Square is an axis-aligned square of chunks, optionally with a square
// hole: the chunk at offset (dx, dz) from the centre is inside iff
//
//	inner <= max(|dx|, |dz|) <= radius
//
// so it is made of the whole Chebyshev rings inner..radius. Its spiral is
// described on Shape; every step of it moves to a neighbouring chunk.
//
// Create one with NewSquare; the zero value is not usable. A Square is
// immutable and safe for concurrent use. It holds 16 bytes per unit of
// radius.
type Square struct {
	radius, inner int64
	s             spiral[squareClip]
}

var _ Shape = (*Square)(nil)

// NewSquare returns the square of the given radius (the square is 2·radius+1
// chunks wide) and inner radius (0 for no hole) around center, in chunks.
// It reports every invalid parameter: radius outside [0, MaxRadius], inner
// outside [0, radius], a centre coordinate beyond ±MaxCenter.
func NewSquare(center Chunk, radius, inner int64) (*Square, error) {
	if err := errors.Join(
		checkCenter("square", center),
		checkRadius("square", "radius", radius),
		checkInner("square", "inner radius", inner, "radius", radius),
	); err != nil {
		return nil, err
	}
	q := &Square{radius: radius, inner: inner}
	q.s = newSpiral(squareClip{r: radius, in: inner}, center, radius)
	return q, nil
}

// Center returns the centre chunk.
func (q *Square) Center() Chunk { return q.s.center }

// Radius returns the outer radius in chunks.
func (q *Square) Radius() int64 { return q.radius }

// Inner returns the inner radius in chunks (0 when there is no hole).
func (q *Square) Inner() int64 { return q.inner }

// Len returns the number of chunks in the square.
func (q *Square) Len() int64 { return q.s.len() }

// Index returns the spiral index of ch, or false when ch is outside.
func (q *Square) Index(ch Chunk) (int64, bool) { return q.s.index(ch) }

// Chunk returns the chunk at spiral index i; it panics unless 0 <= i < Len().
func (q *Square) Chunk(i int64) Chunk { return q.s.chunk(i) }

// Contains reports whether ch is inside the square.
func (q *Square) Contains(ch Chunk) bool { return q.s.contains(ch) }

// Beyond returns the j-th chunk outside the outer radius; it panics unless
// 0 <= j < MaxBeyond.
func (q *Square) Beyond(j int64) Chunk { return q.s.beyond(j) }

// BeyondIndex inverts Beyond; it returns false for chunks within the outer
// radius.
func (q *Square) BeyondIndex(ch Chunk) (int64, bool) { return q.s.beyondIndex(ch) }

// String describes the square, as "square(center=chunk(x, z), radius=r,
// inner=i)".
func (q *Square) String() string {
	return fmt.Sprintf("square(center=%v, radius=%d, inner=%d)", q.s.center, q.radius, q.inner)
}

// squareClip clips rings to the rings in..r: every ring is whole or empty.
type squareClip struct{ r, in int64 }

func (q squareClip) ring(k int64) [2]sides {
	sd := sides{outer: emptySpan, hole: emptySpan}
	if k <= q.r {
		sd.outer = span{0, 2*k - 1}
	}
	if k < q.in {
		sd.hole = span{0, 2*k - 1}
	}
	return [2]sides{sd, sd}
}

func (q squareClip) outer(dx, dz int64) bool { return ringOf(dx, dz) <= q.r }
func (q squareClip) hole(dx, dz int64) bool  { return ringOf(dx, dz) < q.in }
