package loadgen

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/rtpengine/rtp/api"
)

// nullBodyLimit bounds the request bodies NullHandler reads.
const nullBodyLimit = 64 << 10

// NullHandler answers the requests Run and Burst send (teleports, their
// completions and cancels, joins and quits, health checks) at once, with
// answers of the API's shapes and no work behind them. A server running it
// costs nothing per request, so Run against it measures what the machine,
// its network path and the generator add to every request: the floor under
// a real server's figures on the same machine.
//
// A teleport body is decoded as a real server would (its sink is echoed
// back, "general" when none); one that is not a JSON object with a player
// gets 400. Teleports are numbered from 1. A map tile
// (GET /v1/worlds/{world}/tiles/...) is answered with DefaultNullTileBytes
// bytes, as a cached tile is; every other route of the API answers 404.
func NullHandler() http.Handler { return NullHandlerWith(NullOptions{}) }

// DefaultNullTileBytes is NullOptions.TileBytes's default: about the
// size of a 512-pixel tile of the procedural world's relief.
const DefaultNullTileBytes = 128 << 10

// NullOptions configure NullHandlerWith. The zero value is the default.
type NullOptions struct {
	// TileBytes is the size of the body a tile request gets, so that a
	// comparison with a real server moves as many bytes. Default
	// DefaultNullTileBytes.
	TileBytes int
}

// NullHandlerWith is NullHandler with options.
func NullHandlerWith(o NullOptions) http.Handler {
	if o.TileBytes <= 0 {
		o.TileBytes = DefaultNullTileBytes
	}
	tile := make([]byte, o.TileBytes)
	for i := range tile {
		tile[i] = byte(i * 131 >> 3) // not all zeros: the same bytes a PNG would move
	}
	var next atomic.Uint64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/regions/{region}/teleports", func(w http.ResponseWriter, r *http.Request) {
		var req api.TeleportRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, nullBodyLimit)).Decode(&req); err != nil || req.Player == nil {
			nullError(w, http.StatusBadRequest, "bad-request", "want a JSON object with a player")
			return
		}
		id := next.Add(1)
		sink := req.Sink
		if sink == "" {
			sink = "general"
		}
		nullJSON(w, http.StatusOK, api.Teleport{
			ID: id, Region: r.PathValue("region"), World: "null",
			X: int64(id % 4096), Y: 64, Z: int64(id / 4096 % 4096), StandY: 64,
			Biome: "minecraft:plains", Sink: sink,
		})
	})
	noContent := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, nullBodyLimit))
		w.WriteHeader(http.StatusNoContent)
	}
	withID := func(w http.ResponseWriter, r *http.Request) {
		if _, err := strconv.ParseUint(r.PathValue("id"), 10, 64); err != nil {
			nullError(w, http.StatusBadRequest, "bad-request", "the teleport id is not a number")
			return
		}
		noContent(w, r)
	}
	mux.HandleFunc("POST /v1/teleports/{id}/complete", withID)
	mux.HandleFunc("DELETE /v1/teleports/{id}", withID)
	mux.HandleFunc("POST /v1/regions/{region}/players/{player}/join", noContent)
	mux.HandleFunc("POST /v1/regions/{region}/players/{player}/quit", noContent)
	mux.HandleFunc("GET /v1/worlds/{world}/tiles/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cache-Control", "public, max-age=30")
		w.Header().Set("ETag", `"null-tile"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(tile)))
		_, _ = w.Write(tile)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}

func nullJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func nullError(w http.ResponseWriter, code int, errCode, msg string) {
	nullJSON(w, code, api.Error{Error: api.ErrorDetail{Code: errCode, Message: msg}})
}
