package safety

import (
	"errors"
	"fmt"
	"math"
)

// Rules are the operator's safety settings, shaped for a YAML config file.
// Every field has a documented default, which its zero value selects.
//
// Rules is a plain value: copy it freely. Compile it with New.
type Rules struct {
	// Unsafe blocks are never landed on nor in, on top of the hazards,
	// which no rule can make safe (#hazards: fluids, waterlogged blocks,
	// fire, campfires, portals, magma, cactus, powder snow, sweet berry
	// bushes, wither roses, pointed dripstone, cobwebs). Default:
	// ["#unsafe"] (the hazards, leaves and barriers). A non-nil list
	// replaces the default: [] lets players land on leaves and barriers.
	Unsafe []string `yaml:"unsafe,omitempty"`
	// AirLike blocks are free space a player can stand in, whatever the
	// collision data says: for blocks of mods, which the data does not
	// know. Blocks the data knows are free space when they have no
	// collision (air, grass, flowers, signs, banners, pressure plates,
	// torches...). Default: none. Unsafe wins over AirLike.
	AirLike []string `yaml:"air_like,omitempty"`
	// Solid blocks are safe ground, whatever the collision data says:
	// for blocks of mods, which the data does not know. Default: none.
	// Unsafe wins over Solid, which wins over AirLike.
	Solid []string `yaml:"solid,omitempty"`
	// UnknownBlocks says what a block that the collision data does not
	// know, and that no rule and no KnownNamespaces entry matches, is:
	// "unsafe" (the default: never ground, never free space; such names
	// are counted and logged once) or "solid" (safe ground: only for a
	// server whose mods add nothing a player falls through).
	UnknownBlocks string `yaml:"unknown_blocks,omitempty"`
	// KnownNamespaces are mod namespaces whose blocks are solid ground
	// when no rule matches them. The minecraft namespace is never listed:
	// its blocks come from the collision data. Default: none.
	KnownNamespaces []string `yaml:"known_namespaces,omitempty"`
	// Headroom is how many air-like blocks the landing needs above the
	// ground, 1 to 16. Default (0): 2. The column summary knows two; more
	// needs the chunk's block data.
	Headroom int `yaml:"headroom,omitempty"`
	// MinY and MaxY bound the landing y: the block the player's feet
	// occupy, one above the ground. Default: the world's build height.
	MinY *int `yaml:"min_y,omitempty"`
	MaxY *int `yaml:"max_y,omitempty"`
	// Biomes allow and deny biomes.
	Biomes BiomeRules `yaml:"biomes,omitempty"`
	// Vertical chooses how the landing y is found.
	Vertical Vertical `yaml:"vertical,omitempty"`
	// Border, when set, is the world border: columns outside are rejected.
	// Default: none.
	Border *Border `yaml:"border,omitempty"`
}

// BiomeRules allow and deny biomes by name, glob or biome tag. A biome is
// allowed when Allow is empty or matches it, and Deny does not.
type BiomeRules struct {
	// Allow lists the allowed biomes. Default: empty, every biome.
	Allow []string `yaml:"allow,omitempty"`
	// Deny lists denied biomes; it wins over Allow. Default: none.
	Deny []string `yaml:"deny,omitempty"`
}

// Vertical strategy names.
const (
	// Surface lands on the column's top block, from the column summary;
	// in a chunk with a ceiling (world.Chunk.HasCeiling: the Nether's
	// roof), on the highest floor below the roof, searched down through
	// the block data.
	Surface = "surface"
	// Linear scans one block at a time from Start in Direction, for the
	// first y with safe ground and headroom (a nether-like world scans down
	// from below its roof). Needs block data.
	Linear = "linear"
	// Jump probes every Step blocks from Start in Direction and scans
	// linearly only between a probe in free space and one in solid
	// ground. Faster than Linear over tall open or solid spans; it can miss
	// a cavity or floor thinner than Step. Needs block data.
	Jump = "jump"
	// Fixed lands at exactly Y, if it is safe.
	Fixed = "fixed"
)

// Directions of the linear and jump strategies.
const (
	Down = "down"
	Up   = "up"
)

// DefaultHeadroom is the headroom when Rules.Headroom is 0; DefaultStep the
// jump step when Vertical.Step is 0; MaxHeadroom the largest headroom.
const (
	DefaultHeadroom = 2
	DefaultStep     = 4
	MaxHeadroom     = 16
)

// Vertical configures the search for the landing y.
type Vertical struct {
	// Strategy is one of surface, linear, jump and fixed. Default:
	// surface.
	Strategy string `yaml:"strategy,omitempty"`
	// Direction is down or up (linear and jump). Default: down.
	Direction string `yaml:"direction,omitempty"`
	// Start is the landing y the search starts from (linear and jump).
	// Default: the highest allowed landing y when scanning down, the
	// lowest when scanning up. A nether-like world starts below its roof.
	Start *int `yaml:"start,omitempty"`
	// Step is the jump strategy's probe spacing in blocks. Default: 4.
	Step int `yaml:"step,omitempty"`
	// Y is the landing y of the fixed strategy; required there.
	Y *int `yaml:"y,omitempty"`
}

// Border is a square world border, as Minecraft's: a column is inside when
// its center lies strictly within Size/2 of the center on both axes.
type Border struct {
	CenterX float64 `yaml:"center_x"`
	CenterZ float64 `yaml:"center_z"`
	// Size is the border's edge length in blocks; it must be positive.
	Size float64 `yaml:"size"`
}

// Contains reports whether the column at block (x, z) is inside b.
func (b *Border) Contains(x, z int64) bool {
	h := b.Size / 2
	return math.Abs(float64(x)+0.5-b.CenterX) < h && math.Abs(float64(z)+0.5-b.CenterZ) < h
}

// Default returns the default rules: Rules{} with the defaults spelled
// out, for printing a sample configuration.
func Default() Rules {
	return Rules{
		Unsafe:        []string{"#unsafe"},
		UnknownBlocks: "unsafe",
		Headroom:      DefaultHeadroom,
		Vertical:      Vertical{Strategy: Surface},
	}
}

// Nether returns rules for a nether-like world with a bedrock roof: the
// default block rules, a linear search down from y 120 (below the roof of
// a vanilla nether, which spans 0 to 127), landing no higher than 120.
// The default rules are as safe there when the source gives its chunks a
// ceiling (world.Chunk.HasCeiling, as package anvil does); these also
// keep below 120 a source that does not.
func Nether() Rules {
	r := Default()
	top := 120
	r.MaxY = &top
	r.Vertical = Vertical{Strategy: Linear, Direction: Down, Start: &top}
	return r
}

// RuleError is a rule of a list that does not parse: which list, its
// index there, and the syntax error (with the offset in the rule).
type RuleError struct {
	Field string // the YAML key of the list ("unsafe", "biomes.deny")
	Index int
	Err   *SyntaxError
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("safety: %s[%d] %q: offset %d: %s", e.Field, e.Index, e.Err.Rule, e.Err.Offset, e.Err.Msg)
}

func (e *RuleError) Unwrap() error { return e.Err }

// Validate reports every problem of r at once (errors.Join of them), or
// nil. Bad rules come as *RuleError with their position.
func (r *Rules) Validate() error {
	_, err := r.compile()
	return err
}

// compiled is the checked, defaulted form of Rules.
type compiled struct {
	hazards                []*Matcher // #hazards: never ground, never free space
	unsafe, airLike, solid []*Matcher
	biomeAllow, biomeDeny  []*Matcher
	knownNS                map[string]bool
	unknownUnsafe          bool
	headroom               int
	minY, maxY             int // landing y bounds; math.MinInt/MaxInt when unset
	strategy               uint8
	down                   bool
	start                  int
	hasStart               bool
	step                   int
	fixedY                 int
	border                 *Border
}

const (
	stratSurface uint8 = iota
	stratLinear
	stratJump
	stratFixed
)

func (r *Rules) compile() (*compiled, error) {
	var errs []error
	c := &compiled{knownNS: map[string]bool{}, unknownUnsafe: true}
	list := func(field string, rules []string, def []string, parse func(string) (*Matcher, error)) []*Matcher {
		if rules == nil {
			rules = def
		}
		out := make([]*Matcher, 0, len(rules))
		for i, s := range rules {
			m, err := parse(s)
			if err != nil {
				var se *SyntaxError
				errors.As(err, &se)
				errs = append(errs, &RuleError{Field: field, Index: i, Err: se})
				continue
			}
			out = append(out, m)
		}
		return out
	}
	c.unsafe = list("unsafe", r.Unsafe, []string{"#unsafe"}, ParseMatcher)
	c.hazards = list("hazards", nil, []string{"#hazards"}, ParseMatcher)
	c.airLike = list("air_like", r.AirLike, nil, ParseMatcher)
	c.solid = list("solid", r.Solid, nil, ParseMatcher)
	c.biomeAllow = list("biomes.allow", r.Biomes.Allow, nil, ParseBiomeMatcher)
	c.biomeDeny = list("biomes.deny", r.Biomes.Deny, nil, ParseBiomeMatcher)

	switch r.UnknownBlocks {
	case "", "unsafe":
	case "solid":
		c.unknownUnsafe = false
	default:
		errs = append(errs, fmt.Errorf("safety: unknown_blocks %q: want solid or unsafe", r.UnknownBlocks))
	}
	for i, ns := range r.KnownNamespaces {
		ok := ns != ""
		for j := 0; j < len(ns); j++ {
			if !isNameByte(ns[j], false) || ns[j] == '/' {
				ok = false
			}
		}
		if !ok {
			errs = append(errs, fmt.Errorf("safety: known_namespaces[%d] %q: not a namespace (lower-case letters, digits, _ - .)", i, ns))
			continue
		}
		c.knownNS[ns] = true
	}

	switch {
	case r.Headroom == 0:
		c.headroom = DefaultHeadroom
	case r.Headroom < 1 || r.Headroom > MaxHeadroom:
		errs = append(errs, fmt.Errorf("safety: headroom %d: want 1 to %d", r.Headroom, MaxHeadroom))
	default:
		c.headroom = r.Headroom
	}
	c.minY, c.maxY = math.MinInt, math.MaxInt
	if r.MinY != nil {
		c.minY = *r.MinY
	}
	if r.MaxY != nil {
		c.maxY = *r.MaxY
	}
	if r.MinY != nil && r.MaxY != nil && *r.MinY > *r.MaxY {
		errs = append(errs, fmt.Errorf("safety: min_y %d is above max_y %d", *r.MinY, *r.MaxY))
	}

	v := r.Vertical
	known := true // the strategy is valid; otherwise skip the checks that depend on it
	switch v.Strategy {
	case "", Surface:
		c.strategy = stratSurface
	case Linear:
		c.strategy = stratLinear
	case Jump:
		c.strategy = stratJump
	case Fixed:
		c.strategy = stratFixed
	default:
		known = false
		errs = append(errs, fmt.Errorf("safety: vertical.strategy %q: want surface, linear, jump or fixed", v.Strategy))
	}
	scan := c.strategy == stratLinear || c.strategy == stratJump
	switch v.Direction {
	case "", Down:
		c.down = true
	case Up:
	default:
		errs = append(errs, fmt.Errorf("safety: vertical.direction %q: want down or up", v.Direction))
	}
	if v.Direction != "" && !scan && known {
		errs = append(errs, fmt.Errorf("safety: vertical.direction is only used by the linear and jump strategies"))
	}
	if v.Start != nil {
		if !scan && known {
			errs = append(errs, fmt.Errorf("safety: vertical.start is only used by the linear and jump strategies"))
		}
		c.start, c.hasStart = *v.Start, true
	}
	switch {
	case v.Step < 0:
		errs = append(errs, fmt.Errorf("safety: vertical.step %d: want a positive step", v.Step))
	case v.Step > 0 && c.strategy != stratJump && known:
		errs = append(errs, fmt.Errorf("safety: vertical.step is only used by the jump strategy"))
	case v.Step == 0:
		c.step = DefaultStep
	default:
		c.step = v.Step
	}
	if !known {
		// Nothing more to say about y.
	} else if c.strategy == stratFixed {
		if v.Y == nil {
			errs = append(errs, fmt.Errorf("safety: vertical.y is required by the fixed strategy"))
		} else {
			c.fixedY = *v.Y
		}
	} else if v.Y != nil {
		errs = append(errs, fmt.Errorf("safety: vertical.y is only used by the fixed strategy"))
	}

	if b := r.Border; b != nil {
		if !(b.Size > 0) || math.IsInf(b.Size, 0) || math.IsNaN(b.CenterX) || math.IsNaN(b.CenterZ) ||
			math.IsInf(b.CenterX, 0) || math.IsInf(b.CenterZ, 0) {
			errs = append(errs, fmt.Errorf("safety: border: want a finite center and a positive size, have %+v", *b))
		} else {
			bb := *b
			c.border = &bb
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}
