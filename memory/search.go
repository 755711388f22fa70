package memory

import (
	"math/bits"
)

// Design note: finding a predecessor in one short scan.
//
// Rand and IsBad each need one predecessor search per call ("how many keys
// are <= x") over up to millions of sorted int64 keys, lock-free and without
// allocation. A plain binary search (sort.Search) pays a closure call and an
// unpredictable branch at each of ~log2(n) levels; a static B+ tree with
// branchless 16-key blocks (this package's first layout) still walks four or
// five dependent levels, and measured no better than sort.Search at a
// million keys on these machines.
//
// The keys here are run starts (IsBad) and selectable-cell counts (Select):
// both spread over their range much like uniform numbers. So the search
// starts with a bucket table: the key range is cut into nb = 2^p buckets of
// equal width (nb about n/8, so about 8 keys a bucket), and first[b] holds
// the number of keys below bucket b. A probe x reads first[x>>shift] and
// first[x>>shift + 1] (adjacent) and counts, without branches, the keys <= x
// in the 16 keys starting there: keys past the bucket are > x, so they never
// count. A bucket holding more than 16 keys (clustered runs) falls back to a
// binary search inside the bucket, so the worst case stays O(log n).
//
// A probe therefore touches two adjacent words of the table (n/2 bytes at
// most: L2-resident for a million runs) and one contiguous 256-byte window
// of the run array, instead of a chain of dependent cache misses.
//
// Rejected alternatives: Eytzinger (BFS) layout needs prefetch instructions
// Go does not expose to beat binary search on large arrays; a pointer B-tree
// costs allocations and indirection; the static B+ tree is kept in history.

// window is the number of keys a probe scans after its bucket start.
const window = 16

// buckets is a bucket table over n sorted non-negative keys.
type buckets struct {
	shift uint
	first []uint32 // len nb+1: first[b] = keys with key>>shift < b; first[nb] = n
}

// newBuckets builds the table over n sorted keys given by key(i).
func newBuckets(n int, key func(i int) int64) buckets {
	nb := 1
	if n > 8 {
		nb = 1 << bits.Len(uint(n/8-1)) // power of two >= n/8
	}
	var maxKey int64
	if n > 0 {
		maxKey = key(n - 1)
	}
	shift := 0
	if w := bits.Len64(uint64(maxKey)) - bits.Len(uint(nb-1)); w > 0 {
		shift = w
	}
	bk := buckets{shift: uint(shift), first: make([]uint32, nb+1)}
	i := 0
	for b := range nb {
		bk.first[b] = uint32(i)
		for i < n && int(key(i)>>shift) == b {
			i++
		}
	}
	bk.first[nb] = uint32(n)
	return bk
}

// bytes reports the memory held by the table.
func (bk buckets) bytes() int64 { return int64(cap(bk.first)) * 4 }

// span returns the keys of x's bucket, [lo, hi), and whether x lies past
// the last bucket (then every key is <= x).
func (bk buckets) span(x int64) (lo, hi int, past bool) {
	b := uint64(x) >> bk.shift
	if b >= uint64(len(bk.first)-1) {
		return 0, 0, true
	}
	return int(bk.first[b]), int(bk.first[b+1]), false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
