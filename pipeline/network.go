package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/token"
	"github.com/rtpengine/rtp/stage"
)

// Errors of the network sink.
var (
	ErrInvalidToken = errors.New("pipeline: invalid network token")
	ErrUnknownToken = errors.New("pipeline: no lease for the network token")
	ErrRedeemed     = errors.New("pipeline: network token already redeemed")
	ErrLeaseExpired = errors.New("pipeline: network lease expired")
	ErrMiss         = errors.New("pipeline: no location ready")
	// ErrLeaseStore: the lease store could not be asked (it is
	// unreachable, timed out or failed); the error wraps the store's.
	// Nothing was handed out, and a retry may succeed.
	ErrLeaseStore = errors.New("pipeline: lease store unavailable")
)

// hold is this node's hold on the entry leased to a token, kept while the
// store's lease lasts.
type hold struct {
	h        *Hot      // nil once taken (redeemed, released, disposed)
	expires  time.Time // the lease's end as Reserve told it
	storeEnd time.Time // when the store's lease ends, on the local clock
	// op is held across this node's store calls about the lease, so that
	// a Redeem, a Release and the check never act on it at once.
	op sync.Mutex
}

// NetworkSink holds locations for players moving between servers
// (ADR-036): a proxy obtains a token (package lease/token), reserves a
// location with it, and the destination redeems the token when the player
// arrives. Entries reserved by a token are pinned to it, so the sink is
// externally leased and never takes part in transfers.
//
// The leases live in a lease.Store (NetworkConfig.Leases): one in this
// process's memory by default (package lease/local), one journaled to
// the locations database so that tokens outlive a restart, or one shared
// by the nodes of a fleet (package lease/redis). The sink speaks to each
// through the Store contract alone. The node that reserved a token keeps
// the entry (its Hot, with the chunk's reservation) while the lease lasts:
//
//   - Reserve answers from the node's own live lease of the token, or
//     else from the store's: a token reserved through another node (or
//     by this one before a restart) gets that location. Only a token the
//     store knows nothing of takes an entry of this node's pool, granted
//     in the store under the node's name (NetworkConfig.Node). Granting
//     removes the location's row: the lease holds it now, and may outlive
//     the process, so a restart must not restore it (an entry that comes
//     back to the pool later stays without a row).
//   - Redeem always redeems in the store first, which lets exactly one
//     caller have the token. The node holding the entry hands it out; any
//     other node hands out the location alone: a Hot whose Res is nil,
//     holding no chunk of this node (Close does nothing).
//   - An entry goes back to the pool (or to cold when the pool is full)
//     only once the store has released its lease (lease.Store.Release
//     answered nil), when the lease ends (on the pulse after its end) or
//     is given up (Release). Any other answer means the location may have
//     been handed out elsewhere, and the entry is disposed: ErrRedeemed
//     (redeemed elsewhere), but also ErrExpired and ErrUnknown, which the
//     store also answers for a lease redeemed and then ended or
//     forgotten. So that the release at the end of a lease normally finds
//     it still live, the store keeps each lease 2*StoreTimeout longer than
//     LeaseTTL (the grace); a token may be redeemed during the grace too,
//     and a lease whose store end has passed before the node could
//     release it is disposed unasked.
//   - Every NetworkConfig.StoreCheck, the pulse starts a check of the
//     node's live leases against the store (Owned, then Get for those
//     missing), so that entries redeemed elsewhere are disposed promptly
//     rather than at the end of their lease. The check and the releases
//     run on a goroutine of the pipeline, never under a lock of the sink.
//   - A failure of the store fails the call with an error wrapping
//     ErrLeaseStore and never hands out anything the store did not
//     confirm. A grant whose outcome is unknown (the call failed after it
//     may have reached the store) disposes its entry rather than
//     returning it to the pool; a lease the node cannot release stays
//     pinned, and the next pulses try again.
//
// A token can take a lease only while younger than the lease TTL; the
// store keeps a lease's record (redeemed or ended) at least that long, so
// a redeemed token is refused for good: ErrRedeemed while remembered,
// ErrLeaseExpired once too old.
//
// Each store call is bounded by NetworkConfig.StoreTimeout. The nodes'
// clocks must agree to well within a lease TTL, as they must for tokens.
//
// A NetworkSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes it (see Options).
type NetworkSink struct {
	pool   *Sink
	ttl    time.Duration
	clock  func() time.Time
	tokens *token.Minter

	// The lease store and how to use it; set when the sink is made.
	store      lease.Store
	node       string
	timeout    time.Duration // of each store call
	checkEvery time.Duration
	grace      time.Duration // a store lease lasts ttl+grace
	stats      storeCounters

	mu sync.Mutex
	// mu protects the following fields.
	holds map[token.Token]*hold // this node's live leases
	// A check is running; when the next one is due; when the leases past
	// their end may be tried again after a failure.
	checking  bool
	nextCheck time.Time
	retryAt   time.Time
}

// storeCounters count the lease-store events of a network sink.
type storeCounters struct {
	remote, elsewhere, uncertain, storeErrors atomic.Uint64
}

// StoreStats counts the lease-store events of a network sink.
type StoreStats struct {
	// RemoteRedeems: tokens redeemed through this node whose lease it did
	// not hold (granted by another node, or by this node before a restart):
	// the location was handed out without an entry of this node.
	RemoteRedeems uint64 `json:"remoteRedeems"`
	// RedeemedElsewhere: entries of this node's leases disposed because
	// another node redeemed the token.
	RedeemedElsewhere uint64 `json:"redeemedElsewhere"`
	// Uncertain: entries disposed because the store could not tell whether
	// they were handed out elsewhere (a lease found ended or unknown, a
	// grant whose outcome is unknown).
	Uncertain uint64 `json:"uncertain"`
	// StoreErrors: store calls that failed.
	StoreErrors uint64 `json:"storeErrors"`
}

// StoreStats returns the sink's lease-store counters.
func (n *NetworkSink) StoreStats() StoreStats {
	return StoreStats{
		RemoteRedeems:     n.stats.remote.Load(),
		RedeemedElsewhere: n.stats.elsewhere.Load(),
		Uncertain:         n.stats.uncertain.Load(),
		StoreErrors:       n.stats.storeErrors.Load(),
	}
}

// storeGrace is how much longer than the lease TTL a lease is kept in the
// store, given the timeout of a store call: time for the node that holds
// the entry to release it after its end, while the store still knows
// whether it was redeemed.
func storeGrace(timeout time.Duration) time.Duration { return 2 * timeout }

var _ hotSink[*Hot] = (*NetworkSink)(nil)

// newNetworkSink makes the network sink over pool, configured by nc (with
// its defaults applied).
func newNetworkSink(pool *Sink, nc NetworkConfig) (*NetworkSink, error) {
	p := pool.p
	tokens, err := token.New(nc.Secret, p.opts.Region, pool.name, p.clock)
	if err != nil {
		return nil, fmt.Errorf("pipeline: network tokens: %w", err)
	}
	return &NetworkSink{
		pool: pool, ttl: nc.LeaseTTL, clock: p.clock, tokens: tokens,
		store: nc.Leases, node: nc.Node, timeout: nc.StoreTimeout, checkEvery: nc.StoreCheck,
		grace: storeGrace(nc.StoreTimeout),
		holds: make(map[token.Token]*hold),
	}, nil
}

// NewToken mints a fresh, unguessable token, dated now. Tokens minted by
// another server sharing the secret and the region and sink names are
// accepted too.
func (n *NetworkSink) NewToken() token.Token { return n.tokens.Mint() }

// tooOld reports whether a token minted at issued may no longer take a
// lease at now.
func (n *NetworkSink) tooOld(issued, now time.Time) bool {
	return !now.Before(issued.Add(n.ttl))
}

// Reserve pins a ready location to token t and returns it. Reserve is
// idempotent: a token that already holds a lease gets the same location
// back. It fails with ErrInvalidToken for a token not minted under the
// secret for this sink (or minted more than a lease TTL ahead of the
// clock), ErrRedeemed or ErrLeaseExpired for a token already used up or
// older than a lease TTL, ErrMiss when no location is ready (a miss,
// recorded like any other), and an error wrapping ErrLeaseStore when the
// lease store fails.
func (n *NetworkSink) Reserve(t token.Token) (Location, error) {
	loc, _, err := n.ReserveUntil(t)
	return loc, err
}

// ReserveUntil is Reserve, and also tells when the lease ends: for a token
// that already held a lease, when the first Reserve said (or, through
// another node, as the store tells it, which may be a little later).
func (n *NetworkSink) ReserveUntil(t token.Token) (Location, time.Time, error) {
	return n.reserveUntil(t, true)
}

// ReserveWait is ReserveUntil that, when no location is ready, waits for
// the next entry to land in the pool (a promotion, a lease coming back)
// and tries again, until one is leased, wait has passed, ctx ends, or
// stop or done closes; it then fails with ErrMiss (or ctx's cause, or
// ErrClosed for stop, done and the pipeline's Close). Either channel may
// be nil. The request counts once in the sink's
// demand and misses however long it waits, as a waiting Take does. A
// wait of 0 or less does not wait. It is safe for concurrent use.
func (n *NetworkSink) ReserveWait(ctx context.Context, t token.Token, wait time.Duration, stop, done <-chan struct{}) (Location, time.Time, error) {
	loc, expires, err := n.reserveUntil(t, true)
	if !errors.Is(err, ErrMiss) || wait <= 0 {
		return loc, expires, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		// Take the signal before looking again, so that an entry
		// landing between the look and the wait is not lost.
		next := n.pool.sig.wait()
		if n.pool.Len() > 0 {
			loc, expires, err = n.reserveUntil(t, false)
			if !errors.Is(err, ErrMiss) {
				return loc, expires, err
			}
			// Counted but not ready (another caller took the last one,
			// or an offer is not published yet): wait for the next
			// landing as with an empty pool. Looping at once instead
			// spun, deaf to ctx and the timer, for as long as that lasted.
		}
		select {
		case <-next:
		case <-ctx.Done():
			return Location{}, time.Time{}, context.Cause(ctx)
		case <-timer.C:
			return Location{}, time.Time{}, ErrMiss
		case <-stop:
			return Location{}, time.Time{}, ErrClosed
		case <-done:
			return Location{}, time.Time{}, ErrClosed
		case <-n.pool.p.base.Done():
			return Location{}, time.Time{}, ErrClosed
		}
	}
}

// reserveUntil is ReserveUntil; count says whether the call counts in the
// pool's demand and misses (a retry of a waiting ReserveWait does not).
func (n *NetworkSink) reserveUntil(t token.Token, count bool) (Location, time.Time, error) {
	issued, ok := n.tokens.Verify(t)
	now := n.clock()
	if !ok || issued.After(now.Add(n.ttl)) {
		return Location{}, time.Time{}, ErrInvalidToken
	}
	if loc, expires, err, ok := n.existing(t, now); ok {
		return loc, expires, err
	}
	// Asking first costs a round trip but no entry: a token reserved
	// elsewhere, or used up, or a store that cannot be reached, leaves
	// the pool as it is. The store's lease answers whatever the token's
	// age: it lasts as the store says.
	if loc, ends, err, ok := n.storeLease(t, issued); ok {
		return loc, ends, err
	}
	if n.tooOld(issued, now) {
		return Location{}, time.Time{}, ErrLeaseExpired
	}
	if count {
		n.pool.d.requests.Add(1)
	}
	h, ok := n.pollFresh()
	if !ok {
		if count {
			n.recordMiss()
		}
		return Location{}, time.Time{}, ErrMiss
	}
	return n.grant(t, h, issued, now)
}

// recordMiss counts a Reserve that found no entry ready.
func (n *NetworkSink) recordMiss() {
	n.pool.c.misses.Add(1)
	n.pool.p.recordMiss(n.pool.name)
}

// Expires tells when t's lease ends; false when this node holds no lease
// of t (none taken here, or redeemed, released or ended since).
func (n *NetworkSink) Expires(t token.Token) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.holds[t]
	if !ok || l.h == nil {
		return time.Time{}, false
	}
	return l.expires, true
}

// existing answers Reserve for a token whose live lease this node holds
// (the store answers for the rest): its location, or ErrLeaseExpired once
// past its end.
func (n *NetworkSink) existing(t token.Token, now time.Time) (Location, time.Time, error, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.holds[t]
	switch {
	case !ok || l.h == nil:
		return Location{}, time.Time{}, nil, false
	case !now.Before(l.expires):
		return Location{}, l.expires, ErrLeaseExpired, true
	}
	return l.h.Location, l.expires, nil, true
}

// storeLease answers Reserve from the store's lease of t: its location and
// (advertised) end, or the error for a token the store holds no live
// lease of. It reports false when t may take a lease (the store knows
// nothing of it).
func (n *NetworkSink) storeLease(t token.Token, issued time.Time) (Location, time.Time, error, bool) {
	ctx, cancel := n.storeCtx()
	got, ends, err := n.store.Get(ctx, string(t))
	cancel()
	switch {
	case err == nil:
		return locationOf(got), ends.Add(-n.grace), nil, true
	case errors.Is(err, lease.ErrUnknown):
		return Location{}, time.Time{}, nil, false
	case noLease(err):
		return Location{}, time.Time{}, n.stateError(err, issued), true
	}
	return Location{}, time.Time{}, n.storeFailed(err), true
}

// grant leases the entry h, just polled from the pool, to t in the store
// and records it, or puts h back (or disposes it, when the grant may have
// happened) and tells why not.
func (n *NetworkSink) grant(t token.Token, h *Hot, issued, now time.Time) (Location, time.Time, error) {
	want := n.leaseOf(h)
	for range 3 {
		ctx, cancel := n.storeCtx()
		err := n.store.Grant(ctx, string(t), want, n.ttl+n.grace)
		cancel()
		switch {
		case err == nil:
			return n.granted(t, h, issued, now)
		case errors.Is(err, lease.ErrExists):
			ctx, cancel := n.storeCtx()
			got, ends, err := n.store.Get(ctx, string(t))
			cancel()
			switch {
			case err == nil && got == want:
				// Ours: a retry of the grant whose first answer was lost.
				return n.granted(t, h, issued, now)
			case err == nil:
				// Granted meanwhile through another node (or another
				// Reserve of this one).
				n.returnToPool(h)
				return locationOf(got), ends.Add(-n.grace), nil
			case errors.Is(err, lease.ErrUnknown):
				continue // released meanwhile: grant again
			}
			// The lease found may have been ours, granted by a retry
			// of the call, and redeemed since: the entry cannot go
			// back.
			n.abandon(h)
			if noLease(err) {
				return Location{}, time.Time{}, n.stateError(err, issued)
			}
			return Location{}, time.Time{}, n.storeFailed(err)
		case errors.Is(err, lease.ErrInvalid):
			n.returnToPool(h)
			return Location{}, time.Time{}, fmt.Errorf("%w: %w", ErrLeaseStore, err)
		case noLease(err):
			// Redeemed since the first look: perhaps after a retried
			// grant of ours, so the entry cannot go back.
			n.abandon(h)
			return Location{}, time.Time{}, n.stateError(err, issued)
		default:
			// The grant may have reached the store before the call
			// failed: the entry may be leased, and cannot go back.
			n.abandon(h)
			return Location{}, time.Time{}, n.storeFailed(err)
		}
	}
	n.returnToPool(h)
	return Location{}, time.Time{}, fmt.Errorf("%w: the token's lease kept changing", ErrLeaseStore)
}

// granted records the lease of t on h, just granted in the store: the
// entry leaves the locations table (the lease holds it, and may outlive
// this process) and stays pinned here until the lease ends.
func (n *NetworkSink) granted(t token.Token, h *Hot, issued, now time.Time) (Location, time.Time, error) {
	n.pool.p.rowRemove(h.Location)
	expires := now.Add(n.ttl)
	l := &hold{h: h, expires: expires, storeEnd: now.Add(n.ttl + n.grace)}
	n.mu.Lock()
	old := n.holds[t]
	n.holds[t] = l
	var stale *Hot
	if old != nil {
		// A lease of this token ended in the store (released elsewhere)
		// while this node still held its entry: what became of that one
		// cannot be told.
		stale, old.h = old.h, nil
	}
	n.mu.Unlock()
	if stale != nil {
		n.stats.uncertain.Add(1)
		n.pool.p.endHot(stale)
	}
	n.pool.c.hits.Add(1)
	return h.Location, expires, nil
}

// pollFresh takes the oldest pool entry that is live and whose chunk has
// not changed, disposing the others through the pool (counted as stale or
// changed). The entry is in transit: its row is kept.
func (n *NetworkSink) pollFresh() (*Hot, bool) {
	for {
		h, ok := pollDelivered(n.pool.ring)
		if !ok {
			return nil, false
		}
		switch {
		case h.changed():
			n.pool.c.changed.Add(1)
		case h.live():
			return h, true
		default:
			n.pool.c.stale.Add(1)
		}
		n.pool.ring.Dispose(h)
	}
}

// Redeem hands the location leased to t to the caller, who closes it with
// Hot.Close once the player has moved. It fails with ErrInvalidToken,
// ErrUnknownToken, ErrRedeemed or ErrLeaseExpired, or with an error
// wrapping ErrLeaseStore when the lease store fails.
//
// The store decides: a token whose lease another node holds (or this
// node held before a restart) is redeemed here too, and its location
// handed out as a Hot whose Res is nil.
//
// When the leased location's chunk changed since it was checked
// (Hot.Changed), that entry is disposed and the oldest fresh entry of the
// pool is handed out in its place; with none ready, Redeem fails with an
// error wrapping ErrMiss and the token is used up.
func (n *NetworkSink) Redeem(t token.Token) (*Hot, error) {
	issued, ok := n.tokens.Verify(t)
	if !ok {
		return nil, ErrInvalidToken
	}
	l := n.liveHold(t)
	if l != nil {
		defer l.op.Unlock()
	}
	ctx, cancel := n.storeCtx()
	got, err := n.store.Redeem(ctx, string(t))
	cancel()
	if err != nil {
		if !noLease(err) {
			// Whether the store redeemed the token is unknown: the entry
			// stays pinned, and the check learns its fate.
			return nil, n.storeFailed(err)
		}
		if l != nil {
			// Redeemed elsewhere (or by an earlier call whose answer was
			// lost), or ended: this node can no longer hand it out.
			c := &n.stats.uncertain
			if errors.Is(err, lease.ErrRedeemed) {
				c = &n.stats.elsewhere
			}
			n.drop(t, l, c)
		}
		return nil, n.stateError(err, issued)
	}
	now := n.clock()
	var h *Hot
	if l != nil {
		if h = n.take(t, l); h == nil {
			// Cleared meanwhile (Pipeline.Clear): the location is not
			// to be handed out.
			return nil, ErrLeaseExpired
		}
		if got != n.leaseOf(h) {
			// The store's lease is not this entry's: that one ended
			// unseen, and this one is handed out by whoever holds it.
			n.stats.uncertain.Add(1)
			n.pool.p.endHot(h)
			h = nil
		}
	}
	if h == nil {
		loc := locationOf(got)
		if !n.pool.p.belongs(loc) {
			return nil, fmt.Errorf("pipeline: the lease of the token holds %+v, not a location of region %q", loc, n.pool.p.opts.Region)
		}
		n.stats.remote.Add(1)
		return &Hot{Location: loc, Since: now, Arrived: now}, nil
	}
	if h.changed() {
		n.pool.c.changed.Add(1)
		n.pool.p.endHot(h)
		var ok bool
		if h, ok = n.pollFresh(); !ok {
			n.recordMiss()
			return nil, fmt.Errorf("pipeline: the leased location's chunk changed and %w", ErrMiss)
		}
		n.pool.c.hits.Add(1)
		n.pool.p.rowRemove(h.Location)
	}
	n.pool.p.held.release(h.Index)
	return h, nil
}

// Release gives the lease of t up before it expires, as ReleaseLease, and
// reports whether it did.
func (n *NetworkSink) Release(t token.Token) bool { return n.ReleaseLease(t) == nil }

// ReleaseLease gives the lease of t up before it expires: the entry
// returns to the pool, or to cold when the pool is full. It tells why it
// could not: ErrUnknownToken when t holds no unredeemed lease,
// ErrInvalidToken, or an error wrapping ErrLeaseStore.
//
// A lease granted by another node is released too; that node then
// disposes its entry (it cannot tell a release from a lost record).
func (n *NetworkSink) ReleaseLease(t token.Token) error {
	if _, ok := n.tokens.Verify(t); !ok {
		return ErrInvalidToken
	}
	l := n.liveHold(t)
	if l != nil {
		defer l.op.Unlock()
	}
	ctx, cancel := n.storeCtx()
	err := n.store.Release(ctx, string(t))
	cancel()
	switch {
	case err == nil:
		if l != nil {
			n.reclaim(t, l)
			n.pool.notifyLanded()
		}
		return nil
	case noLease(err):
		if l != nil {
			c := &n.stats.uncertain
			if errors.Is(err, lease.ErrRedeemed) {
				c = &n.stats.elsewhere
			}
			n.drop(t, l, c)
		}
		return ErrUnknownToken
	}
	return n.storeFailed(err)
}

// storeCtx returns the context of one store call: the pipeline's, bounded
// by the store timeout.
func (n *NetworkSink) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(n.pool.p.base, n.timeout)
}

// leaseOf is the store's lease of the entry h, granted by this node.
func (n *NetworkSink) leaseOf(h *Hot) lease.Lease {
	return lease.Lease{World: h.World, X: h.X, Y: h.Y, Z: h.Z, Index: h.Index, Owner: n.node}
}

// locationOf is the location a store's lease holds.
func locationOf(l lease.Lease) Location {
	return Location{World: l.World, X: l.X, Y: l.Y, Z: l.Z, Index: l.Index}
}

// noLease reports whether err is the store's answer for a token with no
// live lease.
func noLease(err error) bool {
	return errors.Is(err, lease.ErrRedeemed) || errors.Is(err, lease.ErrExpired) || errors.Is(err, lease.ErrUnknown)
}

// stateError maps the store's answer for a token with no live lease to the
// sink's error: ErrRedeemed, ErrLeaseExpired, or for a token the store
// knows nothing of ErrUnknownToken (ErrLeaseExpired once the token is too
// old to have taken a lease).
func (n *NetworkSink) stateError(err error, issued time.Time) error {
	switch {
	case errors.Is(err, lease.ErrRedeemed):
		return ErrRedeemed
	case errors.Is(err, lease.ErrExpired):
		return ErrLeaseExpired
	case n.tooOld(issued, n.clock()):
		return ErrLeaseExpired
	}
	return ErrUnknownToken
}

// storeFailed counts a failed store call and returns its error, wrapping
// ErrLeaseStore.
func (n *NetworkSink) storeFailed(err error) error {
	n.stats.storeErrors.Add(1)
	return fmt.Errorf("%w: %w", ErrLeaseStore, err)
}

// abandon disposes an entry polled for a lease whose grant may have
// happened: its location may be leased, so it is removed for good.
func (n *NetworkSink) abandon(h *Hot) {
	n.stats.uncertain.Add(1)
	n.pool.ring.Dispose(h)
}

// take removes the hold l of t from the records and returns its entry
// (nil when another path took it first).
func (n *NetworkSink) take(t token.Token, l *hold) *Hot {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := l.h
	l.h = nil
	if n.holds[t] == l {
		delete(n.holds, t)
	}
	return h
}

// drop disposes the entry of the hold l of t, counted in c: the store
// says it may have been handed out elsewhere. Its row went at the grant.
func (n *NetworkSink) drop(t token.Token, l *hold, c *atomic.Uint64) {
	if h := n.take(t, l); h != nil {
		c.Add(1)
		n.pool.p.endHot(h)
	}
}

// reclaim puts the entry of the hold l of t, released in the store, back
// in the pool (or cold). Its row went at the grant and is not written
// again: a row added now would be cold while its entry is hot, and a
// Persister shared by several nodes could let another node take it. The
// entry serves as any other; only a restart does not restore it.
func (n *NetworkSink) reclaim(t token.Token, l *hold) {
	if h := n.take(t, l); h != nil {
		n.returnToPool(h)
	}
}

// liveHold returns t's hold with its op lock held, or nil when this node
// holds no live lease of t.
func (n *NetworkSink) liveHold(t token.Token) *hold {
	for {
		n.mu.Lock()
		l := n.holds[t]
		n.mu.Unlock()
		if l == nil {
			return nil
		}
		l.op.Lock()
		n.mu.Lock()
		current, h := n.holds[t] == l, l.h
		n.mu.Unlock()
		if current && h != nil {
			return l
		}
		l.op.Unlock()
		if current {
			return nil
		}
	}
}

// returnToPool puts an unleased entry back in the pool, or demotes it to
// cold when the pool has no room.
func (n *NetworkSink) returnToPool(h *Hot) {
	if h.changed() {
		n.pool.c.changed.Add(1)
		n.pool.ring.Dispose(h)
		return
	}
	if h.live() && n.pool.room() > 0 && n.pool.ring.OfferSilent(h) {
		n.pool.landed.Store(true)
		return
	}
	if !h.live() {
		n.pool.c.stale.Add(1)
		n.pool.ring.Dispose(h)
		return
	}
	n.pool.c.demotions.Add(1)
	n.pool.p.demote(h, n.pool.ring)
}

// Leased is the number of entries held by unredeemed leases.
func (n *NetworkSink) Leased() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, l := range n.holds {
		if l.h != nil {
			k++
		}
	}
	return k
}

// leasedLocations returns the locations held by leases (for the web
// map's snapshot and tests of the persistence model).
func (n *NetworkSink) leasedLocations() []Location {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Location
	for _, l := range n.holds {
		if l.h != nil {
			out = append(out, l.h.Location)
		}
	}
	return out
}

// Name implements hotSink.
func (n *NetworkSink) Name() string { return n.pool.name }

// coldSource implements hotSink.
func (n *NetworkSink) coldSource() stage.Stage[Location] { return n.pool.coldSource() }

// Accepts implements hotSink (the pool's criteria; fails closed).
func (n *NetworkSink) Accepts(h *Hot) bool { return n.pool.Accepts(h) }

// HasExtrinsicVerifier implements hotSink.
func (n *NetworkSink) HasExtrinsicVerifier() bool { return n.pool.HasExtrinsicVerifier() }

// externallyLeased implements hotSink: always true.
func (n *NetworkSink) externallyLeased() bool { return true }

// narrowsBeyondColdSource implements hotSink.
func (n *NetworkSink) narrowsBeyondColdSource() bool { return n.pool.narrowsBeyondColdSource() }

// chunkCostPerEntry implements hotSink: 1.
func (n *NetworkSink) chunkCostPerEntry() int { return 1 }

// demandWeight implements hotSink.
func (n *NetworkSink) demandWeight() int64 { return n.pool.demandWeight() }

// Len implements hotSink: entries ready to be leased.
func (n *NetworkSink) Len() int { return n.pool.Len() }

// Cap implements hotSink.
func (n *NetworkSink) Cap() int { return n.pool.Cap() }

// SetCapacity changes the pool's capacity, as Sink.SetCapacity.
func (n *NetworkSink) SetCapacity(c int) { n.pool.SetCapacity(c) }
