package memory

import "math"

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
// levels[0] is the top (one block); levels[len-1] indexes the leaves. Every
// level, like the leaf array it indexes, is padded with padKey to a whole
// number of blocks, so a search always compares exactly fanout keys per
// level, unrolled and without bounds checks. A nil index is valid for leaf
// arrays of one block.
type index struct {
	levels [][]int64
}

// padKey pads key arrays to whole blocks: it is greater than every index,
// so padding never counts as <= a probe.
const padKey = math.MaxInt64

// padLen returns n rounded up to a whole number of blocks (at least one).
func padLen(n int) int { return max(fanout, (n+fanout-1)&^(fanout-1)) }

// buildIndex returns the upper levels over n padded leaf keys, where
// leaf(i) is the i-th key (n is a multiple of fanout). Leaf keys need not
// be stored: the Select index derives them from two per-run arrays.
func buildIndex(n int, leaf func(i int) int64) index {
	var levels [][]int64
	for n > fanout {
		m := n / fanout
		lvl := make([]int64, padLen(m))
		for i := range lvl {
			lvl[i] = padKey
			if i < m {
				lvl[i] = leaf(i << fanShift)
			}
		}
		levels = append(levels, lvl)
		n = len(lvl)
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

// count16 returns how many of the keys in b are <= x, without branches.
func count16(b *[fanout]int64, x int64) int {
	return b2i(b[0] <= x) + b2i(b[1] <= x) + b2i(b[2] <= x) + b2i(b[3] <= x) +
		b2i(b[4] <= x) + b2i(b[5] <= x) + b2i(b[6] <= x) + b2i(b[7] <= x) +
		b2i(b[8] <= x) + b2i(b[9] <= x) + b2i(b[10] <= x) + b2i(b[11] <= x) +
		b2i(b[12] <= x) + b2i(b[13] <= x) + b2i(b[14] <= x) + b2i(b[15] <= x)
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
		c := count16((*[fanout]int64)(lvl[lo:]), x)
		if c == 0 {
			return -1 // only possible at the top: x precedes every key
		}
		lo = (lo + c - 1) << fanShift
	}
	return lo
}

// rank returns the number of keys <= x in the padded leaf array keys: the
// predecessor of x is keys[rank-1].
func (ix index) rank(keys []int64, x int64) int {
	lo := ix.leafBlock(x)
	if lo < 0 {
		return 0
	}
	return lo + count16((*[fanout]int64)(keys[lo:]), x)
}
