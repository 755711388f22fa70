package safety

import (
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/blockdata"
)

// Class is what the rules make of one block state.
type Class uint8

const (
	// Ground is safe to stand on: its collision has a full top face (a
	// full block, a slab, a snow layer, a carpet...), and it is not unsafe.
	Ground Class = iota + 1
	// AirLike is free space: no collision and no fluid, so the feet and
	// the head may be there. Never ground.
	AirLike
	// Unsafe blocks are neither ground nor free space: the hazards and
	// the rules' unsafe list.
	Unsafe
	// UnknownUnsafe is a block the collision data does not know and no
	// rule matches, with UnknownBlocks "unsafe" (the default): it fails
	// closed, neither ground nor free space.
	UnknownUnsafe
	// Obstacle is a block with collision but no full top face (stairs,
	// fences, walls, chests...): nothing to land on, and in the way of
	// the feet and head.
	Obstacle
)

func (c Class) String() string {
	switch c {
	case Ground:
		return "ground"
	case AirLike:
		return "air-like"
	case Unsafe:
		return "unsafe"
	case UnknownUnsafe:
		return "unknown-unsafe"
	case Obstacle:
		return "obstacle"
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// Reason says why a check accepted or rejected a column. Each maps to the
// memory.Cause a rejection is remembered under (Reason.Cause).
type Reason uint8

const (
	// Accepted: the column is safe at Result.Y.
	Accepted Reason = iota
	// NoReservation: the reservation is nil (a cold entry); fail closed.
	NoReservation
	// ReservationClosed: the reservation is closed; fail closed.
	ReservationClosed
	// OutsideChunk: the position is not in the reserved chunk.
	OutsideChunk
	// OutsideBorder: the column is outside the world border.
	OutsideBorder
	// BiomeDenied: the column's biome is not allowed.
	BiomeDenied
	// Void: the column has no block at all.
	Void
	// BelowMinY and AboveMaxY: the landing y is out of bounds.
	BelowMinY
	AboveMaxY
	// NoSafeY: the vertical search found no safe y.
	NoSafeY
	// NoBlockData: the strategy needs block data the chunk lacks.
	NoBlockData
	// GroundUnsafe: the ground block is unsafe (lava, magma, leaves...).
	GroundUnsafe
	// GroundUnknown: the ground block is unknown and unknown blocks are
	// unsafe.
	GroundUnknown
	// GroundNotSolid: there is nothing to stand on: the ground block has
	// no collision (air, plants, signs, pressure plates...) or no full top
	// face (stairs, fences, chests...).
	GroundNotSolid
	// NoHeadroom: a block above the ground is not air-like.
	NoHeadroom
	numReasons
)

var reasonNames = [numReasons]string{
	"accepted", "no reservation", "reservation closed", "outside the chunk", "outside the border",
	"biome denied", "void column", "below min y", "above max y", "no safe y", "no block data",
	"ground unsafe", "ground unknown", "ground not solid", "no headroom",
}

var reasonCauses = [numReasons]memory.Cause{
	Accepted:          memory.CauseSafety, // unused
	NoReservation:     memory.CauseNullChunk,
	ReservationClosed: memory.CauseNullChunk,
	OutsideChunk:      memory.CauseNullChunk,
	OutsideBorder:     memory.CauseWorldBorder,
	BiomeDenied:       memory.CauseBiome,
	Void:              memory.CauseVert,
	BelowMinY:         memory.CauseVert,
	AboveMaxY:         memory.CauseVert,
	NoSafeY:           memory.CauseVert,
	NoBlockData:       memory.CauseVert,
	GroundUnsafe:      memory.CauseSafety,
	GroundUnknown:     memory.CauseSafety,
	GroundNotSolid:    memory.CauseSafety,
	NoHeadroom:        memory.CauseSafety,
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Cause returns the memory cause of a rejection for this reason. A
// missing, closed or mismatched reservation is CauseNullChunk: transient,
// never remembered, since it says nothing about the place.
func (r Reason) Cause() memory.Cause {
	if r < numReasons {
		return reasonCauses[r]
	}
	return memory.CauseNullChunk
}

// Result is the outcome of a check on one column.
type Result struct {
	// X and Z are the chunk-local column.
	X, Z int
	// Y is the landing y, the block the player's feet occupy (one above
	// the ground), when accepted.
	Y int
	// Ground is the block stood on, when known.
	Ground world.BlockID
	// Biome is the column's biome, when known.
	Biome world.BiomeID
	// Reason is Accepted or why the column was rejected.
	Reason Reason
}

// Cause returns the memory cause of a rejected result (Reason.Cause).
func (r Result) Cause() memory.Cause { return r.Reason.Cause() }

// Checker decides whether a column is a safe landing under compiled Rules.
//
// Create one with New; the zero value is not usable. A Checker is safe for
// concurrent use. It never does I/O: it reads chunks already in memory.
// Block and biome rules are evaluated once per interned ID and collision
// data table (world.Chunk.Data: the game version that saved the chunk)
// and cached in tables that grow as new IDs appear, so a check does no
// string work.
type Checker struct {
	c   *compiled
	log *slog.Logger

	mu     sync.Mutex                // serializes growing the tables below and the unknown set
	blocks []atomic.Pointer[[]Class] // Class by world.BlockID, one table per blockdata.Table; readers never lock
	floors []atomic.Pointer[[]uint8] // the ground's top face, in sixteenths, likewise (0: none)
	biomes atomic.Pointer[[]bool]    // allowed by world.BiomeID

	seen           sync.Map            // table index<<32 | BlockID of the unknown blocks met
	unknown        map[string]struct{} // names UnknownUnsafe, guarded by mu, at most maxUnknownNames
	unknownNames   atomic.Int64        // len(unknown), and names past the bound
	unknownRejects atomic.Uint64       // columns screened out on unknown ground
}

// maxUnknownNames bounds the unknown block names a Checker remembers (and
// logs) by name; past it they are only counted.
const maxUnknownNames = 4096

// Options configure NewWithOptions. The zero value is the default.
type Options struct {
	// Logger receives one warning per block name the collision data does
	// not know (the first time the name is classified). Default: none.
	Logger *slog.Logger
}

// New compiles rules. It returns the errors Validate reports.
func New(rules Rules) (*Checker, error) { return NewWithOptions(rules, Options{}) }

// NewWithOptions is New with options.
func NewWithOptions(rules Rules, opts Options) (*Checker, error) {
	c, err := rules.compile()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &Checker{c: c, log: log, unknown: map[string]struct{}{}}
	k.blocks = make([]atomic.Pointer[[]Class], len(blockdata.Tables()))
	k.floors = make([]atomic.Pointer[[]uint8], len(blockdata.Tables()))
	for i := range k.blocks {
		k.blocks[i].Store(&[]Class{})
		k.floors[i].Store(&[]uint8{})
	}
	k.biomes.Store(&[]bool{})
	k.growBiomes()
	return k, nil
}

// UnknownStats count the blocks a Checker found that the collision data
// does not know.
type UnknownStats struct {
	// Names is the number of distinct unknown block states classified.
	Names int64 `json:"names"`
	// Rejections counts the columns screened out because their ground
	// was unknown.
	Rejections uint64 `json:"rejections"`
}

// Unknown returns the unknown-block counters.
func (k *Checker) Unknown() UnknownStats {
	return UnknownStats{Names: k.unknownNames.Load(), Rejections: k.unknownRejects.Load()}
}

// Classify returns what the rules make of block id under the newest
// collision data (the procedural world's, and any source that does not
// say which version saved its chunks).
func (k *Checker) Classify(id world.BlockID) Class { return k.ClassifyIn(nil, id) }

// ClassifyIn returns what the rules make of block id under the collision
// data of table t (nil: the newest).
func (k *Checker) ClassifyIn(t *blockdata.Table, id world.BlockID) Class {
	if t == nil {
		t = blockdata.Newest()
	}
	if b := *k.blocks[t.Index()].Load(); int(id) < len(b) {
		if c := b[id]; c != UnknownUnsafe {
			return c
		}
		k.noteUnknown(t, id)
		return UnknownUnsafe
	}
	return k.classifySlow(t, id)
}

// noteUnknown counts a block the collision data of t does not know, seen
// in a chunk being checked, and warns about it the first time. Names are
// noted when met, not when classified (the process's name table holds the
// names of every world and version), so the warnings name what a world
// really holds.
func (k *Checker) noteUnknown(t *blockdata.Table, id world.BlockID) {
	key := uint64(t.Index())<<32 | uint64(id)
	if _, seen := k.seen.Load(key); seen {
		return
	}
	if _, seen := k.seen.LoadOrStore(key, struct{}{}); seen {
		return
	}
	name := world.Blocks.Name(uint32(id))
	k.mu.Lock()
	defer k.mu.Unlock()
	k.noteUnknownLocked(t, name)
}

func (k *Checker) classifySlow(t *blockdata.Table, id world.BlockID) Class {
	k.growBlocks(t)
	if b := *k.blocks[t.Index()].Load(); int(id) < len(b) {
		if b[id] == UnknownUnsafe {
			k.noteUnknown(t, id)
		}
		return b[id]
	}
	// An ID the interner never handed out: the world has no such block.
	// Classify its (empty) name, which nothing knows.
	return UnknownUnsafe
}

// growBlocks extends the block table of t to every ID interned so far.
func (k *Checker) growBlocks(t *blockdata.Table) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p := &k.blocks[t.Index()]
	old := *p.Load()
	n := world.Blocks.Len()
	if n <= len(old) {
		return
	}
	b := make([]Class, n)
	copy(b, old)
	f := make([]uint8, n)
	copy(f, *k.floors[t.Index()].Load())
	for id := len(old); id < n; id++ {
		if world.BlockID(id).IsAir() {
			b[id] = AirLike
			continue
		}
		name := world.Blocks.Name(uint32(id))
		b[id] = k.classifyNameLocked(t, name)
		if b[id] == Ground {
			f[id] = 16 // a solid rule, a known namespace: a full block
			if shape, ok := t.State(name); ok {
				if h, ok := shape.FloorHeight(); ok {
					f[id] = uint8(h)
				}
			}
		}
	}
	// Floors first: a reader that sees the longer class table finds the
	// floors it needs.
	k.floors[t.Index()].Store(&f)
	p.Store(&b)
}

// StandY returns the height at which a player landing at y (the block the
// feet occupy, as Result.Y) in local column (x, z) of chunk c stands: y
// itself above a full block, less above a lower top face (y-0.5 above a
// bottom slab, y-0.0625 above farmland or a dirt path, y-0.9375 above a
// carpet). It reads the ground from the column summary, or from block data
// when the landing is not on the column's top; when neither tells, or the
// ground is not ground, it returns y.
func (k *Checker) StandY(c *world.Chunk, x, y, z int) float64 {
	if c == nil || uint(x) >= world.ChunkSize || uint(z) >= world.ChunkSize {
		return float64(y)
	}
	var g world.BlockID
	switch col := c.Column(x, z); {
	case int(col.Top) == y-1:
		g = col.Ground
	case c.Blocks != nil:
		g = c.Blocks.Block(x, y-1, z)
	default:
		return float64(y)
	}
	t := c.Data
	if t == nil {
		t = blockdata.Newest()
	}
	if k.ClassifyIn(t, g) != Ground {
		return float64(y)
	}
	if f := *k.floors[t.Index()].Load(); int(g) < len(f) && f[g] > 0 {
		return float64(y-1) + float64(f[g])/16
	}
	return float64(y)
}

// classifyNameLocked applies the rules and the collision data of t to one
// block state name, in this order: the hazards and the unsafe list, the
// solid list, the air-like list, then the collision data; a name the data
// does not know is solid ground only when its namespace is known or
// UnknownBlocks is "solid", and otherwise fails closed. k.mu is held.
func (k *Checker) classifyNameLocked(t *blockdata.Table, name string) Class {
	st := parseState(name)
	match := func(ms []*Matcher) bool {
		return slices.ContainsFunc(ms, func(m *Matcher) bool { return m.matchState(st) })
	}
	switch {
	case match(k.c.hazards), match(k.c.unsafe), world.IsFluidName(name):
		return Unsafe
	case match(k.c.solid):
		return Ground
	case match(k.c.airLike):
		return AirLike
	}
	if shape, ok := t.State(name); ok {
		switch {
		case shape.Passable():
			return AirLike
		case shape.FullCube():
			return Ground
		}
		if _, ok := shape.FloorHeight(); ok {
			return Ground
		}
		return Obstacle
	}
	if k.c.knownNS[st.ns] || !k.c.unknownUnsafe {
		return Ground
	}
	return UnknownUnsafe
}

// noteUnknownLocked counts an unknown block name and warns about it the
// first time. k.mu is held.
func (k *Checker) noteUnknownLocked(t *blockdata.Table, name string) {
	if _, seen := k.unknown[name]; seen {
		return
	}
	k.unknownNames.Add(1)
	if len(k.unknown) >= maxUnknownNames {
		return
	}
	k.unknown[name] = struct{}{}
	k.log.Warn("safety: block unknown to the collision data is not landed on",
		"block", name, "data", t.Name(), "hint", "list it under safety.solid or safety.air_like if players can stand on or in it")
}

// BiomeAllowed reports whether the rules allow biome id.
func (k *Checker) BiomeAllowed(id world.BiomeID) bool {
	if t := *k.biomes.Load(); int(id) < len(t) {
		return t[id]
	}
	k.growBiomes()
	if t := *k.biomes.Load(); int(id) < len(t) {
		return t[id]
	}
	return k.biomeNameAllowed("")
}

func (k *Checker) growBiomes() {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := *k.biomes.Load()
	n := world.Biomes.Len()
	if n <= len(old) {
		return
	}
	t := make([]bool, n)
	copy(t, old)
	for id := len(old); id < n; id++ {
		t[id] = k.biomeNameAllowed(world.Biomes.Name(uint32(id)))
	}
	k.biomes.Store(&t)
}

func (k *Checker) biomeNameAllowed(name string) bool {
	st := parseState(name)
	match := func(ms []*Matcher) bool {
		return slices.ContainsFunc(ms, func(m *Matcher) bool { return m.matchState(st) })
	}
	return (len(k.c.biomeAllow) == 0 || match(k.c.biomeAllow)) && !match(k.c.biomeDeny)
}

// Check checks local column (x, z), 0 <= x, z < 16, of the chunk res holds.
// It fails closed: a nil reservation gives NoReservation and a closed one
// ReservationClosed, both without touching any chunk; it never loads
// anything. The bool reports acceptance; Result.Y is then the landing y.
func (k *Checker) Check(res *world.Reservation, x, z int) (Result, bool) {
	if res == nil {
		return Result{X: x, Z: z, Reason: NoReservation}, false
	}
	c := res.Chunk()
	if c == nil {
		return Result{X: x, Z: z, Reason: ReservationClosed}, false
	}
	return k.CheckColumn(c, x, z)
}

// Accepts checks the column at world block b on the chunk res holds: the
// pipeline's acceptance recheck of a hot entry. It fails closed like Check,
// and rejects a block outside the reserved chunk with OutsideChunk.
func (k *Checker) Accepts(res *world.Reservation, b geom.Block) (Result, bool) {
	x, z := b.Local()
	if res == nil {
		return Result{X: x, Z: z, Reason: NoReservation}, false
	}
	c := res.Chunk()
	if c == nil {
		return Result{X: x, Z: z, Reason: ReservationClosed}, false
	}
	if b.Chunk() != c.Pos {
		return Result{X: x, Z: z, Reason: OutsideChunk}, false
	}
	return k.CheckColumn(c, x, z)
}

// CheckColumn checks local column (x, z) of chunk c, in this order: the
// border, the biome (the column summary's, at its top), then the vertical
// strategy with the ground, headroom and y bounds. A nil chunk is
// NoReservation; a column outside 0..15 is OutsideChunk.
func (k *Checker) CheckColumn(c *world.Chunk, x, z int) (Result, bool) {
	r := Result{X: x, Z: z}
	if c == nil {
		r.Reason = NoReservation
		return r, false
	}
	if uint(x) >= world.ChunkSize || uint(z) >= world.ChunkSize {
		r.Reason = OutsideChunk
		return r, false
	}
	t := c.Data
	col := c.Column(x, z)
	r.Biome = col.Biome
	if b := k.c.border; b != nil {
		o := c.Pos.Origin()
		if !b.Contains(o.X+int64(x), o.Z+int64(z)) {
			r.Reason = OutsideBorder
			return r, false
		}
	}
	if !k.BiomeAllowed(col.Biome) {
		r.Reason = BiomeDenied
		return r, false
	}
	lo, hi := k.bounds(c)
	switch k.c.strategy {
	case stratSurface:
		if c.HasCeiling {
			// A roof tops every column: the surface is the highest
			// floor under it, found searching down from below it.
			if c.Blocks == nil {
				r.Reason = NoBlockData
				return r, false
			}
			if y, ok := k.scanDown(t, c.Blocks, x, z, lo, hi); ok {
				r.Y, r.Ground = y, c.Blocks.Block(x, y-1, z)
			} else {
				r.Reason = NoSafeY
			}
			break
		}
		if col.Top == world.NoTop {
			r.Reason = Void
			return r, false
		}
		r.Y, r.Ground = int(col.Top)+1, col.Ground
		r.Reason = k.surface(t, c, &col, x, z, lo, hi)
	case stratFixed:
		r.Y = k.c.fixedY
		r.Ground, r.Reason = k.fixed(t, c, &col, x, z, lo, hi)
	default:
		if c.Blocks == nil {
			r.Reason = NoBlockData
			return r, false
		}
		r.Y, r.Ground, r.Reason = k.search(t, c.Blocks, x, z, lo, hi)
	}
	return r, r.Reason == Accepted
}

// bounds returns the landing y range [lo, hi] in chunk c: inside the build
// height (ground at MinY or above, feet below MaxY), below the ceiling of
// a chunk that has one (feet and headroom under the roof's top layer)
// and inside the rules.
func (k *Checker) bounds(c *world.Chunk) (lo, hi int) {
	lo, hi = int(c.MinY)+1, int(c.MaxY)-1
	if c.HasCeiling {
		hi = min(hi, int(c.Ceiling)-k.c.headroom)
	}
	lo, hi = max(lo, k.c.minY), min(hi, k.c.maxY)
	return lo, hi
}

// groundReason is the rejection for standing on a block of class cls, or
// Accepted.
func groundReason(cls Class) Reason {
	switch cls {
	case Ground:
		return Accepted
	case AirLike, Obstacle:
		return GroundNotSolid
	case UnknownUnsafe:
		return GroundUnknown
	}
	return GroundUnsafe
}

// surface checks the column summary: the top block is the ground.
func (k *Checker) surface(t *blockdata.Table, c *world.Chunk, col *world.Column, x, z, lo, hi int) Reason {
	y := int(col.Top) + 1
	switch {
	case y < lo:
		return BelowMinY
	case y > hi:
		return AboveMaxY
	}
	if r := groundReason(k.ClassifyIn(t, col.Ground)); r != Accepted {
		return r
	}
	return k.headroomFromSummary(t, c, col, x, z, y)
}

// headroomFromSummary checks the headroom above the summary's top block,
// reading block data beyond the two blocks the summary keeps.
func (k *Checker) headroomFromSummary(t *blockdata.Table, c *world.Chunk, col *world.Column, x, z, y int) Reason {
	h := k.c.headroom
	for i := range min(h, len(col.Above)) {
		if k.ClassifyIn(t, col.Above[i]) != AirLike {
			return NoHeadroom
		}
	}
	if h > len(col.Above) {
		if c.Blocks == nil {
			return NoBlockData
		}
		for i := len(col.Above); i < h; i++ {
			if k.ClassifyIn(t, c.Blocks.Block(x, y+i, z)) != AirLike {
				return NoHeadroom
			}
		}
	}
	return Accepted
}

// fixed checks the landing at the fixed y.
func (k *Checker) fixed(t *blockdata.Table, c *world.Chunk, col *world.Column, x, z, lo, hi int) (world.BlockID, Reason) {
	y := k.c.fixedY
	switch {
	case y < lo:
		return 0, BelowMinY
	case y > hi:
		return 0, AboveMaxY
	}
	if c.Blocks != nil {
		g := c.Blocks.Block(x, y-1, z)
		if r := groundReason(k.ClassifyIn(t, g)); r != Accepted {
			return g, r
		}
		return g, k.headroomAt(t, c.Blocks, x, y, z)
	}
	// Summary only: it knows the ground at the top, and that everything
	// above the top is air.
	switch top := int(col.Top); {
	case col.Top == world.NoTop || top < y-1:
		return world.Air, GroundNotSolid
	case top == y-1:
		if r := groundReason(k.ClassifyIn(t, col.Ground)); r != Accepted {
			return col.Ground, r
		}
		return col.Ground, k.headroomFromSummary(t, c, col, x, z, y)
	}
	return 0, NoBlockData
}

// headroomAt reports whether the headroom from y up is air-like.
func (k *Checker) headroomAt(t *blockdata.Table, br world.BlockReader, x, y, z int) Reason {
	for i := range k.c.headroom {
		if k.ClassifyIn(t, br.Block(x, y+i, z)) != AirLike {
			return NoHeadroom
		}
	}
	return Accepted
}

// search runs the linear or jump strategy over block data for a landing y
// in [lo, hi].
func (k *Checker) search(t *blockdata.Table, br world.BlockReader, x, z, lo, hi int) (int, world.BlockID, Reason) {
	if lo > hi {
		return 0, 0, NoSafeY
	}
	start := hi
	if !k.c.down {
		start = lo
	}
	if k.c.hasStart {
		start = k.c.start
	}
	var y int
	var ok bool
	switch {
	case k.c.strategy == stratLinear && k.c.down:
		y, ok = k.scanDown(t, br, x, z, lo, min(start, hi))
	case k.c.strategy == stratLinear:
		y, ok = k.scanUp(t, br, x, z, max(start, lo), hi)
	case k.c.down:
		y, ok = k.jumpDown(t, br, x, z, lo, min(start, hi))
	default:
		y, ok = k.jumpUp(t, br, x, z, max(start, lo), hi)
	}
	if !ok {
		return 0, 0, NoSafeY
	}
	return y, br.Block(x, y-1, z), Accepted
}

// scanDown returns the highest landing y in [lo, hi] with ground below and
// headroom above, reading each block once from the top of the headroom of
// hi down to the ground of lo.
func (k *Checker) scanDown(t *blockdata.Table, br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	h := k.c.headroom
	run := 0 // consecutive air-like blocks just above the current one
	for g := hi + h - 1; g >= lo-1; g-- {
		switch cls := k.ClassifyIn(t, br.Block(x, g, z)); {
		case cls == AirLike:
			run++
			continue
		case cls == Ground && run >= h && g+1 <= hi:
			return g + 1, true
		}
		run = 0
	}
	return 0, false
}

// scanUp returns the lowest landing y in [lo, hi], reading each block once
// from the ground of lo upwards.
func (k *Checker) scanUp(t *blockdata.Table, br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	h := k.c.headroom
	ground := false // the block below the current air run is ground
	run := 0
	for y := lo - 1; y <= hi+h-1; y++ {
		cls := k.ClassifyIn(t, br.Block(x, y, z))
		if cls != AirLike {
			ground, run = cls == Ground, 0
			continue
		}
		run++
		if ground && run == h {
			feet := y - h + 1
			if feet >= lo && feet <= hi {
				return feet, true
			}
		}
	}
	return 0, false
}

// jumpDown probes every step blocks down from hi and scans linearly only
// the spans where a probe in free space sits above one that is not.
func (k *Checker) jumpDown(t *blockdata.Table, br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	step := min(k.c.step, hi-lo+2) // a longer step skips nothing more, and could overflow
	prev, prevAir := hi, k.ClassifyIn(t, br.Block(x, hi, z)) == AirLike
	for {
		p := max(prev-step, lo-1)
		air := k.ClassifyIn(t, br.Block(x, p, z)) == AirLike
		if prevAir && !air {
			// Free space at prev, something at p: the ground lies in
			// [p, prev), so the landing in [p+1, prev].
			if y, ok := k.scanDown(t, br, x, z, max(p+1, lo), prev); ok {
				return y, true
			}
		}
		if p <= lo-1 {
			return 0, false
		}
		prev, prevAir = p, air
	}
}

// jumpUp probes every step blocks up from lo and scans linearly only the
// spans where a probe that is not free space sits below one that is.
func (k *Checker) jumpUp(t *blockdata.Table, br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	step := min(k.c.step, hi-lo+2) // a longer step skips nothing more, and could overflow
	prev := lo - 1                 // the lowest possible ground
	prevAir := k.ClassifyIn(t, br.Block(x, prev, z)) == AirLike
	for {
		p := min(prev+step, hi)
		air := k.ClassifyIn(t, br.Block(x, p, z)) == AirLike
		if !prevAir && air {
			// Something at prev, free space at p: the ground lies in
			// [prev, p), so the landing in [prev+1, p].
			if y, ok := k.scanUp(t, br, x, z, max(prev+1, lo), p); ok {
				return y, true
			}
		}
		if p >= hi {
			return 0, false
		}
		prev, prevAir = p, air
	}
}

// Screen picks a safe column of c from its column summaries alone, for the
// cold stage: no reservation, no I/O. It is ScreenExcept with no column
// excluded and the process's random source.
func (k *Checker) Screen(c *world.Chunk) (x, z, y int, cause memory.Cause, ok bool) {
	return k.ScreenExcept(c, nil, nil)
}

// ScreenExcept picks a column of c uniformly at random among all its safe
// columns, from the column summaries alone (no reservation, no I/O), so
// that places spread over the whole chunk and a chunk drawn again yields
// another column. Columns for which skip reports true (places too close
// to one handed out) are not candidates; skip may be nil. rng draws the
// pick; nil uses the process's random source. It returns the chunk-local
// column and landing y, or ok false and the cause that rejected the most
// columns (ties go to the lower cause; skipped columns count as
// memory.CauseUniquePlacement).
//
// When the rules need block data the chunk lacks (a strategy other than
// surface, or headroom above two blocks), the y cannot be decided from
// summaries: the candidates are then the columns that pass what the
// summary can tell (the border, the biome), with y the surface's or the
// search's start (unverified). A prefilter must not reject what it cannot
// judge, since its rejections are remembered; the check on the resident
// chunk decides.
func (k *Checker) ScreenExcept(c *world.Chunk, rng *rand.Rand, skip func(x, z int) bool) (x, z, y int, cause memory.Cause, ok bool) {
	if c == nil {
		return 0, 0, 0, memory.CauseNullChunk, false
	}
	var counts [memory.NumCauses]int
	var picks [world.ChunkSize * world.ChunkSize]uint8
	var ys [world.ChunkSize * world.ChunkSize]int
	n, unknown := 0, 0
	for i := range world.ChunkSize * world.ChunkSize {
		x, z := i%world.ChunkSize, i/world.ChunkSize
		r, ok := k.CheckColumn(c, x, z)
		if !ok && r.Reason == NoBlockData {
			if k.c.strategy == stratLinear || k.c.strategy == stratJump || c.HasCeiling {
				r.Y = k.nominalY(c)
			}
			ok = true
		}
		if ok && skip != nil && skip(x, z) {
			counts[memory.CauseUniquePlacement]++
			continue
		}
		if ok {
			picks[n], ys[n] = uint8(i), r.Y
			n++
			continue
		}
		if r.Reason == GroundUnknown {
			unknown++
		}
		counts[r.Cause()]++
	}
	if unknown > 0 {
		k.unknownRejects.Add(uint64(unknown))
	}
	if n > 0 {
		var j int
		if rng != nil {
			j = rng.IntN(n)
		} else {
			j = rand.IntN(n)
		}
		i := int(picks[j])
		return i % world.ChunkSize, i / world.ChunkSize, ys[j], 0, true
	}
	best := 0
	for i, n := range counts {
		if n > counts[best] {
			best = i
		}
	}
	return 0, 0, 0, memory.Cause(best), false
}

// nominalY is where the vertical search of linear or jump starts.
func (k *Checker) nominalY(c *world.Chunk) int {
	lo, hi := k.bounds(c)
	switch {
	case k.c.strategy == stratSurface:
		return hi // under a ceiling: the search down starts there
	case k.c.hasStart:
		return min(k.c.start, hi)
	case k.c.down:
		return hi
	}
	return lo
}
