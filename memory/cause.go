package memory

import "fmt"

// Cause says why a place was rejected. Its numeric value is stored in memory
// files (one byte per run): never renumber an existing cause.
type Cause uint8

// The rejection causes. Each belongs to one tier (see Tier).
const (
	CauseBiome           Cause = 0  // the biome is not allowed (static)
	CauseWorldBorder     Cause = 1  // outside the world border (static)
	CauseVert            Cause = 2  // no safe y in the column (static)
	CauseSafety          Cause = 3  // the ground or headroom is unsafe (static)
	CauseSafetyExternal  Cause = 4  // a verifier (claims, callbacks) objected (dynamic)
	CauseUniquePlacement Cause = 5  // too close to an earlier delivery (dynamic)
	CauseTimeout         Cause = 6  // the check ran out of time (transient)
	CauseNullChunk       Cause = 7  // the chunk could not be loaded (transient)
	CauseUngenerated     Cause = 8  // the chunk is not generated yet (dynamic)
	CausePrefilterBiome  Cause = 9  // rejected by biome before loading (static)
	CausePrefilterRange  Cause = 10 // rejected by height range before loading (static)
	// CauseUnreadable: the chunk's data is damaged (corrupt or cut short
	// on disk, see world.ErrUnreadable), so it cannot be screened
	// (dynamic).
	CauseUnreadable Cause = 11
	numCauses       Cause = 12
)

// NumCauses is the number of defined causes; every valid Cause is below it.
const NumCauses = int(numCauses)

var causeNames = [numCauses]string{
	"biome", "worldBorder", "vert", "safety", "safetyExternal", "uniquePlacement",
	"timeout", "nullChunk", "ungenerated", "prefilterBiome", "prefilterRange",
	"unreadable",
}

// String returns the cause's name as written in ttl.yml and stats.
func (c Cause) String() string {
	if c < numCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// Valid reports whether c is a defined cause.
func (c Cause) Valid() bool { return c < numCauses }

// ParseCause returns the cause with the given name (as String returns it).
func ParseCause(name string) (Cause, bool) {
	for i, n := range causeNames {
		if n == name {
			return Cause(i), true
		}
	}
	return 0, false
}

// Tier is a cause's volatility class.
type Tier uint8

const (
	// Static runs never expire: natural terrain and geometric limits.
	Static Tier = iota
	// Dynamic runs expire after their TTL: claims, placement spacing, and
	// the state of the world's data (a chunk not generated yet, or
	// unreadable), which a watcher of the world also forgets as soon as
	// the chunk changes.
	Dynamic
	// Transient causes are never stored.
	Transient
)

func (t Tier) String() string {
	switch t {
	case Static:
		return "static"
	case Dynamic:
		return "dynamic"
	case Transient:
		return "transient"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// Tier returns the volatility tier of c. Unknown causes are transient, so
// they are never stored.
func (c Cause) Tier() Tier {
	switch c {
	case CauseBiome, CauseWorldBorder, CauseVert, CauseSafety, CausePrefilterBiome, CausePrefilterRange:
		return Static
	case CauseSafetyExternal, CauseUniquePlacement, CauseUngenerated, CauseUnreadable:
		return Dynamic
	}
	return Transient
}

// exact reports whether runs of c are kept to the cells rejected: a run of
// an exact cause absorbs no gap (see Options.SpatialResolution) and joins
// only a run of its own cause that touches it. Ungenerated and unreadable
// describe the world's data chunk by chunk, not the terrain around, so a
// good chunk between two damaged ones stays selectable.
func (c Cause) exact() bool { return c == CauseUngenerated || c == CauseUnreadable }

// joins reports whether two runs of one tier, of causes a (left) and b
// (right) with gap cells between them, become one run in a rebuild.
func joins(a, b Cause, gap, resolution int64) bool {
	if a.exact() || b.exact() {
		return gap == 0 && a == b
	}
	return gap <= resolution
}
