package anvil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// DataVersionDimensionsFolder is 26.1's DataVersion: from 26.1 a save
// keeps every dimension, the overworld too, under
// dimensions/<namespace>/<path>/region/.
const DataVersionDimensionsFolder = 4786

// SaveDimension is one dimension a save folder holds. It is a plain
// value.
type SaveDimension struct {
	Dimension Dimension
	// RegionDir is its region folder, slash-separated, relative to the
	// save folder.
	RegionDir string
	// Regions counts the region files (r.X.Z.mca) in it.
	Regions int
}

func (d SaveDimension) String() string {
	files := "region files"
	if d.Regions == 1 {
		files = "region file"
	}
	return fmt.Sprintf("%s (%s/, %d %s)", d.Dimension, d.RegionDir, d.Regions, files)
}

// Bounds of the walk of a save's dimensions folder: how deep an id's
// path may go, and how many entries are looked at.
const (
	maxDimensionDepth   = 8
	maxDimensionEntries = 100_000
)

// Dimensions lists the dimensions save holds, whatever their layout:
// region/, DIM-1/region/ and DIM1/region/ for the vanilla ones before
// 26.1, and every dimensions/<namespace>/<path>/region/ folder (26.1's
// layout, and where 1.16 to 1.21 keep a datapack's dimensions). They are
// sorted by id, a dimension found in both layouts listed once, at its
// 26.1 folder (the one Open reads).
func Dimensions(save string) ([]SaveDimension, error) {
	root, err := os.OpenRoot(save)
	if err != nil {
		return nil, fmt.Errorf("anvil: %w", err)
	}
	defer root.Close()
	return listDimensions(root), nil
}

func listDimensions(root *os.Root) []SaveDimension {
	fsys := root.FS()
	seen := map[Dimension]SaveDimension{}
	add := func(d Dimension, dir string, modern bool) {
		if _, ok := seen[d]; ok && !modern {
			return
		}
		seen[d] = SaveDimension{Dimension: d, RegionDir: dir, Regions: countRegionFiles(fsys, dir)}
	}
	for _, d := range []Dimension{Overworld, Nether, End} {
		if isDir(root, d.RegionDir()) {
			add(d, d.RegionDir(), false)
		}
	}
	entries := 0
	_ = fs.WalkDir(fsys, "dimensions", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == "dimensions" {
				return fs.SkipAll
			}
			return nil // an unreadable folder hides only itself
		}
		entries++
		if entries > maxDimensionEntries {
			return fs.SkipAll
		}
		if !e.IsDir() {
			return nil
		}
		parts := strings.Split(p, "/")
		if len(parts) > maxDimensionDepth+3 {
			return fs.SkipDir
		}
		if e.Name() != "region" || len(parts) < 4 {
			return nil
		}
		id := parts[1] + ":" + path.Join(parts[2:len(parts)-1]...)
		if d, err := ParseDimension(id); err == nil && d.ModernRegionDir() == p {
			add(d, p, true)
		}
		return fs.SkipDir
	})
	out := make([]SaveDimension, 0, len(seen))
	for _, d := range seen {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b SaveDimension) int { return strings.Compare(string(a.Dimension), string(b.Dimension)) })
	return out
}

func countRegionFiles(fsys fs.FS, dir string) int {
	m, _ := fs.Glob(fsys, path.Join(dir, "r.*.*.mca"))
	return len(m)
}

// NoDimensionError is Open's error for a save that holds no folder of
// the dimension asked for (nor level.dat, nor region files of its own):
// it lists the dimensions the save has.
type NoDimensionError struct {
	Save      string
	Dimension Dimension
	Has       []SaveDimension
}

func (e *NoDimensionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "anvil: %s holds no %s (looked for %s/", e.Save, e.Dimension, e.Dimension.ModernRegionDir())
	if l := e.Dimension.RegionDir(); l != e.Dimension.ModernRegionDir() {
		fmt.Fprintf(&b, " and %s/", l)
	}
	b.WriteString("); ")
	if len(e.Has) == 0 {
		b.WriteString("it holds no dimension, no level.dat and no region files")
		return b.String()
	}
	b.WriteString("its dimensions: ")
	for i, d := range e.Has {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.String())
	}
	return b.String()
}

// ErrNoDimension matches (errors.Is) every *NoDimensionError.
var ErrNoDimension = errors.New("anvil: no such dimension in the save")

// Is reports whether target is ErrNoDimension.
func (e *NoDimensionError) Is(target error) bool { return target == ErrNoDimension }
