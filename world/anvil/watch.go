package anvil

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/geom"
)

// Changes is what one Poll saw change in the region folder since the Poll
// before. The zero value is no change.
type Changes struct {
	// Chunks whose data may differ from before, sorted by x then z, each
	// once: saved again, moved, added or removed, or in a region file that
	// was replaced or became unreadable.
	Chunks []geom.Chunk
	// Regions whose file was added, removed, replaced (a new file, or new
	// content under an unchanged header) or became unreadable or garbled:
	// every chunk of theirs is in Chunks. Sorted by x then z.
	Regions []geom.Region
	// Damaged is the subset of Chunks that the new header already shows
	// unreadable: their location overlaps the header or lies past the end
	// of the file. Other damage only shows when a chunk is read.
	Damaged []geom.Chunk
}

// watcher is Poll's memory of the region folder.
type watcher struct {
	polls, changed atomic.Uint64 // Stats.Polls and ChangedChunks

	mu       sync.Mutex // serialises Poll; protects the following fields
	started  bool
	gen      uint64 // Poll count, marks the files each Poll saw
	regions  map[geom.Region]*regionState
	external map[geom.Chunk]*fileState
}

// fileState is one file as the last Poll saw it.
type fileState struct {
	fi   fs.FileInfo // nil when it could not be read
	seen uint64      // the watcher's gen when last listed
}

type regionState struct {
	fileState
	hdr     *Header   // nil when unreadable
	checked time.Time // when hdr was read
}

// racyWindow: a region file modified less than this before its header was
// read has the header read again by the next Poll even if its stat is
// unchanged. A write's modification time is set as it starts and with the
// file system's granularity, so a header read just then may be torn or
// followed by a write that leaves the stat as it was.
const racyWindow = 2 * time.Second

// trusted reports whether st's header can stand for a file whose stat is
// fi without reading it.
func (st *regionState) trusted(fi fs.FileInfo) bool {
	return st.hdr != nil && sameFile(st.fi, fi) && fi.ModTime().Before(st.checked.Add(-racyWindow))
}

// sameFile reports whether a and b describe the same file unchanged:
// same identity, size and modification time.
func sameFile(a, b fs.FileInfo) bool {
	return a != nil && b != nil && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime()) && os.SameFile(a, b)
}

// Poll reports which chunks may have changed on disk since the previous
// Poll. The first call records what the region folder holds and reports
// nothing.
//
// A Poll stats every region file and every external .mcc file; it reads a
// region file's header only when its size, modification time or identity
// changed (or its last read came within two seconds of its modification
// time), and reports the slots whose location or save time differ. A
// file whose header is unchanged although the file changed has all its
// chunks reported, and so has a file replaced by another (renamed over
// it), added, removed, cut shorter than a header or whose header gained
// impossible locations. A change that keeps a file's identity, size and
// modification time and leaves the header alone is not seen. Poll keeps
// every region file's header: 8 KiB a file.
//
// Loads that start after Poll returns read the files as that Poll saw
// them or newer: the open file of every region reported (or merely
// touched) is dropped. A Load already running may still finish on the old
// file.
//
// Poll is safe for concurrent use with every other method; Polls run one
// at a time. Once started, a Poll runs to its end whatever ctx does, so
// that no change is seen and then lost. It returns ErrClosed after Close,
// and an error only when the region folder cannot be listed (a missing
// folder lists as empty); nothing is recorded then.
func (w *World) Poll(ctx context.Context) (Changes, error) {
	ws := &w.watch
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Changes{}, err
	}
	if w.files.isClosed() {
		return Changes{}, ErrClosed
	}
	dir, names, err := w.listRegionDir()
	if err != nil {
		return Changes{}, err
	}
	if dir != nil {
		defer dir.Close()
	}
	if ws.regions == nil {
		ws.regions = make(map[geom.Region]*regionState)
		ws.external = make(map[geom.Chunk]*fileState)
	}
	ws.gen++
	var c changeSet
	for _, name := range names {
		if r, ok := parseRegionName(name); ok {
			w.pollRegion(dir, name, r, &c)
		} else if ch, ok := parseExternalName(name); ok {
			ws.pollExternal(dir, name, ch, &c)
		}
	}
	for r, st := range ws.regions {
		if st.seen != ws.gen {
			c.regions = append(c.regions, r)
			c.drop = append(c.drop, r)
			c.all(r, st.hdr)
			delete(ws.regions, r)
		}
	}
	for ch, st := range ws.external {
		if st.seen != ws.gen {
			c.chunks = append(c.chunks, ch)
			delete(ws.external, ch)
		}
	}
	ws.polls.Add(1)
	if !ws.started {
		// Files opened before the baseline may be older than it.
		ws.started = true
		w.files.dropAll()
		return Changes{}, nil
	}
	for _, r := range c.drop {
		w.files.drop(r)
	}
	out := c.result(ws.regions)
	ws.changed.Add(uint64(len(out.Chunks)))
	w.health.changed(out.Chunks)
	w.health.flush()
	return out, nil
}

// listRegionDir opens the region folder and lists its names. A missing
// folder is no folder and no names.
func (w *World) listRegionDir() (*os.Root, []string, error) {
	dir, err := w.root.OpenRoot(w.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("anvil: %w", err)
	}
	f, err := dir.Open(".")
	if err != nil {
		dir.Close()
		return nil, nil, fmt.Errorf("anvil: %w", err)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		dir.Close()
		return nil, nil, fmt.Errorf("anvil: %w", err)
	}
	return dir, names, nil
}

// pollRegion compares region file name (region r) with what the last Poll
// saw and notes the differences in c. A file gone since the listing is
// left unseen, to be reported removed.
func (w *World) pollRegion(dir *os.Root, name string, r geom.Region, c *changeSet) {
	ws := &w.watch
	st := ws.regions[r]
	fi, err := dir.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if st != nil && err == nil && st.trusted(fi) {
		st.seen = ws.gen
		return
	}
	// Read again only because the last read was too close to a write.
	recheck := st != nil && err == nil && st.hdr != nil && sameFile(st.fi, fi)
	checked := time.Now()
	fi, hdr, short, err := readRegionHeader(dir, name, r)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	added := st == nil
	if added {
		st = new(regionState)
		ws.regions[r] = st
		c.regions = append(c.regions, r)
	}
	old, oldFi, oldChecked := st.hdr, st.fi, st.checked
	st.seen, st.fi, st.hdr, st.checked = ws.gen, fi, hdr, checked
	if err != nil {
		st.fi = nil // read it again next time
	}
	if recheck && hdr != nil && sameFile(oldFi, fi) && *old == *hdr {
		return // unchanged, as far as can be told
	}
	c.drop = append(c.drop, r)
	switch {
	case hdr == nil: // unreadable
		if old != nil {
			c.regions = append(c.regions, r)
			c.all(r, old)
		}
	case old == nil: // added, or readable again
		c.regions = append(c.regions, r)
		c.all(r, hdr)
	case oldFi != nil && !os.SameFile(oldFi, fi), *old == *hdr, short, newlyImpossible(old, hdr, fi.Size()):
		// Replaced, rewritten under the same header, or garbled: any
		// chunk may differ.
		c.regions = append(c.regions, r)
		c.all(r, old)
		c.all(r, hdr)
	default:
		c.diff(r, old, hdr, oldChecked)
	}
}

// readRegionHeader opens region file name and returns its FileInfo and
// header, and whether it is shorter than a header but not empty. The
// FileInfo and the header come from the same open file.
func readRegionHeader(dir *os.Root, name string, r geom.Region) (fs.FileInfo, *Header, bool, error) {
	f, err := dir.Open(name)
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	hdr, err := NewRegionFile(r, f, -1, nil, 0).Header()
	if err != nil {
		return fi, nil, false, err
	}
	return fi, hdr, fi.Size() > 0 && fi.Size() < HeaderSize, nil
}

// pollExternal notes in c whether external file name (chunk ch's) is new
// or changed.
func (ws *watcher) pollExternal(dir *os.Root, name string, ch geom.Chunk, c *changeSet) {
	fi, err := dir.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		fi = nil
	}
	st := ws.external[ch]
	switch {
	case st == nil:
		st = new(fileState)
		ws.external[ch] = st
		c.chunks = append(c.chunks, ch)
	case fi == nil && st.fi == nil:
	case !sameFile(st.fi, fi):
		c.chunks = append(c.chunks, ch)
	}
	st.seen, st.fi = ws.gen, fi
}

// impossible reports whether location loc cannot hold a chunk in a file
// of size bytes: it overlaps the header or starts too near the end.
func impossible(loc uint32, size int64) bool {
	if loc == 0 {
		return false
	}
	sector, count := int64(loc>>8), loc&0xff
	return sector < HeaderSize/SectorSize || count == 0 || sector*SectorSize+5 > size
}

// newlyImpossible reports whether hdr holds an impossible location that
// old did not hold in the same slot: the header was garbled, not merely a
// damaged chunk left alone.
func newlyImpossible(old, hdr *Header, size int64) bool {
	for i, loc := range hdr.Locations {
		if loc != old.Locations[i] && impossible(loc, size) {
			return true
		}
	}
	return false
}

// changeSet gathers one Poll's findings.
type changeSet struct {
	chunks  []geom.Chunk
	regions []geom.Region
	drop    []geom.Region // regions whose open file is dropped
}

// all notes every chunk present in h (nil: none).
func (c *changeSet) all(r geom.Region, h *Header) {
	if h == nil {
		return
	}
	for i := range ChunksPerRegion {
		if h.Present(i) {
			c.chunks = append(c.chunks, SlotChunk(r, i))
		}
	}
}

// diff notes the slots whose location or (for a present chunk) save time
// differ between old and hdr, read at oldChecked. Save times count whole
// seconds, so a chunk saved in the second old was read in, or later, may
// have been saved again in place within that second, under an unchanged
// slot: those slots are noted too.
func (c *changeSet) diff(r geom.Region, old, hdr *Header, oldChecked time.Time) {
	recent := oldChecked.Unix()
	for i := range ChunksPerRegion {
		if old.Locations[i] != hdr.Locations[i] || hdr.Present(i) && old.Timestamps[i] != hdr.Timestamps[i] ||
			hdr.Present(i) && int64(hdr.Timestamps[i]) >= recent {
			c.chunks = append(c.chunks, SlotChunk(r, i))
		}
	}
}

// result sorts and deduplicates the findings and picks the damaged chunks
// by the headers now recorded.
func (c *changeSet) result(regions map[geom.Region]*regionState) Changes {
	var out Changes
	if len(c.chunks) > 0 {
		slices.SortFunc(c.chunks, compareChunks)
		out.Chunks = slices.Compact(c.chunks)
	}
	if len(c.regions) > 0 {
		slices.SortFunc(c.regions, func(a, b geom.Region) int { return compareChunks(geom.Chunk(a), geom.Chunk(b)) })
		out.Regions = slices.Compact(c.regions)
	}
	for _, ch := range out.Chunks {
		st := regions[ch.Region()]
		if st != nil && st.hdr != nil && st.fi != nil && impossible(st.hdr.Locations[Slot(ch)], st.fi.Size()) {
			out.Damaged = append(out.Damaged, ch)
		}
	}
	return out
}

func compareChunks(a, b geom.Chunk) int {
	switch {
	case a.X != b.X:
		return compareInt(a.X, b.X)
	default:
		return compareInt(a.Z, b.Z)
	}
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseRegionName parses "r.<x>.<z>.mca" as RegionName writes it.
func parseRegionName(name string) (geom.Region, bool) {
	x, z, ok := parseCoords(name, "r.", ".mca")
	return geom.Region{X: x, Z: z}, ok
}

// parseExternalName parses "c.<x>.<z>.mcc" as ExternalName writes it.
func parseExternalName(name string) (geom.Chunk, bool) {
	x, z, ok := parseCoords(name, "c.", ".mcc")
	return geom.Chunk{X: x, Z: z}, ok
}

// parseCoords parses prefix + x + "." + z + suffix, the numbers written
// as strconv.FormatInt writes them.
func parseCoords(name, prefix, suffix string) (x, z int64, ok bool) {
	s, ok1 := strings.CutPrefix(name, prefix)
	s, ok2 := strings.CutSuffix(s, suffix)
	xs, zs, ok3 := strings.Cut(s, ".")
	if !ok1 || !ok2 || !ok3 {
		return 0, 0, false
	}
	x, okx := parseCanonicalInt(xs)
	z, okz := parseCanonicalInt(zs)
	return x, z, okx && okz
}

func parseCanonicalInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	var buf [24]byte
	return v, string(strconv.AppendInt(buf[:0], v, 10)) == s
}

// drop forgets region r's open file, if any; readers still using it
// finish on it.
func (c *fileCache) drop(r geom.Region) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.files[r]; ok {
		c.evictLocked(h)
	}
}

// dropAll forgets every open file.
func (c *fileCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.evictLocked(c.lru.Back().Value.(*fileHandle))
	}
}

func (c *fileCache) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
