package pipeline

import (
	"errors"
	"math/bits"
)

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
// hotResultOf).
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

// shareTries bounds the draws one candidate takes to fall in the node's
// share: with n nodes a draw misses with probability 1-1/n.
const shareTries = 32

// SetShare gives the pipeline one share of the region's chunks: of size
// nodes screening the region, this one is number rank (from 0), and it
// draws only chunks whose index hashes to rank (inShare), so that nodes
// do not screen the same candidates. The shares partition the chunks
// whatever the Distribution, so the fleet as a whole draws as one node
// would. size <= 1 (the default) draws from every chunk. A change of
// shares takes effect at the next draw; candidates drawn before keep
// their course.
func (p *Pipeline) SetShare(rank, size int) {
	if size <= 1 || rank < 0 || rank >= size {
		p.share.Store(0)
		return
	}
	p.share.Store(uint64(size)<<32 | uint64(rank))
}

// shareOf returns the share set by SetShare: rank and size, 0 and 1 for
// all.
func (p *Pipeline) shareOf() (rank, size int) {
	s := p.share.Load()
	if s>>32 <= 1 {
		return 0, 1
	}
	return int(s & (1<<32 - 1)), int(s >> 32)
}

// inShareOf reports whether the chunk of index idx belongs to share rank
// of size (see SetShare).
func inShareOf(idx int64, rank, size int) bool {
	if size <= 1 {
		return true
	}
	return inShare(idx, uint64(size), uint64(rank))
}

// inShare hashes idx (a SplitMix64 finalizer, so neighbouring chunks
// fall in unrelated shares) onto one of size shares.
func inShare(idx int64, size, rank uint64) bool {
	z := uint64(idx) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	hi, _ := bits.Mul64(z, size)
	return hi == rank
}

// HoldDraws stops (true) or resumes (false) drawing new candidates: a
// fleet node holds them while the shared pool has screened rows to adopt
// (Adopt), which cost nothing to screen again. Screenings already started
// go on, and promotions go on from cold.
func (p *Pipeline) HoldDraws(hold bool) { p.holdDraws.Store(hold) }
