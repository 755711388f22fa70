// Package browsertest holds what the web map's browser tests share: a fake
// service implementing the web map's HTTP contract with known data, and a
// headless Chromium launcher that records console errors.
package browsertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rtpengine/rtp/terrain/mesh"
)

// TileColour is the solid colour of the fake tile (zoom, tx, tz).
func TileColour(zoom, tx, tz int) color.RGBA {
	m := func(v, n int) int { return ((v % n) + n) % n }
	return color.RGBA{R: uint8(40 + 25*m(tx, 8)), G: uint8(40 + 25*m(tz, 8)), B: uint8(60 + 20*m(zoom, 9)), A: 255}
}

// Cell is a spatial memory cell of the fake.
type Cell struct {
	X       int     `json:"x"`
	Z       int     `json:"z"`
	Cause   string  `json:"cause"`
	Tier    string  `json:"tier"`
	State   string  `json:"state"`
	TTLLeft float64 `json:"ttlLeft"`
}

// Location is a cached or delivered location of the fake.
type Location struct {
	X     int    `json:"x"`
	Y     int    `json:"y"`
	Z     int    `json:"z"`
	Stage string `json:"stage,omitempty"`
	Sink  string `json:"sink"`
	At    string `json:"at,omitempty"`
	// Group and Radius: a place of a cached group subspace (see
	// webmap.CachedLocation).
	Group  int `json:"group,omitempty"`
	Radius int `json:"radius,omitempty"`
}

// Claim is a claim of the fake.
type Claim struct {
	ID    int64  `json:"id"`
	World string `json:"world"`
	Owner string `json:"owner"`
	MinX  int    `json:"minX"`
	MinZ  int    `json:"minZ"`
	MaxX  int    `json:"maxX"`
	MaxZ  int    `json:"maxZ"`
}

// Fake serves the web map contract for one world "world" and one region
// "default" (a circle of radius 1000 blocks around the origin) with the
// fixed overlays below, and the page from Static. Its zero value is not
// usable: build it with NewFake. It is safe for concurrent use.
type Fake struct {
	Static   fs.FS // the page's files (the static directory)
	Cells    []Cell
	Cached   []Location
	Delivery []Location
	Claims   []Claim

	epoch    atomic.Int64
	mu       sync.Mutex
	requests map[string]int
	tilePNG  sync.Map // key -> []byte
	meshes   map[mesh.Quality][]byte
	zooms    []int                 // zoom of every tile request, in order; guarded by mu
	held     map[int]chan struct{} // zooms whose tiles wait; guarded by mu
}

// TileZooms returns the zoom of every tile request so far, in the order
// they arrived.
func (f *Fake) TileZooms() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.zooms...)
}

// Hold makes the tile requests of zoom z wait (or fail when the client
// goes) until the returned function is called.
func (f *Fake) Hold(z int) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	if f.held == nil {
		f.held = map[int]chan struct{}{}
	}
	f.held[z] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.held, z)
			f.mu.Unlock()
			close(ch)
		})
	}
}

// NewFake returns a fake serving static's files at /map/.
func NewFake(static fs.FS) (*Fake, error) {
	f := &Fake{Static: static, requests: map[string]int{}, meshes: map[mesh.Quality][]byte{}}
	f.epoch.Store(1)
	f.Cells = []Cell{
		{X: 0, Z: 0, Cause: "safety", Tier: "dynamic", State: "active", TTLLeft: 3600},
		{X: 1, Z: 0, Cause: "safety", Tier: "dynamic", State: "probation", TTLLeft: 120},
		{X: -2, Z: 3, Cause: "claim", Tier: "static", State: "active", TTLLeft: -1},
		{X: 5, Z: -4, Cause: "biome", Tier: "static", State: "active", TTLLeft: -1},
		{X: -6, Z: -6, Cause: "safety", Tier: "dynamic", State: "active", TTLLeft: 60.5},
	}
	f.Cached = []Location{
		{X: 100, Y: 70, Z: 50, Stage: "hot", Sink: "general"},
		{X: -120, Y: 64, Z: 80, Stage: "cold", Sink: "general"},
		{X: 30, Y: 90, Z: -140, Stage: "hot", Sink: "login"},
		// One group subspace of three places.
		{X: 200, Y: 70, Z: 200, Stage: "hot", Sink: "group/8@8", Group: 1, Radius: 8},
		{X: 202, Y: 70, Z: 201, Stage: "hot", Sink: "group/8@8", Group: 1, Radius: 8},
		{X: 201, Y: 71, Z: 203, Stage: "hot", Sink: "group/8@8", Group: 1, Radius: 8},
	}
	f.Delivery = []Location{
		{X: 10, Y: 70, Z: 10, Sink: "general", At: "2025-01-01T00:00:00Z"},
		{X: -40, Y: 66, Z: 20, Sink: "login", At: "2025-01-01T00:00:01Z"},
	}
	f.Claims = []Claim{{ID: 1, World: "world", Owner: "alice", MinX: -200, MinZ: -200, MaxX: -150, MaxZ: -120}}
	for _, q := range []mesh.Quality{mesh.Full, mesh.Low} {
		b, err := mesh.Encode(GridMesh(q))
		if err != nil {
			return nil, fmt.Errorf("browsertest: %w", err)
		}
		f.meshes[q] = b
	}
	return f, nil
}

// GridMesh returns a small terrain-like mesh of one 512-block tile: a grid
// of 33x33 vertices (Full) or 9x9 (Low) over a sine-shaped hill.
func GridMesh(q mesh.Quality) *mesh.Mesh {
	n := 33
	if q == mesh.Low {
		n = 9
	}
	m := &mesh.Mesh{Quality: q}
	step := float32(512) / float32(n-1)
	m.Bounds.Min = [3]float32{0, 1e9, 0}
	m.Bounds.Max = [3]float32{512, -1e9, 512}
	for j := range n {
		for i := range n {
			x, z := float32(i)*step, float32(j)*step
			y := float32(64 + 40*math.Sin(float64(x)/90)*math.Cos(float64(z)/120))
			m.Vertices = append(m.Vertices, x, y, z)
			m.Normals = append(m.Normals, 0, 1, 0)
			m.Bounds.Min[1] = min(m.Bounds.Min[1], y)
			m.Bounds.Max[1] = max(m.Bounds.Max[1], y)
		}
	}
	for j := range n - 1 {
		for i := range n - 1 {
			a := uint32(j*n + i)
			b, c, d := a+1, a+uint32(n), a+uint32(n)+1
			m.Indices = append(m.Indices, a, c, b, b, c, d)
		}
	}
	return m
}

// Epoch returns the world's epoch; SetEpoch changes it.
func (f *Fake) Epoch() int64     { return f.epoch.Load() }
func (f *Fake) SetEpoch(e int64) { f.epoch.Store(e) }

// Requests returns how many requests of kind ("tile", "mesh-full",
// "mesh-low", "worlds", "memory", ...) the fake answered.
func (f *Fake) Requests(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[kind]
}

func (f *Fake) count(kind string) {
	f.mu.Lock()
	f.requests[kind]++
	f.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// ServeHTTP implements the contract's routes.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/map/" || strings.HasPrefix(p, "/map/static/"):
		f.count("static")
		name := "index.html"
		if p != "/map/" {
			name = strings.TrimPrefix(p, "/map/static/")
		}
		http.ServeFileFS(w, r, f.Static, name)
	case p == "/v1/map/worlds":
		f.count("worlds")
		writeJSON(w, map[string]any{"worlds": []map[string]any{{
			"name": "world", "kind": "procedural", "producer": "procgen@1", "epoch": f.Epoch(), "minY": -64, "maxY": 320,
		}}})
	case p == "/v1/map/regions":
		f.count("regions")
		writeJSON(w, map[string]any{"regions": []map[string]any{{
			"name": "default", "world": "world",
			"shape":  map[string]any{"kind": "circle", "centerX": 0, "centerZ": 0, "radius": 1000},
			"chunks": []int{-63, -63, 62, 62},
			"border": map[string]any{"centerX": 0, "centerZ": 0, "size": 2400},
		}}})
	case strings.HasPrefix(p, "/v1/worlds/world/tiles/"):
		f.tile(w, r, strings.TrimPrefix(p, "/v1/worlds/world/tiles/"))
	case strings.HasPrefix(p, "/v1/worlds/world/meshes/"):
		q := mesh.Full
		if r.URL.Query().Get("quality") == "low" {
			q = mesh.Low
		}
		f.count("mesh-" + q.String())
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-RTP-Mesh-Quality", q.String())
		_, _ = w.Write(f.meshes[q])
	case p == "/v1/worlds/world/claims":
		f.count("claims")
		writeJSON(w, map[string]any{"claims": f.Claims})
	case p == "/v1/map/regions/default/memory":
		f.count("memory")
		q := r.URL.Query()
		var b [4]int
		for i, k := range []string{"minX", "minZ", "maxX", "maxZ"} {
			v, err := strconv.Atoi(q.Get(k))
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", k+" is not an integer")
				return
			}
			b[i] = v
		}
		if (b[2]-b[0]+1)*(b[3]-b[1]+1) > 65536 {
			writeError(w, http.StatusBadRequest, "bad_request", "too many chunks")
			return
		}
		cells := []Cell{}
		for _, c := range f.Cells {
			if c.X >= b[0] && c.X <= b[2] && c.Z >= b[1] && c.Z <= b[3] {
				cells = append(cells, c)
			}
		}
		writeJSON(w, map[string]any{"now": 1733000000, "cells": cells})
	case p == "/v1/map/regions/default/cached":
		f.count("cached")
		writeJSON(w, map[string]any{"locations": f.Cached})
	case p == "/v1/map/regions/default/deliveries":
		f.count("deliveries")
		writeJSON(w, map[string]any{"deliveries": f.Delivery})
	case p == "/v1/map/regions/default/deliveries/stream":
		f.count("stream")
		f.stream(w, r)
	case p == "/v1/map/regions/default/inspect":
		f.count("inspect")
		x, err1 := strconv.Atoi(r.URL.Query().Get("x"))
		z, err2 := strconv.Atoi(r.URL.Query().Get("z"))
		if err1 != nil || err2 != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "x and z must be integers")
			return
		}
		writeJSON(w, map[string]any{
			"block": map[string]int{"x": x, "z": z}, "chunk": map[string]int{"x": x >> 4, "z": z >> 4},
			"inShape": x*x+z*z <= 1000*1000, "biome": "minecraft:plains", "ground": "minecraft:grass_block[snowy=false]",
			"y": 65, "safe": true, "reason": "accepted",
			"memory": map[string]any{"cause": "safety", "state": "active", "ttlLeft": 3600},
			"cached": []Location{{X: x, Y: 65, Z: z, Stage: "hot", Sink: "general"}},
		})
	default:
		writeError(w, http.StatusNotFound, "not_found", "no route "+p)
	}
}

func (f *Fake) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "no flusher")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	b, _ := json.Marshal(Location{X: 77, Y: 70, Z: -77, Sink: "general", At: "2025-01-01T00:00:02Z"})
	fmt.Fprintf(w, "event: delivery\ndata: %s\n\n", b)
	fl.Flush()
	<-r.Context().Done()
}

func (f *Fake) tile(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.Split(strings.TrimSuffix(rest, ".png"), "/")
	if len(parts) != 3 || !strings.HasSuffix(rest, ".png") {
		writeError(w, http.StatusNotFound, "not_found", "bad tile path")
		return
	}
	var v [3]int
	for i, s := range parts {
		n, err := strconv.Atoi(s)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_request", "bad tile coordinate")
			return
		}
		v[i] = n
	}
	if v[0] < 0 || v[0] > 8 {
		writeError(w, http.StatusBadRequest, "bad_request", "bad zoom")
		return
	}
	f.count("tile")
	f.mu.Lock()
	f.zooms = append(f.zooms, v[0])
	hold := f.held[v[0]]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	key := [3]int(v)
	b, ok := f.tilePNG.Load(key)
	if !ok {
		img := image.NewRGBA(image.Rect(0, 0, 512, 512))
		c := TileColour(v[0], v[1], v[2])
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			writeError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		b, _ = f.tilePNG.LoadOrStore(key, buf.Bytes())
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.([]byte))
}
