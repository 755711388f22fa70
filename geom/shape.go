package geom

import "fmt"

// Shape is a finite set of chunks with an exact bijection onto [0, Len()),
// plus an unbounded continuation of the same spiral outside it.
//
// Contract, for every implementation:
//   - Len() is the true number of chunks in the shape, at least 1.
//   - For every i in [0, Len()), Index(Chunk(i)) == (i, true).
//   - For every chunk c in the shape, Chunk(Index(c)) == c; for a chunk
//     outside it, Index returns (0, false). Contains(c) agrees with Index.
//   - Chunk panics only for i outside [0, Len()) (programmer error).
//   - Indices follow a spiral outwards from the centre, so nearby indices
//     are nearby chunks and runs of rejected indices coalesce: chunks come
//     Chebyshev ring by Chebyshev ring (ring k holds the chunks whose offset
//     from the centre has max(|dx|, |dz|) == k), and each ring is walked in
//     the same order around its four sides.
//   - The extension lists, in the same ring and side order, every chunk
//     outside the shape's outer boundary: Beyond(j) is the j-th of them and
//     BeyondIndex its inverse. Chunks in the shape's hole (nearer the centre
//     than the inner radius) belong to neither the shape nor the extension.
//     Past the outer boundary's last ring, every ring is whole (8k chunks).
//   - Beyond panics only for j outside [0, MaxBeyond) (programmer error).
//   - No method panics or overflows for any Chunk argument, however far.
//
// Together, Chunk and Beyond give every index in [0, Len()+MaxBeyond) a
// chunk; ChunkAt and IndexOf join them into one spiral for the "expand"
// selection mode (see Expand).
//
// Implementations are immutable and safe for concurrent use.
type Shape interface {
	// Len returns the number of chunks in the shape.
	Len() int64
	// Index returns the spiral index of c, or false when c is outside.
	Index(c Chunk) (int64, bool)
	// Chunk returns the chunk at spiral index i.
	Chunk(i int64) Chunk
	// Contains reports whether c is inside the shape.
	Contains(c Chunk) bool
	// Beyond returns the j-th chunk outside the shape's outer boundary, for
	// j in [0, MaxBeyond), continuing the spiral past the shape.
	Beyond(j int64) Chunk
	// BeyondIndex returns j such that Beyond(j) == c, or false when c lies
	// inside the outer boundary (in the shape or in its hole) or so far out
	// that j would reach MaxBeyond.
	BeyondIndex(c Chunk) (int64, bool)
	// String describes the shape and its parameters.
	String() string
}

// checkCenter reports a centre outside the supported range.
func checkCenter(kind string, c Chunk) error {
	if c.X < -MaxCenter || c.X > MaxCenter || c.Z < -MaxCenter || c.Z > MaxCenter {
		return fmt.Errorf("geom: %s center %v outside [-%d, %d] on some axis", kind, c, MaxCenter, MaxCenter)
	}
	return nil
}

// checkRadius reports a radius outside [0, MaxRadius].
func checkRadius(kind, name string, v int64) error {
	if v < 0 || v > MaxRadius {
		return fmt.Errorf("geom: %s %s %d outside [0, %d]", kind, name, v, MaxRadius)
	}
	return nil
}

// checkInner reports an inner radius outside [0, MaxRadius] or above the
// outer radius it belongs to, when that one is valid (an invalid one is
// reported on its own).
func checkInner(kind, name string, inner int64, outerName string, outer int64) error {
	if err := checkRadius(kind, name, inner); err != nil {
		return err
	}
	if inner > outer && checkRadius(kind, outerName, outer) == nil {
		return fmt.Errorf("geom: %s %s %d exceeds %s %d", kind, name, inner, outerName, outer)
	}
	return nil
}
