package pipeline

import (
	"errors"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/token"
)

// The network sink's check of its leases against the lease store (see
// NetworkSink), started by the pulse, and the end of its leases at Clear
// and Close.

// schedule starts a check of this node's leases against the store when one
// is due: every checkEvery, and on the first pulse after a lease's end
// (unless the last check failed less than checkEvery ago). One runs at a
// time, on a goroutine of the pipeline (Settle waits for it).
func (n *NetworkSink) schedule(now time.Time) {
	n.mu.Lock()
	if n.checking || len(n.holds) == 0 {
		n.mu.Unlock()
		return
	}
	check := !now.Before(n.nextCheck)
	if !check && now.Before(n.retryAt) {
		n.mu.Unlock()
		return
	}
	due := false
	for _, l := range n.holds {
		if l.h != nil && !now.Before(l.expires) {
			due = true
			break
		}
	}
	if !check && !due {
		n.mu.Unlock()
		return
	}
	n.checking = true
	if check {
		n.nextCheck = now.Add(n.checkEvery)
	}
	n.mu.Unlock()
	n.pool.p.spawn(func() { n.reconcile(now, check) })
}

// reconcile is one check: the leases past their end are released (their
// entries back in the pool) or disposed, and, when check is set, the
// others are looked up in the store, their entries disposed when redeemed
// elsewhere or ended.
func (n *NetworkSink) reconcile(now time.Time, check bool) {
	failed := false
	defer func() {
		n.mu.Lock()
		n.checking = false
		if failed {
			n.retryAt = n.clock().Add(n.checkEvery)
		}
		n.mu.Unlock()
		n.pool.notifyLanded()
	}()
	type held struct {
		t token.Token
		l *hold
	}
	var all []held
	n.mu.Lock()
	for t, l := range n.holds {
		if l.h != nil {
			all = append(all, held{t, l})
		}
	}
	n.mu.Unlock()
	var listed map[string]bool
	if check {
		ctx, cancel := n.storeCtx()
		owned, err := n.store.Owned(ctx, n.node)
		cancel()
		if err != nil {
			_ = n.storeFailed(err)
			failed, check = true, false
		} else {
			listed = make(map[string]bool, len(owned))
			for _, e := range owned {
				listed[e.Token] = true
			}
		}
	}
	for _, e := range all {
		due := !now.Before(e.l.expires)
		if !due && (!check || listed[string(e.t)]) {
			continue
		}
		if !e.l.op.TryLock() {
			continue // a Redeem or Release is asking the store about it
		}
		if !n.settle(e.t, e.l, due) {
			failed = true
		}
		e.l.op.Unlock()
	}
}

// settle asks the store about the lease l of t, whose op lock is held:
// releases it when due (past its end), else looks it up, and disposes or
// reclaims its entry by the answer. It reports false on a failure of the
// store (the lease is left as it was).
func (n *NetworkSink) settle(t token.Token, l *hold, due bool) bool {
	n.mu.Lock()
	gone := n.holds[t] != l || l.h == nil
	n.mu.Unlock()
	if gone {
		return true
	}
	var err error
	if due {
		if !n.clock().Before(l.storeEnd) {
			// The store's lease has ended: whether it was redeemed can
			// no longer be learnt.
			n.drop(t, l, &n.stats.uncertain)
			return true
		}
		ctx, cancel := n.storeCtx()
		err = n.store.Release(ctx, string(t))
		cancel()
		if err == nil {
			n.reclaim(t, l)
			return true
		}
	} else {
		ctx, cancel := n.storeCtx()
		_, _, err = n.store.Get(ctx, string(t))
		cancel()
		if err == nil {
			return true
		}
	}
	switch {
	case errors.Is(err, lease.ErrRedeemed):
		n.drop(t, l, &n.stats.elsewhere)
	case noLease(err):
		n.drop(t, l, &n.stats.uncertain)
	default:
		_ = n.storeFailed(err)
		return false
	}
	return true
}

// closeLeases disposes every leased entry (shutdown or clear); their rows
// went at the grant. On Clear the leases are released in the store
// too (best effort, within one store timeout), so that no node hands out
// a location cleared here; on Close they are kept, redeemable through the
// other nodes sharing the store, or after a restart when the store
// outlives the process (a journaled lease/local store).
func (n *NetworkSink) closeLeases() {
	n.mu.Lock()
	var tokens []token.Token
	var held []*Hot
	for t, l := range n.holds {
		if l.h != nil {
			tokens = append(tokens, t)
			held = append(held, l.h)
			l.h = nil
		}
		delete(n.holds, t)
	}
	n.mu.Unlock()
	for _, h := range held {
		n.pool.p.endHot(h)
	}
	if n.pool.p.closed.Load() || len(tokens) == 0 {
		return
	}
	ctx, cancel := n.storeCtx()
	defer cancel()
	for _, t := range tokens {
		if err := n.store.Release(ctx, string(t)); err != nil && !noLease(err) {
			n.pool.p.log.Warn("pipeline: releasing a cleared network lease", "err", err)
		}
	}
}
