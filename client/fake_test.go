package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rtpengine/rtp/api"
)

// fakeServer answers every route of the API the way the contract documents
// them, over a small in-memory state. It is safe for concurrent use.
type fakeServer struct {
	token string // admin token; "" leaves mutating routes open

	mu       sync.Mutex // protects the following fields
	hot      int        // locations ready in the general sink
	login    int        // locations ready in the login sink
	nextID   uint64
	out      map[uint64]bool // ids handed out and not completed
	paused   map[string]bool
	joined   map[string]bool
	queues   map[string]int
	leases   map[string]string // token -> state: "leased", "redeemed"
	claims   map[int64]Claim
	nextCl   int64
	lastBody map[string]any // last decoded teleport or reservation body
	restart  bool           // Reload answers restart-needed
	ready    bool
	resets   int
	changed  [][]int64 // chunks of the last changes report
}

func newFake(token string) *fakeServer {
	return &fakeServer{token: token, hot: 10, login: 5, out: map[uint64]bool{}, paused: map[string]bool{},
		joined: map[string]bool{}, queues: map[string]int{}, leases: map[string]string{},
		claims: map[int64]Claim{}, ready: true}
}

const fakeMaxBody = 1 << 10

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly, as the contract says; it writes the
// error answer and returns false on a bad body.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data := make([]byte, fakeMaxBody+1)
	n, _ := readFull(r.Body, data)
	if n > fakeMaxBody {
		writeErr(w, http.StatusRequestEntityTooLarge, "too-large", "body larger than 1024 bytes")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "bad-request", err.Error())
		return false
	}
	if dec.More() {
		writeErr(w, http.StatusBadRequest, "bad-request", "data after the object")
		return false
	}
	return true
}

func readFull(r interface{ Read([]byte) (int, error) }, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		k, err := r.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (f *fakeServer) handler() http.Handler {
	mux := http.NewServeMux()
	region := func(w http.ResponseWriter, r *http.Request) (string, bool) {
		name := r.PathValue("region")
		if name != "default" && name != "a b/c" {
			writeErr(w, http.StatusNotFound, "unknown-region", fmt.Sprintf("no region %q", name))
			return "", false
		}
		return name, true
	}
	mux.HandleFunc("GET /v1/regions", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"regions": []Region{
			{Name: "a b/c", World: "world", Paused: f.paused["a b/c"]},
			{Name: "default", World: "world", Paused: f.paused["default"]}}})
	})
	mux.HandleFunc("GET /v1/regions/{region}/stats", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		writeJSON(w, 200, map[string]any{
			"region": name, "world": "world", "restored": 3, "future": "kept in Raw",
			"pipeline": map[string]any{
				"backlog": map[string]any{"name": "backlog", "fill": 1, "capacity": 64},
				"cold":    map[string]any{"name": "cold", "fill": 20, "capacity": 256},
				"sinks": []map[string]any{
					{"name": "general", "kind": "general", "fill": f.hot, "capacity": 10, "hits": 7, "misses": 2},
					{"name": "login", "kind": "login", "fill": f.login, "capacity": 5}},
				"misses": 2, "screenRejections": map[string]uint64{"water": 4},
			},
			"memory":  map[string]any{"coverage": 0.25, "badFraction": 0.2, "topCause": "water", "topCauseShare": 0.75},
			"latency": map[string]any{"count": 9, "p50Ms": 0.012, "p90Ms": 0.5, "p99Ms": 1.5, "maxMs": 2000},
			"paused":  f.paused[name], "resident": map[string]any{"open": 4, "resident": 12},
		})
	})
	mux.HandleFunc("POST /v1/regions/{region}/teleports", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		var body struct {
			Player string `json:"player"`
			Sink   string `json:"sink"`
			Token  string `json:"token"`
			WaitMs *int   `json:"waitMs"`
		}
		if !decode(w, r, &body) {
			return
		}
		if body.Player == "" || len(body.Player) > 64 {
			writeErr(w, 400, "bad-request", "player: must be 1 to 64 characters")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lastBody = map[string]any{"player": body.Player, "sink": body.Sink, "token": body.Token}
		if body.WaitMs != nil {
			f.lastBody["waitMs"] = *body.WaitMs
		}
		src := &f.hot
		switch body.Sink {
		case "":
		case "login":
			src = &f.login
		default:
			writeErr(w, 400, "unknown-sink", fmt.Sprintf("no sink %q", body.Sink))
			return
		}
		if f.paused[name] && *src == 0 {
			writeErr(w, 503, "paused", "the scan is paused")
			return
		}
		if *src == 0 {
			writeErr(w, 503, "no-location", "no location ready")
			return
		}
		*src--
		f.nextID++
		f.out[f.nextID] = true
		sink := body.Sink
		if sink == "" {
			sink = "general"
		}
		writeJSON(w, 200, map[string]any{"id": f.nextID, "region": name, "world": "world",
			"x": 100 + int(f.nextID), "y": 64, "z": -5, "biome": "plains", "sink": sink, "waitedMs": 1.5})
	})
	done := func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil {
			writeErr(w, 400, "bad-request", "id: not a number")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.out[id] {
			writeErr(w, 404, "unknown-id", fmt.Sprintf("no teleport %d", id))
			return
		}
		delete(f.out, id)
		w.WriteHeader(http.StatusNoContent)
	}
	mux.HandleFunc("POST /v1/teleports/{id}/complete", done)
	mux.HandleFunc("DELETE /v1/teleports/{id}", done)
	player := func(do func(region, player string) (int, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			name, ok := region(w, r)
			if !ok {
				return
			}
			f.mu.Lock()
			status, code := do(name, r.PathValue("player"))
			f.mu.Unlock()
			if code != "" {
				writeErr(w, status, code, code)
				return
			}
			w.WriteHeader(status)
		}
	}
	mux.HandleFunc("POST /v1/regions/{region}/players/{player}/join", player(func(_, p string) (int, string) {
		f.joined[p] = true
		return 204, ""
	}))
	mux.HandleFunc("POST /v1/regions/{region}/players/{player}/quit", player(func(_, p string) (int, string) {
		delete(f.joined, p)
		return 204, ""
	}))
	mux.HandleFunc("PUT /v1/regions/{region}/players/{player}/queue", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := region(w, r); !ok {
			return
		}
		var body struct {
			Capacity *int `json:"capacity"`
		}
		if !decode(w, r, &body) {
			return
		}
		c := -1
		if body.Capacity != nil {
			if *body.Capacity < 0 {
				writeErr(w, 400, "bad-request", "capacity: negative")
				return
			}
			c = *body.Capacity
		}
		f.mu.Lock()
		f.queues[r.PathValue("player")] = c
		f.mu.Unlock()
		w.WriteHeader(204)
	})
	mux.HandleFunc("DELETE /v1/regions/{region}/players/{player}/queue", player(func(_, p string) (int, string) {
		delete(f.queues, p)
		return 204, ""
	}))
	mux.HandleFunc("POST /v1/regions/{region}/network/reservations", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		var body struct {
			Token  string `json:"token"`
			WaitMs *int64 `json:"waitMs"`
		}
		if !decode(w, r, &body) {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lastBody = map[string]any{"token": body.Token}
		if body.WaitMs != nil {
			f.lastBody["waitMs"] = *body.WaitMs
		}
		if body.Token == "" {
			body.Token = fmt.Sprintf("tok-%d", len(f.leases)+1)
		}
		f.leases[body.Token] = "leased"
		writeJSON(w, 201, map[string]any{"token": body.Token, "expires": "2030-01-02T03:04:05Z",
			"location": map[string]any{"id": 0, "region": name, "world": "world", "x": 1, "y": 2, "z": 3,
				"biome": "forest", "sink": "network", "waitedMs": 0}})
	})
	mux.HandleFunc("POST /v1/regions/{region}/network/reservations/{token}/redeem", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch f.leases[r.PathValue("token")] {
		case "":
			writeErr(w, 404, "unknown-token", "no such lease")
		case "redeemed":
			writeErr(w, 409, "token-redeemed", "redeemed already")
		default:
			f.leases[r.PathValue("token")] = "redeemed"
			f.nextID++
			f.out[f.nextID] = true
			writeJSON(w, 200, map[string]any{"id": f.nextID, "region": name, "world": "world", "x": 1, "y": 2, "z": 3,
				"biome": "forest", "sink": "network", "waitedMs": 0})
		}
	})
	mux.HandleFunc("DELETE /v1/regions/{region}/network/reservations/{token}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := region(w, r); !ok {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		tok := r.PathValue("token")
		if _, ok := f.leases[tok]; !ok {
			writeErr(w, 404, "unknown-token", "no such lease")
			return
		}
		delete(f.leases, tok)
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /v1/worlds/{world}/claims", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("world") != "world" {
			writeErr(w, 404, "unknown-world", "no such world")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		list := []Claim{}
		for id := int64(1); id <= f.nextCl; id++ {
			if c, ok := f.claims[id]; ok {
				list = append(list, c)
			}
		}
		writeJSON(w, 200, map[string]any{"claims": list})
	})
	mux.HandleFunc("POST /v1/worlds/{world}/claims", func(w http.ResponseWriter, r *http.Request) {
		var c Claim
		var body NewClaim
		if !decode(w, r, &body) {
			return
		}
		if body.Owner == "" || body.MinX > body.MaxX || body.MinZ > body.MaxZ {
			writeErr(w, 400, "invalid", "owner: empty, or min > max")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.nextCl++
		c = Claim{ID: f.nextCl, World: r.PathValue("world"), Owner: body.Owner, MinX: body.MinX, MinZ: body.MinZ,
			MaxX: body.MaxX, MaxZ: body.MaxZ, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
		f.claims[c.ID] = c
		writeJSON(w, 201, c)
	})
	mux.HandleFunc("POST /v1/worlds/{world}/changes", func(w http.ResponseWriter, r *http.Request) {
		var body api.ChangesRequest
		if !decode(w, r, &body) {
			return
		}
		if r.PathValue("world") != "world" {
			writeErr(w, 404, "unknown-world", "no such world")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.changed = body.Chunks
		writeJSON(w, 200, api.Changes{Chunks: len(body.Chunks), Held: len(body.Chunks)})
	})
	mux.HandleFunc("DELETE /v1/worlds/{world}/claims/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.claims[id]; !ok {
			writeErr(w, 404, "unknown-claim", "no such claim")
			return
		}
		delete(f.claims, id)
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /v1/admin/regions/{region}/scan/{op}", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.PathValue("op") {
		case "pause":
			f.paused[name] = true
		case "resume":
			f.paused[name] = false
		case "reset":
			f.resets++
		default:
			writeErr(w, 404, "not-found", "no such route")
			return
		}
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /v1/admin/regions/{region}/memory", func(w http.ResponseWriter, r *http.Request) {
		name, ok := region(w, r)
		if !ok {
			return
		}
		writeJSON(w, 200, map[string]any{"region": name, "runs": []int{1, 2, 3}, "pad": strings.Repeat("x", 200)})
	})
	mux.HandleFunc("POST /v1/admin/reload", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.restart {
			writeErr(w, 409, "restart-needed", "regions.default.world changed")
			return
		}
		w.WriteHeader(204)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.ready {
			writeErr(w, 503, "not-ready", "region default: cold cache empty")
			return
		}
		writeJSON(w, 200, map[string]string{"status": "ready"})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/v1/admin/")
		if f.token != "" && !open && r.Header.Get("Authorization") != "Bearer "+f.token {
			writeErr(w, 401, "unauthorized", "a bearer token is required")
			return
		}
		mux.ServeHTTP(w, r)
	})
}
