package webmap

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/mesh"
	"github.com/rtpengine/rtp/terrain/meshcache"
)

// MeshResolution is the samples per side of a tile mesh: one vertex every
// TileSize/MeshResolution (2) blocks, so a full mesh has 65,536 vertices
// and encodes with 16-bit indices (about 1.3 MB).
const MeshResolution = 256

// meshVersion is part of every mesh's ETag and cache key: change it when
// the same terrain would give another mesh.
const meshVersion = 1

// MeshRequest returns the terrain request of the mesh of zoom-0 tile
// (tx, tz): the tile's blocks at MeshResolution samples per side with a
// border of one sample, so normals along a seam match the neighbour's.
func MeshRequest(tx, tz int64) terrain.Request {
	return terrain.Request{OriginX: tx * TileSize, OriginZ: tz * TileSize, Size: TileSize, Resolution: MeshResolution, Border: 1}
}

// ParseQuality parses the quality query parameter: "" and "full" are
// mesh.Full, "low" mesh.Low.
func ParseQuality(s string) (mesh.Quality, error) {
	switch s {
	case "", "full":
		return mesh.Full, nil
	case "low":
		return mesh.Low, nil
	}
	return 0, fmt.Errorf("webmap: quality %q: want full or low", s)
}

func (m *Map) serveMesh(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuality(r.URL.Query().Get("quality"))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	limit := int64(MaxBlock / TileSize)
	tx, err := ParseCoord("tx", r.PathValue("tx"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	tz, err := ParseCoord("tz", r.PathValue("tz"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	wi, ok := m.worlds[r.PathValue("world")]
	if !ok {
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("webmap: unknown world %q", r.PathValue("world")))
		return
	}
	id := tileID{world: wi.Name, zoom: 0, tx: tx, tz: tz}
	k := tileKey{tileID: id, producer: wi.Producer, renderer: meshVersion}
	d := m.meshDigest(&wi, id)
	tag := etag("mesh-"+q.String(), k, d)
	h := w.Header()
	h.Set("ETag", tag)
	h.Set("Cache-Control", cacheControl)
	h.Set("X-RTP-Mesh-Quality", q.String())
	if notModified(r, tag) {
		m.stats.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	b, err := m.Mesh(r.Context(), wi.Name, tx, tz, q)
	if err != nil {
		m.writeBackendError(w, r, err)
		return
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// meshDigest is the digest of the chunks under a mesh: all of the zoom-0
// tile's (a mesh is not clipped to the world's extent).
func (m *Map) meshDigest(w *worldInfo, id tileID) uint64 {
	all := *w
	all.extent = tileChunkRect(0, id.tx, id.tz)
	return m.digest(&all, id)
}

// meshKey is the mesh cache key of a tile at a terrain digest.
func meshKey(w *worldInfo, tx, tz int64, d uint64) string {
	return fmt.Sprintf("%s\x00%s\x00v%d\x00%d/%d\x00%x", w.Name, w.Producer, meshVersion, tx, tz, d)
}

// Mesh returns the encoded mesh (mesh.Encode) of zoom-0 tile (tx, tz) of a
// world at quality q. A full mesh is restored from the mesh cache when it
// holds one of the tile's current terrain, else built and stored; a low
// mesh is built on each call (the cache admits full quality only).
func (m *Map) Mesh(ctx context.Context, worldName string, tx, tz int64, q mesh.Quality) ([]byte, error) {
	wi, ok := m.worlds[worldName]
	if !ok {
		return nil, fmt.Errorf("%w: world %q", ErrNotFound, worldName)
	}
	if !q.Valid() {
		return nil, fmt.Errorf("webmap: mesh quality %v", q)
	}
	d := m.meshDigest(&wi, tileID{world: wi.Name, tx: tx, tz: tz})
	key := meshKey(&wi, tx, tz, d)
	if q == mesh.Full {
		if rec, ok := m.opts.Meshes.Restore(key); ok {
			m.stats.meshHits.Add(1)
			return mesh.Encode(rec.Mesh)
		}
	}
	t, err := m.b.Heightfield(ctx, wi.Name, MeshRequest(tx, tz))
	if err != nil {
		return nil, err
	}
	mm, err := mesh.Build(t, q)
	if err != nil {
		return nil, fmt.Errorf("webmap: %w", err)
	}
	m.stats.meshBuilds.Add(1)
	if q == mesh.Full {
		m.opts.Meshes.Store(key, mm, meshcache.SourceBakedFull, m.opts.MeshProfile.Capacity())
	}
	return mesh.Encode(mm)
}
