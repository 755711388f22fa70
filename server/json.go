package server

import (
	"encoding/json"
	"maps"
	"net/http"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/world"
)

// This file is the one place where the engine's types become package
// api's wire shapes: no engine, pipeline or memory struct is marshalled as
// it is. Durations become float milliseconds (keys ending in "Ms"), times
// UTC, nil maps and lists {} and [].

// APITeleport returns the wire shape of a location handed out: the answer
// of a teleport and of a redeemed reservation. The rtp command prints the
// same shape.
func APITeleport(l engine.Location) api.Teleport {
	return api.Teleport{ID: l.ID, Region: l.Region, World: l.World, X: l.X, Y: l.Y, Z: l.Z,
		StandY: l.StandY, Biome: l.Biome, Sink: l.Sink, WaitedMs: api.Ms(l.Waited)}
}

// APIGroupTeleport returns the wire shape of a group placed: the answer
// of a group teleport. The rtp command prints the same shape.
func APIGroupTeleport(ps []engine.GroupPlace) api.GroupTeleport {
	out := api.GroupTeleport{Locations: make([]api.GroupPlace, 0, len(ps))}
	for _, p := range ps {
		out.Locations = append(out.Locations, api.GroupPlace{Player: p.Player, Teleport: APITeleport(p.Location)})
	}
	return out
}

func toReservation(r engine.Reservation) api.Reservation {
	return api.Reservation{Token: r.Token, Location: APITeleport(r.Location), Expires: r.Expires.UTC()}
}

func toClaim(c claims.Claim) api.Claim {
	return api.Claim{ID: c.ID, World: c.World, Owner: c.Owner, MinX: c.MinX, MinZ: c.MinZ,
		MaxX: c.MaxX, MaxZ: c.MaxZ, Created: c.Created.UTC()}
}

func toClaims(list []claims.Claim) api.Claims {
	out := api.Claims{Claims: make([]api.Claim, 0, len(list))}
	for _, c := range list {
		out.Claims = append(out.Claims, toClaim(c))
	}
	return out
}

// APIStats returns the wire shape of a region's stats: the answer of GET
// /v1/regions/{region}/stats.
func APIStats(st engine.Stats) api.Stats {
	l := st.Latency
	out := api.Stats{
		Region: st.Region, World: st.World, Paused: st.Paused, Restored: st.Restored,
		Latency:  api.Latency{Count: l.Count, P50Ms: api.Ms(l.P50), P90Ms: api.Ms(l.P90), P99Ms: api.Ms(l.P99), MaxMs: api.Ms(l.Max)},
		Served:   orEmpty(st.Served),
		Pipeline: toPipeline(st.Pipeline),
		Memory:   toMemory(st.Memory),
		Resident: toResident(st.Resident),
		Unique: api.UniqueStats{RadiusBlocks: st.Unique.Radius, Marked: st.Unique.Marked, Chunks: st.Unique.Chunks,
			Lost: st.Unique.Lost, Dropped: st.Unique.Dropped, SpotChunks: st.Unique.SpotChunks},
		UnknownBlocks: api.UnknownBlocksStats{Names: st.UnknownBlocks.Names, Rejections: st.UnknownBlocks.Rejections},
		Recovery: api.RecoveryStats{Unclean: st.Recovery.Unclean, Discarded: st.Recovery.Discarded,
			Replayed: st.Recovery.Replayed, Spots: st.Recovery.Spots, LostDatabase: st.Recovery.LostDatabase},
		Handouts: api.HandoutStats{Open: st.Handouts.Open, Completed: st.Handouts.Completed, Cancelled: st.Handouts.Cancelled,
			Expired: st.Handouts.Expired, Replaced: st.Handouts.Replaced, Refused: st.Handouts.Refused},
		Exhaustion: api.ExhaustionStats{Exhausted: st.Exhaustion.Exhausted, ByCause: orEmpty(st.Exhaustion.ByCause),
			Times: st.Exhaustion.Times},
	}
	if !st.Exhaustion.Since.IsZero() {
		t := st.Exhaustion.Since.UTC()
		out.Exhaustion.Since = &t
	}
	if w := st.Watch; w != nil {
		r := w.Reader
		out.Watch = &api.WatchStats{PeriodMs: api.Ms(w.Period), Polls: w.Polls, Errors: w.Errors,
			ChangedChunks: w.ChangedChunks, ChangedRegions: w.ChangedRegions, Damaged: w.Damaged,
			Forgotten: w.Forgotten, Dropped: w.Dropped, Reported: w.Reported, Held: w.Held,
			Reader: api.ReaderStats{ReadErrors: r.ReadErrors, TornRetries: r.TornRetries, DamagedChunks: r.DamagedChunks,
				Polls: r.Polls, ChangedChunks: r.ChangedChunks, WarningsSuppressed: r.WarningsSuppressed}}
	}
	if f := st.Fleet; f != nil {
		out.Fleet = &api.FleetStats{Node: f.Node, Degraded: f.Degraded, LeaseLost: f.LeaseLost, LeaseUntil: f.LeaseUntil.UTC(),
			Listening: f.Listening, Share: f.Share, Nodes: f.Nodes, FeedMarks: f.FeedMarks, FeedSpots: f.FeedSpots,
			FeedReads: f.FeedReads, FeedErrors: f.FeedErrors, Adopted: f.Adopted, ClaimErrors: f.ClaimErrors, Foreign: f.Foreign,
			Pending: f.Pending, Failing: f.Failing, LastError: f.LastError}
	}
	return out
}

func toFill(f pipeline.SinkFill) api.SinkFill {
	return api.SinkFill{Name: f.Name, Fill: f.Fill, Capacity: f.Capacity}
}

func toPipeline(p pipeline.Stats) api.PipelineStats {
	out := api.PipelineStats{
		Backlog: toFill(p.Backlog), Cold: toFill(p.Cold),
		Sinks:     make([]api.SinkStats, 0, len(p.Sinks)),
		Screening: p.Screening, Promoting: p.Promoting, Screened: p.Screened, Promotions: p.Promotions,
		Transfers: p.Transfers, Demotions: p.Demotions, Trims: p.Trims, Mismatched: p.Mismatched,
		ScreenRejections:     orEmpty(p.ScreenRejections),
		PromotionRejections:  orEmpty(p.PromotionRejections),
		ReservationFailures:  orEmpty(p.ReservationFailures),
		LastReservationError: p.LastReservationError,
		LoginExhaustion:      p.LoginExhaustion,
		Misses:               p.Misses,
		RecentMisses:         make([]api.MissRecord, 0, len(p.RecentMisses)),
		RowAdds:              p.RowAdds, RowRemoves: p.RowRemoves,
		Reservations: api.ReservationCloseStats{Released: p.Reservations.Released,
			ForeignClosed: p.Reservations.ForeignClosed, DoubleReleases: p.Reservations.DoubleReleases},
		MemoryErrors: p.MemoryErrors, Held: p.Held, Duplicates: p.Duplicates, KnownBad: p.KnownBad,
		ChangedCold: p.ChangedCold, Changed: p.Changed, CallbackPanics: p.CallbackPanics,
	}
	for _, s := range p.Sinks {
		ss := api.SinkStats{Name: s.Name, Kind: s.Kind, Fill: s.Fill, Capacity: s.Capacity,
			Quota: s.Quota, Leased: s.Leased, DemandPerSecond: s.Demand, Pending: s.Pending,
			Hits: s.Hits, Misses: s.Misses, Stale: s.Stale, Changed: s.Changed, Promotions: s.Promotions,
			Mismatched: s.Mismatched, TransfersIn: s.TransfersIn, TransfersOut: s.TransfersOut,
			Demotions: s.Demotions, Trims: s.Trims}
		if g := s.Group; g != nil {
			ss.Group = &api.GroupSinkStats{Size: g.Size, Radius: g.Radius, Places: g.Places, Groups: g.Groups,
				Players: g.Players, Trimmed: g.Trimmed, NoRoom: g.NoRoom, Backoff: g.Backoff}
		}
		out.Sinks = append(out.Sinks, ss)
	}
	for _, m := range p.RecentMisses {
		fills := make([]api.SinkFill, 0, len(m.Fills))
		for _, f := range m.Fills {
			fills = append(fills, toFill(f))
		}
		out.RecentMisses = append(out.RecentMisses, api.MissRecord{Time: m.Time.UTC(), Sink: m.Sink, Fills: fills})
	}
	return out
}

func toMemory(m memory.Stats) api.MemoryStats {
	out := api.MemoryStats{World: m.World, Len: m.Len, BadCount: m.BadCount, BadFraction: m.BadFraction,
		Probation: m.Probation, Coverage: m.Coverage, ActiveRuns: m.ActiveRuns, ProbationRuns: m.ProbationRuns,
		StaticRuns: m.StaticRuns, TopCause: m.TopCause, TopCauseShare: m.TopCauseShare,
		ByCause: orEmpty(m.ByCause), Rejections: orEmpty(m.Rejections),
		Pending: m.Pending, Restored: m.Restored, Ignored: m.Ignored, Rebuilds: m.Rebuilds,
		ResidentBytes: m.ResidentBytes}
	if !m.LastRebuild.IsZero() {
		t := m.LastRebuild.UTC()
		out.LastRebuild = &t
	}
	return out
}

func toResident(r world.ResidentStats) api.Resident {
	return api.Resident{Opened: r.Opened, Closed: r.Closed, Forced: r.Forced, Open: r.Open,
		Hits: r.Hits, Misses: r.Misses, Loads: r.Loads, LoadErrors: r.LoadErrors, Evictions: r.Evictions,
		Stale: r.Stale, Resident: r.Resident, Reserved: r.Reserved, Retired: r.Retired,
		Bytes: r.Bytes, Loading: r.Loading}
}

// orEmpty returns a copy of m, {} rather than null when m is nil. The copy
// keeps the answer from sharing a map with the engine.
func orEmpty[V uint64 | int64](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	maps.Copy(out, m)
	return out
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
