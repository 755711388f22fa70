package memory

import (
	"slices"

	"github.com/rtpengine/rtp/geom"
)

// Forget removes what the table holds about the given indices: they are
// cut out of the active and probation runs that cover them (a run is split
// around them, keeping its cause, expiry and TTL on both sides, and a
// restoration pending on a probation run carries over to its parts), and
// rejections of them still waiting for a rebuild are discarded. The new
// runs are published at once, so the indices are selectable on return. It
// is meant for places whose world changed (a chunk rewritten on disk): they
// are screened again as if never rejected.
//
// "As if never rejected" includes the spatial resolution: a forgotten index
// lying in a gap of at most Options.SpatialResolution between two runs of
// one tier is absorbed again by the next rebuild, as any index there would
// be. Forgetting a run's every index (the chunks of a rewritten region)
// removes it for good. Rejection counts (Stats.Rejections) are history and
// are kept.
//
// Indices outside [0, Len) are ignored. Forget returns how many of the
// indices the table held (in a run or pending), each counted once. It takes
// the writer lock, like a rebuild, and costs O(runs) when it changes
// anything; selection is never blocked.
func (t *Table) Forget(indices ...int64) int {
	drop := make([]int64, 0, len(indices))
	for _, i := range indices {
		if i >= 0 && i < t.opts.Len {
			drop = append(drop, i)
		}
	}
	if len(drop) == 0 {
		return 0
	}
	slices.Sort(drop)
	drop = slices.Compact(drop)

	t.mu.Lock()
	defer t.mu.Unlock()
	held := make(map[int64]struct{})
	active := t.snap.Load().active
	for _, i := range drop {
		if active.contains(i) || t.prob.contains(i) {
			held[i] = struct{}{}
		}
	}
	kept := t.pending[:0]
	for _, p := range t.pending {
		if _, found := slices.BinarySearch(drop, p.index); found {
			held[p.index] = struct{}{}
			continue
		}
		kept = append(kept, p)
	}
	clear(t.pending[len(kept):])
	t.pending = kept
	if len(held) == 0 {
		return 0
	}

	newActive, _ := cutRuns(active, nil, drop)
	newProb, newRestore := cutRuns(t.prob, t.restore, drop)
	t.prob = newRunSet(newProb)
	t.restore = newRestore
	t.publish(newRunSet(newActive))
	return len(held)
}

// ForgetChunk is Forget for one chunk, located through Options.Shape (see
// ChunkIndex). It reports whether the table held anything about it.
func (t *Table) ForgetChunk(c geom.Chunk) (bool, error) {
	i, err := t.ChunkIndex(c)
	if err != nil {
		return false, err
	}
	return t.Forget(i) > 0, nil
}

// cutRuns returns the runs of s with the sorted, distinct indices drop cut
// out, and, when restore is not nil (probation runs), each part's
// restoration (the value of the run it came from).
func cutRuns(s *runSet, restore []int64, drop []int64) ([]Run, []int64) {
	runs := make([]Run, 0, s.len()+len(drop))
	var rest []int64
	if restore != nil {
		rest = make([]int64, 0, s.len()+len(drop))
	}
	k := 0
	for j := range s.len() {
		r := s.run(j)
		for k < len(drop) && drop[k] < r.Start {
			k++
		}
		start := r.Start
		for ; k < len(drop) && drop[k] < r.End(); k++ {
			if drop[k] > start {
				part := r
				part.Start, part.Len = start, drop[k]-start
				runs = append(runs, part)
				if restore != nil {
					rest = append(rest, restore[j])
				}
			}
			start = drop[k] + 1
		}
		if start < r.End() {
			part := r
			part.Start, part.Len = start, r.End()-start
			runs = append(runs, part)
			if restore != nil {
				rest = append(rest, restore[j])
			}
		}
	}
	return runs, rest
}
