package pipeline

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	leasestore "github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/stage"
)

// Errors of the network sink.
var (
	ErrInvalidToken = errors.New("pipeline: invalid network token")
	ErrUnknownToken = errors.New("pipeline: no lease for the network token")
	ErrRedeemed     = errors.New("pipeline: network token already redeemed")
	ErrLeaseExpired = errors.New("pipeline: network lease expired")
	ErrMiss         = errors.New("pipeline: no location ready")
	// ErrLeaseStore: in fleet mode, the lease store could not be asked (it
	// is unreachable, timed out or failed); the error wraps the store's.
	// Nothing was handed out, and a retry may succeed.
	ErrLeaseStore = errors.New("pipeline: lease store unavailable")
)

// Token is a network reservation token. It is the unpadded base64url
// (RFC 4648 section 5) text of 57 bytes:
//
//	version   1 byte, tokenVersion
//	issued    8 bytes, big-endian Unix milliseconds on the sink's clock
//	nonce     16 bytes from crypto/rand
//	mac       32 bytes, HMAC-SHA256 under the sink's secret of a label,
//	          the region and sink names (length-prefixed) and the 25 bytes
//	          above
//
// Without the secret a token can be neither guessed nor forged, and a
// token minted for one region's network sink is refused by any other (the
// names are under the MAC). The text is decoded strictly: only the one
// canonical spelling of the bytes is accepted (no padding, whitespace,
// other alphabet or stray trailing bits), so a token has exactly one text
// and a lease, keyed by that text, cannot be taken twice by respelling it.
// A token can take a lease only while younger than the lease TTL; its
// lease record (redeemed or ended) is kept at least that long, so a
// redeemed token is refused for good: ErrRedeemed while remembered,
// ErrLeaseExpired once too old.
type Token string

// Layout of a token.
const (
	tokenVersion = 1
	tokenNonce   = 16
	tokenBody    = 1 + 8 + tokenNonce // version, issued, nonce
	tokenLen     = tokenBody + sha256.Size
	// tokenTextLen is the length of a token's text.
	tokenTextLen = (tokenLen*8 + 5) / 6
	// tokenLabel separates the MACs of tokens from any other use of the
	// secret.
	tokenLabel = "rtp network token\x00"
)

// MinSecretLen is the shortest network secret accepted.
const MinSecretLen = 16

// lease is one token's hold on an entry.
type lease struct {
	h        *Hot // nil once redeemed, or once ended by expire
	expires  time.Time
	keep     time.Time // the record is kept until then (see expire)
	redeemed bool

	// In fleet mode only:
	storeEnd time.Time  // when the store's lease ends, on the local clock
	op       sync.Mutex // held across this node's store calls about the lease
}

// NetworkSink holds locations for players moving between servers
// (ADR-036): a proxy obtains a token, reserves a location with it, and the
// destination redeems the token when the player arrives. Entries reserved
// by a token are pinned to it, so the sink is externally leased and never
// takes part in transfers. A lease that expires goes back to the sink's
// pool when there is room, and is otherwise demoted to cold.
//
// # Fleet mode
//
// With NetworkConfig.Leases set, the leases are kept in that store, shared
// by the nodes of a fleet; the node that reserved a token keeps the entry
// (its Hot, with the chunk's reservation) while the lease lasts:
//
//   - Reserve answers from the node's own live lease of the token, or
//     else from the store's: a token reserved through another node gets
//     that node's location. Only a token the store knows nothing of takes
//     an entry of this node's pool, granted in the store under the node's
//     name (NetworkConfig.Node). Granting removes the location's row: the
//     lease holds it now, and a restart must not restore it (an entry
//     that comes back to the pool later stays without a row).
//   - Redeem always redeems in the store first, which lets exactly one
//     node have the token. The node holding the entry hands it out; any
//     other node hands out the location alone: a Hot whose Res is nil,
//     holding no chunk of this node (Close does nothing).
//   - An entry goes back to the pool only once the store has released its
//     lease (lease.Store.Release answered nil), when the lease ends
//     (on the pulse after its end) or is given up (Release). Any other
//     answer means the location may have been handed out elsewhere, and
//     the entry is disposed: ErrRedeemed (redeemed elsewhere), but also
//     ErrExpired and ErrUnknown, which the store also answers for a lease
//     redeemed and then ended or forgotten. So that the release at the end
//     of a lease normally finds it still live, the store keeps each lease
//     2*StoreTimeout longer than LeaseTTL (the grace); a token may be
//     redeemed during the grace too, and a lease whose store end has
//     passed before the node could release it is disposed unasked.
//   - Every NetworkConfig.StoreCheck, the pulse starts a check of the
//     node's live leases against the store (Owned, then Get for those
//     missing), so that entries redeemed elsewhere are disposed promptly
//     rather than at the end of their lease. The check and the releases
//     run on a goroutine of the pipeline, never under a lock of the sink.
//   - A failure of the store's transport fails the call with an error
//     wrapping ErrLeaseStore and never hands out anything the store did
//     not confirm. A grant whose outcome is unknown (the call failed after
//     it may have reached the store) disposes its entry rather than
//     returning it to the pool; a lease the node cannot release stays
//     pinned, and the next pulses try again.
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
	secret []byte
	bind   []byte // tokenLabel and the length-prefixed region and sink names

	// Fleet mode (store non-nil); set when the sink is made.
	store      leasestore.Store
	node       string
	timeout    time.Duration // of each store call
	checkEvery time.Duration
	grace      time.Duration // a store lease lasts ttl+grace
	fleet      fleetCounters

	mu sync.Mutex
	// mu protects the following fields.
	leases map[Token]*lease
	// In fleet mode: a check is running; when the next one is due; when
	// the leases past their end may be tried again after a failure.
	checking  bool
	nextCheck time.Time
	retryAt   time.Time
}

// fleetCounters count the fleet-mode events of a network sink.
type fleetCounters struct {
	remote, elsewhere, uncertain, storeErrors atomic.Uint64
}

// FleetStats counts the fleet-mode events of a network sink (all zero
// without a lease store).
type FleetStats struct {
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
	// StoreErrors: store calls failed by the store's transport.
	StoreErrors uint64 `json:"storeErrors"`
}

// Fleet returns the sink's fleet-mode counters.
func (n *NetworkSink) Fleet() FleetStats {
	return FleetStats{
		RemoteRedeems:     n.fleet.remote.Load(),
		RedeemedElsewhere: n.fleet.elsewhere.Load(),
		Uncertain:         n.fleet.uncertain.Load(),
		StoreErrors:       n.fleet.storeErrors.Load(),
	}
}

// Shared reports whether the sink is in fleet mode (a lease store is set).
func (n *NetworkSink) Shared() bool { return n.store != nil }

// storeGrace is how much longer than the lease TTL a lease is kept in the
// store, given the timeout of a store call: time for the node that holds
// the entry to release it after its end, while the store still knows
// whether it was redeemed.
func storeGrace(timeout time.Duration) time.Duration { return 2 * timeout }

var _ hotSink[*Hot] = (*NetworkSink)(nil)

// newNetworkSink makes the network sink over pool (nil in tests of the
// token alone: region "region", sink "network", the real clock).
func newNetworkSink(pool *Sink, secret []byte, ttl time.Duration) (*NetworkSink, error) {
	n := &NetworkSink{pool: pool, ttl: ttl, clock: time.Now, leases: make(map[Token]*lease)}
	region, name := "region", "network"
	if pool != nil {
		n.clock, region, name = pool.p.clock, pool.p.opts.Region, pool.name
		if nc := pool.p.opts.Network; nc.Leases != nil {
			n.store, n.node, n.timeout, n.checkEvery = nc.Leases, nc.Node, nc.StoreTimeout, nc.StoreCheck
			n.grace = storeGrace(n.timeout)
			if n.node == "" {
				var b [8]byte
				_, _ = rand.Read(b[:]) // never fails (crypto/rand)
				n.node = "node-" + hex.EncodeToString(b[:])
			}
		}
	}
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("pipeline: network secret: %w", err)
		}
	}
	n.secret = bytes.Clone(secret)
	n.bind = tokenBinding(region, name)
	return n, nil
}

// tokenBinding returns what a token's MAC covers before its body: the
// label and the region and sink names, each prefixed by its length.
func tokenBinding(region, sink string) []byte {
	b := append([]byte(tokenLabel), binary.AppendUvarint(nil, uint64(len(region)))...)
	b = append(b, region...)
	b = binary.AppendUvarint(b, uint64(len(sink)))
	return append(b, sink...)
}

// mac appends the MAC of a token's body to dst.
func (n *NetworkSink) mac(dst []byte, body []byte) []byte {
	m := hmac.New(sha256.New, n.secret)
	m.Write(n.bind)
	m.Write(body)
	return m.Sum(dst)
}

// NewToken mints a fresh, unguessable token, dated now. Tokens minted by
// another server sharing the secret and the region and sink names are
// accepted too.
func (n *NetworkSink) NewToken() Token {
	var b [tokenLen]byte
	b[0] = tokenVersion
	binary.BigEndian.PutUint64(b[1:9], uint64(n.clock().UnixMilli()))
	_, _ = rand.Read(b[9:tokenBody]) // never fails (crypto/rand)
	n.mac(b[:tokenBody], b[:tokenBody])
	return Token(base64.RawURLEncoding.EncodeToString(b[:]))
}

// parse checks a token's text and MAC and returns when it was minted. It
// accepts only the canonical text of a token of this version: its bytes
// must re-encode to exactly the text given.
func (n *NetworkSink) parse(t Token) (issued time.Time, ok bool) {
	if len(t) != tokenTextLen {
		return time.Time{}, false
	}
	var b [tokenLen]byte
	if k, err := base64.RawURLEncoding.Decode(b[:], []byte(t)); err != nil || k != tokenLen {
		return time.Time{}, false
	}
	var text [tokenTextLen]byte
	base64.RawURLEncoding.Encode(text[:], b[:])
	if string(text[:]) != string(t) || b[0] != tokenVersion {
		return time.Time{}, false
	}
	var sum [sha256.Size]byte
	if !hmac.Equal(n.mac(sum[:0], b[:tokenBody]), b[tokenBody:]) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[1:9]))), true
}

// valid checks a token's form and MAC.
func (n *NetworkSink) valid(t Token) bool {
	_, ok := n.parse(t)
	return ok
}

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
// older than a lease TTL, and ErrMiss when no location is ready (a miss,
// recorded like any other).
//
// In fleet mode (see NetworkSink) it may also fail with an error wrapping
// ErrLeaseStore.
func (n *NetworkSink) Reserve(t Token) (Location, error) {
	loc, _, err := n.ReserveUntil(t)
	return loc, err
}

// ReserveUntil is Reserve, and also tells when the lease ends: for a token
// that already held a lease, when the first Reserve said (in fleet mode,
// as the store tells it, which may be a little later).
func (n *NetworkSink) ReserveUntil(t Token) (Location, time.Time, error) {
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
func (n *NetworkSink) ReserveWait(ctx context.Context, t Token, wait time.Duration, stop, done <-chan struct{}) (Location, time.Time, error) {
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
func (n *NetworkSink) reserveUntil(t Token, count bool) (Location, time.Time, error) {
	issued, ok := n.parse(t)
	now := n.clock()
	if !ok || issued.After(now.Add(n.ttl)) {
		return Location{}, time.Time{}, ErrInvalidToken
	}
	if loc, expires, err, ok := n.existing(t, now); ok {
		return loc, expires, err
	}
	if n.store != nil {
		return n.reserveShared(t, issued, now, count)
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
	n.mu.Lock()
	if l, ok := n.leases[t]; ok {
		// A concurrent Reserve of the same token won: give ours back.
		n.mu.Unlock()
		n.returnToPool(h)
		loc, err := n.answer(l, now)
		return loc, l.expires, err
	}
	expires := now.Add(n.ttl)
	n.leases[t] = &lease{h: h, expires: expires, keep: latest(expires, issued.Add(n.ttl))}
	n.mu.Unlock()
	n.pool.c.hits.Add(1)
	return h.Location, expires, nil
}

// recordMiss counts a Reserve that found no entry ready.
func (n *NetworkSink) recordMiss() {
	n.pool.c.misses.Add(1)
	n.pool.p.recordMiss(n.pool.name)
}

// Expires tells when t's lease ends; false when t holds no lease (none
// taken, or redeemed, released or ended since).
func (n *NetworkSink) Expires(t Token) (time.Time, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.leases[t]
	if !ok || l.h == nil {
		return time.Time{}, false
	}
	return l.expires, true
}

// existing answers Reserve for a token that already has a lease (in
// fleet mode, a live one of this node's: the store answers for the rest).
func (n *NetworkSink) existing(t Token, now time.Time) (Location, time.Time, error, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.leases[t]
	if !ok || (n.store != nil && l.h == nil) {
		return Location{}, time.Time{}, nil, false
	}
	loc, err := n.answer(l, now)
	return loc, l.expires, err, true
}

// answer is Reserve's reply for an existing lease. Its fields are read
// under n.mu or after the lease left the map.
func (n *NetworkSink) answer(l *lease, now time.Time) (Location, error) {
	switch {
	case l.redeemed:
		return Location{}, ErrRedeemed
	case l.h == nil || !now.Before(l.expires):
		return Location{}, ErrLeaseExpired
	}
	return l.h.Location, nil
}

// pollFresh takes the oldest pool entry that is live and whose chunk has
// not changed, disposing the others through the pool (counted as stale or
// changed). The entry is in transit: its row is kept.
func (n *NetworkSink) pollFresh() (*Hot, bool) {
	for {
		h, ok := n.pool.ring.PollSilent()
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
// ErrUnknownToken, ErrRedeemed or ErrLeaseExpired.
//
// When the leased location's chunk changed since it was checked
// (Hot.Changed), that entry is disposed and the oldest fresh entry of the
// pool is handed out in its place; with none ready, Redeem fails with an
// error wrapping ErrMiss and the lease ends (a retry is told
// ErrLeaseExpired).
//
// In fleet mode (see NetworkSink) the store decides: a token whose lease
// another node holds is redeemed here too, and its location handed out as
// a Hot whose Res is nil. Redeem may then also fail with an error wrapping
// ErrLeaseStore.
func (n *NetworkSink) Redeem(t Token) (*Hot, error) {
	issued, ok := n.parse(t)
	if !ok {
		return nil, ErrInvalidToken
	}
	if n.store != nil {
		return n.redeemShared(t, issued)
	}
	now := n.clock()
	n.mu.Lock()
	l, ok := n.leases[t]
	switch {
	case !ok && n.tooOld(issued, now):
		n.mu.Unlock()
		return nil, ErrLeaseExpired
	case !ok:
		n.mu.Unlock()
		return nil, ErrUnknownToken
	case l.redeemed:
		n.mu.Unlock()
		return nil, ErrRedeemed
	case l.h == nil || !now.Before(l.expires):
		n.mu.Unlock()
		return nil, ErrLeaseExpired
	}
	h := l.h
	changed := h.changed()
	l.h, l.redeemed = nil, !changed
	n.mu.Unlock()
	if changed {
		n.pool.c.changed.Add(1)
		n.pool.ring.Dispose(h)
		var ok bool
		if h, ok = n.pollFresh(); !ok {
			n.recordMiss()
			return nil, fmt.Errorf("pipeline: the leased location's chunk changed and %w", ErrMiss)
		}
		n.mu.Lock()
		l.redeemed = true
		n.mu.Unlock()
		n.pool.c.hits.Add(1)
	}
	n.pool.p.rowRemove(h.Location) // egress, as a Poll would
	n.pool.p.held.release(h.Index)
	return h, nil
}

// Release gives the lease of t up before it expires: the entry returns to
// the pool, or to cold when the pool is full. It reports whether t held an
// unredeemed lease. In fleet mode it is ReleaseLease(t) == nil.
func (n *NetworkSink) Release(t Token) bool {
	if n.store != nil {
		return n.ReleaseLease(t) == nil
	}
	n.mu.Lock()
	l, ok := n.leases[t]
	if !ok || l.h == nil { // none, redeemed or ended
		n.mu.Unlock()
		return false
	}
	delete(n.leases, t)
	h := l.h
	n.mu.Unlock()
	n.returnToPool(h)
	n.pool.notifyLanded()
	return true
}

// expire ends the leases past their expiry: unredeemed entries go back to
// the pool or to cold. The record of a redeemed or ended lease is kept
// until its token is too old to take a lease (and at least until the
// lease's end), so a late Redeem or Reserve is told ErrRedeemed or
// ErrLeaseExpired while it is kept, and ErrLeaseExpired after: a token
// never takes a second lease once redeemed.
//
// In fleet mode it only starts, when one is due, the check of this node's
// leases against the store (see NetworkSink), and returns 0.
func (n *NetworkSink) expire(now time.Time) int {
	if n.store != nil {
		n.schedule(now)
		return 0
	}
	var back []*Hot
	n.mu.Lock()
	for t, l := range n.leases {
		switch {
		case now.Before(l.expires):
		case l.redeemed || l.h == nil: // used up, or ended earlier
			if !now.Before(l.keep) {
				delete(n.leases, t)
			}
		default:
			back = append(back, l.h)
			l.h = nil
		}
	}
	n.mu.Unlock()
	for _, h := range back {
		n.returnToPool(h)
	}
	return len(back)
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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

// closeLeases disposes every leased entry (shutdown or clear).
func (n *NetworkSink) closeLeases() {
	if n.store != nil {
		n.closeShared()
		return
	}
	n.mu.Lock()
	var held []*Hot
	for t, l := range n.leases {
		if l.h != nil {
			held = append(held, l.h)
		}
		delete(n.leases, t)
	}
	n.mu.Unlock()
	for _, h := range held {
		n.pool.ring.Dispose(h)
	}
}

// Leased is the number of entries held by unredeemed leases.
func (n *NetworkSink) Leased() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, l := range n.leases {
		if l.h != nil {
			k++
		}
	}
	return k
}

// leasedLocations returns the locations held by leases (for tests of the
// persistence model).
func (n *NetworkSink) leasedLocations() []Location {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []Location
	for _, l := range n.leases {
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

// Fleet mode (see NetworkSink): the leases live in n.store.

// storeCtx returns the context of one store call: the pipeline's, bounded
// by the store timeout.
func (n *NetworkSink) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(n.pool.p.base, n.timeout)
}

// leaseOf is the store's lease of the entry h, granted by this node.
func (n *NetworkSink) leaseOf(h *Hot) leasestore.Lease {
	return leasestore.Lease{World: h.World, X: h.X, Y: h.Y, Z: h.Z, Index: h.Index, Owner: n.node}
}

// locationOf is the location a store's lease holds.
func locationOf(l leasestore.Lease) Location {
	return Location{World: l.World, X: l.X, Y: l.Y, Z: l.Z, Index: l.Index}
}

// noLease reports whether err is the store's answer for a token with no
// live lease.
func noLease(err error) bool {
	return errors.Is(err, leasestore.ErrRedeemed) || errors.Is(err, leasestore.ErrExpired) || errors.Is(err, leasestore.ErrUnknown)
}

// stateError maps the store's answer for a token with no live lease to the
// sink's error: ErrRedeemed, ErrLeaseExpired, or for a token the store
// knows nothing of ErrUnknownToken (ErrLeaseExpired once the token is too
// old to have taken a lease).
func (n *NetworkSink) stateError(err error, issued time.Time) error {
	switch {
	case errors.Is(err, leasestore.ErrRedeemed):
		return ErrRedeemed
	case errors.Is(err, leasestore.ErrExpired):
		return ErrLeaseExpired
	case n.tooOld(issued, n.clock()):
		return ErrLeaseExpired
	}
	return ErrUnknownToken
}

// storeFailed counts a failed store call and returns its error, wrapping
// ErrLeaseStore.
func (n *NetworkSink) storeFailed(err error) error {
	n.fleet.storeErrors.Add(1)
	return fmt.Errorf("%w: %w", ErrLeaseStore, err)
}

// reserveShared is Reserve in fleet mode, for a token this node holds no
// live lease of: the store's lease when there is one (whatever the token's
// age: the lease lasts as the store says), else an entry of the pool
// granted in the store.
func (n *NetworkSink) reserveShared(t Token, issued, now time.Time, count bool) (Location, time.Time, error) {
	// Asking first costs a round trip but no entry: a token reserved
	// elsewhere, or used up, or a store that cannot be reached, leaves
	// the pool as it is.
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
	want := n.leaseOf(h)
	for range 3 {
		ctx, cancel := n.storeCtx()
		err := n.store.Grant(ctx, string(t), want, n.ttl+n.grace)
		cancel()
		switch {
		case err == nil:
			return n.granted(t, h, issued, now)
		case errors.Is(err, leasestore.ErrExists):
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
			case errors.Is(err, leasestore.ErrUnknown):
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
		case errors.Is(err, leasestore.ErrInvalid):
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

// storeLease answers Reserve from the store's lease of t: its location and
// (advertised) end, or the error for a token the store holds no live
// lease of. It reports false when t may take a lease (the store knows
// nothing of it).
func (n *NetworkSink) storeLease(t Token, issued time.Time) (Location, time.Time, error, bool) {
	ctx, cancel := n.storeCtx()
	got, ends, err := n.store.Get(ctx, string(t))
	cancel()
	switch {
	case err == nil:
		return locationOf(got), ends.Add(-n.grace), nil, true
	case errors.Is(err, leasestore.ErrUnknown):
		return Location{}, time.Time{}, nil, false
	case noLease(err):
		return Location{}, time.Time{}, n.stateError(err, issued), true
	}
	return Location{}, time.Time{}, n.storeFailed(err), true
}

// granted records the lease of t on h, just granted in the store: the
// entry leaves the locations table (the lease holds it, and outlives this
// node) and stays pinned here until the lease ends.
func (n *NetworkSink) granted(t Token, h *Hot, issued, now time.Time) (Location, time.Time, error) {
	n.pool.p.rowRemove(h.Location)
	expires := now.Add(n.ttl)
	l := &lease{h: h, expires: expires, keep: latest(expires, issued.Add(n.ttl)), storeEnd: now.Add(n.ttl + n.grace)}
	n.mu.Lock()
	old := n.leases[t]
	n.leases[t] = l
	var stale *Hot
	if old != nil {
		// A lease of this token ended in the store (released elsewhere)
		// while this node still held its entry: what became of that one
		// cannot be told.
		stale, old.h = old.h, nil
	}
	n.mu.Unlock()
	if stale != nil {
		n.fleet.uncertain.Add(1)
		n.pool.p.endHot(stale)
	}
	n.pool.c.hits.Add(1)
	return h.Location, expires, nil
}

// abandon disposes an entry polled for a lease whose grant may have
// happened: its location may be leased, so it is removed for good.
func (n *NetworkSink) abandon(h *Hot) {
	n.fleet.uncertain.Add(1)
	n.pool.ring.Dispose(h)
}

// take removes the lease l of t from the records and returns its entry
// (nil when another path took it first).
func (n *NetworkSink) take(t Token, l *lease) *Hot {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := l.h
	l.h = nil
	if n.leases[t] == l {
		delete(n.leases, t)
	}
	return h
}

// drop disposes the entry of the lease l of t, counted in c: the store
// says it may have been handed out elsewhere. Its row went at the grant.
func (n *NetworkSink) drop(t Token, l *lease, c *atomic.Uint64) {
	if h := n.take(t, l); h != nil {
		c.Add(1)
		n.pool.p.endHot(h)
	}
}

// reclaim puts the entry of the lease l of t, released in the store, back
// in the pool (or cold). Its row went at the grant and is not written
// again: a row added now would be cold while its entry is hot, and a
// Persister shared by several nodes could let another node take it. The
// entry serves as any other; only a restart does not restore it.
func (n *NetworkSink) reclaim(t Token, l *lease) {
	if h := n.take(t, l); h != nil {
		n.returnToPool(h)
	}
}

// liveLease returns t's lease record with its op lock held, or nil when
// this node holds no live lease of t.
func (n *NetworkSink) liveLease(t Token) *lease {
	for {
		n.mu.Lock()
		l := n.leases[t]
		n.mu.Unlock()
		if l == nil {
			return nil
		}
		l.op.Lock()
		n.mu.Lock()
		current, h := n.leases[t] == l, l.h
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

// redeemShared is Redeem in fleet mode.
func (n *NetworkSink) redeemShared(t Token, issued time.Time) (*Hot, error) {
	l := n.liveLease(t)
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
			c := &n.fleet.uncertain
			if errors.Is(err, leasestore.ErrRedeemed) {
				c = &n.fleet.elsewhere
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
			n.fleet.uncertain.Add(1)
			n.pool.p.endHot(h)
			h = nil
		}
	}
	if h == nil {
		loc := locationOf(got)
		if !n.pool.p.belongs(loc) {
			return nil, fmt.Errorf("pipeline: the lease of the token holds %+v, not a location of region %q", loc, n.pool.p.opts.Region)
		}
		n.fleet.remote.Add(1)
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

// ReleaseLease gives the lease of t up before it expires, as Release, and
// tells why it could not: ErrUnknownToken when t holds no unredeemed lease,
// ErrInvalidToken, or (fleet mode) an error wrapping ErrLeaseStore.
//
// In fleet mode a lease granted by another node is released too; that
// node then disposes its entry (it cannot tell a release from a lost
// record).
func (n *NetworkSink) ReleaseLease(t Token) error {
	if n.store == nil {
		if !n.Release(t) {
			return ErrUnknownToken
		}
		return nil
	}
	if !n.valid(t) {
		return ErrInvalidToken
	}
	l := n.liveLease(t)
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
			c := &n.fleet.uncertain
			if errors.Is(err, leasestore.ErrRedeemed) {
				c = &n.fleet.elsewhere
			}
			n.drop(t, l, c)
		}
		return ErrUnknownToken
	}
	return n.storeFailed(err)
}

// schedule starts a check of this node's leases against the store when one
// is due: every checkEvery, and on the first pulse after a lease's end
// (unless the last check failed less than checkEvery ago). One runs at a
// time, on a goroutine of the pipeline (Settle waits for it).
func (n *NetworkSink) schedule(now time.Time) {
	n.mu.Lock()
	if n.checking || len(n.leases) == 0 {
		n.mu.Unlock()
		return
	}
	check := !now.Before(n.nextCheck)
	if !check && now.Before(n.retryAt) {
		n.mu.Unlock()
		return
	}
	due := false
	for _, l := range n.leases {
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
		t Token
		l *lease
	}
	var all []held
	n.mu.Lock()
	for t, l := range n.leases {
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
func (n *NetworkSink) settle(t Token, l *lease, due bool) bool {
	n.mu.Lock()
	gone := n.leases[t] != l || l.h == nil
	n.mu.Unlock()
	if gone {
		return true
	}
	var err error
	if due {
		if !n.clock().Before(l.storeEnd) {
			// The store's lease has ended: whether it was redeemed can
			// no longer be learnt.
			n.drop(t, l, &n.fleet.uncertain)
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
	case errors.Is(err, leasestore.ErrRedeemed):
		n.drop(t, l, &n.fleet.elsewhere)
	case noLease(err):
		n.drop(t, l, &n.fleet.uncertain)
	default:
		_ = n.storeFailed(err)
		return false
	}
	return true
}

// closeShared is closeLeases in fleet mode: the entries are disposed (their
// rows went at the grant). On Clear the leases are released in the store
// too (best effort, within one store timeout), so that no node hands out
// a location cleared here; on Close they are kept, redeemable through the
// other nodes.
func (n *NetworkSink) closeShared() {
	n.mu.Lock()
	var tokens []Token
	var held []*Hot
	for t, l := range n.leases {
		if l.h != nil {
			tokens = append(tokens, t)
			held = append(held, l.h)
			l.h = nil
		}
		delete(n.leases, t)
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
