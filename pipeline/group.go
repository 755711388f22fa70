package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Defaults and bounds of GroupConfig and Profile.
const (
	// DefaultGroupSize is a profile's default Size (max_size): the
	// largest group served.
	DefaultGroupSize = 8
	// DefaultGroupRadius is a profile's default Radius, in blocks.
	DefaultGroupRadius = 8
	// DefaultGroupCapacity is the default number of subspaces a profile
	// keeps ready. Each holds Size reservations of one chunk.
	DefaultGroupCapacity = 4
	// MaxGroupSize bounds a profile's Size.
	MaxGroupSize = 64
	// MaxGroupRadius bounds a profile's Radius, in blocks.
	MaxGroupRadius = 64
)

// ErrGroupSize: a group request asked for fewer than one place, or for
// more than the largest profile of the group sink holds.
var ErrGroupSize = errors.New("pipeline: group size outside the group sink's profiles")

// Profile is the shape of a group subspace: Size distinct places, every
// one within Radius blocks (horizontally, between column coordinates) of
// the places' centroid. Profiles are comparable and key the group sink's
// partitions.
type Profile struct {
	// Size is the number of places of a subspace: the largest group
	// served from it. Default DefaultGroupSize.
	Size int
	// Radius is the group radius, in blocks. Default
	// DefaultGroupRadius.
	Radius int
}

// String returns the profile as "size@radius" ("8@8").
func (pr Profile) String() string {
	return strconv.Itoa(pr.Size) + "@" + strconv.Itoa(pr.Radius)
}

// Validate reports what is wrong with pr, or nil: Size in [1,
// MaxGroupSize], Radius in [1, MaxGroupRadius], and a disk of radius
// Radius/2 that holds at least Size columns (a subspace's places lie in
// one, see the package documentation).
func (pr Profile) Validate() error {
	var errs []error
	if pr.Size < 1 || pr.Size > MaxGroupSize {
		errs = append(errs, fmt.Errorf("pipeline: group size %d outside [1, %d]", pr.Size, MaxGroupSize))
	}
	if pr.Radius < 1 || pr.Radius > MaxGroupRadius {
		errs = append(errs, fmt.Errorf("pipeline: group radius %d outside [1, %d]", pr.Radius, MaxGroupRadius))
	}
	if len(errs) == 0 {
		if n := len(diskOffsets(pr.Radius)); n < pr.Size {
			errs = append(errs, fmt.Errorf("pipeline: group radius %d leaves room for %d places (within %d/2 blocks of a centre), fewer than the size %d", pr.Radius, n, pr.Radius, pr.Size))
		}
	}
	return errors.Join(errs...)
}

// diskOffsets returns the column offsets (dx, dz) within radius/2 of a
// column, inside a 16x16 chunk: 4*(dx*dx + dz*dz) <= radius*radius,
// |dx|, |dz| <= 15.
func diskOffsets(radius int) [][2]int {
	var out [][2]int
	r2 := radius * radius
	for dz := -15; dz <= 15; dz++ {
		for dx := -15; dx <= 15; dx++ {
			if 4*(dx*dx+dz*dz) <= r2 {
				out = append(out, [2]int{dx, dz})
			}
		}
	}
	return out
}

// Subspace is a group sink's entry: Size places of one chunk, each a hot
// entry holding its own reservation, all within the profile's radius of
// their centroid. Anchor is the cold location it grew from: its row in
// the locations table and its spiral index in the double-delivery guard
// stand for the whole subspace. Since is when it became hot; Arrived when
// it entered the sink that holds it.
//
// While a Subspace sits in a sink the sink owns it; only the sink's
// OnDispose, a demotion or a take ends it. A Subspace is not safe for
// concurrent mutation; its owner alone touches it.
type Subspace struct {
	Anchor  Location
	Places  []*Hot
	Profile Profile
	Since   time.Time
	Arrived time.Time

	// remainder marks the part of a subspace a trim released: it carries
	// neither the anchor's row nor its guard entry (those left with the
	// places kept), so its disposal closes its reservations and nothing
	// else.
	remainder bool
}

// live reports whether every place holds an open reservation.
func (s *Subspace) live() bool {
	if s == nil || len(s.Places) == 0 {
		return false
	}
	for _, h := range s.Places {
		if !h.live() {
			return false
		}
	}
	return true
}

// changed reports whether the chunk of any place changed since it was
// checked.
func (s *Subspace) changed() bool {
	if s == nil {
		return false
	}
	return slices.ContainsFunc(s.Places, (*Hot).changed)
}

// release closes every place's reservation (see Hot.release).
func (s *Subspace) release(stageHeld bool) {
	if s == nil {
		return
	}
	for _, h := range s.Places {
		h.release(stageHeld)
	}
}

// Centre returns the centroid of the places' columns, in block
// coordinates (column x, z as integers; add 0.5 for the middle of the
// block). It is 0, 0 for no places.
func Centre(places []*Hot) (x, z float64) {
	if len(places) == 0 {
		return 0, 0
	}
	for _, h := range places {
		x += float64(h.X)
		z += float64(h.Z)
	}
	n := float64(len(places))
	return x / n, z / n
}

// fitSlack absorbs the rounding of a centroid: a place exactly on the
// radius fits.
const fitSlack = 1e-9

// Fits reports whether every place lies within radius blocks of the
// places' centroid (Centre), their columns distinct.
func Fits(places []*Hot, radius int) bool {
	cx, cz := Centre(places)
	r2 := float64(radius)*float64(radius) + fitSlack
	for i, h := range places {
		dx, dz := float64(h.X)-cx, float64(h.Z)-cz
		if dx*dx+dz*dz > r2 {
			return false
		}
		for _, o := range places[:i] {
			if o.X == h.X && o.Z == h.Z {
				return false
			}
		}
	}
	return true
}

// choose picks k of places that fit radius around their own centroid
// (Fits), and returns their indices in places, in the order of places; nil
// when none is found (or k is out of range). It tries, for each place as
// a seed, nearest the places' centroid first, the k places nearest the
// seed: a compact group near the middle of the subspace. It does no I/O
// and changes nothing.
func choose(places []*Hot, k, radius int) []int {
	n := len(places)
	if k < 1 || k > n {
		return nil
	}
	dist2 := func(a *Hot, x, z float64) float64 {
		dx, dz := float64(a.X)-x, float64(a.Z)-z
		return dx*dx + dz*dz
	}
	cx, cz := Centre(places)
	seeds := make([]int, n)
	for i := range seeds {
		seeds[i] = i
	}
	slices.SortStableFunc(seeds, func(a, b int) int {
		return cmpFloat(dist2(places[a], cx, cz), dist2(places[b], cx, cz))
	})
	order := make([]int, n)
	pick := make([]*Hot, k)
	for _, s := range seeds {
		sx, sz := float64(places[s].X), float64(places[s].Z)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmpFloat(dist2(places[a], sx, sz), dist2(places[b], sx, sz))
		})
		idx := slices.Clone(order[:k])
		slices.Sort(idx)
		for i, j := range idx {
			pick[i] = places[j]
		}
		if Fits(pick, radius) {
			return idx
		}
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// trim splits s into k places that fit radius around their own centroid
// (kept, which carry s's row and guard entry) and the rest (rem, a
// remainder Subspace, nil when none is left). It reports false, changing
// nothing, when no k places of s fit.
func (s *Subspace) trim(k, radius int) (kept []*Hot, rem *Subspace, ok bool) {
	idx := choose(s.Places, k, radius)
	if idx == nil {
		return nil, nil, false
	}
	var rest []*Hot
	next := 0
	for i, h := range s.Places {
		if next < len(idx) && idx[next] == i {
			kept = append(kept, h)
			next++
			continue
		}
		rest = append(rest, h)
	}
	if len(rest) > 0 {
		rem = &Subspace{Anchor: s.Anchor, Places: rest, Profile: s.Profile, Since: s.Since, Arrived: s.Arrived, remainder: true}
	}
	return kept, rem, true
}
