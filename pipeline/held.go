package pipeline

import "sync"

// heldSet is the set of spiral indices that have a location in the
// pipeline: from the draw of the candidate, through screening, cold,
// promotion and the hot sinks, until the location leaves (handed out by
// Take or Redeem, or disposed by a stage).
//
// It is the double-delivery guard. Memory only remembers bad places, so a
// good chunk can be drawn again while a location of it is still in the
// pipeline; screening is deterministic, so the second draw would yield the
// same column, and both copies could be promoted and handed to two players
// at once. A draw (or a restored row) whose index is held is skipped and
// counted (Stats.Duplicates) before any I/O.
//
// Acquire happens at the draw and in Restore; release is in the stages'
// OnDispose hooks (backlog, cold, every hot stage: disposal is terminal and
// happens exactly once per entry) and at the hand-out points. Internal
// movement (screening, promotion, demotion, transfer, lease) keeps the
// index held. Entries offered to a stage directly by tools bypass the
// guard; releasing an index that is not held does nothing.
//
// Design note: a mutex over a map is enough at the rates involved (a few
// thousand draws and hand-outs a second, a few thousand entries held); the
// rejected alternatives were a bitmap over the memory's universe (the
// universe of an expanding region is up to 2^62 indices), sync.Map (it
// allocates on every store), and a scan of cold and the sinks at promotion
// (O(entries) per promotion, and the duplicate would still have cost a
// screening).
//
// # Parked indices
//
// A rejection recorded in memory becomes visible to draws only at the
// memory's next rebuild, so an index released at its rejection could be
// drawn and screened again meanwhile: an unreadable chunk read twice, a
// small region screening the same bad chunks over and over until the
// rebuild. A rejected index that memory keeps is therefore parked instead
// of released (park): it stays held, so draws skip it, until the memory's
// generation has passed the one noted when it was recorded; then the
// next acquire takes it as free, and a later park or sweep forgets it.
// Parked indices are not counted by len: they hold no location.
//
// A heldSet is safe for concurrent use; its zero value is an empty set.
type heldSet struct {
	mu sync.Mutex
	// mu protects the following fields.
	m map[int64]struct{}
	// parked maps each parked index (also in m) to the memory generation
	// it waits to pass; gen reads the current one (set by park).
	parked map[int64]uint64
	gen    func() uint64
	swept  uint64 // the generation of the last sweep
}

// acquire adds i and reports whether it was absent (or parked and free
// again).
func (s *heldSet) acquire(i int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[i]; ok {
		if g, parked := s.parked[i]; parked && s.gen() > g {
			delete(s.parked, i)
			return true
		}
		return false
	}
	if s.m == nil {
		s.m = make(map[int64]struct{})
	}
	s.m[i] = struct{}{}
	return true
}

// release removes i (nothing happens when it is absent or parked).
func (s *heldSet) release(i int64) {
	s.mu.Lock()
	if len(s.parked) > 0 {
		if _, parked := s.parked[i]; parked {
			s.mu.Unlock()
			return
		}
	}
	delete(s.m, i)
	s.mu.Unlock()
}

// park keeps the held index i held, but as no location, until gen()
// returns more than it does now (see the type's notes). The caller parks
// an index before its stage disposes of it (which then releases
// nothing). Parking an index that is not held does nothing.
func (s *heldSet) park(i int64, gen func() uint64) {
	now := gen()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[i]; !ok {
		return
	}
	s.gen = gen
	if now > s.swept {
		s.sweepLocked(now)
	}
	if s.parked == nil {
		s.parked = make(map[int64]uint64)
	}
	s.parked[i] = now
}

// sweep forgets the parked indices that are free again. It walks them
// once per memory generation at most.
func (s *heldSet) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == nil || len(s.parked) == 0 {
		return
	}
	if now := s.gen(); now > s.swept {
		s.sweepLocked(now)
	}
}

func (s *heldSet) sweepLocked(now uint64) {
	for i, g := range s.parked {
		if now > g {
			delete(s.parked, i)
			delete(s.m, i)
		}
	}
	s.swept = now
}

// has reports whether i is held (parked and not yet free included).
func (s *heldSet) has(i int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[i]
	if g, parked := s.parked[i]; ok && parked {
		return s.gen() <= g
	}
	return ok
}

// len is the number of indices held with a location (parked excluded).
func (s *heldSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m) - len(s.parked)
}
