package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
)

// TestEngineCollector scrapes a fake engine's stats through a pedantic
// registry (which checks the collector's descriptions against what it
// collects) and checks the values.
func TestEngineCollector(t *testing.T) {
	f := newFake(t)
	f.stats = &engine.Stats{
		Region: "r", World: "w", Restored: 3, Paused: true, Exhaustion: engine.ExhaustionStats{Exhausted: true},
		UnknownBlocks: safety.UnknownStats{Names: 2, Rejections: 40},
		Unique:        engine.UniqueStats{Radius: 2, Dropped: 5, SpotChunks: 12},
		Watch:         &engine.WatchStats{ChangedChunks: 9, Reader: anvil.Stats{DamagedChunks: 3, ReadErrors: 4, TornRetries: 6}},
		Latency:       latencyFixture(),
		Pipeline: pipeline.Stats{
			Backlog:             pipeline.SinkFill{Name: "backlog", Fill: 1, Capacity: 256},
			Cold:                pipeline.SinkFill{Name: "cold", Fill: 7, Capacity: 4096},
			ReservationFailures: map[string]uint64{"unreadable": 2},
			Sinks: []pipeline.SinkStats{
				{Name: "general", Kind: "general", Fill: 4, Capacity: 10, Quota: 10, Demand: 2.5, Hits: 11, Misses: 2, Promotions: 15},
				{Name: "network", Kind: "network", Fill: 1, Capacity: 10, Leased: 3},
				{Name: "group/8@8", Kind: "group", Fill: 3, Capacity: 4, Quota: 4, Hits: 6,
					Group: &pipeline.GroupStats{Size: 8, Radius: 8, Places: 24, Groups: 6, Players: 19, Trimmed: 29, NoRoom: 2}},
			},
			Promotions:          15,
			Misses:              2,
			ScreenRejections:    map[string]uint64{"UNSAFE_BLOCK": 5},
			PromotionRejections: map[string]uint64{"CLAIM_PROTECTED": 6},
		},
		Memory: memory.Stats{
			Len: 100, BadCount: 25, BadFraction: 0.25, Coverage: 0.3, ActiveRuns: 4,
			ByCause:    map[string]int64{"safetyExternal": 20, "biome": 5},
			Rejections: map[string]int64{"safetyExternal[claims]": 6, "biome": 5},
		},
		Resident: world.ResidentStats{Opened: 20, Closed: 18, Open: 2},
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(f, Options{Logger: quietLogger(), Registerer: reg, Gatherer: reg}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), "rtp_") {
			t.Errorf("metric %s lacks the rtp_ prefix", mf.GetName())
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				got[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				got[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				got[key+"count"] = float64(h.GetSampleCount())
				got[key+"sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					got[fmt.Sprintf("%sle=%g", key, b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	for key, want := range map[string]float64{
		"rtp_region_info{region=r,world=w}":                                        1,
		"rtp_region_paused{region=r}":                                              1,
		"rtp_region_exhausted{region=r}":                                           1,
		"rtp_region_restored_locations{region=r}":                                  3,
		"rtp_teleports_total{region=r}":                                            9,
		"rtp_teleport_latency_max_seconds{region=r}":                               1,
		"rtp_teleport_latency_seconds{region=r}count":                              9,
		"rtp_teleport_latency_seconds{region=r}sum":                                1.00608,
		"rtp_teleport_latency_seconds{region=r}le=8.192e-06":                       0,
		"rtp_teleport_latency_seconds{region=r}le=3.2768e-05":                      4,
		"rtp_teleport_latency_seconds{region=r}le=0.001048576":                     4,
		"rtp_teleport_latency_seconds{region=r}le=0.002097152":                     8,
		"rtp_teleport_latency_seconds{region=r}le=34.359738368":                    9,
		"rtp_sink_fill{kind=general,region=r,sink=general}":                        4,
		"rtp_sink_capacity{kind=general,region=r,sink=general}":                    10,
		"rtp_sink_demand_per_second{kind=general,region=r,sink=general}":           2.5,
		"rtp_sink_hits_total{kind=general,region=r,sink=general}":                  11,
		"rtp_sink_misses_total{kind=general,region=r,sink=general}":                2,
		"rtp_sink_leased{kind=network,region=r,sink=network}":                      3,
		"rtp_queue_fill{queue=cold,region=r}":                                      7,
		"rtp_sink_fill{kind=group,region=r,sink=group/8@8}":                        3,
		"rtp_sink_hits_total{kind=group,region=r,sink=group/8@8}":                  6,
		"rtp_group_places{region=r,sink=group/8@8}":                                24,
		"rtp_group_size{region=r,sink=group/8@8}":                                  8,
		"rtp_group_radius_blocks{region=r,sink=group/8@8}":                         8,
		"rtp_group_teleports_total{region=r,sink=group/8@8}":                       6,
		"rtp_group_players_total{region=r,sink=group/8@8}":                         19,
		"rtp_group_trimmed_places_total{region=r,sink=group/8@8}":                  29,
		"rtp_group_no_room_total{region=r,sink=group/8@8}":                         2,
		"rtp_queue_capacity{queue=backlog,region=r}":                               256,
		"rtp_pipeline_promotions_total{region=r}":                                  15,
		"rtp_pipeline_misses_total{region=r}":                                      2,
		"rtp_pipeline_screen_rejections_total{reason=UNSAFE_BLOCK,region=r}":       5,
		"rtp_pipeline_promotion_rejections_total{reason=CLAIM_PROTECTED,region=r}": 6,
		"rtp_memory_cells{region=r}":                                               100,
		"rtp_memory_bad_cells{region=r}":                                           25,
		"rtp_memory_bad_fraction{region=r}":                                        0.25,
		"rtp_memory_coverage{region=r}":                                            0.3,
		"rtp_memory_active_runs{region=r}":                                         4,
		"rtp_memory_bad_cells_by_cause{cause=safetyExternal,region=r}":             20,
		"rtp_memory_rejections_total{cause=safetyExternal,region=r,source=claims}": 6,
		"rtp_memory_rejections_total{cause=biome,region=r,source=}":                5,
		"rtp_resident_reservations_opened_total{world=w}":                          20,
		"rtp_archive_hits_total{world=w}":                                          11,
		"rtp_archive_generations_total{world=w}":                                   7,
		"rtp_archive_invalid_total{world=w}":                                       1,
		"rtp_archive_read_errors_total{world=w}":                                   2,
		"rtp_archive_write_errors_total{world=w}":                                  3,
		"rtp_archive_writes_dropped_total{world=w}":                                5,
		"rtp_archive_writes_pending{world=w}":                                      4,
		"rtp_resident_reservations_closed_total{world=w}":                          18,
		"rtp_resident_reservations_open{world=w}":                                  2,
		"rtp_safety_unknown_blocks{region=r}":                                      2,
		"rtp_safety_unknown_block_rejections_total{region=r}":                      40,
		"rtp_unique_dropped_total{region=r}":                                       5,
		"rtp_unique_spot_chunks{region=r}":                                         12,
		"rtp_world_damaged_chunks{world=w}":                                        3,
		"rtp_world_read_errors_total{world=w}":                                     4,
		"rtp_world_torn_retries_total{world=w}":                                    6,
		"rtp_world_changed_chunks_total{world=w}":                                  9,
		"rtp_pipeline_reservation_failures_total{kind=unreadable,region=r}":        2,
		"rtp_claims{}":                      0,
		"rtp_refill_lanes{}":                1,
		"rtp_refill_rests_total{}":          42,
		"rtp_refill_rested_seconds_total{}": 0.0063,
		"rtp_http_requests_in_flight{}":     0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
}

func TestSplitRejectionKey(t *testing.T) {
	for key, want := range map[string][2]string{
		"safetyExternal[claims]": {"safetyExternal", "claims"},
		"biome":                  {"biome", ""},
		"odd[":                   {"odd[", ""},
		"x[a[b]":                 {"x", "a[b"},
	} {
		if c, s := splitRejectionKey(key); c != want[0] || s != want[1] {
			t.Errorf("splitRejectionKey(%q) = %q, %q; want %q, %q", key, c, s, want[0], want[1])
		}
	}
}

// latencyFixture is the Latency of nine teleports: four of 20 µs, four of
// 1.5 ms and one of 1 s (sum 1.00608 s).
func latencyFixture() engine.Latency {
	l := engine.Latency{Count: 9, P50: 20 * time.Microsecond, P90: 2 * time.Millisecond, P99: time.Second, Max: time.Second,
		Sum: 4*20*time.Microsecond + 4*1500*time.Microsecond + time.Second}
	for i := range l.Buckets {
		for _, d := range []time.Duration{20 * time.Microsecond, 20 * time.Microsecond, 20 * time.Microsecond, 20 * time.Microsecond,
			1500 * time.Microsecond, 1500 * time.Microsecond, 1500 * time.Microsecond, 1500 * time.Microsecond, time.Second} {
			if d < engine.LatencyBound(i) {
				l.Buckets[i]++
			}
		}
	}
	return l
}
