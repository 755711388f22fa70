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
// A heldSet is safe for concurrent use; its zero value is an empty set.
type heldSet struct {
	mu sync.Mutex
	// mu protects the following field.
	m map[int64]struct{}
}

// acquire adds i and reports whether it was absent.
func (s *heldSet) acquire(i int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[i]; ok {
		return false
	}
	if s.m == nil {
		s.m = make(map[int64]struct{})
	}
	s.m[i] = struct{}{}
	return true
}

// release removes i (nothing happens when it is absent).
func (s *heldSet) release(i int64) {
	s.mu.Lock()
	delete(s.m, i)
	s.mu.Unlock()
}

// has reports whether i is held.
func (s *heldSet) has(i int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[i]
	return ok
}

// len is the number of indices held.
func (s *heldSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
