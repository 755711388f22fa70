package anvil

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// Options configure Open. The zero value reads the overworld.
type Options struct {
	// Dimension selects the world to read, by id. Default "": Overworld.
	Dimension Dimension
	// RegionDir overrides the region folder, relative to the save folder.
	// It must stay inside the save folder. Default: the dimension's
	// folder, in the 26.1 layout (dimensions/<namespace>/<path>/region)
	// or the older one (region, DIM-1/region, DIM1/region), or the save
	// folder itself when it holds region files directly.
	RegionDir string
	// Blocks attaches full block data (world.BlockReader) to every chunk.
	// Default false: column summaries only. Always on in a dimension
	// whose type has a ceiling.
	Blocks bool
	// MaxOpenFiles bounds the region files kept open. Default 16.
	MaxOpenFiles int
	// MaxChunkBytes caps a chunk's size, compressed or decompressed.
	// Default DefaultMaxChunkBytes (16 MiB).
	MaxChunkBytes int
	// Logger receives one warning per damaged chunk (one whose read fails
	// on corrupt data after its retries), naming its file, until Poll
	// reports the chunk changed; at most 10 a minute, then one line
	// counting those held back. Default: nothing is logged.
	Logger *slog.Logger
}

// Validate reports every problem with o.
func (o Options) Validate() error {
	var errs []error
	if !o.Dimension.Valid() {
		errs = append(errs, fmt.Errorf("anvil: dimension %q is not a resource id (namespace:path of a-z, 0-9, _, ., - and /)", string(o.Dimension)))
	}
	if o.RegionDir != "" && !filepath.IsLocal(o.RegionDir) {
		errs = append(errs, fmt.Errorf("anvil: region folder %q leaves the save folder", o.RegionDir))
	}
	if o.MaxOpenFiles < 0 {
		errs = append(errs, fmt.Errorf("anvil: MaxOpenFiles %d is negative", o.MaxOpenFiles))
	}
	if o.MaxChunkBytes < 0 {
		errs = append(errs, fmt.Errorf("anvil: MaxChunkBytes %d is negative", o.MaxChunkBytes))
	}
	return errors.Join(errs...)
}

// ErrClosed is returned by a World's methods after Close.
var ErrClosed = errors.New("anvil: world closed")

// World reads one dimension of a Minecraft Java save folder, read-only. It
// implements world.Source: Load decodes a chunk's column summaries (and,
// where configured, its blocks) on the calling goroutine.
//
// While a game server writes the save, Poll reports the chunks that
// changed on disk, and a chunk caught mid-write is read again.
//
// A World is safe for concurrent use. Every file it opens is resolved
// inside the save folder (os.Root): neither names nor symbolic links lead
// out of it. Create one with Open; the zero value is not usable.
type World struct {
	root   *os.Root
	dir    string // region folder, slash-separated, relative to root
	regFS  fs.FS
	dim    Dimension
	typ    DimensionType
	blocks bool
	limit  int
	level  Level
	files  *fileCache
	bufs   sync.Pool // *buffers

	watch  watcher // Poll's state (watch.go)
	health health  // retries, read errors, damage warnings (damage.go)
}

type buffers struct{ raw, nbt []byte }

// maxPooledBuffer keeps buffers grown by a huge chunk out of the pool.
const maxPooledBuffer = 4 << 20

var _ world.Source = (*World)(nil)

// Open opens the save folder dir. level.dat is optional: without it the
// world has DefaultLevel's values. The region folder is Options.RegionDir,
// else the dimension's folder when it exists, else dir itself when it
// holds region files (a bare region folder), else the dimension's folder
// of a save that has not made it yet (every chunk is ungenerated).
func Open(dir string, opts Options) (*World, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("anvil: %w", err)
	}
	w := &World{
		root:   root,
		dim:    opts.Dimension.canonical(),
		blocks: opts.Blocks,
		limit:  cmp(opts.MaxChunkBytes, DefaultMaxChunkBytes),
		level:  DefaultLevel(),
	}
	w.files = newFileCache(cmp(opts.MaxOpenFiles, 16), w.openRegion)
	w.health.init(opts.Logger)
	if err := w.init(opts); err != nil {
		root.Close()
		return nil, err
	}
	return w, nil
}

func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (w *World) init(opts Options) error {
	if data, err := w.readSmall("level.dat", maxLevelBytes); err == nil {
		lv, err := ParseLevel(data)
		if err != nil {
			return fmt.Errorf("anvil: level.dat: %w", err)
		}
		w.level = lv
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("anvil: level.dat: %w", err)
	}
	typ, err := ResolveDimensionType(w.root.FS(), w.dim)
	if err != nil {
		return err
	}
	w.typ = typ
	w.blocks = w.blocks || typ.HasCeiling
	if opts.RegionDir != "" {
		w.dir = filepath.ToSlash(filepath.Clean(opts.RegionDir))
	} else {
		dir, ok := findRegionDir(w.root, w.dim, w.level)
		if !ok {
			return &NoDimensionError{Save: w.root.Name(), Dimension: w.dim, Has: listDimensions(w.root)}
		}
		w.dir = dir
	}
	sub, err := fs.Sub(w.root.FS(), w.dir)
	if err != nil {
		return fmt.Errorf("anvil: %w", err)
	}
	w.regFS = sub
	return nil
}

// findRegionDir returns the region folder of dimension d: its folder in
// the 26.1 layout or the older one, whichever exists, else the save
// folder itself when it holds region files (a bare region folder), else,
// in a save with level.dat, the folder the save's version would make (no
// chunk generated yet). It returns false when none applies.
func findRegionDir(root *os.Root, d Dimension, lv Level) (string, bool) {
	for _, dir := range d.regionDirs() {
		if isDir(root, dir) {
			return dir, true
		}
	}
	switch {
	case hasRegions(root):
		return ".", true
	case !lv.Found:
		return "", false
	case lv.DataVersion >= DataVersionDimensionsFolder:
		return d.ModernRegionDir(), true
	}
	return d.RegionDir(), true
}

func isDir(root *os.Root, name string) bool {
	st, err := root.Stat(name)
	return err == nil && st.IsDir()
}

func hasRegions(root *os.Root) bool {
	m, _ := fs.Glob(root.FS(), "r.*.*.mca")
	return len(m) > 0
}

// readSmall reads a file of the save folder, failing past limit bytes.
func (w *World) readSmall(name string, limit int64) ([]byte, error) {
	f, err := w.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s holds %d bytes, over the limit of %d", name, st.Size(), limit)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && len(b) > 0 {
		return nil, err
	}
	return b, nil
}

func (w *World) openRegion(r geom.Region) (*os.File, error) {
	return w.root.Open(path.Join(w.dir, RegionName(r)))
}

// Level returns what level.dat holds (or DefaultLevel's values).
func (w *World) Level() Level { return w.level }

// Dimension returns the dimension read (never the zero value).
func (w *World) Dimension() Dimension { return w.dim }

// DimensionType returns the type of the dimension read, as
// ResolveDimensionType found it when the world was opened.
func (w *World) DimensionType() DimensionType { return w.typ }

// RegionDir returns the region folder read, slash-separated, relative to
// the save folder ("." for a bare folder of region files).
func (w *World) RegionDir() string { return w.dir }

// Close closes the open region files. Loads in flight finish; later calls
// return ErrClosed. Close is idempotent.
func (w *World) Close() error {
	w.files.close()
	return w.root.Close()
}

// Load implements world.Source. Errors are wrapped in *world.PosError:
// world.ErrUngenerated for a missing region file, an empty slot or an
// unfinished chunk; ErrCorrupt for malformed data (including a chunk whose
// own position differs from its slot's); ErrClosed after Close; I/O errors
// as they come; ctx.Err() unwrapped when ctx has ended. A read that fails
// on corrupt or cut-short data may have met the game writing the chunk:
// it is tried twice more after short pauses (5 and 20 ms) before failing,
// unless the region file was last modified over 2 s before (at rest); its
// error then also matches world.ErrUnreadable. Every other failure to read a chunk out of its open region file holds
// a *ChunkError naming the file and a short reason.
func (w *World) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	ch, _, err := w.load(ctx, pos, true)
	return ch, err
}

// LoadInfo is Load that also returns the chunk's Info (filled, with Full
// false, when the error is world.ErrUngenerated because the chunk is not
// finished).
func (w *World) LoadInfo(ctx context.Context, pos geom.Chunk) (*world.Chunk, Info, error) {
	return w.load(ctx, pos, true)
}

// Info reads chunk pos's data version and status without building it. It
// returns errors as Load does, except that an unfinished chunk is not an
// error (Info.Full is false).
func (w *World) Info(ctx context.Context, pos geom.Chunk) (Info, error) {
	_, info, err := w.load(ctx, pos, false)
	return info, err
}

func (w *World) load(ctx context.Context, pos geom.Chunk, build bool) (*world.Chunk, Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, Info{}, err
	}
	h, err := w.files.acquire(pos.Region())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			w.health.readFine(pos)
			err = world.ErrUngenerated
		}
		return nil, Info{}, &world.PosError{Pos: pos, Err: err}
	}
	defer w.files.release(h)
	bufs, _ := w.bufs.Get().(*buffers)
	if bufs == nil {
		bufs = new(buffers)
	}
	defer w.putBuffers(bufs)
	ch, info, err := w.read(pos, h.f, bufs, build)
	if err != nil && !errors.Is(err, world.ErrUngenerated) {
		// A chunk read while the game writes it can be torn: retry reads
		// it again after a pause or two before calling it damaged.
		return w.retry(ctx, pos, h.f, bufs, build, err)
	}
	w.health.readFine(pos)
	if err != nil {
		return nil, info, &world.PosError{Pos: pos, Err: err}
	}
	return ch, info, nil
}

// read reads, decompresses and decodes chunk pos from region file f once.
func (w *World) read(pos geom.Chunk, f *os.File, bufs *buffers, build bool) (*world.Chunk, Info, error) {
	rf := NewRegionFile(pos.Region(), f, -1, w.regFS, w.limit)
	nbt, raw, err := rf.ReadChunk(pos, bufs.raw, bufs.nbt)
	bufs.raw = raw
	if err != nil {
		return nil, Info{}, err
	}
	bufs.nbt = nbt
	d := decoders.Get().(*decoder)
	defer d.release()
	var ch *world.Chunk
	var info Info
	if build {
		ch, info, err = d.decode(nbt, DecodeOptions{Blocks: w.blocks})
	} else {
		info, err = d.info(nbt)
	}
	if err == nil || errors.Is(err, world.ErrUngenerated) {
		if info.Pos != pos {
			err = corrupt("slot holds chunk (%d,%d)", info.Pos.X, info.Pos.Z)
			ch = nil
		}
	}
	if err != nil {
		return nil, info, err
	}
	if ch != nil {
		if y, ok := w.typ.Ceiling(); ok {
			ch.HasCeiling, ch.Ceiling = true, int32(y)
		}
	}
	return ch, info, nil
}

func (w *World) putBuffers(b *buffers) {
	if cap(b.raw) > maxPooledBuffer {
		b.raw = nil
	}
	if cap(b.nbt) > maxPooledBuffer {
		b.nbt = nil
	}
	w.bufs.Put(b)
}

// Regions lists the regions that have a region file, sorted by x then z.
func (w *World) Regions() ([]geom.Region, error) {
	names, err := fs.Glob(w.regFS, "r.*.*.mca")
	if err != nil {
		return nil, fmt.Errorf("anvil: %w", err)
	}
	var out []geom.Region
	for _, n := range names {
		var r geom.Region
		var tail string
		if k, _ := fmt.Sscanf(n, "r.%d.%d.mc%s", &r.X, &r.Z, &tail); k == 3 && tail == "a" && RegionName(r) == n {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].X != out[j].X {
			return out[i].X < out[j].X
		}
		return out[i].Z < out[j].Z
	})
	return out, nil
}

// Header reads region r's header as it is now; a missing region file reads
// as an empty header.
func (w *World) Header(r geom.Region) (*Header, error) {
	h, err := w.files.acquire(r)
	if errors.Is(err, fs.ErrNotExist) {
		return new(Header), nil
	}
	if err != nil {
		return nil, err
	}
	defer w.files.release(h)
	return NewRegionFile(r, h.f, -1, nil, w.limit).Header()
}

// ChangedSince returns the chunks of region r saved at or after t (by the
// region header's timestamps, which have a resolution of one second), so
// what was remembered about them can be screened again.
func (w *World) ChangedSince(r geom.Region, t time.Time) ([]geom.Chunk, error) {
	h, err := w.Header(r)
	if err != nil {
		return nil, err
	}
	return h.ChangedSince(r, t), nil
}

// Modified returns when chunk c was last saved, and false when it never was.
func (w *World) Modified(c geom.Chunk) (time.Time, bool, error) {
	h, err := w.Header(c.Region())
	if err != nil {
		return time.Time{}, false, err
	}
	i := Slot(c)
	if !h.Present(i) {
		return time.Time{}, false, nil
	}
	return h.Modified(i), true, nil
}

// fileCache keeps at most max region files open, least recently used
// evicted first. An evicted file stays open until its last reader is done.
type fileCache struct {
	open func(geom.Region) (*os.File, error)
	max  int

	mu     sync.Mutex // protects the following fields
	files  map[geom.Region]*fileHandle
	lru    list.List // of *fileHandle, most recent first
	closed bool
}

type fileHandle struct {
	pos     geom.Region
	f       *os.File
	refs    int
	evicted bool
	elem    *list.Element
}

func newFileCache(max int, open func(geom.Region) (*os.File, error)) *fileCache {
	return &fileCache{open: open, max: max, files: make(map[geom.Region]*fileHandle)}
}

func (c *fileCache) acquire(r geom.Region) (*fileHandle, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if h, ok := c.files[r]; ok {
		h.refs++
		c.lru.MoveToFront(h.elem)
		c.mu.Unlock()
		return h, nil
	}
	c.mu.Unlock()

	f, err := c.open(r) // outside the lock: opening is I/O
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		f.Close()
		return nil, ErrClosed
	}
	if h, ok := c.files[r]; ok { // another goroutine opened it meanwhile
		f.Close()
		h.refs++
		c.lru.MoveToFront(h.elem)
		return h, nil
	}
	h := &fileHandle{pos: r, f: f, refs: 1}
	h.elem = c.lru.PushFront(h)
	c.files[r] = h
	for c.lru.Len() > c.max {
		c.evictLocked(c.lru.Back().Value.(*fileHandle))
	}
	return h, nil
}

func (c *fileCache) evictLocked(h *fileHandle) {
	c.lru.Remove(h.elem)
	delete(c.files, h.pos)
	h.evicted = true
	if h.refs == 0 {
		h.f.Close()
	}
}

func (c *fileCache) release(h *fileHandle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.evicted && h.refs == 0 {
		h.f.Close()
	}
}

func (c *fileCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for c.lru.Len() > 0 {
		c.evictLocked(c.lru.Back().Value.(*fileHandle))
	}
}

// openFiles reports how many files are open (for tests).
func (c *fileCache) openFiles() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
