package pipeline

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
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
	clock  func() time.Time
	secret []byte
	bind   []byte // tokenLabel and the length-prefixed region and sink names

	mu sync.Mutex
	// mu protects the following field.
	leases map[Token]*lease
}

var _ hotSink[*Hot] = (*NetworkSink)(nil)

// newNetworkSink makes the network sink over pool (nil in tests of the
// token alone: region "region", sink "network", the real clock).
func newNetworkSink(pool *Sink, secret []byte, ttl time.Duration) (*NetworkSink, error) {
	n := &NetworkSink{pool: pool, ttl: ttl, clock: time.Now, leases: make(map[Token]*lease)}
	region, name := "region", "network"
	if pool != nil {
		n.clock, region, name = pool.p.clock, pool.p.opts.Region, pool.name
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
func (n *NetworkSink) Reserve(t Token) (Location, error) {
	issued, ok := n.parse(t)
	now := n.clock()
	if !ok || issued.After(now.Add(n.ttl)) {
		return Location{}, ErrInvalidToken
	}
	if loc, err, ok := n.existing(t, now); ok {
		return loc, err
	}
	if n.tooOld(issued, now) {
		return Location{}, ErrLeaseExpired
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
	expires := now.Add(n.ttl)
	n.leases[t] = &lease{h: h, expires: expires, keep: latest(expires, issued.Add(n.ttl))}
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
	issued, ok := n.parse(t)
	if !ok {
		return nil, ErrInvalidToken
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
// the pool or to cold. The record of a redeemed or ended lease is kept
// until its token is too old to take a lease (and at least until the
// lease's end), so a late Redeem or Reserve is told ErrRedeemed or
// ErrLeaseExpired while it is kept, and ErrLeaseExpired after: a token
// never takes a second lease once redeemed.
func (n *NetworkSink) expire(now time.Time) int {
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
