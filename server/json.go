package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/world"
)

// The JSON of the answers is package api's; the stats are assembled here
// from the engine's types. Durations are float milliseconds (keys ending
// in "Ms"), times RFC 3339 in UTC.

func toTeleport(l engine.Location) api.Teleport {
	return api.Teleport{ID: l.ID, Region: l.Region, World: l.World, X: l.X, Y: l.Y, Z: l.Z,
		StandY: l.StandY, Biome: l.Biome, Sink: l.Sink, WaitedMs: ms(l.Waited)}
}

// ms is d in float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func toClaim(c claims.Claim) api.Claim {
	return api.Claim{ID: c.ID, World: c.World, Owner: c.Owner, MinX: c.MinX, MinZ: c.MinZ,
		MaxX: c.MaxX, MaxZ: c.MaxZ, Created: c.Created.UTC()}
}

// statsJSON is engine.Stats with the durations in milliseconds and the
// resident store's counters under camelCase keys.
// It is not in package api because it carries pipeline.Stats and
// memory.Stats as they are, which api (standard library only) cannot name.
type statsJSON struct {
	Region   string         `json:"region"`
	World    string         `json:"world"`
	Paused   bool           `json:"paused"`
	Restored int            `json:"restored"`
	Latency  api.Latency    `json:"latency"`
	Pipeline pipeline.Stats `json:"pipeline"`
	Memory   memory.Stats   `json:"memory"`
	Resident api.Resident   `json:"resident"`
	// Unique, UnknownBlocks and Watch are the engine's as they are (Watch
	// only for worlds with a watcher).
	Unique        engine.UniqueStats  `json:"unique"`
	UnknownBlocks safety.UnknownStats `json:"unknownBlocks"`
	Watch         *engine.WatchStats  `json:"watch,omitempty"`
	// Recovery says whether the last start followed a crash and what it
	// discarded and replayed.
	Recovery engine.RecoveryStats `json:"recovery"`
	// Handouts count the locations handed out and how they closed.
	Handouts engine.HandoutStats `json:"handouts"`
}

func toResident(r world.ResidentStats) api.Resident {
	return api.Resident{Opened: r.Opened, Closed: r.Closed, Forced: r.Forced, Open: r.Open,
		Hits: r.Hits, Misses: r.Misses, Loads: r.Loads, LoadErrors: r.LoadErrors, Evictions: r.Evictions,
		Resident: r.Resident, Reserved: r.Reserved, Bytes: r.Bytes, Loading: r.Loading}
}

func toStats(st engine.Stats) statsJSON {
	l := st.Latency
	// Empty lists and maps as [] and {}, never null.
	if st.Pipeline.Sinks == nil {
		st.Pipeline.Sinks = []pipeline.SinkStats{}
	}
	if st.Pipeline.RecentMisses == nil {
		st.Pipeline.RecentMisses = []pipeline.MissRecord{}
	}
	if st.Pipeline.ScreenRejections == nil {
		st.Pipeline.ScreenRejections = map[string]uint64{}
	}
	if st.Pipeline.PromotionRejections == nil {
		st.Pipeline.PromotionRejections = map[string]uint64{}
	}
	if st.Memory.ByCause == nil {
		st.Memory.ByCause = map[string]int64{}
	}
	if st.Memory.Rejections == nil {
		st.Memory.Rejections = map[string]int64{}
	}
	return statsJSON{
		Region: st.Region, World: st.World, Paused: st.Paused, Restored: st.Restored,
		Latency:       api.Latency{Count: l.Count, P50Ms: ms(l.P50), P90Ms: ms(l.P90), P99Ms: ms(l.P99), MaxMs: ms(l.Max)},
		Pipeline:      st.Pipeline,
		Memory:        st.Memory,
		Resident:      toResident(st.Resident),
		Unique:        st.Unique,
		UnknownBlocks: st.UnknownBlocks,
		Watch:         st.Watch,
		Recovery:      st.Recovery,
		Handouts:      st.Handouts,
	}
}

// writeJSON answers with v as JSON. It fails (writing nothing) only if v
// does not marshal; an error writing the answer (the client went away) is
// not reported.
func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
	return nil
}

// noContent answers 204.
func noContent(w http.ResponseWriter) error {
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
	return nil
}
