package claims

import (
	"cmp"
	"fmt"
	"slices"
)

// Change is one committed write of a Backend: a claim added (Add set) or
// removed (Add nil), identified by the claim's ID. Rev is the revision the
// write committed at in a shared database, 0 with a private back end.
// It is a plain value; a back end does not change the claim of a Change
// once it returned it.
//
// Revisions order a shared database's writes: each write transaction first
// increments the single revision row, which holds its row lock until the
// commit, so revisions are dense and commit in increasing order, and the
// notifications of the writes reach a listener in that order too.
type Change struct {
	Rev int64
	ID  int64
	Add *Claim
}

// applyLocked makes ch hold in the index. It is idempotent: a claim
// already indexed is not added twice, an absent one not removed.
func (s *Store) applyLocked(ch Change) {
	if ch.Add == nil {
		s.ix.remove(ch.ID)
		return
	}
	if s.ix.byID[ch.ID] == nil {
		c := *ch.Add
		s.ix.add(&c)
	}
}

// commit puts in force a change this store has just committed. A private
// back end's changes apply at once. A shared one's apply unless the
// follower has already passed their revision (it applied the change, and
// maybe later ones that undo it); above rev+1 they wait in ahead, in force
// already, until the follower reaches them.
func (s *Store) commit(ch Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch.Rev == 0 {
		s.applyLocked(ch)
		return
	}
	if ch.Rev <= s.rev {
		return
	}
	s.applyLocked(ch)
	i, _ := slices.BinarySearchFunc(s.ahead, ch.Rev, func(a Change, rev int64) int { return cmp.Compare(a.Rev, rev) })
	s.ahead = slices.Insert(s.ahead, i, ch)
	s.advanceLocked()
}

// advanceLocked moves rev over the changes of ahead that follow it and
// drops those it has passed.
func (s *Store) advanceLocked() {
	n := 0
	for n < len(s.ahead) && s.ahead[n].Rev <= s.rev+1 {
		if s.ahead[n].Rev == s.rev+1 {
			s.rev++
		}
		n++
	}
	s.ahead = slices.Delete(s.ahead, 0, n)
}

// remote applies a change another store (or this one) committed, learnt
// from its notification. It reports false when ch does not follow the
// revision of the index (a notification was missed): the caller must then
// reload; nothing changed.
func (s *Store) remote(ch Change) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case ch.Rev <= s.rev:
		return true // seen already: this store's own write, or in a reload
	case ch.Rev > s.rev+1:
		return false
	}
	// A later write of this store on the same claim wins: it can only be
	// the removal of a claim whose addition is ch.
	if !slices.ContainsFunc(s.ahead, func(a Change) bool { return a.ID == ch.ID }) {
		s.applyLocked(ch)
	}
	s.rev = ch.Rev
	s.advanceLocked()
	return true
}

// revision returns the revision of the shared database the index reflects.
func (s *Store) revision() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rev
}

// load fills the empty index of a store being opened from every claim of
// its database, at revision rev. Any row that is not a valid claim fails
// it.
func (s *Store) load(rev int64, claims []Claim) error {
	for i := range claims {
		if err := checkStored(&claims[i]); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range claims {
		s.ix.add(&c)
	}
	s.rev = rev
	return nil
}

// CheckStored reports what is wrong with a claim read from a database or
// a notification, or nil: it needs an ID above 0 and valid names and
// corners, whatever its size (stored claims are in force whatever their
// size). The error wraps ErrInvalidClaim when the fields are at fault,
// and names the claim's ID.
func CheckStored(c Claim) error {
	return checkStored(&c)
}

func checkStored(c *Claim) error {
	if c.ID <= 0 {
		return fmt.Errorf("claim with id %d", c.ID)
	}
	if err := c.check(0); err != nil {
		return fmt.Errorf("claim %d: %w", c.ID, err)
	}
	return nil
}

// replace makes the index hold the claims of a snapshot of the shared
// database at revision rev, with this store's own changes above rev kept in
// force. A snapshot no newer than the index is ignored. It returns the
// number of claims added and removed. Invalid rows are left out, each
// reported to bad.
func (s *Store) replace(rev int64, claims []Claim, bad func(error)) (added, removed int) {
	want := make(map[int64]*Claim, len(claims))
	for i := range claims {
		c := &claims[i]
		if err := checkStored(c); err != nil {
			bad(err)
			continue
		}
		want[c.ID] = c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.rev {
		return 0, 0
	}
	s.ahead = slices.DeleteFunc(s.ahead, func(a Change) bool { return a.Rev <= rev })
	for _, a := range s.ahead {
		if a.Add != nil {
			want[a.ID] = a.Add
		} else {
			delete(want, a.ID)
		}
	}
	var gone []int64
	for id := range s.ix.byID {
		if want[id] == nil {
			gone = append(gone, id)
		}
	}
	for _, id := range gone {
		s.ix.remove(id)
	}
	for id, c := range want {
		if s.ix.byID[id] == nil {
			cp := *c
			s.ix.add(&cp)
			added++
		}
	}
	s.rev = rev
	s.advanceLocked()
	return added, len(gone)
}

// Mirror is the index of a Store over a shared back end (NewShared), as
// the back end keeps it up to date with the writes of the other stores on
// its database: in revision order, each change once; a reload when one
// was missed. Only the back end holds it; NewShared makes it, and its
// zero value is not usable. It is safe for concurrent use.
type Mirror struct{ s *Store }

// Apply puts in force a change another store (or this one) committed, as
// learnt from its notification; an added claim must pass CheckStored. It
// reports false when ch does not follow the revision of the index (a
// notification was missed): nothing changed, and the back end must
// Replace every claim.
func (m *Mirror) Apply(ch Change) bool { return m.s.remote(ch) }

// Replace makes the index hold the claims all of a snapshot of the shared
// database at revision rev, with the store's own changes above rev kept in
// force; a snapshot no newer than the index is ignored. It returns the
// number of claims added and removed. Rows that are not valid claims are
// left out, each reported to bad.
func (m *Mirror) Replace(rev int64, all []Claim, bad func(error)) (added, removed int) {
	return m.s.replace(rev, all, bad)
}

// Revision returns the revision of the shared database the index
// reflects in full.
func (m *Mirror) Revision() int64 { return m.s.revision() }
