package safety

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/world"
)

// Class is what the rules make of one block state.
type Class uint8

const (
	// Ground is safe to stand on: solid, not unsafe.
	Ground Class = iota + 1
	// AirLike is free space: headroom, never ground.
	AirLike
	// Unsafe blocks are neither ground nor headroom.
	Unsafe
	// UnknownUnsafe is a block of an unknown namespace that no rule
	// matches, with UnknownBlocks "unsafe".
	UnknownUnsafe
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
	// GroundNotSolid: there is nothing to stand on (air-like ground).
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
// Block and biome rules are evaluated once per interned ID and cached in
// tables that grow as new IDs appear, so a check does no string work.
type Checker struct {
	c *compiled

	mu     sync.Mutex              // serializes growing the tables below
	blocks atomic.Pointer[[]Class] // Class by world.BlockID; readers never lock
	biomes atomic.Pointer[[]bool]  // allowed by world.BiomeID
}

// New compiles rules. It returns the errors Validate reports.
func New(rules Rules) (*Checker, error) {
	c, err := rules.compile()
	if err != nil {
		return nil, err
	}
	k := &Checker{c: c}
	k.blocks.Store(&[]Class{})
	k.biomes.Store(&[]bool{})
	k.growBlocks()
	k.growBiomes()
	return k, nil
}

// Classify returns what the rules make of block id.
func (k *Checker) Classify(id world.BlockID) Class {
	if t := *k.blocks.Load(); int(id) < len(t) {
		return t[id]
	}
	return k.classifySlow(id)
}

func (k *Checker) classifySlow(id world.BlockID) Class {
	k.growBlocks()
	if t := *k.blocks.Load(); int(id) < len(t) {
		return t[id]
	}
	// An ID the interner never handed out: the world has no such block.
	// Classify its (empty) name, which no rule matches.
	return k.classifyName("")
}

// growBlocks extends the block table to every ID interned so far.
func (k *Checker) growBlocks() {
	k.mu.Lock()
	defer k.mu.Unlock()
	old := *k.blocks.Load()
	n := world.Blocks.Len()
	if n <= len(old) {
		return
	}
	t := make([]Class, n)
	copy(t, old)
	for id := len(old); id < n; id++ {
		if world.BlockID(id).IsAir() {
			t[id] = AirLike
			continue
		}
		t[id] = k.classifyName(world.Blocks.Name(uint32(id)))
	}
	k.blocks.Store(&t)
}

// classifyName applies the rules to one block state name. Unsafe wins over
// air-like, which wins over solid.
func (k *Checker) classifyName(name string) Class {
	st := parseState(name)
	match := func(ms []*Matcher) bool {
		return slices.ContainsFunc(ms, func(m *Matcher) bool { return m.matchState(st) })
	}
	switch {
	case match(k.c.unsafe):
		return Unsafe
	case match(k.c.airLike):
		return AirLike
	case match(k.c.solid), k.c.knownNS[st.ns], !k.c.unknownUnsafe:
		return Ground
	}
	return UnknownUnsafe
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
		if col.Top == world.NoTop {
			r.Reason = Void
			return r, false
		}
		r.Y, r.Ground = int(col.Top)+1, col.Ground
		r.Reason = k.surface(c, col, x, z, lo, hi)
	case stratFixed:
		r.Y = k.c.fixedY
		r.Ground, r.Reason = k.fixed(c, col, x, z, lo, hi)
	default:
		if c.Blocks == nil {
			r.Reason = NoBlockData
			return r, false
		}
		r.Y, r.Ground, r.Reason = k.search(c.Blocks, x, z, lo, hi)
	}
	return r, r.Reason == Accepted
}

// bounds returns the landing y range [lo, hi] in chunk c: inside the build
// height (ground at MinY or above, feet below MaxY) and the rules.
func (k *Checker) bounds(c *world.Chunk) (lo, hi int) {
	lo, hi = int(c.MinY)+1, int(c.MaxY)-1
	lo, hi = max(lo, k.c.minY), min(hi, k.c.maxY)
	return lo, hi
}

// groundReason is the rejection for standing on a block of class cls, or
// Accepted.
func groundReason(cls Class) Reason {
	switch cls {
	case Ground:
		return Accepted
	case AirLike:
		return GroundNotSolid
	case UnknownUnsafe:
		return GroundUnknown
	}
	return GroundUnsafe
}

// surface checks the column summary: the top block is the ground.
func (k *Checker) surface(c *world.Chunk, col *world.Column, x, z, lo, hi int) Reason {
	y := int(col.Top) + 1
	switch {
	case y < lo:
		return BelowMinY
	case y > hi:
		return AboveMaxY
	}
	if r := groundReason(k.Classify(col.Ground)); r != Accepted {
		return r
	}
	return k.headroomFromSummary(c, col, x, z, y)
}

// headroomFromSummary checks the headroom above the summary's top block,
// reading block data beyond the two blocks the summary keeps.
func (k *Checker) headroomFromSummary(c *world.Chunk, col *world.Column, x, z, y int) Reason {
	h := k.c.headroom
	for i := range min(h, len(col.Above)) {
		if k.Classify(col.Above[i]) != AirLike {
			return NoHeadroom
		}
	}
	if h > len(col.Above) {
		if c.Blocks == nil {
			return NoBlockData
		}
		for i := len(col.Above); i < h; i++ {
			if k.Classify(c.Blocks.Block(x, y+i, z)) != AirLike {
				return NoHeadroom
			}
		}
	}
	return Accepted
}

// fixed checks the landing at the fixed y.
func (k *Checker) fixed(c *world.Chunk, col *world.Column, x, z, lo, hi int) (world.BlockID, Reason) {
	y := k.c.fixedY
	switch {
	case y < lo:
		return 0, BelowMinY
	case y > hi:
		return 0, AboveMaxY
	}
	if c.Blocks != nil {
		g := c.Blocks.Block(x, y-1, z)
		if r := groundReason(k.Classify(g)); r != Accepted {
			return g, r
		}
		return g, k.headroomAt(c.Blocks, x, y, z)
	}
	// Summary only: it knows the ground at the top, and that everything
	// above the top is air.
	switch top := int(col.Top); {
	case col.Top == world.NoTop || top < y-1:
		return world.Air, GroundNotSolid
	case top == y-1:
		if r := groundReason(k.Classify(col.Ground)); r != Accepted {
			return col.Ground, r
		}
		return col.Ground, k.headroomFromSummary(c, col, x, z, y)
	}
	return 0, NoBlockData
}

// headroomAt reports whether the headroom from y up is air-like.
func (k *Checker) headroomAt(br world.BlockReader, x, y, z int) Reason {
	for i := range k.c.headroom {
		if k.Classify(br.Block(x, y+i, z)) != AirLike {
			return NoHeadroom
		}
	}
	return Accepted
}

// search runs the linear or jump strategy over block data for a landing y
// in [lo, hi].
func (k *Checker) search(br world.BlockReader, x, z, lo, hi int) (int, world.BlockID, Reason) {
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
		y, ok = k.scanDown(br, x, z, lo, min(start, hi))
	case k.c.strategy == stratLinear:
		y, ok = k.scanUp(br, x, z, max(start, lo), hi)
	case k.c.down:
		y, ok = k.jumpDown(br, x, z, lo, min(start, hi))
	default:
		y, ok = k.jumpUp(br, x, z, max(start, lo), hi)
	}
	if !ok {
		return 0, 0, NoSafeY
	}
	return y, br.Block(x, y-1, z), Accepted
}

// scanDown returns the highest landing y in [lo, hi] with ground below and
// headroom above, reading each block once from the top of the headroom of
// hi down to the ground of lo.
func (k *Checker) scanDown(br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	h := k.c.headroom
	run := 0 // consecutive air-like blocks just above the current one
	for g := hi + h - 1; g >= lo-1; g-- {
		switch cls := k.Classify(br.Block(x, g, z)); {
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
func (k *Checker) scanUp(br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	h := k.c.headroom
	ground := false // the block below the current air run is ground
	run := 0
	for y := lo - 1; y <= hi+h-1; y++ {
		cls := k.Classify(br.Block(x, y, z))
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
func (k *Checker) jumpDown(br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	step := min(k.c.step, hi-lo+2) // a longer step skips nothing more, and could overflow
	prev, prevAir := hi, k.Classify(br.Block(x, hi, z)) == AirLike
	for {
		p := max(prev-step, lo-1)
		air := k.Classify(br.Block(x, p, z)) == AirLike
		if prevAir && !air {
			// Free space at prev, something at p: the ground lies in
			// [p, prev), so the landing in [p+1, prev].
			if y, ok := k.scanDown(br, x, z, max(p+1, lo), prev); ok {
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
func (k *Checker) jumpUp(br world.BlockReader, x, z, lo, hi int) (int, bool) {
	if lo > hi {
		return 0, false
	}
	step := min(k.c.step, hi-lo+2) // a longer step skips nothing more, and could overflow
	prev := lo - 1                 // the lowest possible ground
	prevAir := k.Classify(br.Block(x, prev, z)) == AirLike
	for {
		p := min(prev+step, hi)
		air := k.Classify(br.Block(x, p, z)) == AirLike
		if !prevAir && air {
			// Something at prev, free space at p: the ground lies in
			// [prev, p), so the landing in [prev+1, p].
			if y, ok := k.scanUp(br, x, z, max(prev+1, lo), p); ok {
				return y, true
			}
		}
		if p >= hi {
			return 0, false
		}
		prev, prevAir = p, air
	}
}

// screenOrder lists the 256 columns of a chunk nearest the center first
// (ties by z, then x), as z*16 + x.
var screenOrder = func() [world.ChunkSize * world.ChunkSize]uint8 {
	var o [world.ChunkSize * world.ChunkSize]uint8
	for i := range o {
		o[i] = uint8(i)
	}
	d := func(i uint8) int {
		x, z := 2*int(i%world.ChunkSize)-15, 2*int(i/world.ChunkSize)-15
		return x*x + z*z
	}
	slices.SortStableFunc(o[:], func(a, b uint8) int { return d(a) - d(b) })
	return o
}()

// Screen picks a safe column of c from its column summaries alone, for the
// cold stage: no reservation, no I/O. Columns are tried nearest the chunk's
// center first, in a fixed order, so the answer is deterministic. It
// returns the chunk-local column and landing y, or ok false and the cause
// that rejected the most columns (ties go to the lower cause).
//
// When the rules need block data the chunk lacks (a strategy other than
// surface, or headroom above two blocks), the y cannot be decided from
// summaries: Screen then returns the first column that passes what the
// summary can tell (the border, the biome, and for surface the ground),
// with y the surface's or the search's start (unverified). A prefilter must not reject what it
// cannot judge, since its rejections are remembered; the check on the
// resident chunk decides.
func (k *Checker) Screen(c *world.Chunk) (x, z, y int, cause memory.Cause, ok bool) {
	if c == nil {
		return 0, 0, 0, memory.CauseNullChunk, false
	}
	var counts [memory.NumCauses]int
	for _, i := range screenOrder {
		x, z := int(i%world.ChunkSize), int(i/world.ChunkSize)
		r, ok := k.CheckColumn(c, x, z)
		if ok {
			return x, z, r.Y, 0, true
		}
		if r.Reason == NoBlockData {
			if k.c.strategy == stratLinear || k.c.strategy == stratJump {
				r.Y = k.nominalY(c)
			}
			return x, z, r.Y, 0, true
		}
		counts[r.Cause()]++
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
	case k.c.hasStart:
		return k.c.start
	case k.c.down:
		return hi
	}
	return lo
}
