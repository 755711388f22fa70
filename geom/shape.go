package geom

// Shape is a finite set of chunks with an exact bijection onto [0, Len()).
//
// Contract, for every implementation:
//   - Len() is the true number of chunks in the shape.
//   - For every i in [0, Len()), Index(Chunk(i)) == (i, true).
//   - For every chunk c in the shape, Chunk(Index(c)) == c; for a chunk
//     outside it, Index returns (0, false).
//   - Chunk panics only for i outside [0, Len()) (programmer error).
//   - Indices follow a spiral outwards from the centre, so nearby indices
//     are nearby chunks and runs of rejected indices coalesce.
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
	// String describes the shape and its parameters.
	String() string
}
