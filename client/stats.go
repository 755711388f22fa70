package client

import (
	"encoding/json"
	"time"

	"github.com/rtpengine/rtp/api"
)

// Stats are a region's counters and gauges as GET
// /v1/regions/{region}/stats reports them (the engine's Stats). Only the
// fields below are decoded; Raw holds the whole answer, including what a
// newer server adds.
type Stats struct {
	Region   string        `json:"region"`
	World    string        `json:"world"`
	Paused   bool          `json:"paused"`
	Restored int           `json:"restored"`
	Pipeline PipelineStats `json:"pipeline"`
	Memory   MemoryStats   `json:"memory"`
	Resident ResidentStats `json:"resident"`
	// Unique is what unique placement did; UnknownBlocks the block names
	// the collision data does not know; Watch what the region files'
	// watcher saw (nil for worlds without one).
	Unique        UniqueStats        `json:"unique"`
	UnknownBlocks UnknownBlocksStats `json:"unknownBlocks"`
	Watch         *WatchStats        `json:"watch,omitempty"`
	// Latency summarizes the teleports served since start; nil when the
	// server does not report it.
	Latency *Latency `json:"latency,omitempty"`
	// Raw is the answer as the server wrote it.
	Raw json.RawMessage `json:"-"`
}

// SinkFill is a queue's fill and capacity.
type SinkFill struct {
	Name     string `json:"name"`
	Fill     int    `json:"fill"`
	Capacity int    `json:"capacity"`
}

// SinkStats describe one hot sink.
type SinkStats struct {
	Name       string  `json:"name"`
	Kind       string  `json:"kind"`
	Fill       int     `json:"fill"`
	Capacity   int     `json:"capacity"`
	Quota      int     `json:"quota"`
	Leased     int     `json:"leased"`
	Demand     float64 `json:"demand"` // requests per second (EWMA)
	Pending    int     `json:"pending"`
	Hits       uint64  `json:"hits"`
	Misses     uint64  `json:"misses"`
	Stale      uint64  `json:"stale"`
	Promotions uint64  `json:"promotions"`
}

// PipelineStats are the location pipeline's state and counters.
type PipelineStats struct {
	Backlog             SinkFill          `json:"backlog"`
	Cold                SinkFill          `json:"cold"`
	Sinks               []SinkStats       `json:"sinks"`
	Screening           int               `json:"screening"`
	Promoting           int               `json:"promoting"`
	Screened            uint64            `json:"screened"`
	Promotions          uint64            `json:"promotions"`
	ScreenRejections    map[string]uint64 `json:"screenRejections"`
	PromotionRejections map[string]uint64 `json:"promotionRejections"`
	LoginExhaustion     uint64            `json:"loginExhaustion"`
	Misses              uint64            `json:"misses"`
	// ReservationFailures split the RESERVATION_FAILED promotion
	// rejections by kind (timeout, ungenerated, outside, unreadable);
	// LastReservationError is the latest unreadable one's text.
	ReservationFailures  map[string]uint64 `json:"reservationFailures"`
	LastReservationError string            `json:"lastReservationError"`
}

// UniqueStats count the work of unique placement.
type UniqueStats struct {
	Radius     int64  `json:"radius"`
	Dropped    uint64 `json:"dropped"`
	SpotChunks int    `json:"spotChunks"`
}

// UnknownBlocksStats count the block names the collision data does not
// know (never landed on).
type UnknownBlocksStats struct {
	Names      int64  `json:"names"`
	Rejections uint64 `json:"rejections"`
}

// WatchStats count what a Minecraft world's watcher saw, and what its
// region-file reader counted.
type WatchStats struct {
	Polls         uint64 `json:"polls"`
	ChangedChunks uint64 `json:"changedChunks"`
	Dropped       uint64 `json:"dropped"`
	Reader        struct {
		ReadErrors    uint64 `json:"readErrors"`
		TornRetries   uint64 `json:"tornRetries"`
		DamagedChunks int    `json:"damagedChunks"`
	} `json:"reader"`
}

// MemoryStats describe the region's spatial memory.
type MemoryStats struct {
	Len           int64            `json:"len"`
	BadCount      int64            `json:"badCount"`
	BadFraction   float64          `json:"badFraction"`
	Probation     int64            `json:"probation"`
	Coverage      float64          `json:"coverage"`
	ActiveRuns    int              `json:"activeRuns"`
	TopCause      string           `json:"topCause"`
	TopCauseShare float64          `json:"topCauseShare"`
	ByCause       map[string]int64 `json:"byCause"`
}

// ResidentStats are the counters of the resident chunk store of the
// region's world.
type ResidentStats = api.Resident

// Latency summarizes the durations of the teleports a region served.
type Latency struct {
	Count uint64
	P50   time.Duration
	P90   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// UnmarshalJSON reads a latency summary whose durations are float
// milliseconds, keyed "p50" or "p50Ms" (and so on).
func (l *Latency) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	get := func(key string) (float64, error) {
		for _, k := range []string{key + "Ms", key} {
			if raw, ok := m[k]; ok {
				var f float64
				if err := json.Unmarshal(raw, &f); err != nil {
					return 0, err
				}
				return f, nil
			}
		}
		return 0, nil
	}
	var out Latency
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"p50", &out.P50}, {"p90", &out.P90}, {"p99", &out.P99}, {"max", &out.Max}} {
		v, err := get(f.key)
		if err != nil {
			return err
		}
		*f.dst = fromMs(v)
	}
	if raw, ok := m["count"]; ok {
		if err := json.Unmarshal(raw, &out.Count); err != nil {
			return err
		}
	}
	*l = out
	return nil
}
