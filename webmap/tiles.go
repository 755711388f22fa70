package webmap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"image"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/world"
)

// tileID names a tile of a world.
type tileID struct {
	world  string
	zoom   int
	tx, tz int64
}

// tileKey is the full identity of a cached tile: what drew it and where.
type tileKey struct {
	tileID
	producer string
	renderer int
}

// tileEntry is one cached tile: its PNG, checked on every read.
type tileEntry struct {
	png    []byte
	n      int    // len(png) when stored
	crc    uint32 // CRC-32C of png when stored
	digest uint64 // epoch digest of the covered chunks when rendered
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// valid reports whether e's bytes are still what was stored.
func (e *tileEntry) valid() bool {
	return e != nil && len(e.png) == e.n && crc32.Checksum(e.png, castagnoli) == e.crc
}

// renderKey names one render: a tile of one terrain digest.
type renderKey struct {
	tileKey
	digest uint64
}

// digestEntry memoises a tile's epoch digest for one world epoch.
type digestEntry struct {
	epoch  uint64
	digest uint64
}

type counters struct {
	hits, renders, shared, corrupt, stale, notModified atomic.Uint64
	meshHits, meshBuilds, renderErrors                 atomic.Uint64
	prerendered, preempted                             atomic.Uint64
}

// digestEntries returns the bound of the digest memo: four digests per
// cacheable tile, and never fewer than 16,384.
func (m *Map) digestEntries() int { return max(4*m.opts.TileEntries, 1<<14) }

// cachedTile returns the cached entry of k, making it the newest.
func (m *Map) cachedTile(k tileKey) (*tileEntry, bool) {
	m.tilesMu.Lock()
	defer m.tilesMu.Unlock()
	return m.tiles.Get(k)
}

// dropTile removes k's entry if it is still e (a store may have replaced
// it since e was read).
func (m *Map) dropTile(k tileKey, e *tileEntry) {
	m.tilesMu.Lock()
	defer m.tilesMu.Unlock()
	if cur, ok := m.tiles.Peek(k); ok && cur == e {
		m.tiles.Remove(k)
		m.bytes -= int64(e.n)
	}
}

// store caches e under k, then evicts the oldest tiles while the cache
// holds more than TileEntries tiles or TileBytes bytes. A tile larger
// than the whole byte budget is not cached.
func (m *Map) store(k tileKey, e *tileEntry) {
	if int64(e.n) > m.opts.TileBytes {
		return
	}
	m.tilesMu.Lock()
	defer m.tilesMu.Unlock()
	if old, replaced := m.tiles.Put(k, e); replaced {
		m.bytes -= int64(old.n)
	}
	m.bytes += int64(e.n)
	for m.tiles.Len() > m.opts.TileEntries || m.bytes > m.opts.TileBytes {
		_, old, ok := m.tiles.RemoveOldest()
		if !ok {
			return
		}
		m.bytes -= int64(old.n)
	}
}

// blocksPer returns the blocks per pixel edge at zoom.
func chunksPerTile(zoom int) int64 { return tileChunks << zoom }

// tileChunkRect returns the chunks a tile covers.
func tileChunkRect(zoom int, tx, tz int64) ChunkRect {
	n := chunksPerTile(zoom)
	return ChunkRect{MinX: tx * n, MinZ: tz * n, MaxX: tx*n + n - 1, MaxZ: tz*n + n - 1}
}

// intersect returns the intersection of a and b (empty when disjoint).
func intersect(a, b ChunkRect) ChunkRect {
	return ChunkRect{MinX: max(a.MinX, b.MinX), MinZ: max(a.MinZ, b.MinZ), MaxX: min(a.MaxX, b.MaxX), MaxZ: min(a.MaxZ, b.MaxZ)}
}

// Digests.
//
// A tile's digest summarises the change counts (Backend.ChunkEpoch) of the
// chunks it draws: a zoom-0 tile hashes its chunks' counts, a zoom-k tile
// its four children's digests, so a digest changes exactly when a chunk
// under the tile changed (up to 64-bit hash collisions). Computing one
// from scratch costs a lock-free lookup per chunk drawn; digests are
// memoised per world epoch (Backend.WorldEpoch), so while a world does not
// change a digest costs one memo lookup, and a world that never changes
// (epoch 0: the procedural world) costs nothing.

// emptyDigest is the digest of a tile that draws no chunk.
const emptyDigest = 0

// digest returns the epoch digest of tile id of world w.
func (m *Map) digest(w *worldInfo, id tileID) uint64 {
	area := intersect(tileChunkRect(id.zoom, id.tx, id.tz), w.extent)
	if area.Len() == 0 {
		return emptyDigest
	}
	epoch := m.b.WorldEpoch(w.Name)
	if epoch == 0 {
		return 1 // no chunk ever changed
	}
	m.digestsMu.Lock()
	memo, ok := m.digests.Get(id)
	m.digestsMu.Unlock()
	if ok && memo.epoch == epoch {
		return memo.digest
	}
	h := fnv.New64a()
	var buf [8]byte
	if id.zoom == 0 {
		for cz := area.MinZ; cz <= area.MaxZ; cz++ {
			for cx := area.MinX; cx <= area.MaxX; cx++ {
				binary.LittleEndian.PutUint32(buf[:4], m.b.ChunkEpoch(w.Name, geom.Chunk{X: cx, Z: cz}))
				_, _ = h.Write(buf[:4])
			}
		}
	} else {
		for q := range 4 {
			c := tileID{world: id.world, zoom: id.zoom - 1, tx: 2*id.tx + int64(q%2), tz: 2*id.tz + int64(q/2)}
			binary.LittleEndian.PutUint64(buf[:], m.digest(w, c))
			_, _ = h.Write(buf[:])
		}
	}
	d := h.Sum64() | 2 // never emptyDigest or the unchanged digest
	m.digestsMu.Lock()
	m.digests.Put(id, digestEntry{epoch: epoch, digest: d})
	for m.digests.Len() > m.digestEntries() {
		m.digests.RemoveOldest()
	}
	m.digestsMu.Unlock()
	return d
}

// etag returns the strong ETag of a tile or mesh: its identity, the
// renderer version and the digest of its terrain.
func etag(kind string, k tileKey, digest uint64) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%s|%s|%d|%d|%d|%d|%x", kind, k.world, k.producer, k.renderer, k.zoom, k.tx, k.tz, digest)
	return `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
}

// notModified reports whether the request's If-None-Match names tag.
func notModified(r *http.Request, tag string) bool {
	inm := r.Header.Get("If-None-Match")
	if inm == "" {
		return false
	}
	for len(inm) > 0 {
		var part string
		if i := indexByte(inm, ','); i >= 0 {
			part, inm = inm[:i], inm[i+1:]
		} else {
			part, inm = inm, ""
		}
		part = trimSpace(part)
		if part == "*" || part == tag {
			return true
		}
	}
	return false
}

func indexByte(s string, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// cacheControl is the Cache-Control of tiles and meshes.
const cacheControl = "public, max-age=30"

func (m *Map) serveTile(w http.ResponseWriter, r *http.Request) {
	zoom, tx, tz, err := ParseTilePath(r.PathValue("zoom"), r.PathValue("tx"), r.PathValue("tz"))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	wi, ok := m.worlds[r.PathValue("world")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("webmap: unknown world %q", r.PathValue("world")))
		return
	}
	id := tileID{world: wi.Name, zoom: zoom, tx: tx, tz: tz}
	k := tileKey{tileID: id, producer: wi.Producer, renderer: RendererVersion}
	d := m.digest(&wi, id)
	tag := etag("tile", k, d)
	h := w.Header()
	h.Set("ETag", tag)
	h.Set("Cache-Control", cacheControl)
	if notModified(r, tag) {
		m.stats.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	m.serving.Add(1)
	b, err := m.tile(r.Context(), &wi, k, d)
	m.serving.Add(-1)
	if err != nil {
		m.writeRenderError(w, r, err)
		return
	}
	h.Set("Content-Type", "image/png")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// writeRenderError answers a failed render: 503 when it ran out of time
// or the request ended, 500 otherwise.
func (m *Map) writeRenderError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || r.Context().Err() != nil {
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "webmap: "+err.Error())
		return
	}
	m.log.Warn("webmap: render failed", "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, codeInternal, err.Error())
}

// Tile returns the PNG of tile (zoom, tx, tz) of a world, from the cache
// or rendered (see the package documentation). It is what the tile route
// serves.
func (m *Map) Tile(ctx context.Context, worldName string, zoom int, tx, tz int64) ([]byte, error) {
	wi, ok := m.worlds[worldName]
	if !ok {
		return nil, fmt.Errorf("%w: world %q", ErrNotFound, worldName)
	}
	if zoom < 0 || zoom > MaxZoom {
		return nil, fmt.Errorf("webmap: zoom %d outside [0, %d]", zoom, MaxZoom)
	}
	id := tileID{world: wi.Name, zoom: zoom, tx: tx, tz: tz}
	k := tileKey{tileID: id, producer: wi.Producer, renderer: RendererVersion}
	return m.tile(ctx, &wi, k, m.digest(&wi, id))
}

// tile returns the PNG of k whose terrain digest is d: the cached one when
// it is intact and of that digest, else a render shared by every
// concurrent request for the same tile and digest.
func (m *Map) tile(ctx context.Context, w *worldInfo, k tileKey, d uint64) ([]byte, error) {
	if d == emptyDigest {
		return m.empty, nil
	}
	if e, ok := m.cachedTile(k); ok {
		switch {
		case !e.valid():
			m.stats.corrupt.Add(1)
			m.dropTile(k, e)
		case e.digest != d:
			m.stats.stale.Add(1)
		default:
			m.stats.hits.Add(1)
			return e.png, nil
		}
	}
	b, joined, err := m.renders.Do(ctx, renderKey{k, d}, func(lctx context.Context) ([]byte, error) {
		rctx, cancel := context.WithTimeout(lctx, m.opts.RenderTimeout)
		defer cancel()
		b, err := m.render(rctx, w, k)
		if err != nil {
			if lctx.Err() == nil { // not abandoned by every requester
				m.stats.renderErrors.Add(1)
			}
			return nil, err
		}
		m.stats.renders.Add(1)
		m.store(k, &tileEntry{png: b, n: len(b), crc: crc32.Checksum(b, castagnoli), digest: d})
		return b, nil
	})
	if joined {
		m.stats.shared.Add(1)
	} else if errors.Is(err, flight.ErrPanicked) {
		m.stats.renderErrors.Add(1) // counted once, by the request that started it
	}
	return b, err
}

// render draws tile k: a zoom-0 tile from its chunks' summaries, a
// coarser one at its own resolution (renderCoarse).
func (m *Map) render(ctx context.Context, w *worldInfo, k tileKey) ([]byte, error) {
	if k.zoom == 0 {
		img, err := m.renderBase(ctx, w, k.tx, k.tz)
		if err != nil {
			return nil, err
		}
		return encodePNG(img)
	}
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	s, err := m.renderCoarse(ctx, w, k.zoom, k.tx, k.tz)
	m.release()
	if err != nil {
		return nil, err
	}
	if w.Kind == KindMinecraft {
		return encodePNG(RenderBlocks(s))
	}
	return encodePNG(RenderRelief(s))
}

// acquire takes one of the RenderWorkers slots, or fails when ctx ends
// first; release gives it back.
func (m *Map) acquire(ctx context.Context) error {
	select {
	case m.workers <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Map) release() { <-m.workers }

// renderBase draws zoom-0 tile (tx, tz): the chunks inside the world's
// extent, read with at most RenderWorkers tiles at once.
func (m *Map) renderBase(ctx context.Context, w *worldInfo, tx, tz int64) (*image.NRGBA, error) {
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	defer m.release()
	ext := w.extent
	keep := func(c geom.Chunk) bool {
		return c.X >= ext.MinX && c.X <= ext.MaxX && c.Z >= ext.MinZ && c.Z <= ext.MaxZ
	}
	summary := func(ctx context.Context, c geom.Chunk) (*world.Chunk, error) { return m.b.Summary(ctx, w.Name, c) }
	s, err := loadSurface(ctx, summary, tx, tz, w.MinY, w.MaxY, keep)
	if err != nil {
		return nil, err
	}
	if w.Kind == KindMinecraft {
		return RenderBlocks(s), nil
	}
	return RenderRelief(s), nil
}

// emptyTile is the transparent tile.
func emptyTile() *image.NRGBA { return image.NewNRGBA(image.Rect(0, 0, TileSize, TileSize)) }
