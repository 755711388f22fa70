package api

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fullStats is a Stats with every field set to a distinct non-zero value,
// so that a field left out of the JSON, or two fields under one key, shows.
func fullStats() Stats {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return Stats{
		Region: "r", World: "w", Paused: true, Restored: 3,
		Latency: Latency{Count: 4, P50Ms: 0.5, P90Ms: 1.25, P99Ms: 2.5, MaxMs: 10},
		Served:  map[string]uint64{"general": 5, "login": 6},
		Pipeline: PipelineStats{
			Backlog: SinkFill{Name: "backlog", Fill: 7, Capacity: 8},
			Cold:    SinkFill{Name: "cold", Fill: 9, Capacity: 10},
			Sinks: []SinkStats{{Name: "general", Kind: "general", Fill: 11, Capacity: 12, Quota: 13, Leased: 14,
				DemandPerSecond: 1.5, Pending: 15, Hits: 16, Misses: 17, Stale: 18, Changed: 19, Promotions: 20,
				Mismatched: 21, TransfersIn: 22, TransfersOut: 23, Demotions: 24, Trims: 25},
				{Name: "group/8@8", Kind: "group", Group: &GroupSinkStats{Size: 112, Radius: 113, Places: 114,
					Groups: 115, Players: 116, Trimmed: 117, NoRoom: 118, Backoff: 119}}},
			Screening: 26, Promoting: 27, Screened: 28, Promotions: 29, Transfers: 30, Demotions: 31, Trims: 32,
			Mismatched:           33,
			ScreenRejections:     map[string]uint64{"WATER": 34},
			PromotionRejections:  map[string]uint64{"RESERVATION_FAILED": 35},
			ReservationFailures:  map[string]uint64{"timeout": 36},
			LastReservationError: "r.0.0.mca: chunk (1, 2): bad",
			LoginExhaustion:      37, Misses: 38,
			RecentMisses: []MissRecord{{Time: at, Sink: "login", Fills: []SinkFill{{Name: "login", Fill: 0, Capacity: 39}}}},
			RowAdds:      40, RowRemoves: 41,
			Reservations: ReservationCloseStats{Released: 42, ForeignClosed: 43, DoubleReleases: 44},
			MemoryErrors: 45, Held: 46, Duplicates: 47, KnownBad: 48, ChangedCold: 49, Changed: 50, CallbackPanics: 51,
		},
		Memory: MemoryStats{World: "w", Len: 52, BadCount: 53, BadFraction: 0.25, Probation: 54, Coverage: 0.5,
			ActiveRuns: 55, ProbationRuns: 56, StaticRuns: 57, TopCause: "water", TopCauseShare: 0.75,
			ByCause: map[string]int64{"water": 58}, Rejections: map[string]int64{"water[screen]": 59},
			Pending: 60, Restored: 61, Ignored: 62, Rebuilds: 63, LastRebuild: &at, ResidentBytes: 64},
		Resident: Resident{Opened: 65, Closed: 66, Forced: 67, Open: 68, Hits: 69, Misses: 70, Loads: 71,
			LoadErrors: 72, Evictions: 73, Stale: 74, Resident: 75, Reserved: 76, Retired: 77, Bytes: 78, Loading: 79},
		Unique:        UniqueStats{RadiusBlocks: 80, Marked: 81, Chunks: 82, Lost: 83, Dropped: 84, SpotChunks: 85},
		UnknownBlocks: UnknownBlocksStats{Names: 86, Rejections: 87},
		Watch: &WatchStats{PeriodMs: 5000, Polls: 88, Errors: 89, ChangedChunks: 90, ChangedRegions: 91, Damaged: 92,
			Forgotten: 93, Dropped: 94, Reader: ReaderStats{ReadErrors: 95, TornRetries: 96, DamagedChunks: 97,
				Polls: 98, ChangedChunks: 99, WarningsSuppressed: 100}},
		Recovery:   RecoveryStats{Unclean: true, Discarded: 101, Replayed: 102, Spots: 103},
		Handouts:   HandoutStats{Open: 104, Completed: 105, Cancelled: 106, Expired: 107, Replaced: 108, Refused: 109},
		Exhaustion: ExhaustionStats{Exhausted: true, Since: &at, ByCause: map[string]int64{"vert": 110}, Times: 111},
	}
}

// golden compares got with testdata/name (rewritten under -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// TestStatsJSON pins the wire form of Stats and checks that it reads back
// to the same value.
func TestStatsJSON(t *testing.T) {
	st := fullStats()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "stats.json", append(data, '\n'))
	var back Stats
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("Stats round trip:\ngot  %+v\nwant %+v", back, st)
	}
}

// TestStatsJSONOptional checks what is left out: watch and lastRebuild
// when nil, and that nothing else is.
func TestStatsJSONOptional(t *testing.T) {
	st := fullStats()
	st.Watch, st.Memory.LastRebuild, st.Exhaustion.Since = nil, nil, nil
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"watch"`, `"lastRebuild"`, `"since"`} {
		if bytes.Contains(data, []byte(key)) {
			t.Errorf("Stats without %s has the key: %s", key, data)
		}
	}
	var zero Stats
	data, err = json.Marshal(zero)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"region", "world", "paused", "restored", "latency", "served", "pipeline",
		"memory", "resident", "unique", "unknownBlocks", "recovery", "handouts", "exhaustion"} {
		if _, ok := m[key]; !ok {
			t.Errorf("zero Stats lacks the key %q: %s", key, data)
		}
	}
}

var camelCase = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// TestKeys checks every JSON key of every answer shape: camelCase, no key
// twice in one object, and no time.Duration anywhere (durations are float
// milliseconds under a key ending in "Ms").
func TestKeys(t *testing.T) {
	duration := reflect.TypeFor[time.Duration]()
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ == duration {
			t.Errorf("%s is a time.Duration", path)
		}
		if typ.Kind() != reflect.Struct || typ == reflect.TypeFor[time.Time]() || seen[typ] {
			return
		}
		seen[typ] = true
		keys := map[string]bool{}
		for f := range typ.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if key == "-" {
				continue
			}
			if !camelCase.MatchString(key) {
				t.Errorf("%s.%s: key %q is not camelCase", path, f.Name, key)
			}
			if keys[key] {
				t.Errorf("%s: key %q twice", path, key)
			}
			keys[key] = true
			if f.Type.Kind() == reflect.Float64 && strings.HasSuffix(f.Name, "Ms") != strings.HasSuffix(key, "Ms") {
				t.Errorf("%s.%s: key %q does not carry the unit of the field", path, f.Name, key)
			}
			walk(path+"."+key, f.Type)
		}
	}
	for _, v := range []any{Teleport{}, Reservation{}, Regions{}, Claims{}, Stats{}, Status{}, Error{},
		TeleportRequest{}, QueueRequest{}, ReservationRequest{}, ClaimRequest{}} {
		walk(reflect.TypeOf(v).Name(), reflect.TypeOf(v))
	}
}

// TestRoundTrip decodes the encoding of every answer shape back to the
// same value.
func TestRoundTrip(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tp := Teleport{ID: 7, Region: "r", World: "w", X: 1, Y: 64, Z: -3, StandY: 63.5, Biome: "plains", Sink: "login", WaitedMs: 1.5}
	for _, v := range []any{
		tp,
		Reservation{Token: "tok", Location: tp, Expires: created},
		Regions{Regions: []Region{{Name: "r", World: "w", Paused: true}}},
		Claims{Claims: []Claim{{ID: 3, World: "w", Owner: "o", MinX: -1, MinZ: -2, MaxX: 1, MaxZ: 2, Created: created}}},
		fullStats(),
		Status{Status: "ready"},
		Status{Status: "ready", Exhausted: []string{"spawn (vert 900)"}},
		Error{Error: ErrorDetail{Code: "paused", Message: "the scan is paused"}},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(data, back.Interface()); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), v) {
			t.Errorf("%T round trip: got %+v, want %+v", v, back.Elem().Interface(), v)
		}
	}
}

func TestDurations(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want time.Duration
	}{
		{0, 0},
		{1.5, 1500 * time.Microsecond},
		{1350.985803, 1350985803 * time.Nanosecond},
		{-1, 0},
		{math.NaN(), 0},
		{math.Inf(1), math.MaxInt64},
		{1e300, math.MaxInt64},
	} {
		if got := FromMs(c.ms); got != c.want {
			t.Errorf("FromMs(%v) = %v, want %v", c.ms, got, c.want)
		}
	}
	if got := Ms(1350985803 * time.Nanosecond); got != 1350.985803 {
		t.Errorf("Ms(1.350985803s) = %v", got)
	}
	tp := Teleport{WaitedMs: 2.5}
	l := Latency{P50Ms: 1, P90Ms: 2, P99Ms: 3, MaxMs: 4}
	w := WatchStats{PeriodMs: 5000}
	for name, c := range map[string]struct{ got, want time.Duration }{
		"Waited": {tp.Waited(), 2500 * time.Microsecond},
		"P50":    {l.P50(), time.Millisecond}, "P90": {l.P90(), 2 * time.Millisecond},
		"P99": {l.P99(), 3 * time.Millisecond}, "Max": {l.Max(), 4 * time.Millisecond},
		"Period": {w.Period(), 5 * time.Second},
	} {
		if c.got != c.want {
			t.Errorf("%s() = %v, want %v", name, c.got, c.want)
		}
	}
}

// FuzzFromMs checks that FromMs never gives a negative duration and that
// it inverts Ms to within a nanosecond.
func FuzzFromMs(f *testing.F) {
	for _, v := range []float64{0, 1.5, -3, 1e12, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, ms float64) {
		d := FromMs(ms)
		if d < 0 {
			t.Fatalf("FromMs(%v) = %v < 0", ms, d)
		}
		if ms > 0 && ms < 1e9 {
			if back := FromMs(Ms(d)); back-d > 1 || d-back > 1 {
				t.Fatalf("FromMs(Ms(%v)) = %v", d, back)
			}
		}
	})
}
