package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/world"
)

// The JSON of the answers. Durations are float milliseconds (keys ending
// in "Ms"), times RFC 3339 in UTC.

// teleportJSON is a Teleport: a location handed out.
type teleportJSON struct {
	ID       uint64  `json:"id"`
	Region   string  `json:"region"`
	World    string  `json:"world"`
	X        int64   `json:"x"`
	Y        int64   `json:"y"`
	Z        int64   `json:"z"`
	Biome    string  `json:"biome"`
	Sink     string  `json:"sink"`
	WaitedMs float64 `json:"waitedMs"`
}

func toTeleport(l engine.Location) teleportJSON {
	return teleportJSON{ID: l.ID, Region: l.Region, World: l.World, X: l.X, Y: l.Y, Z: l.Z,
		Biome: l.Biome, Sink: l.Sink, WaitedMs: ms(l.Waited)}
}

// ms is d in float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reservationJSON is a network reservation.
type reservationJSON struct {
	Token    string       `json:"token"`
	Location teleportJSON `json:"location"`
	Expires  time.Time    `json:"expires"`
}

type regionJSON struct {
	Name   string `json:"name"`
	World  string `json:"world"`
	Paused bool   `json:"paused"`
}

type regionsJSON struct {
	Regions []regionJSON `json:"regions"`
}

// claimJSON is a claim.
type claimJSON struct {
	ID      int64     `json:"id"`
	World   string    `json:"world"`
	Owner   string    `json:"owner"`
	MinX    int64     `json:"minX"`
	MinZ    int64     `json:"minZ"`
	MaxX    int64     `json:"maxX"`
	MaxZ    int64     `json:"maxZ"`
	Created time.Time `json:"created"`
}

func toClaim(c claims.Claim) claimJSON {
	return claimJSON{ID: c.ID, World: c.World, Owner: c.Owner, MinX: c.MinX, MinZ: c.MinZ,
		MaxX: c.MaxX, MaxZ: c.MaxZ, Created: c.Created.UTC()}
}

type claimsJSON struct {
	Claims []claimJSON `json:"claims"`
}

// statsJSON is engine.Stats with the durations in milliseconds and the
// resident store's counters under camelCase keys.
type statsJSON struct {
	Region   string         `json:"region"`
	World    string         `json:"world"`
	Paused   bool           `json:"paused"`
	Restored int            `json:"restored"`
	Latency  latencyJSON    `json:"latency"`
	Pipeline pipeline.Stats `json:"pipeline"`
	Memory   memory.Stats   `json:"memory"`
	Resident residentJSON   `json:"resident"`
}

type latencyJSON struct {
	Count uint64  `json:"count"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

type residentJSON struct {
	Opened     uint64 `json:"opened"`
	Closed     uint64 `json:"closed"`
	Forced     uint64 `json:"forced"`
	Open       int    `json:"open"`
	Hits       uint64 `json:"hits"`
	Misses     uint64 `json:"misses"`
	Loads      uint64 `json:"loads"`
	LoadErrors uint64 `json:"loadErrors"`
	Evictions  uint64 `json:"evictions"`
	Resident   int    `json:"resident"`
	Reserved   int    `json:"reserved"`
	Bytes      int64  `json:"bytes"`
	Loading    int    `json:"loading"`
}

func toResident(r world.ResidentStats) residentJSON {
	return residentJSON{Opened: r.Opened, Closed: r.Closed, Forced: r.Forced, Open: r.Open,
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
		Latency:  latencyJSON{Count: l.Count, P50Ms: ms(l.P50), P90Ms: ms(l.P90), P99Ms: ms(l.P99), MaxMs: ms(l.Max)},
		Pipeline: st.Pipeline,
		Memory:   st.Memory,
		Resident: toResident(st.Resident),
	}
}

type statusJSON struct {
	Status string `json:"status"`
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
