package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// smallConfig is a configuration whose region fills in moments: a small
// general sink and cold queue, in a data directory of the test's, on a
// region of 64 terrain tiles (a cold archive generates each once; a larger
// region generates one for nearly every screening, which under the race
// detector, beside other packages' tests, takes seconds each).
func smallConfig(t *testing.T, pulse string) (path, dataDir string) {
	t.Helper()
	dataDir = t.TempDir()
	path = writeConfig(t, `data_dir: `+dataDir+`
server:
  listen: 127.0.0.1:0
regions:
  default:
    world: world
    shape: {kind: circle, radius: 256}
    sinks:
      general: {capacity: 4}
    pulse: `+pulse+`
    queues: {backlog: 32, cold: 32}
`)
	return path, dataDir
}

// statsAfterRestart opens an engine on the configuration file at path, as
// the next start of rtp serve would, and returns the stats of its region
// "default" (then closes it).
func statsAfterRestart(t *testing.T, path string) engine.Stats {
	t.Helper()
	cfg, err := config.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), spec, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Stats("default")
	if cerr := e.Close(context.Background()); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// archiveEntries returns the tiles the archive database at path holds.
func archiveEntries(t *testing.T, path string) int64 {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.Entries
}

// TestPregenRestores fills a region, then checks that the next start
// restores the cold locations from the data directory.
func TestPregenRestores(t *testing.T) {
	t.Parallel()
	path, dataDir := smallConfig(t, "20ms")
	out, stderr, err := run(t, "pregen", "--config", path, "--target", "20")
	if err != nil {
		t.Fatalf("pregen: %v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`region default: general 4/4, cold (\d+) \(target 20; 0 restored at start\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pregen printed %q", out)
	}
	if cold, _ := strconv.Atoi(m[1]); cold < 20 {
		t.Fatalf("pregen stopped with %d cold locations, want 20", cold)
	}
	if !strings.Contains(stderr, "pregen: 100% default general 4/4") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	// pregen reports the tiles it generated, none lost, and the archive
	// holds them. (A tile requested again while its write is queued is
	// generated twice and stored once, so entries may be fewer.)
	am := regexp.MustCompile(`world world: terrain archive: (\d+) tiles generated, \d+ read from the archive\n`).FindStringSubmatch(out)
	if am == nil {
		t.Fatalf("pregen printed no archive line without a loss: %q", out)
	}
	generated, _ := strconv.Atoi(am[1])
	if entries := archiveEntries(t, filepath.Join(dataDir, "archive.db")); generated == 0 || entries == 0 || entries > int64(generated) {
		t.Fatalf("the archive holds %d tiles after pregen generated %d", entries, generated)
	}

	// The next start restores the locations as cold entries.
	if st := statsAfterRestart(t, path); st.Restored < 20 {
		t.Fatalf("the next start restored %d locations, want at least the 20 cold ones", st.Restored)
	}

	// A second pregen starts warm.
	out, _, err = run(t, "pregen", "--config", path, "--target", "20")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(\d+) restored at start`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Fatalf("second pregen printed %q, want locations restored", out)
	}
}

func TestPregenUsage(t *testing.T) {
	path, _ := smallConfig(t, "20ms")
	for _, args := range [][]string{
		{"pregen", "--config", path, "--target", "-1"},
		{"pregen", "--config", path, "--target", "100000"},
		{"pregen", "--config", path, "--region", "nowhere"},
		{"pregen", "--config", path, "--log-level", "loud"},
		{"pregen", "--world", t.TempDir(), "--dimension", "moon"},
	} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 {
			t.Errorf("rtp %v = %v (exit %d), want a usage error", args, err, ExitCode(err))
		}
	}
}

func TestPregenTimeout(t *testing.T) {
	t.Parallel()
	// A region that pulses once an hour does not fill: pregen gives up at
	// its timeout with an error that says how far it got. Only the first
	// pulse, at start, screens: it puts a few places in cold, which the
	// refill may promote into the general sink at once (a short sink is
	// served first), but cold never reaches its target of 32.
	path, _ := smallConfig(t, "1h")
	_, _, err := run(t, "pregen", "--config", path, "--timeout", "300ms")
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("pregen past its timeout = %v, want a deadline error", err)
	}
	m := regexp.MustCompile(`default general (\d+)/4 cold (\d+)/32`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("pregen past its timeout = %v, want the region's progress", err)
	}
	if cold, _ := strconv.Atoi(m[2]); cold >= 32 {
		t.Fatalf("pregen past its timeout reports cold %d/32: the target was reached", cold)
	}
}

// TestPregenStall: a region too small for its target stops growing, and
// pregen gives up at --stall (long before its timeout) saying how far it
// got, keeping what it filled.
func TestPregenStall(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	path := writeConfig(t, `data_dir: `+dataDir+`
regions:
  default:
    world: world
    shape: {kind: circle, radius: 64}
    sinks:
      general: {capacity: 4}
    pulse: 20ms
    queues: {backlog: 32, cold: 64}
`)
	// A first pregen to a reachable target generates the region's terrain,
	// so the stall below is the region's size, not a slow first screening.
	if _, stderr, err := run(t, "pregen", "--config", path, "--target", "8", "--stall", "0", "--timeout", "2m"); err != nil {
		t.Fatalf("pregen --target 8: %v\n%s", err, stderr)
	}
	_, _, err := run(t, "pregen", "--config", path, "--target", "64", "--stall", "5s", "--timeout", "2m")
	if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), "no progress for 5s") || !strings.Contains(err.Error(), "cold ") {
		t.Fatalf("pregen on a region too small for its target = %v (exit %d), want no progress for 5s", err, ExitCode(err))
	}
	m := regexp.MustCompile(`general (\d+)/4 cold (\d+)/64`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the error does not say how far pregen got: %v", err)
	}
	st := statsAfterRestart(t, path)
	if cold, _ := strconv.Atoi(m[2]); cold == 0 || st.Restored < cold {
		t.Fatalf("pregen held %d cold locations, the next start restored %d: want them kept", cold, st.Restored)
	}
	if _, _, err := run(t, "pregen", "--config", path, "--stall", "-1s"); ExitCode(err) != 2 {
		t.Errorf("pregen --stall -1s = %v, want a usage error", err)
	}
}

// TestPregenBudget: pregen widens the screening budget, defaults
// resolved first, within its bounds, and leaves the promotions' alone.
func TestPregenBudget(t *testing.T) {
	got := pregenBudget(pipeline.Budget{})
	if got.Candidates != pipeline.DefaultCandidates*pregenWiden || got.Screens != pipeline.DefaultScreens*pregenWiden ||
		got.MaxScreens != min(pipeline.DefaultMaxScreens*pregenWiden, pregenMaxScreens) {
		t.Errorf("pregenBudget(zero) = %+v; want the default screening budget widened %d times", got, pregenWiden)
	}
	if got.PromotionsPerPulse != 0 || got.MaxPromotions != 0 || got.Transfers != 0 {
		t.Errorf("pregenBudget(zero) = %+v; want the promotions' budget left at its defaults (0)", got)
	}
	in := pipeline.Budget{Candidates: 512, Screens: 128, MaxScreens: 8, PromotionsPerPulse: 128, MaxPromotions: 32, Transfers: 256}
	got = pregenBudget(in)
	want := in
	want.Candidates, want.Screens, want.MaxScreens = 512*pregenWiden, 128*pregenWiden, 8*pregenWiden
	if got != want {
		t.Errorf("pregenBudget(%+v) = %+v, want %+v", in, got, want)
	}
	// Bounded: a budget already past the bound is kept, never cut.
	big := pipeline.Budget{Screens: 100000, MaxScreens: 5000, Candidates: 1 << 20}
	got = pregenBudget(big)
	if got.MaxScreens != 5000 || got.Screens != 100000 || got.Candidates != 1<<20 {
		t.Errorf("pregenBudget(%+v) = %+v; want a budget past the bounds kept", big, got)
	}
	if got := pregenBudget(pipeline.Budget{MaxScreens: 100}); got.MaxScreens != pregenMaxScreens {
		t.Errorf("MaxScreens 100 widened to %d, want the bound %d", got.MaxScreens, pregenMaxScreens)
	}
}
