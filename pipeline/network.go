package pipeline

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/stage"
)

// Errors of the network sink.
var (
	ErrInvalidToken = errors.New("pipeline: invalid network token")
	ErrUnknownToken = errors.New("pipeline: no lease for the network token")
	ErrRedeemed     = errors.New("pipeline: network token already redeemed")
	ErrLeaseExpired = errors.New("pipeline: network lease expired")
	ErrMiss         = errors.New("pipeline: no location ready")
)

// Token is a network reservation token: base64url (no padding) of a 16-byte
// nonce and the HMAC-SHA256 of the nonce under the sink's secret. Without
// the secret a token can be neither guessed nor forged.
type Token string

// tokenNonce is the nonce length: 8 random bytes drawn when the sink is
// made (so tokens differ across restarts) and an 8-byte counter.
const (
	tokenNonce = 16
	tokenLen   = tokenNonce + sha256.Size
)

// MinSecretLen is the shortest network secret accepted.
const MinSecretLen = 16

// lease is one token's hold on an entry.
type lease struct {
	h        *Hot // nil once redeemed, or once ended by expire
	expires  time.Time
	redeemed bool
}

// NetworkSink holds locations for players moving between servers
// (ADR-036): a proxy obtains a token, reserves a location with it, and the
// destination redeems the token when the player arrives. Entries reserved
// by a token are pinned to it, so the sink is externally leased and never
// takes part in transfers. A lease that expires goes back to the sink's
// pool when there is room, and is otherwise demoted to cold.
//
// A NetworkSink is safe for concurrent use. Its zero value is not usable: a
// Pipeline makes it (see Options).
type NetworkSink struct {
	pool   *Sink
	ttl    time.Duration
	secret []byte
	epoch  [8]byte
	serial atomic.Uint64

	mu sync.Mutex
	// mu protects the following field.
	leases map[Token]*lease
}

var _ HotSink[*Hot] = (*NetworkSink)(nil)

func newNetworkSink(pool *Sink, secret []byte, ttl time.Duration) (*NetworkSink, error) {
	n := &NetworkSink{pool: pool, ttl: ttl, leases: make(map[Token]*lease)}
	if len(secret) == 0 {
		secret = make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, err
		}
	}
	n.secret = append([]byte(nil), secret...)
	if _, err := rand.Read(n.epoch[:]); err != nil {
		return nil, err
	}
	return n, nil
}

// NewToken mints a fresh, unguessable token. Tokens from another server
// sharing the secret are accepted too.
func (n *NetworkSink) NewToken() Token {
	var b [tokenLen]byte
	copy(b[:8], n.epoch[:])
	binary.BigEndian.PutUint64(b[8:16], n.serial.Add(1))
	m := hmac.New(sha256.New, n.secret)
	m.Write(b[:tokenNonce])
	m.Sum(b[:tokenNonce])
	return Token(base64.RawURLEncoding.EncodeToString(b[:]))
}

// valid checks a token's form and MAC.
func (n *NetworkSink) valid(t Token) bool {
	if base64.RawURLEncoding.DecodedLen(len(t)) != tokenLen {
		return false
	}
	var b [tokenLen]byte
	if k, err := base64.RawURLEncoding.Decode(b[:], []byte(t)); err != nil || k != tokenLen {
		return false
	}
	m := hmac.New(sha256.New, n.secret)
	m.Write(b[:tokenNonce])
	return hmac.Equal(m.Sum(nil), b[tokenNonce:])
}

// Reserve pins a ready location to token t and returns it. Reserve is
// idempotent: a token that already holds a lease gets the same location
// back. It fails with ErrInvalidToken for a token not minted under the
// secret, ErrRedeemed or ErrLeaseExpired for a token already used up, and
// ErrMiss when no location is ready (a miss, recorded like any other).
func (n *NetworkSink) Reserve(t Token) (Location, error) {
	if !n.valid(t) {
		return Location{}, ErrInvalidToken
	}
	now := n.pool.p.clock()
	if loc, err, ok := n.existing(t, now); ok {
		return loc, err
	}
	n.pool.d.requests.Add(1)
	h, ok := n.pollFresh()
	if !ok {
		n.pool.c.misses.Add(1)
		n.pool.p.recordMiss(n.pool.name)
		return Location{}, ErrMiss
	}
	n.mu.Lock()
	if l, ok := n.leases[t]; ok {
		// A concurrent Reserve of the same token won: give ours back.
		n.mu.Unlock()
		n.returnToPool(h)
		return n.answer(l, now)
	}
	n.leases[t] = &lease{h: h, expires: now.Add(n.ttl)}
	n.mu.Unlock()
	n.pool.c.hits.Add(1)
	return h.Location, nil
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

// existing answers Reserve for a token that already has a lease.
func (n *NetworkSink) existing(t Token, now time.Time) (Location, error, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.leases[t]
	if !ok {
		return Location{}, nil, false
	}
	loc, err := n.answer(l, now)
	return loc, err, true
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
func (n *NetworkSink) Redeem(t Token) (*Hot, error) {
	if !n.valid(t) {
		return nil, ErrInvalidToken
	}
	now := n.pool.p.clock()
	n.mu.Lock()
	l, ok := n.leases[t]
	switch {
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
			n.pool.c.misses.Add(1)
			n.pool.p.recordMiss(n.pool.name)
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
// unredeemed lease.
func (n *NetworkSink) Release(t Token) bool {
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
// the pool or to cold, and their tokens are kept for one more lease TTL
// without an entry, so a late Redeem or Reserve is told ErrLeaseExpired
// rather than ErrUnknownToken; redeemed tokens are forgotten.
func (n *NetworkSink) expire(now time.Time) int {
	var back []*Hot
	n.mu.Lock()
	for t, l := range n.leases {
		switch {
		case now.Before(l.expires):
		case l.redeemed:
			delete(n.leases, t)
		case l.h == nil: // ended earlier
			if !now.Before(l.expires.Add(n.ttl)) {
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

// Name implements HotSink.
func (n *NetworkSink) Name() string { return n.pool.name }

// ColdSource implements HotSink.
func (n *NetworkSink) ColdSource() stage.Stage[Location] { return n.pool.ColdSource() }

// Accepts implements HotSink (the pool's criteria; fails closed).
func (n *NetworkSink) Accepts(h *Hot) bool { return n.pool.Accepts(h) }

// HasExtrinsicVerifier implements HotSink.
func (n *NetworkSink) HasExtrinsicVerifier() bool { return n.pool.HasExtrinsicVerifier() }

// ExternallyLeased implements HotSink: always true.
func (n *NetworkSink) ExternallyLeased() bool { return true }

// NarrowsBeyondColdSource implements HotSink.
func (n *NetworkSink) NarrowsBeyondColdSource() bool { return n.pool.NarrowsBeyondColdSource() }

// ChunkCostPerEntry implements HotSink: 1.
func (n *NetworkSink) ChunkCostPerEntry() int { return 1 }

// DemandWeight implements HotSink.
func (n *NetworkSink) DemandWeight() int64 { return n.pool.DemandWeight() }

// Len implements HotSink: entries ready to be leased.
func (n *NetworkSink) Len() int { return n.pool.Len() }

// Cap implements HotSink.
func (n *NetworkSink) Cap() int { return n.pool.Cap() }

// SetCapacity changes the pool's capacity, as Sink.SetCapacity.
func (n *NetworkSink) SetCapacity(c int) { n.pool.SetCapacity(c) }
