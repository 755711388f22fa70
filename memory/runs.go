package memory

// Run is one maximal interval of bad spiral indices with one cause, tier
// and expiry: indices [Start, Start+Len).
type Run struct {
	Start int64 `json:"start"`
	Len   int64 `json:"len"`
	Cause Cause `json:"-"`
	// Expires is the Unix second at which a dynamic run stops being active;
	// 0 marks a static run, which never expires.
	Expires int64 `json:"expires,omitempty"`
	// TTL is the run's time to live in seconds (0 for static runs). A run is
	// on probation from Expires to Expires+TTL and forgotten after.
	TTL int64 `json:"ttl,omitempty"`
}

// End returns the first index after the run.
func (r Run) End() int64 { return r.Start + r.Len }

// Tier returns Static for runs that never expire, Dynamic otherwise.
func (r Run) Tier() Tier {
	if r.Expires <= 0 {
		return Static
	}
	return Dynamic
}

// runSet is a set of sorted, disjoint runs with search tables. It is
// immutable once built, with one exception: a table's probation set has its
// TTLs raised in place by raiseTTL, under the table's mutex, and is never
// read without that mutex (selection reads only the active set).
//
// The leaf array interleaves each run's start and the count of bad cells
// before it, (start, pre) pairs, followed by window padding pairs
// (padKey, total), so one contiguous scan finds what either search needs:
//
//	end(j)  = start(j) + pre(j+1) - pre(j)
//	good(j) = start(j) - pre(j)   (selectable cells before run j)
//
// Per run: start and pre (16 bytes), cause (1), expiry (8) and TTL (4): 29
// bytes, plus the two bucket tables (at most 2 bytes together).
type runSet struct {
	n      int      // number of runs
	leaf   []int64  // (start, pre) pairs for n runs, then window padding pairs
	cause  []Cause  // per run
	expiry []int64  // per run, Unix seconds, 0 = static
	ttl    []uint32 // per run, seconds
	byIdx  buckets  // over start(j) (IsBad)
	byGood buckets  // over good(j) (Select)
}

// padKey pads the leaf: greater than every probe, so padding never counts.
const padKey = 1<<63 - 1

var emptyRunSet = newRunSet(nil)

// newRunSet builds a run set from sorted, disjoint runs.
func newRunSet(runs []Run) *runSet {
	n := len(runs)
	s := &runSet{
		n:      n,
		leaf:   make([]int64, 2*(n+window)),
		cause:  make([]Cause, n),
		expiry: make([]int64, n),
		ttl:    make([]uint32, n),
	}
	var total int64
	for j, r := range runs {
		s.leaf[2*j], s.leaf[2*j+1] = r.Start, total
		total += r.Len
		s.cause[j] = r.Cause
		s.expiry[j] = r.Expires
		s.ttl[j] = clampTTL(r.TTL)
	}
	for j := n; j < n+window; j++ {
		s.leaf[2*j], s.leaf[2*j+1] = padKey, total
	}
	s.byIdx = newBuckets(n, s.start)
	s.byGood = newBuckets(n, s.good)
	return s
}

func clampTTL(ttl int64) uint32 {
	switch {
	case ttl <= 0:
		return 0
	case ttl > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(ttl)
}

// len returns the number of runs.
func (s *runSet) len() int { return s.n }

// bad returns the number of cells covered by the runs.
func (s *runSet) bad() int64 { return s.leaf[2*s.n+1] }

// start returns the first index of run j.
func (s *runSet) start(j int) int64 { return s.leaf[2*j] }

// good returns the number of selectable cells before run j.
func (s *runSet) good(j int) int64 { return s.leaf[2*j] - s.leaf[2*j+1] }

// length returns the number of cells of run j.
func (s *runSet) length(j int) int64 { return s.leaf[2*j+3] - s.leaf[2*j+1] }

// run returns run j.
func (s *runSet) run(j int) Run {
	return Run{
		Start:   s.start(j),
		Len:     s.length(j),
		Cause:   s.cause[j],
		Expires: s.expiry[j],
		TTL:     int64(s.ttl[j]),
	}
}

// raiseTTL sets the TTL of run j to the larger of its own and ttl seconds
// and returns the result, unclamped (the stored TTL saturates at the
// uint32 range). Only for a table's probation set, under its mutex.
func (s *runSet) raiseTTL(j int, ttl int64) int64 {
	ttl = max(ttl, int64(s.ttl[j]))
	s.ttl[j] = clampTTL(ttl)
	return ttl
}

// rankStart returns the number of runs starting at or before x (x >= 0).
func (s *runSet) rankStart(x int64) int {
	lo, hi, past := s.byIdx.span(x)
	switch {
	case past:
		return s.n
	case hi-lo <= window:
		return lo + countStarts((*[2 * window]int64)(s.leaf[2*lo:]), x)
	}
	return upperBound(lo, hi, x, s.start)
}

// rankGood returns the number of runs whose good key is <= k (k >= 0).
func (s *runSet) rankGood(k int64) int {
	lo, hi, past := s.byGood.span(k)
	switch {
	case past:
		return s.n
	case hi-lo <= window:
		return lo + countGood((*[2 * window]int64)(s.leaf[2*lo:]), k)
	}
	return upperBound(lo, hi, k, s.good)
}

// upperBound returns lo plus the number of keys in [lo, hi) that are <= x:
// the fallback for a bucket too full for one window.
func upperBound(lo, hi int, x int64, key func(int) int64) int {
	// Invariant: keys before lo are <= x, keys at or after hi are > x.
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if key(mid) <= x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// countStarts returns how many of the window's runs start at or before x,
// without branches.
func countStarts(b *[2 * window]int64, x int64) int {
	return b2i(b[0] <= x) + b2i(b[2] <= x) + b2i(b[4] <= x) + b2i(b[6] <= x) +
		b2i(b[8] <= x) + b2i(b[10] <= x) + b2i(b[12] <= x) + b2i(b[14] <= x) +
		b2i(b[16] <= x) + b2i(b[18] <= x) + b2i(b[20] <= x) + b2i(b[22] <= x) +
		b2i(b[24] <= x) + b2i(b[26] <= x) + b2i(b[28] <= x) + b2i(b[30] <= x)
}

// countGood returns how many of the window's runs have good <= k, without
// branches.
func countGood(b *[2 * window]int64, k int64) int {
	return b2i(b[0]-b[1] <= k) + b2i(b[2]-b[3] <= k) + b2i(b[4]-b[5] <= k) + b2i(b[6]-b[7] <= k) +
		b2i(b[8]-b[9] <= k) + b2i(b[10]-b[11] <= k) + b2i(b[12]-b[13] <= k) + b2i(b[14]-b[15] <= k) +
		b2i(b[16]-b[17] <= k) + b2i(b[18]-b[19] <= k) + b2i(b[20]-b[21] <= k) + b2i(b[22]-b[23] <= k) +
		b2i(b[24]-b[25] <= k) + b2i(b[26]-b[27] <= k) + b2i(b[28]-b[29] <= k) + b2i(b[30]-b[31] <= k)
}

// find returns the run containing index i (i >= 0), or -1.
func (s *runSet) find(i int64) int {
	j := s.rankStart(i) - 1
	if j >= 0 && i < s.leaf[2*j]+s.leaf[2*j+3]-s.leaf[2*j+1] {
		return j
	}
	return -1
}

// contains reports whether index i (i >= 0) lies in a run.
func (s *runSet) contains(i int64) bool { return s.find(i) >= 0 }

// selectGood returns the index of the k-th (0-based) cell not covered by a
// run. k must be >= 0; the result may be past any universe bound.
//
// With r the number of runs whose good key is <= k, the cell lies after run
// r-1 and before run r, so it sits k + pre(r) cells from the origin: every
// bad cell before it belongs to runs 0..r-1.
func (s *runSet) selectGood(k int64) int64 {
	return k + s.leaf[2*s.rankGood(k)+1]
}

// bytes reports the memory the run set holds.
func (s *runSet) bytes() int64 {
	return int64(cap(s.leaf))*8 + int64(cap(s.cause)) +
		int64(cap(s.expiry))*8 + int64(cap(s.ttl))*4 + s.byIdx.bytes() + s.byGood.bytes()
}
