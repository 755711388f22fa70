package memory

import (
	"cmp"
	"slices"
)

// The rebuild, as rules over cells (the model tests apply these literally):
//
//  1. Inputs are marks, in arrival order: surviving active runs, restored
//     probation runs, then pending rejections in the order they came.
//     Active runs whose expiry has passed, unrestored probation runs and
//     stale pending rejections are probation candidates instead; anything
//     past expiry+TTL is dropped.
//  2. A cell with any static mark is static; its cause is that of its first
//     static mark. Otherwise a cell with dynamic marks is dynamic; its cause
//     is that of its first dynamic mark, its expiry and TTL the largest.
//  3. Runs are maximal stretches of cells of one tier; two runs of the same
//     tier with nothing between them and a gap of at most the spatial
//     resolution merge (the gap cells become bad). A run's cause is the cause
//     of its leftmost cell, its expiry and TTL the largest of its cells.
//     Exact causes (ungenerated, unreadable) are the exception: two
//     neighbouring cells, or runs across a gap, of which either has an
//     exact cause join only when they touch and have the same cause.
//  4. Probation runs keep their own attributes; where candidates overlap,
//     the one starting first (then arriving first) owns the cell; cells that
//     are active are removed from probation.

// item is one input interval of a rebuild.
type item struct {
	start, end int64
	exp, ttl   int64
	seq        int32
	cause      Cause
}

func byStartSeq(a, b item) int {
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// rebuild applies the rules above at time now and returns the new active
// and probation runs. Its buffers are not kept between rebuilds, so an idle
// table holds only its runs.
func rebuild(now, resolution int64, active, prob *runSet, restore []int64, pending []pendingCell) (act, pro []Run) {
	// Three inputs, each sorted by (start, seq): active runs, probation
	// runs, pending rejections (sorted here; they are few). Arrival order
	// (seq) is active, then probation, then pending in the order they came.
	na, np := active.len(), prob.len()
	fromActive := make([]item, na)
	for j := range fromActive {
		r := active.run(j)
		fromActive[j] = item{start: r.Start, end: r.End(), exp: r.Expires, ttl: r.TTL, seq: int32(j), cause: r.Cause}
	}
	fromProb := make([]item, np)
	for j := range fromProb {
		r := prob.run(j)
		if restore[j] > 0 {
			r.Expires = restore[j]
		}
		fromProb[j] = item{start: r.Start, end: r.End(), exp: r.Expires, ttl: r.TTL, seq: int32(na + j), cause: r.Cause}
	}
	fromPending := make([]item, len(pending))
	for k, p := range pending {
		fromPending[k] = item{start: p.index, end: p.index + 1, exp: p.expires, ttl: p.ttl, seq: int32(na + np + k), cause: p.cause}
	}
	slices.SortFunc(fromPending, byStartSeq)

	total := na + np + len(pending)
	static := make([]item, 0, total)
	dynamic := make([]item, 0, total)
	var cands []item
	merge3(fromActive, fromProb, fromPending, func(it item) {
		switch {
		case it.exp <= 0:
			static = append(static, it)
		case now < it.exp:
			dynamic = append(dynamic, it)
		case now < it.exp+it.ttl:
			cands = append(cands, it)
		}
	})

	// Rule 2: static union, then dynamic marks clipped by it and unioned.
	// Clipping only moves starts forward within an item, so the fragments
	// need sorting again; they are nearly sorted already.
	static = union(static)
	frags := subtract(dynamic, static)
	if !slices.IsSortedFunc(frags, byStartSeq) {
		slices.SortStableFunc(frags, byStartSeq)
	}
	dynamic = union(frags)

	// Rule 3: interleave the tiers and absorb small gaps within a tier.
	act = coalesce(static, dynamic, resolution)

	// Rule 4: probation candidates (already sorted), first owner wins,
	// minus active cells.
	var maxEnd int64 = -1 << 63
	owned := cands[:0]
	for _, c := range cands {
		c.start = max(c.start, maxEnd)
		maxEnd = max(maxEnd, c.end)
		if c.start < c.end {
			owned = append(owned, c)
		}
	}
	if len(owned) == 0 {
		return act, nil
	}
	activeItems := make([]item, len(act))
	for i, r := range act {
		activeItems[i] = item{start: r.Start, end: r.End()}
	}
	for _, c := range subtract(owned, activeItems) {
		pro = append(pro, Run{Start: c.start, Len: c.end - c.start, Cause: c.cause, Expires: c.exp, TTL: c.ttl})
	}
	return act, pro
}

// merge3 calls emit for the items of a, b and c (each sorted by
// (start, seq)) in (start, seq) order.
func merge3(a, b, c []item, emit func(item)) {
	for len(a)+len(b)+len(c) > 0 {
		src := &a
		if len(*src) == 0 || (len(b) > 0 && byStartSeq(b[0], (*src)[0]) < 0) {
			src = &b
		}
		if len(*src) == 0 || (len(c) > 0 && byStartSeq(c[0], (*src)[0]) < 0) {
			src = &c
		}
		emit((*src)[0])
		*src = (*src)[1:]
	}
}

// union merges overlapping items of one tier, and touching ones that join
// (see joins), sorted by (start, seq), in place: the first item's cause,
// the largest expiry and TTL.
func union(in []item) []item {
	out := in[:0]
	for _, it := range in {
		if n := len(out); n > 0 && (it.start < out[n-1].end || it.start == out[n-1].end && joins(out[n-1].cause, it.cause, 0, 0)) {
			last := &out[n-1]
			last.end = max(last.end, it.end)
			last.exp = max(last.exp, it.exp)
			last.ttl = max(last.ttl, it.ttl)
			continue
		}
		out = append(out, it)
	}
	return out
}

// subtract returns the parts of items (sorted by start) not covered by cut
// (sorted, disjoint). Each part keeps its item's attributes.
func subtract(items, cut []item) []item {
	out := make([]item, 0, len(items))
	k := 0
	for _, it := range items {
		for k < len(cut) && cut[k].end <= it.start {
			k++
		}
		cur := it.start
		for c := k; c < len(cut) && cut[c].start < it.end; c++ {
			if cut[c].start > cur {
				part := it
				part.start, part.end = cur, cut[c].start
				out = append(out, part)
			}
			cur = max(cur, cut[c].end)
		}
		if cur < it.end {
			part := it
			part.start = cur
			out = append(out, part)
		}
	}
	return out
}

// coalesce interleaves static and dynamic runs (each sorted and disjoint,
// and disjoint from each other) and merges neighbours of one tier that
// join (see joins): in general, those whose gap is at most resolution.
func coalesce(static, dynamic []item, resolution int64) []Run {
	out := make([]Run, 0, len(static)+len(dynamic))
	i, j := 0, 0
	for i < len(static) || j < len(dynamic) {
		var it item
		if j >= len(dynamic) || (i < len(static) && static[i].start < dynamic[j].start) {
			it = static[i]
			i++
		} else {
			it = dynamic[j]
			j++
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Tier() == tierOf(it) && joins(last.Cause, it.cause, it.start-last.End(), resolution) {
				last.Len = it.end - last.Start
				if it.exp > 0 {
					last.Expires = max(last.Expires, it.exp)
					last.TTL = max(last.TTL, it.ttl)
				}
				continue
			}
		}
		out = append(out, Run{Start: it.start, Len: it.end - it.start, Cause: it.cause, Expires: it.exp, TTL: it.ttl})
	}
	return out
}

func tierOf(it item) Tier {
	if it.exp <= 0 {
		return Static
	}
	return Dynamic
}
