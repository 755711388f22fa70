package memory

// Design note: the static search index.
//
// Rand and IsBad each need one predecessor search per call ("how many keys
// are <= x") over up to millions of sorted int64 keys, lock-free and without
// allocation. A plain binary search (sort.Search) pays a closure call and an
// unpredictable branch at each of ~log2(n) levels, and most of its probes
// after the first dozen miss the cache.
//
// The index here is an implicit static B+ tree with fanout B = 16: level 0
// is the sorted key array itself, and each level above holds the first key
// of every block of B entries of the level below. A search counts, without
// branches, how many of the (at most) B keys of one block are <= x, then
// descends into that block's child. A 16-key block is two cache lines, so a
// search touches about log16(n) block pairs instead of log2(n) scattered
// lines: 4 levels at 33,647 keys, 5 at 1,000,000. The upper levels are
// 1/15 of the keys (0.53 bytes per key), which keeps a run within the
// memory budget.
//
// Rejected alternatives: an Eytzinger (BFS) layout needs prefetch
// instructions Go does not expose to beat binary search on large arrays, and
// permuting every per-run array into BFS order makes in-order rebuilds and
// saves awkward; a pointer-based B-tree costs allocations and indirection.

const (
	fanShift = 4
	fanout   = 1 << fanShift
)

// index is the upper levels of a static B+ tree over a sorted key array.
// levels[0] is the top (at most fanout keys); levels[len-1] indexes the
// leaves. A nil index is valid for key arrays of at most fanout entries.
type index struct {
	levels [][]int64
}

// buildIndex returns the upper levels over n sorted leaf keys, where
// leaf(i) is the i-th key. Leaf keys need not be stored: the Rand index
// derives them from two per-run arrays.
func buildIndex(n int, leaf func(i int) int64) index {
	var levels [][]int64
	for n > fanout {
		m := (n + fanout - 1) / fanout
		lvl := make([]int64, m)
		for i := range lvl {
			lvl[i] = leaf(i << fanShift)
		}
		levels = append(levels, lvl)
		n = m
		leaf = func(i int) int64 { return lvl[i] }
	}
	// Reverse so the top level comes first.
	for i, j := 0, len(levels)-1; i < j; i, j = i+1, j-1 {
		levels[i], levels[j] = levels[j], levels[i]
	}
	return index{levels: levels}
}

// bytes reports the memory held by the index levels.
func (ix index) bytes() int64 {
	var n int64
	for _, l := range ix.levels {
		n += int64(cap(l)) * 8
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// countLE returns how many of the keys in blk are <= x, without branches.
func countLE(blk []int64, x int64) int {
	c := 0
	for _, k := range blk {
		c += b2i(k <= x)
	}
	return c
}

// leafBlock descends the upper levels and returns the first position of the
// leaf block that holds the predecessor of x, or -1 when every key is > x.
//
// Invariant: at each level, the block starting at position lo has its first
// key <= x (it was selected by its separator in the level above), so the
// count there is at least 1 below the top.
func (ix index) leafBlock(x int64) int {
	lo := 0
	for _, lvl := range ix.levels {
		end := min(lo+fanout, len(lvl))
		c := countLE(lvl[lo:end], x)
		if c == 0 {
			return -1 // only possible at the top: x precedes every key
		}
		lo = (lo + c - 1) << fanShift
	}
	return lo
}

// rank returns the number of keys <= x: the predecessor of x is keys[rank-1].
func (ix index) rank(keys []int64, x int64) int {
	lo := ix.leafBlock(x)
	if lo < 0 {
		return 0
	}
	end := min(lo+fanout, len(keys))
	return lo + countLE(keys[lo:end], x)
}
