package anvil

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Dimension names one of a save's worlds by its resource id, namespace and
// path ("minecraft:the_nether", a datapack's "mymod:mining"). The zero
// value "" is the overworld. Build one from user input with
// ParseDimension, which checks the characters: an id becomes a folder
// name, so it may never lead out of the save.
type Dimension string

// The vanilla dimensions.
const (
	// Overworld reads region/ (dimensions/minecraft/overworld/region/
	// from 26.1).
	Overworld Dimension = "minecraft:overworld"
	// Nether reads DIM-1/region/ (dimensions/minecraft/the_nether/region/
	// from 26.1). Its dimension type has a ceiling: its chunks carry full
	// blocks for a search below the roof.
	Nether Dimension = "minecraft:the_nether"
	// End reads DIM1/region/ (dimensions/minecraft/the_end/region/ from
	// 26.1). Void columns (Top == world.NoTop) have no landing.
	End Dimension = "minecraft:the_end"
)

// maxDimensionID bounds the length of a dimension id.
const maxDimensionID = 256

// ParseDimension reads a dimension as a user writes it: one of the
// aliases overworld, nether and end, or a resource id namespace:path
// ("minecraft:the_nether", "mymod:mining"). A namespace holds
// [a-z0-9_.-] and is not "." or ".."; a path the same and '/' between
// non-empty segments, none of them "." or "..".
func ParseDimension(s string) (Dimension, error) {
	switch s {
	case "overworld":
		return Overworld, nil
	case "nether":
		return Nether, nil
	case "end":
		return End, nil
	}
	if !strings.Contains(s, ":") {
		return "", fmt.Errorf("anvil: unknown dimension %q: want overworld, nether, end or a namespaced id (minecraft:the_nether, mymod:mining)", s)
	}
	id, err := parseID(s)
	if err != nil {
		return "", fmt.Errorf("anvil: dimension %q: want overworld, nether, end or namespace:path: %w", s, err)
	}
	return Dimension(id), nil
}

// parseID checks a resource id and returns it with its namespace
// ("minecraft" when it has none).
func parseID(s string) (string, error) {
	if len(s) > maxDimensionID {
		return "", fmt.Errorf("%d bytes, over the limit of %d", len(s), maxDimensionID)
	}
	ns, p, ok := strings.Cut(s, ":")
	if !ok {
		ns, p = "minecraft", s
	}
	if ns == "" || ns == "." || ns == ".." || !validIDChars(ns, false) {
		return "", errors.New(`a namespace holds a-z, 0-9, _, . and -, and is not "." or ".."`)
	}
	if !validIDPath(p) {
		return "", errors.New(`a path holds a-z, 0-9, _, ., - and / between names, none of them "." or ".."`)
	}
	return ns + ":" + p, nil
}

func validIDChars(s string, slash bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		case c == '/' && slash:
		default:
			return false
		}
	}
	return true
}

func validIDPath(p string) bool {
	if p == "" || !validIDChars(p, true) {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// canonical returns d with the zero value made the overworld.
func (d Dimension) canonical() Dimension {
	if d == "" {
		return Overworld
	}
	return d
}

// Valid reports whether d is a well-formed id (or the zero value).
func (d Dimension) Valid() bool {
	if d == "" {
		return true
	}
	got, err := ParseDimension(string(d))
	return err == nil && got == d
}

// ID returns the resource id, namespace:path ("minecraft:overworld" for
// the zero value).
func (d Dimension) ID() string { return string(d.canonical()) }

// Namespace returns the id's namespace ("minecraft").
func (d Dimension) Namespace() string {
	ns, _, _ := strings.Cut(d.ID(), ":")
	return ns
}

// Path returns the id's path ("the_nether").
func (d Dimension) Path() string {
	_, p, _ := strings.Cut(d.ID(), ":")
	return p
}

// String returns the alias of a vanilla dimension (overworld, nether,
// end) and the id of any other.
func (d Dimension) String() string {
	switch d.canonical() {
	case Overworld:
		return "overworld"
	case Nether:
		return "nether"
	case End:
		return "end"
	}
	return string(d)
}

// Vanilla reports whether d is one of the three vanilla dimensions.
func (d Dimension) Vanilla() bool {
	switch d.canonical() {
	case Overworld, Nether, End:
		return true
	}
	return false
}

// RegionDir returns the dimension's region folder in the layout saves
// used before 26.1: region/, DIM-1/region/ and DIM1/region/ for the
// vanilla dimensions, dimensions/<namespace>/<path>/region/ for any
// other (where 1.16 and later put a datapack's dimensions).
func (d Dimension) RegionDir() string {
	switch d.canonical() {
	case Overworld:
		return "region"
	case Nether:
		return "DIM-1/region"
	case End:
		return "DIM1/region"
	}
	return d.ModernRegionDir()
}

// ModernRegionDir returns the dimension's region folder in the layout of
// 26.1 and later: dimensions/<namespace>/<path>/region/.
func (d Dimension) ModernRegionDir() string {
	return path.Join("dimensions", d.Namespace(), d.Path(), "region")
}

// regionDirs returns the folders the dimension's regions may be in, the
// 26.1 layout first.
func (d Dimension) regionDirs() []string {
	if m, l := d.ModernRegionDir(), d.RegionDir(); m != l {
		return []string{m, l}
	}
	return []string{d.ModernRegionDir()}
}
