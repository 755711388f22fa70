package blockdata

import "strconv"

// Shape is the collision of a block state reduced for landing checks.
// The zero value is Empty. Values 1 to 16 are Floor(1) to Floor(16); Full
// and Partial follow.
type Shape uint8

const (
	// Empty has no collision at all: air, fluids, plants, torches, signs,
	// banners, pressure plates, the moving piston.
	Empty Shape = 0
	// Full is a full cube: standable at height 1 and suffocating.
	Full Shape = 17
	// Partial is any other collision: stairs, fences and walls (1.5 high),
	// chests and honey blocks (inset sides), lanterns, ... A player can
	// neither stand on it safely nor walk through it.
	Partial Shape = 18
)

// Floor returns the shape whose top face is a full 1x1 square at height
// sixteenths/16 and that reaches no higher: a bottom slab is Floor(8), a
// top slab Floor(16) (not Full: a head inside it is not inside a full
// cube), a carpet Floor(1), farmland and dirt paths Floor(15), soul sand
// Floor(14). Heights outside 1..16 give Partial.
func Floor(sixteenths int) Shape {
	if sixteenths < 1 || sixteenths > 16 {
		return Partial
	}
	return Shape(sixteenths)
}

// Passable reports whether the shape has no collision at all.
func (s Shape) Passable() bool { return s == Empty }

// FloorHeight returns the height, in sixteenths of a block, of the shape's
// full top face: h for Floor(h), 16 for Full. ok is false for Empty,
// Partial and values that are no Shape.
func (s Shape) FloorHeight() (sixteenths int, ok bool) {
	switch {
	case s >= 1 && s <= 16:
		return int(s), true
	case s == Full:
		return 16, true
	}
	return 0, false
}

// FullCube reports whether the shape is a full cube, which suffocates a
// head inside it.
func (s Shape) FullCube() bool { return s == Full }

// String returns "Empty", "Full", "Partial" or "Floor(h)"; values that are
// no Shape print as "Shape(n)".
func (s Shape) String() string {
	switch {
	case s == Empty:
		return "Empty"
	case s == Full:
		return "Full"
	case s == Partial:
		return "Partial"
	case s <= 16:
		return "Floor(" + strconv.Itoa(int(s)) + ")"
	}
	return "Shape(" + strconv.Itoa(int(s)) + ")"
}
