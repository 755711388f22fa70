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

// runSet is an immutable set of sorted, disjoint runs with search indexes.
//
// Per run it holds start (8 bytes), the bad-cell prefix pre (8), cause (1),
// expiry (8) and TTL (4): 29 bytes, plus the two indexes' upper levels
// (about 1.07 bytes). End and the Rand search key are derived:
//
//	end(j)  = start[j] + pre[j+1] - pre[j]
//	good(j) = start[j] - pre[j]   (selectable cells before run j)
type runSet struct {
	n      int      // number of runs
	start  []int64  // run starts, ascending, padded with padKey to whole blocks
	pre    []int64  // len(start)+1 entries: bad cells before run j; pre[j] = total for j >= n
	cause  []Cause  // per run
	expiry []int64  // per run, Unix seconds, 0 = static
	ttl    []uint32 // per run, seconds
	byIdx  index    // over start (IsBad)
	byGood index    // over good(j) (Select)
}

var emptyRunSet = newRunSet(nil)

// newRunSet builds a run set from sorted, disjoint runs.
func newRunSet(runs []Run) *runSet {
	n := len(runs)
	m := padLen(n)
	s := &runSet{
		n:      n,
		start:  make([]int64, m),
		pre:    make([]int64, m+1),
		cause:  make([]Cause, n),
		expiry: make([]int64, n),
		ttl:    make([]uint32, n),
	}
	var total int64
	for j, r := range runs {
		s.start[j] = r.Start
		s.pre[j] = total
		total += r.Len
		s.cause[j] = r.Cause
		s.expiry[j] = r.Expires
		s.ttl[j] = clampTTL(r.TTL)
	}
	for j := n; j < m; j++ {
		// Padding: its start and good key exceed every probe.
		s.start[j] = padKey
		s.pre[j] = total
	}
	s.pre[m] = total
	s.byIdx = buildIndex(m, func(i int) int64 { return s.start[i] })
	s.byGood = buildIndex(m, func(i int) int64 { return s.start[i] - s.pre[i] })
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
func (s *runSet) bad() int64 { return s.pre[s.n] }

// run returns run j.
func (s *runSet) run(j int) Run {
	return Run{
		Start:   s.start[j],
		Len:     s.pre[j+1] - s.pre[j],
		Cause:   s.cause[j],
		Expires: s.expiry[j],
		TTL:     int64(s.ttl[j]),
	}
}

// find returns the run containing index i, or -1.
func (s *runSet) find(i int64) int {
	r := s.byIdx.rank(s.start, i)
	if r == 0 {
		return -1
	}
	j := r - 1
	if i < s.start[j]+s.pre[j+1]-s.pre[j] {
		return j
	}
	return -1
}

// contains reports whether index i lies in a run. It is find without the
// run number: in the leaf block, i is inside a run exactly when more runs
// start at or before i than end at or before it (runs before the block
// count in neither, being over before the block starts). Computing every
// end of the block, rather than only the predecessor's, makes all the leaf
// loads independent of the comparison results, so their cache misses
// overlap instead of following one another.
func (s *runSet) contains(i int64) bool {
	lo := s.byIdx.leafBlock(i)
	if lo < 0 {
		return false
	}
	st := (*[fanout]int64)(s.start[lo:])
	pr := (*[fanout + 1]int64)(s.pre[lo:])
	return count16(st, i) > countEnds16(st, pr, i)
}

// countEnds16 returns how many runs of a leaf block end at or before x.
func countEnds16(st *[fanout]int64, pr *[fanout + 1]int64, x int64) int {
	c := 0
	for k := range fanout {
		c += b2i(st[k]+pr[k+1]-pr[k] <= x)
	}
	return c
}

// selectGood returns the index of the k-th (0-based) cell not covered by a
// run. k must be >= 0; the result may be past any universe bound.
//
// With j the last run having good(j) <= k, the cell lies after run j and
// before run j+1, so it sits k + pre[j+1] cells from the origin: every bad
// cell before it belongs to runs 0..j.
func (s *runSet) selectGood(k int64) int64 {
	lo := s.byGood.leafBlock(k)
	if lo < 0 {
		return k
	}
	return k + s.pre[lo+countGood16((*[fanout]int64)(s.start[lo:]), (*[fanout]int64)(s.pre[lo:]), k)]
}

// countGood16 returns how many of the runs in a leaf block have
// good(j) = start[j] - pre[j] <= k, without branches.
func countGood16(st, pr *[fanout]int64, k int64) int {
	return b2i(st[0]-pr[0] <= k) + b2i(st[1]-pr[1] <= k) + b2i(st[2]-pr[2] <= k) + b2i(st[3]-pr[3] <= k) +
		b2i(st[4]-pr[4] <= k) + b2i(st[5]-pr[5] <= k) + b2i(st[6]-pr[6] <= k) + b2i(st[7]-pr[7] <= k) +
		b2i(st[8]-pr[8] <= k) + b2i(st[9]-pr[9] <= k) + b2i(st[10]-pr[10] <= k) + b2i(st[11]-pr[11] <= k) +
		b2i(st[12]-pr[12] <= k) + b2i(st[13]-pr[13] <= k) + b2i(st[14]-pr[14] <= k) + b2i(st[15]-pr[15] <= k)
}

// bytes reports the memory the run set holds.
func (s *runSet) bytes() int64 {
	return int64(cap(s.start))*8 + int64(cap(s.pre))*8 + int64(cap(s.cause)) +
		int64(cap(s.expiry))*8 + int64(cap(s.ttl))*4 + s.byIdx.bytes() + s.byGood.bytes()
}
