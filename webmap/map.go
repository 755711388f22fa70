package webmap

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rtpengine/rtp/internal/flight"
	"github.com/rtpengine/rtp/internal/lru"
	"github.com/rtpengine/rtp/terrain/meshcache"
)

//go:embed static
var staticFiles embed.FS

// Defaults of Options.
const (
	DefaultTileEntries   = 4096
	DefaultTileBytes     = 256 << 20
	DefaultRenderWorkers = 0 // GOMAXPROCS/2, at least 1
	DefaultRenderTimeout = 60 * time.Second
	DefaultCachedTTL     = time.Second
	// MaxMemoryChunks bounds the chunks of one memory request.
	MaxMemoryChunks = 65536
	// MaxCached bounds the locations of one cached request.
	MaxCached = 10000
	// MaxBlock bounds block coordinates: every tile and column asked for
	// must lie within [-MaxBlock, MaxBlock) on both axes (the game's world
	// ends at 30 million).
	MaxBlock = 1 << 25
)

// Options configure a Map. The zero value selects every default.
type Options struct {
	// TileEntries and TileBytes bound the cache of encoded tiles (PNG
	// bytes); the least recently used tiles go first. Defaults
	// DefaultTileEntries (4096) and DefaultTileBytes (256 MiB).
	TileEntries int
	TileBytes   int64
	// RenderWorkers bounds the tiles rendered at once (a zoom-0 tile reads
	// 1,024 chunk summaries, a coarser one samples 512 x 512 columns). Default 0: GOMAXPROCS/2, at least 1, so the
	// map never takes every processor from the engine.
	RenderWorkers int
	// RenderTimeout bounds one render. A render is shared by every
	// request for the same tile and goes on while any of them still
	// waits, when the one that started it is gone; it is cancelled once
	// they have all left. Default DefaultRenderTimeout (60 s).
	RenderTimeout time.Duration
	// Meshes is the full-quality mesh cache. Default: a new cache.
	Meshes *meshcache.Cache
	// MeshProfile is its capacity (meshcache.Profile). Default 0 means
	// meshcache.ProfileBalanced; a negative value disables retention.
	MeshProfile meshcache.Profile
	// CachedTTL is how long a region's cached-locations answer is reused:
	// listing sweeps the pipeline's stages (see Backend.Cached). Default
	// DefaultCachedTTL (1 s); negative: never reused.
	CachedTTL time.Duration
	// Logger receives render failures. Default slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.TileEntries <= 0 {
		o.TileEntries = DefaultTileEntries
	}
	if o.TileBytes <= 0 {
		o.TileBytes = DefaultTileBytes
	}
	if o.RenderWorkers <= 0 {
		o.RenderWorkers = max(runtime.GOMAXPROCS(0)/2, 1)
	}
	if o.RenderTimeout <= 0 {
		o.RenderTimeout = DefaultRenderTimeout
	}
	if o.Meshes == nil {
		o.Meshes = meshcache.New()
	}
	switch {
	case o.MeshProfile == 0:
		o.MeshProfile = meshcache.ProfileBalanced
	case o.MeshProfile < 0:
		o.MeshProfile = 0
	}
	if o.CachedTTL == 0 {
		o.CachedTTL = DefaultCachedTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Map serves the web map of a Backend: the page, tiles, meshes and
// overlays (see the package documentation).
//
// Make one with New; the zero value is not usable. A Map is safe for
// concurrent use.
type Map struct {
	b    Backend
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	worlds  map[string]worldInfo // fixed at New
	regions map[string]Region

	renders flight.Group[renderKey, []byte]
	workers chan struct{}
	empty   []byte // the transparent tile
	stats   counters
	serving atomic.Int64 // tile requests being served

	tilesMu sync.Mutex
	// tilesMu protects the following fields.
	tiles lru.Map[tileKey, *tileEntry] // bounded by TileEntries and TileBytes
	bytes int64                        // sum of the cached tiles' n

	digestsMu sync.Mutex
	// digestsMu protects the following field.
	digests lru.Map[tileID, digestEntry] // bounded by digestEntries

	cachedMu sync.Mutex
	// cachedMu protects the following field.
	cached map[string]cachedAnswer
}

// worldInfo is a world and the chunk box the map draws of it.
type worldInfo struct {
	World
	extent ChunkRect // union of the world's regions' boxes; empty when none
}

// New returns the map of b. It reads b's worlds and regions once: a region
// added later is not drawn until a new Map is made.
func New(b Backend, opts Options) (*Map, error) {
	if b == nil {
		return nil, errors.New("webmap: nil backend")
	}
	opts = opts.withDefaults()
	m := &Map{
		b: b, opts: opts, log: opts.Logger,
		worlds: map[string]worldInfo{}, regions: map[string]Region{},
		workers: make(chan struct{}, opts.RenderWorkers),
		cached:  map[string]cachedAnswer{},
	}
	for _, w := range b.Worlds() {
		m.worlds[w.Name] = worldInfo{World: w, extent: ChunkRect{MinX: 1, MaxX: 0}}
	}
	for _, r := range b.Regions() {
		m.regions[r.Name] = r
		w, ok := m.worlds[r.World]
		if !ok {
			continue
		}
		box := ChunkRect{MinX: r.Chunks[0], MinZ: r.Chunks[1], MaxX: r.Chunks[2], MaxZ: r.Chunks[3]}
		if w.extent.Len() == 0 {
			w.extent = box
		} else {
			w.extent = ChunkRect{
				MinX: min(w.extent.MinX, box.MinX), MinZ: min(w.extent.MinZ, box.MinZ),
				MaxX: max(w.extent.MaxX, box.MaxX), MaxZ: max(w.extent.MaxZ, box.MaxZ),
			}
		}
		m.worlds[r.World] = w
	}
	m.renders.Logger = opts.Logger
	var err error
	if m.empty, err = encodePNG(emptyTile()); err != nil {
		return nil, fmt.Errorf("webmap: %w", err)
	}
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, fmt.Errorf("webmap: %w", err)
	}
	m.routes(sub)
	return m, nil
}

// Handler returns the handler of every route (see the package
// documentation). The paths are absolute: mount it at "/map/",
// "/v1/map/" and "/v1/worlds/".
func (m *Map) Handler() http.Handler { return m.mux }

func (m *Map) routes(static fs.FS) {
	mux := http.NewServeMux()
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /map/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /map/static/", http.StripPrefix("/map/static", files))
	mux.HandleFunc("GET /map", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/map/", http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /v1/map/worlds", m.serveWorlds)
	mux.HandleFunc("GET /v1/map/regions", m.serveRegions)
	mux.HandleFunc("GET /v1/worlds/{world}/tiles/{zoom}/{tx}/{tz}", m.serveTile)
	mux.HandleFunc("GET /v1/worlds/{world}/meshes/{tx}/{tz}", m.serveMesh)
	mux.HandleFunc("GET /v1/map/regions/{region}/memory", m.serveMemory)
	mux.HandleFunc("GET /v1/map/regions/{region}/cached", m.serveCached)
	mux.HandleFunc("GET /v1/map/regions/{region}/deliveries", m.serveDeliveries)
	mux.HandleFunc("GET /v1/map/regions/{region}/deliveries/stream", m.serveStream)
	mux.HandleFunc("GET /v1/map/regions/{region}/inspect", m.serveInspect)
	// Everything else under the map's prefixes is a JSON 404 (or 405).
	for _, p := range []string{"/v1/map/", "/v1/worlds/"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "webmap: the map is read-only: GET or HEAD")
				return
			}
			writeError(w, http.StatusNotFound, "not_found", "webmap: no such route: "+r.URL.Path)
		})
	}
	m.mux = mux
}

// Error codes of the JSON error answers.
const (
	codeBadRequest  = "bad_request"
	codeNotFound    = "not_found"
	codeInternal    = "internal"
	codeUnavailable = "unavailable"
)

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError writes the JSON error answer.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	var body errorBody
	body.Error.Code, body.Error.Message = code, msg
	h := w.Header()
	h.Del("ETag")
	h.Del("Cache-Control")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// writeBackendError maps a Backend error: ErrNotFound and no terrain
// (Ungenerated) 404, a context end 503, anything else 500.
func (m *Map) writeBackendError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNotFound), Ungenerated(err):
		writeError(w, http.StatusNotFound, codeNotFound, err.Error())
	case r.Context().Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "webmap: "+err.Error())
	default:
		m.log.Warn("webmap: request failed", "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, codeInternal, err.Error())
	}
}

// writeJSON writes v as a JSON answer.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, codeInternal, "webmap: encoding the answer: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	_, _ = w.Write(append(b, '\n'))
}

// ParseZoom parses a zoom level: a decimal integer in [0, MaxZoom].
func ParseZoom(s string) (int, error) {
	if len(s) == 0 || len(s) > 2 {
		return 0, fmt.Errorf("webmap: zoom %q: want an integer from 0 to %d", s, MaxZoom)
	}
	z, err := strconv.Atoi(s)
	if err != nil || z < 0 || z > MaxZoom || strconv.Itoa(z) != s {
		return 0, fmt.Errorf("webmap: zoom %q: want an integer from 0 to %d", s, MaxZoom)
	}
	return z, nil
}

// ParseCoord parses a decimal int64 coordinate within [-limit, limit).
func ParseCoord(name, s string, limit int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("webmap: %s %q: want an integer", name, s)
	}
	if v < -limit || v >= limit {
		return 0, fmt.Errorf("webmap: %s %d: out of range [%d, %d)", name, v, -limit, limit)
	}
	return v, nil
}

// ParseTilePath parses the zoom, tx and tz segments of a tile path ("tz"
// carries the ".png" suffix). Tiles must lie within ±MaxBlock.
func ParseTilePath(zoom, tx, tz string) (z int, x, y int64, err error) {
	if z, err = ParseZoom(zoom); err != nil {
		return 0, 0, 0, err
	}
	name, ok := cutSuffix(tz, ".png")
	if !ok {
		return 0, 0, 0, fmt.Errorf("webmap: tile %q: want <tz>.png", tz)
	}
	limit := int64(MaxBlock) / (TileSize << z)
	if x, err = ParseCoord("tx", tx, limit); err != nil {
		return 0, 0, 0, err
	}
	if y, err = ParseCoord("tz", name, limit); err != nil {
		return 0, 0, 0, err
	}
	return z, x, y, nil
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}

// MapStats are a Map's counters.
type MapStats struct {
	TileHits     uint64 `json:"tileHits"`     // served from the cache
	TileRenders  uint64 `json:"tileRenders"`  // rendered (every zoom)
	TileShared   uint64 `json:"tileShared"`   // waited for another request's render
	TileCorrupt  uint64 `json:"tileCorrupt"`  // cached tiles that failed their check
	TileStale    uint64 `json:"tileStale"`    // cached tiles whose terrain changed
	NotModified  uint64 `json:"notModified"`  // 304 answers
	MeshHits     uint64 `json:"meshHits"`     // full meshes restored from the mesh cache
	MeshBuilds   uint64 `json:"meshBuilds"`   // meshes built
	TileEntries  int    `json:"tileEntries"`  // cached tiles now
	TileBytes    int64  `json:"tileBytes"`    // their PNG bytes
	RenderErrors uint64 `json:"renderErrors"` // renders that failed
	Prerendered  uint64 `json:"prerendered"`  // tiles Prerender made ready
	Preempted    uint64 `json:"preempted"`    // Prerender renders abandoned for the engine
}

// Stats returns the map's counters.
func (m *Map) Stats() MapStats {
	m.tilesMu.Lock()
	n, b := m.tiles.Len(), m.bytes
	m.tilesMu.Unlock()
	return MapStats{
		TileHits: m.stats.hits.Load(), TileRenders: m.stats.renders.Load(), TileShared: m.stats.shared.Load(),
		TileCorrupt: m.stats.corrupt.Load(), TileStale: m.stats.stale.Load(), NotModified: m.stats.notModified.Load(),
		MeshHits: m.stats.meshHits.Load(), MeshBuilds: m.stats.meshBuilds.Load(),
		TileEntries: n, TileBytes: b, RenderErrors: m.stats.renderErrors.Load(),
		Prerendered: m.stats.prerendered.Load(), Preempted: m.stats.preempted.Load(),
	}
}
