package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
)

// TestLostDatabaseWarns: a locations database found empty at start beside
// the memory file and archive of an earlier run is a warning, in the
// region's stats and in Warnings; a first start in a new data directory,
// and a restart with the database kept, say nothing.
func TestLostDatabaseWarns(t *testing.T) {
	cfg := testConfig(t)
	cfg.Archive.Path = config.DefaultArchivePath // this test's own, in its data directory
	e := newEngine(t, cfg)
	stop := run2(t, e)
	teleport(t, e, engine.Request{Player: "alice"})
	if w := e.Warnings(); w != nil {
		t.Errorf("first start in a new data directory: Warnings() = %q, want none", w)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Restarted with its database: nothing to say.
	e = newEngine(t, cfg)
	if w := e.Warnings(); w != nil || stats(t, e, region).Recovery.LostDatabase != "" {
		t.Errorf("restart with the database kept: Warnings() = %q, want none", w)
	}
	if err := e.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The database truncated to 0 bytes, as a careless copy leaves it.
	db := filepath.Join(cfg.DataDir, config.DefaultDatabasePath)
	for _, p := range []string{db + "-wal", db + "-shm"} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(db, 0); err != nil {
		t.Fatal(err)
	}
	e = newEngine(t, cfg)
	lost := stats(t, e, region).Recovery.LostDatabase
	for _, want := range []string{db, "memory file", "terrain archive", "forgotten"} {
		if !strings.Contains(lost, want) {
			t.Errorf("Recovery.LostDatabase = %q, want it to mention %q", lost, want)
		}
	}
	if w := e.Warnings(); len(w) != 1 || !strings.Contains(w[0], `region "`+region+`"`) || !strings.Contains(w[0], lost) {
		t.Errorf("Warnings() = %q, want the region's warning", w)
	}
}
