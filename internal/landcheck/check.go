package landcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/blockdata"
)

// Dimension is one of a save's worlds, by id (package anvil's type: the
// aliases and the folders of both layouts are the same).
type Dimension = anvil.Dimension

// The vanilla dimensions.
const (
	Overworld = anvil.Overworld
	Nether    = anvil.Nether
	End       = anvil.End
)

// Part names the block of a landing a Failure is about.
type Part string

// The parts of a landing.
const (
	Ground   Part = "ground"   // the block under the feet, y-1
	Feet     Part = "feet"     // the block the feet occupy, y
	Head     Part = "head"     // the block above, y+1
	Location Part = "location" // the place as a whole
)

// Reason says what is wrong.
type Reason string

// Reasons for a failure.
const (
	// Unreadable: the chunk is missing, unfinished or malformed.
	Unreadable Reason = "unreadable"
	// Unknown: blockdata has no shape for the state.
	Unknown Reason = "unknown"
	// NoCollision: the ground has no collision (one falls through).
	NoCollision Reason = "no collision"
	// NoFloor: the ground has collision but no full top face.
	NoFloor Reason = "no full top face"
	// Hazard: a block that hurts or traps.
	Hazard Reason = "hazard"
	// Fluid: a fluid or a waterlogged block.
	Fluid Reason = "fluid"
	// Leaves: the ground is leaves.
	Leaves Reason = "leaves"
	// Barrier: the ground is a barrier.
	Barrier Reason = "barrier"
	// Blocked: the feet or head block is not passable.
	Blocked Reason = "not passable"
	// AboveRoof: a landing whose feet or head are at or above the
	// ceiling of a dimension with a roof (the Nether's).
	AboveRoof Reason = "at or above the ceiling"
	// Void: nothing at all below the feet.
	Void Reason = "over the void"
)

// Failure is one thing wrong with a landing. It is a plain value.
type Failure struct {
	Part   Part
	Reason Reason
	// State is the block state concerned ("" for Location).
	State   string
	X, Y, Z int64
	// Detail adds context ("" when none).
	Detail string
}

func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString("landcheck: ")
	b.WriteString(string(f.Part))
	if f.State != "" {
		b.WriteByte(' ')
		b.WriteString(f.State)
	}
	fmt.Fprintf(&b, " at (%d,%d,%d)", f.X, f.Y, f.Z)
	switch f.Reason {
	case NoCollision:
		b.WriteString(" has no collision")
	case NoFloor:
		b.WriteString(" has no full top face")
	case Unknown:
		b.WriteString(" is unknown to blockdata")
	case Blocked:
		b.WriteString(" is not passable")
	default:
		b.WriteString(" is ")
		b.WriteString(string(f.Reason))
	}
	if f.Detail != "" {
		b.WriteString(": ")
		b.WriteString(f.Detail)
	}
	return b.String()
}

// Failures returns the failures an error of Check holds, in order.
func Failures(err error) []*Failure {
	var out []*Failure
	var walk func(error)
	walk = func(err error) {
		if f, ok := err.(*Failure); ok {
			out = append(out, f)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// Checker judges landings in one dimension of a save folder, reading the
// region files itself. It is safe for concurrent use; decoded chunks are
// kept for later checks, so a Checker sees a save as it was when each
// chunk was first read. Create one with Open; the zero value is not
// usable.
type Checker struct {
	dir     string
	dim     Dimension
	ceiling int // the roof's top layer, when hasRoof
	hasRoof bool

	mu     sync.Mutex
	chunks map[[2]int]*chunk
}

// Open returns a checker of dimension dim of the save folder save: its
// region folder in the 26.1 layout (dimensions/<namespace>/<path>/region)
// or the older one (region/, DIM-1/region/, DIM1/region/), else save
// itself when it holds region files. The dimension's roof comes from its
// type as anvil.ResolveDimensionType finds it (the save's datapacks, else
// the game's).
func Open(save string, dim Dimension) (*Checker, error) {
	if !dim.Valid() {
		return nil, fmt.Errorf("landcheck: dimension %q is not a resource id", string(dim))
	}
	dim = Dimension(dim.ID())
	c := &Checker{dim: dim, chunks: map[[2]int]*chunk{}}
	for _, d := range []string{dim.ModernRegionDir(), dim.RegionDir()} {
		p := filepath.Join(save, filepath.FromSlash(d))
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			c.dir = p
			break
		}
	}
	if c.dir == "" {
		m, _ := filepath.Glob(filepath.Join(save, "r.*.*.mca"))
		if len(m) == 0 {
			return nil, fmt.Errorf("landcheck: %s holds neither %s nor %s nor region files", save, dim.ModernRegionDir(), dim.RegionDir())
		}
		c.dir = save
	}
	typ, err := anvil.ResolveDimensionType(os.DirFS(save), dim)
	if err != nil {
		return nil, fmt.Errorf("landcheck: %w", err)
	}
	c.ceiling, c.hasRoof = typ.Ceiling()
	return c, nil
}

// Ceiling returns the y of the top layer of the dimension's roof, and
// false when it has none.
func (c *Checker) Ceiling() (int, bool) { return c.ceiling, c.hasRoof }

func (c *Checker) chunk(x, z int64) (*chunk, error) {
	key := [2]int{int(x >> 4), int(z >> 4)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.chunks[key]; ok {
		return ch, nil
	}
	ch, err := readChunk(c.dir, key[0], key[1])
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = errNotGenerated
		}
		return nil, err
	}
	c.chunks[key] = ch
	return ch, nil
}

// Blocks returns the stored block states of the landing at (x, y, z):
// the ground (y-1), the feet (y) and the head (y+1) blocks. Before 1.13
// a state reads as its name, when the checker knows it, and its numeric
// id ("minecraft:lava(id 11:0)", "legacy(id 1:0)").
func (c *Checker) Blocks(x, y, z int64) (ground, feet, head string, err error) {
	ch, err := c.chunk(x, z)
	if err != nil {
		return "", "", "", err
	}
	var bs [3]raw
	for i := range bs {
		if bs[i], err = ch.at(x, y-1+int64(i), z); err != nil {
			return "", "", "", err
		}
	}
	return bs[0].state, bs[1].state, bs[2].state, nil
}

// Check judges a landing at (x, y, z), y being the block the feet occupy
// (as the engine's locations give it). It returns nil when the landing is
// safe, else an error joining one *Failure per problem (see Failures):
//
//   - ground (y-1) must have a full top face by blockdata, and be no
//     hazard, no fluid (nor waterlogged), no leaves and no barrier;
//   - feet (y) and head (y+1) must be passable by blockdata, no fluid and
//     no hazard;
//   - in a dimension with a roof, the head must be below the roof's top
//     layer (Ceiling);
//   - something must lie below the feet (not the void);
//   - the chunk must be stored and finished.
func (c *Checker) Check(x, y, z int64) error {
	ch, err := c.chunk(x, z)
	if err != nil {
		return &Failure{Part: Location, Reason: Unreadable, X: x, Y: y, Z: z, Detail: err.Error()}
	}
	if !ch.full {
		return &Failure{Part: Location, Reason: Unreadable, X: x, Y: y, Z: z, Detail: fmt.Sprintf("chunk not finished (status %q)", ch.status)}
	}
	table := blockdata.ForDataVersion(ch.dataVersion)
	if table == nil {
		return &Failure{Part: Location, Reason: Unreadable, X: x, Y: y, Z: z, Detail: fmt.Sprintf("no block data for data version %d", ch.dataVersion)}
	}
	var fails []error
	add := func(p Part, r Reason, b raw, by int64, detail string) {
		fails = append(fails, &Failure{Part: p, Reason: r, State: b.state, X: x, Y: by, Z: z, Detail: detail})
	}
	for i, part := range []Part{Ground, Feet, Head} {
		by := y - 1 + int64(i)
		b, err := ch.at(x, by, z)
		if err != nil {
			fails = append(fails, &Failure{Part: part, Reason: Unreadable, X: x, Y: by, Z: z, Detail: err.Error()})
			continue
		}
		var shape blockdata.Shape
		var known bool
		if b.legacy {
			shape, known = table.Legacy(b.id, b.meta)
		} else {
			shape, known = table.State(b.state)
		}
		base := strings.TrimPrefix(b.name, "minecraft:")
		if isHazard(base) {
			add(part, Hazard, b, by, "")
		}
		if isFluid(base) || b.waterlogged {
			add(part, Fluid, b, by, "")
		}
		if !known {
			add(part, Unknown, b, by, "")
			continue
		}
		if part != Ground {
			if !shape.Passable() {
				add(part, Blocked, b, by, "")
			}
			continue
		}
		switch {
		case strings.HasSuffix(base, "_leaves"):
			add(part, Leaves, b, by, "")
		case base == "barrier":
			add(part, Barrier, b, by, "")
		}
		if _, ok := shape.FloorHeight(); !ok {
			switch {
			case shape != blockdata.Empty:
				add(part, NoFloor, b, by, "")
			case c.void(ch, x, by, z):
				add(Location, Void, raw{}, by, "no block at or below it")
			default:
				add(part, NoCollision, b, by, "")
			}
		}
	}
	if c.hasRoof && y+1 >= int64(c.ceiling) {
		add(Location, AboveRoof, raw{}, y, fmt.Sprintf("head at y %d, roof's top at y %d", y+1, c.ceiling))
	}
	return errors.Join(fails...)
}

// void reports whether the column holds only air at and below y.
func (c *Checker) void(ch *chunk, x, y, z int64) bool {
	low := y
	for sy := range ch.sections {
		low = min(low, int64(sy)*16)
	}
	for by := y; by >= low; by-- {
		b, err := ch.at(x, by, z)
		if err != nil || !isAir(b.name) {
			return false
		}
	}
	return true
}

func isAir(name string) bool {
	switch name {
	case "minecraft:air", "minecraft:cave_air", "minecraft:void_air":
		return true
	}
	return false
}

// isHazard reports whether a block (name without namespace) hurts or
// traps whoever stands in or on it.
func isHazard(base string) bool {
	switch base {
	case "lava", "fire", "soul_fire", "magma_block", "campfire", "soul_campfire", "cactus",
		"sweet_berry_bush", "powder_snow", "pointed_dripstone", "wither_rose", "cobweb",
		"nether_portal", "end_portal", "end_gateway":
		return true
	}
	return false
}

// isFluid reports whether a block (name without namespace) is or always
// holds a fluid.
func isFluid(base string) bool {
	switch base {
	case "water", "lava", "bubble_column", "seagrass", "tall_seagrass", "kelp", "kelp_plant":
		return true
	}
	return false
}
