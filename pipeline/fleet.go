package pipeline

import "errors"

// ErrNotOwned is what a Persister's MarkHot reports (wrapped or as is)
// when the location's row is not this node's to hand out: another node of
// a fleet owns it, or it is gone (handed out or discarded elsewhere). The
// entry leaves the pipeline at once, without touching the row, and is
// never served.
var ErrNotOwned = errors.New("pipeline: location owned by another node")

// strictPersister is implemented by Persisters shared by several nodes
// (pipeline/pgpersist). For them a hot mark that could not be committed
// keeps the entry out of the sinks: an uncommitted mark leaves the row
// cold, and a cold row may be returned to the pool and handed out by
// another node once this node's lease lapses. A Persister of one process
// (the embedded default) lets such an entry through instead (see
// awaitHot).
type strictPersister interface {
	StrictHot() bool
}

// strictHot reports whether the Persister withholds entries whose hot
// mark failed.
func (p *Pipeline) strictHot() bool {
	s, ok := p.opts.Persister.(strictPersister)
	return ok && s.StrictHot()
}

// ColdRoom is how many more entries the cold stage takes now.
func (p *Pipeline) ColdRoom() int {
	return max(p.cold.Cap()-p.cold.Len(), 0)
}

// Adopt takes locations whose rows this node has just claimed from a
// shared pool (another node stopped or died) into the cold stage,
// silently: their rows exist and are already this node's. Locations that
// do not belong to the region, or whose chunk is held already, are
// skipped and their rows left alone; so are those past the cold stage's
// capacity (claim at most ColdRoom). It returns how many it took.
func (p *Pipeline) Adopt(locs []Location) int {
	if p.closed.Load() || p.detached.Load() {
		return 0
	}
	n := 0
	for _, l := range locs {
		if !p.belongs(l) {
			p.log.Warn("pipeline: not adopting a shared location that does not belong to the region", "location", l)
			continue
		}
		if !p.held.acquire(l.Index) {
			p.ctr.duplicates.Add(1)
			continue
		}
		if !p.cold.OfferSilent(l) {
			p.held.release(l.Index)
			continue
		}
		n++
	}
	p.ctr.adopted.Add(uint64(n))
	return n
}
