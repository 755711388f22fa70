package webmap

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rtpengine/rtp/geom"
)

// worldJSON is one world of the worlds answer.
type worldJSON struct {
	World
	Epoch uint64 `json:"epoch"`
}

func (m *Map) serveWorlds(w http.ResponseWriter, _ *http.Request) {
	out := make([]worldJSON, 0, len(m.worlds))
	for _, wi := range m.worlds {
		out = append(out, worldJSON{World: wi.World, Epoch: m.b.WorldEpoch(wi.Name)})
	}
	slices.SortFunc(out, func(a, b worldJSON) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, struct {
		Worlds []worldJSON `json:"worlds"`
	}{out})
}

func (m *Map) serveRegions(w http.ResponseWriter, _ *http.Request) {
	out := make([]Region, 0, len(m.regions))
	for _, r := range m.regions {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Region) int { return strings.Compare(a.Name, b.Name) })
	writeJSON(w, struct {
		Regions []Region `json:"regions"`
	}{out})
}

// region returns the region named in the path, or answers 404.
func (m *Map) region(w http.ResponseWriter, r *http.Request) (string, bool) {
	name := r.PathValue("region")
	if _, ok := m.regions[name]; !ok {
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("webmap: unknown region %q", name))
		return "", false
	}
	return name, true
}

// ParseMemoryRect parses the minX, minZ, maxX, maxZ query parameters
// (chunk coordinates, inclusive) of a memory request: present, in range,
// min <= max, at most MaxMemoryChunks chunks.
func ParseMemoryRect(get func(string) string) (ChunkRect, error) {
	const limit = MaxBlock / geom.ChunkSize
	var v [4]int64
	for i, name := range [4]string{"minX", "minZ", "maxX", "maxZ"} {
		s := get(name)
		if s == "" {
			return ChunkRect{}, fmt.Errorf("webmap: missing %s", name)
		}
		var err error
		if v[i], err = ParseCoord(name, s, limit); err != nil {
			return ChunkRect{}, err
		}
	}
	r := ChunkRect{MinX: v[0], MinZ: v[1], MaxX: v[2], MaxZ: v[3]}
	if r.MaxX < r.MinX || r.MaxZ < r.MinZ {
		return ChunkRect{}, fmt.Errorf("webmap: empty rectangle %d..%d x %d..%d", r.MinX, r.MaxX, r.MinZ, r.MaxZ)
	}
	if n := r.Len(); n > MaxMemoryChunks {
		return ChunkRect{}, fmt.Errorf("webmap: %d chunks asked for, at most %d per request", n, MaxMemoryChunks)
	}
	return r, nil
}

func (m *Map) serveMemory(w http.ResponseWriter, r *http.Request) {
	name, ok := m.region(w, r)
	if !ok {
		return
	}
	rect, err := ParseMemoryRect(r.URL.Query().Get)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	v, err := m.b.Memory(name, rect)
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	cells := v.Cells
	if cells == nil {
		cells = []MemoryCell{}
	}
	writeJSON(w, struct {
		Now   float64      `json:"now"`
		Cells []MemoryCell `json:"cells"`
	}{unixSeconds(v.Now), cells})
}

// unixSeconds returns t in Unix seconds, to the millisecond.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// cachedAnswer is a reused cached-locations answer.
type cachedAnswer struct {
	at   time.Time
	body []byte
}

func (m *Map) serveCached(w http.ResponseWriter, r *http.Request) {
	name, ok := m.region(w, r)
	if !ok {
		return
	}
	if m.opts.CachedTTL > 0 {
		m.cachedMu.Lock()
		a, ok := m.cached[name]
		m.cachedMu.Unlock()
		if ok && time.Since(a.at) < m.opts.CachedTTL {
			writeRaw(w, a.body)
			return
		}
	}
	locs, truncated, err := m.b.Cached(name, MaxCached)
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	if locs == nil {
		locs = []CachedLocation{}
	}
	if len(locs) > MaxCached {
		locs, truncated = locs[:MaxCached], true
	}
	body, err := json.Marshal(struct {
		Locations []CachedLocation `json:"locations"`
		Truncated bool             `json:"truncated,omitempty"`
	}{locs, truncated})
	if err != nil {
		writeError(w, http.StatusInternalServerError, codeInternal, "webmap: "+err.Error())
		return
	}
	body = append(body, '\n')
	if m.opts.CachedTTL > 0 {
		m.cachedMu.Lock()
		m.cached[name] = cachedAnswer{at: time.Now(), body: body}
		m.cachedMu.Unlock()
	}
	writeRaw(w, body)
}

// writeRaw writes an encoded JSON answer.
func writeRaw(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// deliveryJSON is a Delivery with its time in RFC 3339 with nanoseconds.
type deliveryJSON struct {
	X    int64  `json:"x"`
	Y    int64  `json:"y"`
	Z    int64  `json:"z"`
	Sink string `json:"sink"`
	At   string `json:"at"`
}

func toJSON(d Delivery) deliveryJSON {
	return deliveryJSON{X: d.X, Y: d.Y, Z: d.Z, Sink: d.Sink, At: d.At.UTC().Format(time.RFC3339Nano)}
}

func (m *Map) serveDeliveries(w http.ResponseWriter, r *http.Request) {
	name, ok := m.region(w, r)
	if !ok {
		return
	}
	ds, err := m.b.Deliveries(name)
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	if len(ds) > FeedSize {
		ds = ds[len(ds)-FeedSize:]
	}
	out := make([]deliveryJSON, len(ds))
	for i, d := range ds {
		out[i] = toJSON(d)
	}
	writeJSON(w, struct {
		Deliveries []deliveryJSON `json:"deliveries"`
	}{out})
}

// streamPing is how often an idle delivery stream sends a comment, so
// proxies keep it open and a gone client is noticed.
const streamPing = 15 * time.Second

func (m *Map) serveStream(w http.ResponseWriter, r *http.Request) {
	name, ok := m.region(w, r)
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	ch, cancel, err := m.b.SubscribeDeliveries(name)
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	defer cancel()
	// A stream outlives any write timeout of the server.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := fmt.Fprint(w, ": rtp deliveries\n\n"); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return // no flushing: the stream cannot work
	}
	ping := time.NewTicker(streamPing)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case d, ok := <-ch:
			if !ok {
				return
			}
			b, _ := json.Marshal(toJSON(d))
			if _, err := fmt.Fprintf(w, "event: delivery\ndata: %s\n\n", b); err != nil {
				return
			}
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func (m *Map) serveInspect(w http.ResponseWriter, r *http.Request) {
	name, ok := m.region(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	var v [2]int64
	for i, p := range [2]string{"x", "z"} {
		s := q.Get(p)
		if s == "" {
			writeError(w, http.StatusBadRequest, codeBadRequest, "webmap: missing "+p)
			return
		}
		var err error
		if v[i], err = ParseCoord(p, s, MaxBlock); err != nil {
			writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
			return
		}
	}
	in, err := m.b.Inspect(r.Context(), name, geom.Block{X: v[0], Z: v[1]})
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	if in.Cached == nil {
		in.Cached = []CachedLocation{}
	}
	writeJSON(w, in)
}
