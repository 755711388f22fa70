package engine

import (
	"crypto/rand"
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/pipeline"
)

// ReasonTooManyOpen: the engine holds as many open handouts as
// HandoutLimits.Total allows; a teleport succeeds again once one is
// completed, cancelled or expired.
const ReasonTooManyOpen = "too-many-open"

// Defaults of HandoutLimits.
const (
	// DefaultMaxOpenPerPlayer is how many open handouts a player holds:
	// a new request replaces the old one.
	DefaultMaxOpenPerPlayer = 1
	// DefaultMaxOpen bounds the open handouts of an engine, across its
	// regions.
	DefaultMaxOpen = 4096
)

// MaxID is the largest ID handed out: 2^53-1, the largest integer a
// JSON number keeps exactly in JavaScript (Number.MAX_SAFE_INTEGER).
const MaxID = 1<<53 - 1

// HandoutLimits bound the locations handed out and not yet closed by
// Complete, Cancel or their lifespan (Options.HandoutLifespan). Every open
// handout holds a reservation, and so its chunk in its world's resident
// store: the limits bound that memory however many clients never call
// Complete. The zero value selects the defaults.
type HandoutLimits struct {
	// PerPlayer is how many open handouts one player (by name, across
	// regions) may hold. A teleport beyond it replaces the player's
	// oldest open handout: "a new request replaces the old one". The old
	// one is closed as Cancel closes it (its location goes back to its
	// region's cold stage), counted in HandoutStats.Replaced, and its ID
	// is unknown from then on. Locations redeemed by Redeem name no
	// player and are not counted. Default DefaultMaxOpenPerPlayer (1);
	// negative: no limit.
	PerPlayer int
	// Total bounds the open handouts of the engine, across regions. A
	// Teleport that would exceed it, and replaces none of the player's,
	// fails with ReasonTooManyOpen (counted in HandoutStats.Refused).
	// Redeeming a network token is refused the same way when the bound
	// is reached before the token is redeemed. Default DefaultMaxOpen
	// (4096); negative: no limit.
	Total int
	// PerClient bounds the open handouts of one client (Request.Client:
	// the HTTP server's remote address), so that one caller cannot hold
	// every slot of Total with made-up player names. A teleport beyond it,
	// replacing none of the same client's, fails with ReasonTooManyOpen,
	// its Error.RetryAfter the time until the client's oldest handout
	// ends its lifespan. A game server that holds many handouts itself
	// should raise it. Default a quarter of Total (at least 1; no limit
	// when Total has none); negative: no limit.
	PerClient int
}

func (l HandoutLimits) withDefaults() HandoutLimits {
	if l.PerPlayer == 0 {
		l.PerPlayer = DefaultMaxOpenPerPlayer
	}
	if l.Total == 0 {
		l.Total = DefaultMaxOpen
	}
	if l.PerClient == 0 {
		l.PerClient = max(l.Total/4, 1)
		if l.Total < 0 {
			l.PerClient = -1
		}
	}
	return l
}

// handoutShards is the number of shards of the handout table and of its
// index by player: teleports on different goroutines rarely meet on one
// lock.
const handoutShards = 32

// handout is a location handed out: its entry (and reservation), its
// region, its player ("" for a redeemed token), its client ("" when not
// counted) and when it was handed out (on Options.Clock).
type handout struct {
	h      *pipeline.Hot
	r      *Region
	player string
	client string
	at     time.Time
}

// handouts is the table of locations handed out, sharded by ID, with the
// open IDs of each player and of each client, and the limits on them. Lock
// order: a player shard, then a client shard, then an ID shard; no other
// lock is taken while one is held.
type handouts struct {
	shards  [handoutShards]handoutShard
	players [handoutShards]playerShard
	clients [handoutShards]playerShard // the same index, by client
	seed    maphash.Seed
	open    atomic.Int64 // handouts in the table, every region
	limits  HandoutLimits
	// lifespan is Options.HandoutLifespan, for the time until a slot
	// frees (Error.RetryAfter).
	lifespan time.Duration

	expiryMu sync.Mutex // protects following fields: nextExpiry's answer
	expiryAt time.Time  // when it was computed
	expiry   time.Time  // when the oldest handout then ends its lifespan
	// counts holds the *handoutCounts of each region (by *Region), made
	// on first use.
	counts sync.Map
}

type handoutShard struct {
	mu sync.Mutex
	// mu protects the following field.
	m map[uint64]handout
	_ [40]byte // keeps shards on separate cache lines
}

type playerShard struct {
	mu sync.Mutex
	// mu protects the following field: the open IDs of each player (or
	// client) holding one, oldest first.
	m map[string][]uint64
	_ [40]byte
}

// handoutCounts are a region's counters of the handout limits.
type handoutCounts struct {
	replaced, refused atomic.Uint64
}

// init makes the tables, with the default limits.
func (o *handouts) init() {
	for i := range o.shards {
		o.shards[i].m = map[uint64]handout{}
		o.players[i].m = map[string][]uint64{}
		o.clients[i].m = map[string][]uint64{}
	}
	o.seed = maphash.MakeSeed()
	o.limits = HandoutLimits{}.withDefaults()
}

// setLimits sets the limits (before the Engine is shared).
func (o *handouts) setLimits(l HandoutLimits) { o.limits = l.withDefaults() }

func (o *handouts) shard(id uint64) *handoutShard { return &o.shards[id%handoutShards] }

func (o *handouts) playerShard(p string) *playerShard {
	return &o.players[maphash.String(o.seed, p)%handoutShards]
}

func (o *handouts) clientShard(c string) *playerShard {
	return &o.clients[maphash.String(o.seed, c)%handoutShards]
}

// countsOf returns r's counters.
func (o *handouts) countsOf(r *Region) *handoutCounts {
	if c, ok := o.counts.Load(r); ok {
		return c.(*handoutCounts)
	}
	c, _ := o.counts.LoadOrStore(r, new(handoutCounts))
	return c.(*handoutCounts)
}

// replacedCount and refusedCount return r's counts of handouts replaced
// under HandoutLimits.PerPlayer and of teleports refused under
// HandoutLimits.Total (for HandoutStats).
func (o *handouts) replacedCount(r *Region) uint64 { return o.countsOf(r).replaced.Load() }
func (o *handouts) refusedCount(r *Region) uint64  { return o.countsOf(r).refused.Load() }

// newID draws a random ID in [1, MaxID] from crypto/rand. IDs are not
// sequential, so they neither repeat across restarts (a stale ID from an
// earlier run is unknown to this one, but for odds of about one in 2^53
// per open handout) nor can be guessed from one's own.
func newID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		if id := binary.LittleEndian.Uint64(b[:]) & MaxID; id != 0 {
			return id
		}
	}
}

// full reports whether a teleport for player would be refused under
// HandoutLimits.Total now: the table is full and the player holds no
// handout the teleport would replace. Teleport checks it before taking a
// location, so that a refusal costs no entry; addHandout decides.
func (o *handouts) full(player string) bool {
	if o.limits.Total < 0 || o.open.Load() < int64(o.limits.Total) {
		return false
	}
	if player == "" || o.limits.PerPlayer < 0 {
		return true
	}
	ps := o.playerShard(player)
	ps.mu.Lock()
	n := len(ps.m[player])
	ps.mu.Unlock()
	return n < o.limits.PerPlayer
}

// clientFull reports whether a teleport for player at the request of
// client would be refused under HandoutLimits.PerClient now: the client
// holds as many handouts as it may, and none of them is the player's
// (which the teleport would replace). It returns when the client's
// oldest handout ends its lifespan. Teleport checks it before taking a
// location, so that a refusal costs no entry; addHandout decides.
func (o *handouts) clientFull(player, client string, now time.Time) (bool, time.Duration) {
	if client == "" || o.limits.PerClient < 0 {
		return false, 0
	}
	cs := o.clientShard(client)
	cs.mu.Lock()
	ids := cs.m[client]
	full := len(ids) >= o.limits.PerClient
	var first uint64
	if full {
		first = ids[0]
		for _, id := range ids {
			if o.playerOf(id) == player && player != "" {
				full = false
				break
			}
		}
	}
	cs.mu.Unlock()
	if !full {
		return false, 0
	}
	return true, o.untilExpiry(first, now)
}

// groupFull reports whether a group teleport for players would be
// refused under HandoutLimits.Total now: the handouts it adds, one for
// each player who holds none it would replace, do not fit in the table.
// GroupTeleport checks it before taking places; addHandout decides.
func (o *handouts) groupFull(players []string) bool {
	if o.limits.Total < 0 {
		return false
	}
	need := int64(0)
	for _, p := range players {
		if o.limits.PerPlayer < 0 {
			need++
			continue
		}
		ps := o.playerShard(p)
		ps.mu.Lock()
		n := len(ps.m[p])
		ps.mu.Unlock()
		if n < o.limits.PerPlayer || n == 0 {
			need++
		}
	}
	return o.open.Load()+need > int64(o.limits.Total)
}

// groupClientFull reports whether a group teleport for players at the
// request of client would be refused under HandoutLimits.PerClient now:
// the client's handouts, with one more for each player who holds none of
// the client's it would replace, exceed the bound. It returns when the
// client's oldest handout ends its lifespan (a second when it holds
// none).
func (o *handouts) groupClientFull(players []string, client string, now time.Time) (bool, time.Duration) {
	if client == "" || o.limits.PerClient < 0 {
		return false, 0
	}
	cs := o.clientShard(client)
	cs.mu.Lock()
	ids := slices.Clone(cs.m[client])
	cs.mu.Unlock()
	owners := make(map[string]bool, len(ids))
	for _, id := range ids {
		owners[o.playerOf(id)] = true
	}
	need := 0
	for _, p := range players {
		if !owners[p] {
			need++
		}
	}
	if len(ids)+need <= o.limits.PerClient {
		return false, 0
	}
	if len(ids) == 0 {
		return true, time.Second
	}
	return true, o.untilExpiry(ids[0], now)
}

// playerOf returns the player of the open handout id ("" when none).
func (o *handouts) playerOf(id uint64) string {
	sh := o.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[id].player
}

// refuse counts a teleport of r refused under HandoutLimits.Total or
// PerClient and returns its error, which says when a slot frees at the
// latest.
func (o *handouts) refuse(r *Region, sink string, retry time.Duration) error {
	o.countsOf(r).refused.Add(1)
	return &Error{Region: r.name, Sink: sink, Reason: ReasonTooManyOpen, RetryAfter: retry}
}

// addHandout records h, handed out to player ("" for none) at the request
// of client ("" for none), under a new ID. A player at
// HandoutLimits.PerPlayer has their oldest handout replaced (closed as
// Cancel closes it); otherwise, with the table at HandoutLimits.Total or
// the client at HandoutLimits.PerClient, it fails with ReasonTooManyOpen
// unless force is set, and returns when a slot frees at the latest. It
// fails with ReasonShutdown once shutdown has started (which closes every
// handout recorded before it). On failure h is the caller's.
func (e *Engine) addHandout(r *Region, h *pipeline.Hot, player, client string, force bool) (uint64, string, time.Duration) {
	id, victim, evicted, reason, retry := e.recordHandout(r, h, player, client, force)
	if evicted {
		e.out.forgetClient(victim.client, victim.id)
		e.closeReplaced(victim.handout)
	}
	return id, reason, retry
}

// replaced is a handout replaced by its player's new one, with its ID.
type replaced struct {
	handout
	id uint64
}

// recordHandout is addHandout but for the closing of the replaced
// handout, which it returns.
func (e *Engine) recordHandout(r *Region, h *pipeline.Hot, player, client string, force bool) (id uint64, victim replaced, evicted bool, reason string, retry time.Duration) {
	o := &e.out
	at := e.opts.Clock()
	var ps *playerShard
	var oldest uint64 // the player's handout the new one replaces, or 0
	if player != "" && o.limits.PerPlayer >= 0 {
		ps = o.playerShard(player)
		ps.mu.Lock()
		defer ps.mu.Unlock()
		if ids := ps.m[player]; len(ids) >= o.limits.PerPlayer && len(ids) > 0 {
			oldest = ids[0]
		}
	}
	var cs *playerShard
	if client != "" && o.limits.PerClient >= 0 {
		cs = o.clientShard(client)
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if ids := cs.m[client]; !force && len(ids) >= o.limits.PerClient && (oldest == 0 || o.clientOf(oldest) != client) {
			return 0, victim, false, ReasonTooManyOpen, o.untilExpiry(ids[0], at)
		}
	}
	if oldest != 0 {
		// Replace the oldest: its table slot passes to the new one.
		ps.m[player] = slices.Delete(ps.m[player], 0, 1)
		victim.handout, evicted = o.take(oldest)
		victim.id = oldest
		if evicted && cs != nil && victim.client == client {
			// The same client: its count passes to the new one too.
			forgetID(cs, client, oldest)
			victim.client = ""
		}
	}
	if !evicted && !o.reserveSlot(force) {
		return 0, victim, false, ReasonTooManyOpen, o.nextExpiry(at)
	}
	for {
		id = newID()
		sh := o.shard(id)
		sh.mu.Lock()
		if e.stopped() {
			sh.mu.Unlock()
			o.open.Add(-1) // the slot taken or passed on
			return 0, victim, evicted, ReasonShutdown, 0
		}
		if _, dup := sh.m[id]; dup {
			sh.mu.Unlock()
			continue
		}
		sh.m[id] = handout{h: h, r: r, player: player, client: client, at: at}
		sh.mu.Unlock()
		if ps != nil {
			ps.m[player] = append(ps.m[player], id)
		}
		if cs != nil {
			cs.m[client] = append(cs.m[client], id)
		}
		r.ctr.open.Add(1)
		return id, victim, evicted, "", 0
	}
}

// clientOf returns the client of the open handout id ("" when none).
func (o *handouts) clientOf(id uint64) string {
	sh := o.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.m[id].client
}

// untilExpiry returns how long until the handout id, open at now, ends
// its lifespan: when its slot frees at the latest. At least a second.
func (o *handouts) untilExpiry(id uint64, now time.Time) time.Duration {
	sh := o.shard(id)
	sh.mu.Lock()
	at, ok := sh.m[id].at, sh.m[id].h != nil
	sh.mu.Unlock()
	if !ok {
		return time.Second
	}
	return max(at.Add(o.lifespan).Sub(now), time.Second)
}

// nextExpiry returns how long until the oldest open handout ends its
// lifespan, at least a second: when a slot of HandoutLimits.Total frees
// at the latest. The scan of the table runs at most once a second; a
// refusal in between reuses its answer.
func (o *handouts) nextExpiry(now time.Time) time.Duration {
	o.expiryMu.Lock()
	defer o.expiryMu.Unlock()
	if now.Before(o.expiryAt.Add(time.Second)) && !o.expiryAt.IsZero() {
		return max(o.expiry.Sub(now), time.Second)
	}
	oldest := now
	for i := range o.shards {
		sh := &o.shards[i]
		sh.mu.Lock()
		for _, ho := range sh.m {
			if ho.at.Before(oldest) {
				oldest = ho.at
			}
		}
		sh.mu.Unlock()
	}
	o.expiryAt, o.expiry = now, oldest.Add(o.lifespan)
	return max(o.expiry.Sub(now), time.Second)
}

// reserveSlot takes a slot of the table under HandoutLimits.Total (any
// slot when force is set), reporting whether it got one.
func (o *handouts) reserveSlot(force bool) bool {
	if force || o.limits.Total < 0 {
		o.open.Add(1)
		return true
	}
	for {
		n := o.open.Load()
		if n >= int64(o.limits.Total) {
			return false
		}
		if o.open.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// take removes the handout of id from the table, keeping its slot (the
// caller passes it on or frees it), and reports whether it was there.
func (o *handouts) take(id uint64) (handout, bool) {
	sh := o.shard(id)
	sh.mu.Lock()
	ho, ok := sh.m[id]
	delete(sh.m, id)
	sh.mu.Unlock()
	if ok {
		ho.r.ctr.open.Add(-1)
	}
	return ho, ok
}

// forget removes id from its player's open IDs.
func (o *handouts) forget(player string, id uint64) {
	if player == "" {
		return
	}
	ps := o.playerShard(player)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	forgetID(ps, player, id)
}

// forgetClient removes id from its client's open IDs.
func (o *handouts) forgetClient(client string, id uint64) {
	if client == "" {
		return
	}
	cs := o.clientShard(client)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	forgetID(cs, client, id)
}

// forgetID removes id from the open IDs of key in ps, whose lock the
// caller holds.
func forgetID(ps *playerShard, key string, id uint64) {
	ids := ps.m[key]
	if i := slices.Index(ids, id); i >= 0 {
		ids = slices.Delete(ids, i, i+1)
	}
	if len(ids) == 0 {
		delete(ps.m, key)
	} else {
		ps.m[key] = ids
	}
}

// removeHandout removes and returns the handout of id, freeing its slot.
func (e *Engine) removeHandout(id uint64) (handout, bool) {
	ho, ok := e.out.take(id)
	if ok {
		e.out.open.Add(-1)
		e.out.forget(ho.player, id)
		e.out.forgetClient(ho.client, id)
	}
	return ho, ok
}

// closeReplaced closes a handout replaced by its player's new one.
func (e *Engine) closeReplaced(ho handout) {
	e.out.countsOf(ho.r).replaced.Add(1)
	e.giveBack(ho)
}

// giveBack closes ho's reservation and gives its location, still valid,
// back to its region's cold stage; with unique placement on, its spot is
// released.
func (e *Engine) giveBack(ho handout) {
	ho.h.Close()
	if ho.r.unique.Load() > 0 {
		// The spot is free again. A large radius also marked the chunks
		// around it in memory, which then refuses the location's
		// promotion: it costs a promotion, not a wrong place.
		ho.r.placed.release(ho.h.Block())
	}
	if !e.stopped() {
		ho.r.pipe.Cold().Offer(ho.h.Location)
	}
}

// expire closes the handouts made before cutoff.
func (o *handouts) expire(cutoff time.Time) {
	type aged struct {
		id uint64
		ho handout
	}
	var old []aged
	for i := range o.shards {
		sh := &o.shards[i]
		sh.mu.Lock()
		for id, ho := range sh.m {
			if ho.at.Before(cutoff) {
				old = append(old, aged{id, ho})
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
	for _, a := range old {
		o.open.Add(-1)
		o.forget(a.ho.player, a.id)
		o.forgetClient(a.ho.client, a.id)
		a.ho.h.Close()
		a.ho.r.ctr.open.Add(-1)
		a.ho.r.ctr.expired.Add(1)
	}
}

// closeAll closes every handout (shutdown).
func (o *handouts) closeAll() {
	for i := range o.shards {
		sh := &o.shards[i]
		sh.mu.Lock()
		m := sh.m
		sh.m = map[uint64]handout{}
		sh.mu.Unlock()
		for id, ho := range m {
			o.open.Add(-1)
			o.forget(ho.player, id)
			o.forgetClient(ho.client, id)
			ho.h.Close()
			ho.r.ctr.open.Add(-1)
		}
	}
}
