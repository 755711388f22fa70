package cli

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil"
)

// saveWorldName names the world of --world in every command, in the
// configuration and in every answer (a location's "world").
const saveWorldName = config.DefaultWorldName

// centreRule is how much denser (finished chunks per chunk) a circle
// round the centre of the finished area must be than one round the spawn
// for the region to leave the spawn: the spawn is kept unless its circle
// is less than half as dense. A world explored outwards from its spawn
// keeps it; one whose generated area lies off to one side of the spawn
// (a region file copied out of a bigger world, a spawn moved away from
// the builds) is centred on what is there.
const centreRule = 2

// saveOptions are the flags that point every region at a Minecraft save
// (--world), shared by serve, pregen and pick: one code path builds the
// world's configuration for all of them.
//
// With --world, a region whose shape the configuration file does not
// write is a circle laid over the save's finished chunks: centred on the
// spawn of level.dat (block 0, 0 without one) or, when the finished
// chunks lie off to one side of it, on the centre of the finished area
// (see centreRule); its radius the smallest that covers every finished
// chunk from there, cut down so that the circle lies inside the world
// border. --x, --z and --radius replace the corresponding part, derived,
// kept or written. The save is scanned once (anvil.World.Extent) and what
// was derived is kept for later loads (a reload) and, when there is a
// data directory, in its DerivedRegionsFile, keyed by the save's absolute
// path, the dimension and the region: a later run uses the kept circle
// instead of deriving another, so that a region does not move as players
// explore. A shape the configuration writes wins over the kept one and
// leaves it in the file; a region shaped by the flags is not kept.
type saveOptions struct {
	path      string
	dimension string
	x, z      int64
	radius    int64
	flags     *pflag.FlagSet // tells which of --x, --z, --radius were given
	// budget bounds the scan of the chunks' statuses; 0 is anvil's
	// default.
	budget time.Duration

	// clock dates a derivation; nil is time.Now.
	clock func() time.Time

	mu   sync.Mutex    // serialises apply: a reload may run it concurrently
	scan *saveScan     // set by the first apply
	kept *derivedStore // the derived regions kept, read by the first apply with a data directory
}

func (o *saveOptions) register(f *pflag.FlagSet) {
	o.flags = f
	f.StringVar(&o.path, "world", "", "Minecraft Java save folder (or a folder of region files), read-only: every region draws from it")
	f.StringVar(&o.dimension, "dimension", config.Overworld, "with --world: overworld, nether, end or a dimension's id (minecraft:the_nether, mymod:mining)")
	f.Int64Var(&o.x, "x", 0, "with --world: block x of the regions' centre (default: from the save)")
	f.Int64Var(&o.z, "z", 0, "with --world: block z of the regions' centre (default: from the save)")
	f.Int64Var(&o.radius, "radius", 0, "with --world: the regions' radius in blocks (default: from the save)")
}

func (o *saveOptions) set(name string) bool { return o.flags != nil && o.flags.Changed(name) }

// apply points every region of cfg at the save, as described on
// saveOptions, and logs each region's shape. keys are the keys the
// configuration file sets. dataDir is the data directory whose
// DerivedRegionsFile keeps the derived regions; "" keeps none. Without
// --world it only checks that no flag needs it. It fails, before
// anything runs, when the save has no region folder for the dimension,
// holds no finished chunk, a region holds none of them, or the file of
// derived regions cannot be read or written.
func (o *saveOptions) apply(ctx context.Context, cfg *config.Config, keys config.Keys, dataDir string, log *slog.Logger) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.path == "" {
		for _, f := range []string{"x", "z", "radius"} {
			if o.set(f) {
				return usageError{fmt.Errorf("--%s needs --world", f)}
			}
		}
		return nil
	}
	w := config.World{Kind: config.KindMinecraft, Path: o.path, Dimension: o.dimension}
	aopts, err := w.AnvilOptions()
	if err != nil {
		return usageError{fmt.Errorf("--world: %w", err)}
	}
	if o.scan == nil {
		s, err := scanSave(ctx, o.path, aopts, o.budget)
		if err != nil {
			return err
		}
		o.scan = s
		if n := s.extent.NoStatus; n > 0 {
			log.Info(fmt.Sprintf("%s of %s record no generation status (neither Status nor TerrainPopulated: a generator outside the game wrote them); read as finished",
				plural(n, "chunk"), s.folder), "checked", s.extent.Checked)
		}
	}
	if o.kept == nil && dataDir != "" {
		k, err := openDerived(dataDir)
		if err != nil {
			return err
		}
		o.kept = k
	}
	s := o.scan
	flags := o.set("x") || o.set("z") || o.set("radius")
	cfg.Worlds = map[string]config.World{saveWorldName: w}
	for _, name := range slices.Sorted(maps.Keys(cfg.Regions)) {
		rc := cfg.Regions[name]
		rc.World = saveWorldName
		var from string
		kept := false
		if keys.Has("regions", name, "shape") {
			from = "the configuration file"
			if flags {
				from += ", with --x, --z, --radius over it"
			}
			o.override(&rc.Shape)
		} else if kept, err = o.derivedShape(name, &rc, &from, flags, log); err != nil {
			return err
		}
		if err := s.check(name, rc, from, log); err != nil {
			if kept {
				err = fmt.Errorf("%w; the circle was kept in %s: remove it there to derive it again", err, o.kept.path)
			}
			return err
		}
		cfg.Regions[name] = rc
	}
	return nil
}

// derivedShape gives region name, whose shape the configuration does not
// write, the shape kept for it in the data directory (with the flags over
// it) or, when none is kept, the one derived from the save, and keeps
// the latter unless a flag shaped it. It reports whether the shape is a
// kept one.
func (o *saveOptions) derivedShape(name string, rc *config.Region, from *string, flags bool, log *slog.Logger) (kept bool, err error) {
	s := o.scan
	key := derivedKey{Save: s.abs, Dimension: s.dim.ID(), Region: name}
	pin := fmt.Sprintf("pin it with regions.%s.shape in the configuration or with --x/--z/--radius", name)
	if o.kept != nil {
		if e, ok := o.kept.entries[key]; ok {
			rc.Shape = e.shape()
			*from = fmt.Sprintf("the save on %s (kept in %s)", e.DerivedAt.UTC().Format(time.DateOnly), o.kept.path)
			if flags {
				*from += ", with --x, --z, --radius over it"
			} else {
				log.Info(fmt.Sprintf("region %s: circle centre (%d, %d) radius %d, derived from the save on %s and kept since; %s, or remove it from %s to derive it again",
					name, e.CenterX, e.CenterZ, e.Radius, e.DerivedAt.UTC().Format(time.DateOnly), pin, o.kept.path),
					"derived_from", e.From)
			}
			o.override(&rc.Shape)
			return true, nil
		}
	}
	if s.derived == nil {
		sh, why, err := s.derive(o)
		if err != nil {
			return false, err
		}
		s.derived = &derivedShape{sh, why}
	}
	rc.Shape, *from = s.derived.shape, s.derived.from
	if flags {
		return false, nil
	}
	if o.kept == nil {
		log.Info(fmt.Sprintf("region %s: circle centre (%d, %d) radius %d, derived from the save; it follows the save as it grows; %s",
			name, rc.Shape.CenterX, rc.Shape.CenterZ, rc.Shape.Radius, pin))
		return false, nil
	}
	e := derivedEntry{derivedKey: key, CenterX: rc.Shape.CenterX, CenterZ: rc.Shape.CenterZ, Radius: rc.Shape.Radius,
		DerivedAt: o.now().UTC().Truncate(time.Second), From: s.derived.from}
	if err := e.check(); err != nil {
		return false, fmt.Errorf("--world: region %q: the derived circle cannot be kept: %w", name, err)
	}
	if err := o.kept.put(e); err != nil {
		return false, err
	}
	log.Info(fmt.Sprintf("region %s: circle centre (%d, %d) radius %d, derived from the save now and kept in %s, so that it does not move as players explore; %s",
		name, e.CenterX, e.CenterZ, e.Radius, o.kept.path, pin))
	return false, nil
}

// now is the clock that dates a derivation.
func (o *saveOptions) now() time.Time {
	if o.clock != nil {
		return o.clock()
	}
	return time.Now()
}

// override applies --x, --z and --radius over a written shape.
func (o *saveOptions) override(sh *geom.ShapeSpec) {
	if o.set("x") {
		sh.CenterX = o.x
	}
	if o.set("z") {
		sh.CenterZ = o.z
	}
	if o.set("radius") {
		sh.Radius = o.radius
		if sh.Kind == geom.ShapeRectangle {
			sh.RadiusX, sh.RadiusZ = o.radius, o.radius
		}
	}
}

// saveScan is what the save holds, read once.
type saveScan struct {
	path    string
	abs     string // path made absolute: the key of the kept regions
	folder  string // the region folder, for messages
	extent  anvil.Extent
	level   anvil.Level
	dim     anvil.Dimension
	typ     anvil.DimensionType
	derived *derivedShape
}

type derivedShape struct {
	shape geom.ShapeSpec
	from  string
}

// scanSave checks that the save has a region folder for the dimension,
// and reads which chunks it holds.
func scanSave(ctx context.Context, path string, opts anvil.Options, budget time.Duration) (*saveScan, error) {
	folder, err := regionFolder(path, opts)
	if err != nil {
		return nil, err
	}
	w, err := anvil.Open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("--world: %w", err)
	}
	defer w.Close()
	e, err := w.Extent(ctx, anvil.ExtentOptions{Budget: budget})
	if err != nil {
		return nil, fmt.Errorf("--world: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("--world: %w", err)
	}
	s := &saveScan{path: path, abs: abs, folder: folder, extent: e, level: w.Level(), dim: w.Dimension(), typ: w.DimensionType()}
	if e.Finished == 0 {
		return nil, fmt.Errorf("--world: %s holds no finished chunk (%s): nothing to land on; play or pre-generate the world first",
			folder, s.counts())
	}
	return s, nil
}

// counts describes the extent in words.
func (s *saveScan) counts() string {
	e := &s.extent
	var b strings.Builder
	fmt.Fprintf(&b, "%s, %s saved, ", plural(e.Regions, "region file"), plural(e.Present, "chunk"))
	if e.Exact {
		fmt.Fprintf(&b, "%d finished", e.Finished)
	} else {
		fmt.Fprintf(&b, "about %d finished (%d of them read)", e.Finished, e.Checked)
	}
	if e.UnreadableRegions > 0 || e.Unreadable > 0 {
		fmt.Fprintf(&b, "; %s and %s unreadable", plural(e.UnreadableRegions, "region file"), plural(e.Unreadable, "chunk"))
	}
	return b.String()
}

// regionFolder returns the region folder that anvil.Open reads for opts,
// in words, or an error naming the dimension looked for and the
// dimensions the save holds. anvil.Open accepts a save with level.dat but
// without the dimension's folder (every chunk then reads as
// ungenerated); a command would start and never hand out a place, so
// here that is an error.
func regionFolder(path string, opts anvil.Options) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--world: %w", err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("--world: %s is not a folder", path)
	}
	dims, err := anvil.Dimensions(path)
	if err != nil {
		return "", fmt.Errorf("--world: %w", err)
	}
	if opts.RegionDir != "" {
		want := filepath.ToSlash(filepath.Clean(opts.RegionDir))
		if isDir(filepath.Join(path, want)) {
			return fmt.Sprintf("%s/ of %s", want, path), nil
		}
		return "", fmt.Errorf("--world: no region folder %s in %s (%s)", want, path, saveHolds(path, dims))
	}
	dim := anvil.Dimension(opts.Dimension.ID())
	for _, d := range dims {
		if d.Dimension == dim {
			return fmt.Sprintf("%s/ of %s", d.RegionDir, path), nil
		}
	}
	if countRegions(path) > 0 {
		return path + " (a folder of region files)", nil
	}
	looked := dim.ModernRegionDir() + "/"
	if l := dim.RegionDir(); l != dim.ModernRegionDir() {
		looked += " nor " + l + "/"
	}
	return "", fmt.Errorf("--world: no %s in %s (no %s; %s)", dim, path, looked, saveHolds(path, dims))
}

// saveHolds describes, for an error, the dimensions of a save and what
// else of a save it holds.
func saveHolds(path string, dims []anvil.SaveDimension) string {
	var found []string
	for _, d := range dims {
		found = append(found, d.String())
	}
	var more []string
	if n := countRegions(path); n > 0 {
		more = append(more, plural(n, "region file")+" in the folder itself")
	}
	if _, err := os.Stat(filepath.Join(path, "level.dat")); err == nil {
		more = append(more, "level.dat")
	}
	switch {
	case len(found) > 0 && len(more) > 0:
		return "the save's dimensions: " + strings.Join(found, ", ") + "; besides, " + strings.Join(more, ", ")
	case len(found) > 0:
		return "the save's dimensions: " + strings.Join(found, ", ")
	case len(more) > 0:
		return "the save has no dimension, only " + strings.Join(more, ", ")
	}
	return "found nothing of a Minecraft save"
}

// plural writes n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// countRegions counts the region files (r.X.Z.mca) in dir.
func countRegions(dir string) int {
	m, err := fs.Glob(os.DirFS(dir), "r.*.*.mca")
	if err != nil {
		return 0
	}
	return len(m)
}

// borderRoom returns the largest radius, in chunks, of a circle around
// chunk c whose chunks lie wholly inside the border; -1 when c itself
// does not.
func borderRoom(b anvil.Border, c geom.Chunk) int64 {
	// Block column x is inside when x + 0.5 lies in [centre - h, centre + h].
	h := b.Size / 2
	lo := func(centre float64) float64 { return math.Ceil((centre - h - 0.5) / geom.ChunkSize) }
	hi := func(centre float64) float64 {
		return math.Floor((centre + h - 0.5 - (geom.ChunkSize - 1)) / geom.ChunkSize)
	}
	room := math.Min(
		math.Min(float64(c.X)-lo(b.CenterX), hi(b.CenterX)-float64(c.X)),
		math.Min(float64(c.Z)-lo(b.CenterZ), hi(b.CenterZ)-float64(c.Z)))
	if room < 0 || math.IsNaN(room) {
		return -1
	}
	return int64(math.Min(room, float64(geom.MaxRadius)))
}

// cover returns the radius, in chunks, of the circle around c that covers
// every finished chunk, cut down to the border's room, and whether it was
// cut; -1 when c lies outside the border.
func (s *saveScan) cover(c geom.Chunk) (r int64, cut bool) {
	room := borderRoom(s.level.Border, c)
	if room < 0 {
		return -1, false
	}
	r = s.extent.CoverRadius(c)
	if r > room {
		return room, true
	}
	return r, false
}

// fill returns the fraction of the chunks of the covering circle around c
// that are finished; -1 when c lies outside the border.
func (s *saveScan) fill(c geom.Chunk) float64 {
	r, _ := s.cover(c)
	if r < 0 {
		return -1
	}
	circle, err := geom.NewCircle(c, r, 0)
	if err != nil {
		return -1
	}
	_, n := s.extent.Within(circle)
	return float64(n) / float64(circle.Len())
}

// derive lays a circle over the save, as described on saveOptions.
func (s *saveScan) derive(o *saveOptions) (geom.ShapeSpec, string, error) {
	sh := config.DefaultRegion().Shape
	sh.Kind = geom.ShapeCircle
	spawn := s.level.Spawn
	spawnFrom := "the spawn"
	switch {
	case !s.level.Found:
		spawnFrom = "block 0, 0 (no level.dat)"
	case !s.level.HasSpawn:
		spawnFrom = "block 0, 0 (level.dat gives no spawn)"
	}
	var centre geom.Block
	var derived, given []string // what came from the save, from the flags
	switch {
	case o.set("x") || o.set("z"):
		centre = spawn
		if o.set("x") {
			centre.X = o.x
		}
		if o.set("z") {
			centre.Z = o.z
		}
		given = append(given, "centre from --x/--z")
	default:
		area := s.extent.Bounds.Center()
		fs, fa := s.fill(spawn.Chunk()), s.fill(area)
		switch {
		case fs < 0 && fa < 0:
			return sh, "", fmt.Errorf("--world: neither %s %v nor the centre of the finished area %v lies inside the world border %s",
				spawnFrom, spawn, area.Center(), borderText(s.level.Border))
		case fs >= 0 && fs*centreRule >= fa:
			centre = spawn
			derived = append(derived, "centre: "+spawnFrom)
		default:
			centre = area.Center()
			derived = append(derived, fmt.Sprintf(
				"centre: the middle of the finished area, %s, since a circle round %s would be %.0f%% finished and this one is %.0f%%",
				s.extent.Bounds, spawnFrom, 100*max(fs, 0), 100*fa))
		}
	}
	sh.CenterX, sh.CenterZ = centre.X, centre.Z
	if o.set("radius") {
		sh.Radius = o.radius
		given = append(given, "radius from --radius")
	} else {
		r, cut := s.cover(centre.Chunk())
		if r < 0 {
			return sh, "", fmt.Errorf("--world: the centre %v lies outside the world border %s", centre, borderText(s.level.Border))
		}
		sh.Radius = r << geom.ChunkShift
		d := "radius: the smallest that covers every finished chunk"
		if cut {
			d += ", cut down to stay inside the world border"
		}
		derived = append(derived, d)
	}
	if len(derived) == 0 {
		return sh, "the flags (" + strings.Join(given, "; ") + ")", nil
	}
	return sh, "the save (" + strings.Join(append(derived, given...), "; ") + ")", nil
}

// check fails when region rc holds no finished chunk of the save, and
// logs its shape otherwise. A shape that does not build is left for the
// configuration's validation to report.
func (s *saveScan) check(name string, rc config.Region, from string, log *slog.Logger) error {
	shape, err := rc.BuildShape()
	if err != nil {
		return nil
	}
	present, finished := s.extent.Within(shape)
	if finished == 0 {
		return fmt.Errorf("--world: region %q, %s, holds no finished chunk of %s (%d of its %d chunks saved, none finished; the save has %s, finished chunks in %s)",
			name, shapeText(rc.Shape), s.folder, present, shape.Len(), s.counts(), s.extent.Bounds)
	}
	insideBorder := "inside the world border"
	if !shapeInside(shape, s.level.Border) {
		insideBorder = "reaching past the world border"
	}
	log.Info("region laid over the save",
		"region", name,
		"shape", shapeText(rc.Shape),
		"from", from,
		"border", borderText(s.level.Border)+", "+insideBorder,
		"finished_inside", finished,
		"chunks", shape.Len(),
		"save", s.folder,
		"save_chunks", s.counts(),
		"dimension", s.dim.ID(),
		"dimension_type", typeText(s.typ))
	return nil
}

// shapeInside reports whether every chunk of shape lies inside the
// border (checked on the shape's bounding square).
func shapeInside(shape geom.Shape, b anvil.Border) bool {
	var c geom.Chunk
	var r int64
	switch sh := shape.(type) {
	case *geom.Circle:
		c, r = sh.Center(), sh.Radius()
	case *geom.Square:
		c, r = sh.Center(), sh.Radius()
	default:
		return true // not checked
	}
	return borderRoom(b, c) >= r
}

// shapeText describes a shape in blocks.
func shapeText(s geom.ShapeSpec) string {
	switch s.Kind {
	case geom.ShapeRectangle:
		return fmt.Sprintf("rectangle of half-extents %d x %d blocks around block (%d, %d), rotated %g°",
			s.RadiusX, s.RadiusZ, s.CenterX, s.CenterZ, s.Rotation)
	default:
		t := fmt.Sprintf("%s of radius %d blocks around block (%d, %d)", s.Kind, s.Radius, s.CenterX, s.CenterZ)
		if s.Inner > 0 {
			t += fmt.Sprintf(" less %d blocks in the middle", s.Inner)
		}
		return t
	}
}

// typeText describes a dimension type: its heights, its roof and where
// they come from.
func typeText(t anvil.DimensionType) string {
	id := t.ID
	if id == "" {
		id = "inline"
	}
	roof := "no roof"
	if y, ok := t.Ceiling(); ok {
		roof = fmt.Sprintf("roof at y %d: landings below it", y)
	}
	return fmt.Sprintf("%s, y %d to %d, logical height %d, %s (from %s)", id, t.MinY, t.MinY+t.Height-1, t.LogicalHeight, roof, t.Source)
}

func borderText(b anvil.Border) string {
	return fmt.Sprintf("square of %.0f blocks around (%.0f, %.0f)", b.Size, b.CenterX, b.CenterZ)
}
