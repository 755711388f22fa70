package sqlite_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/internal/diskspace"
	"github.com/rtpengine/rtp/stores/sqlite"
)

// TestStartOnFullDisk: an engine whose data directory's disk is under the
// archive's floor at start opens its terrain archive read-only (the file
// is kept, nothing is added to it, teleports are served, a warning says
// so), and one with less free space than the small stores need gives the
// archive's file back to the disk before they open.
func TestStartOnFullDisk(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	rc := config.DefaultRegion()
	rc.Shape.Radius = 512
	rc.Pulse = 5 * time.Millisecond
	rc.Sinks.General.Capacity = 4
	rc.Queues = config.Queues{Backlog: 32, Cold: 32}
	rc.Budget.Candidates, rc.Budget.Screens = 16, 8
	cfg.Regions[config.DefaultRegionName] = rc
	spec, err := cfg.Spec()
	if err != nil {
		t.Fatal(err)
	}
	spec.Stores = sqlite.Stores{}
	archivePath := filepath.Join(cfg.DataDir, config.DefaultArchivePath)
	const total = 1 << 30
	var free atomic.Uint64
	free.Store(total / 2)
	sqlite.SetDiskUsage(t, func(string) (diskspace.Usage, error) {
		return diskspace.Usage{Free: free.Load(), Total: total}, nil
	})
	newEngine := func() *engine.Engine {
		t.Helper()
		e, err := engine.New(t.Context(), spec, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ShutdownTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		return e
	}

	// A first run fills the archive.
	e := newEngine()
	stop := run(t, e)
	teleport(t, e, engine.Request{Player: "alice"})
	if w := e.Warnings(); w != nil {
		t.Errorf("start with room: Warnings() = %q, want none", w)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(archivePath)
	if err != nil || before.Size() == 0 {
		t.Fatalf("archive after a first run: %v, %v; want a file with tiles", before, err)
	}

	// Under the floor (the smaller of 256 MiB and 5% of 1 GiB, 51 MiB),
	// above the reserve: read-only.
	free.Store(32 << 20)
	e = newEngine()
	w := e.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "read-only") || !strings.Contains(w[0], archivePath) || !strings.Contains(w[0], "33554432 bytes free") {
		t.Errorf("under the floor: Warnings() = %q, want one saying %s is read-only with the free bytes", w, archivePath)
	}
	stop = run(t, e)
	for _, p := range []string{"bob", "carol", "dave"} {
		teleport(t, e, engine.Request{Player: p})
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(archivePath)
	if err != nil || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("read-only archive changed: %v, %v (was %d bytes, %v)", after, err, before.Size(), before.ModTime())
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(archivePath + suffix); err == nil {
			t.Errorf("read-only archive left %s%s", archivePath, suffix)
		}
	}

	// No room for the locations database: the archive goes.
	free.Store(1 << 20)
	e = newEngine()
	w = e.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "removed the terrain archive "+archivePath) || !strings.Contains(w[0], "1048576 bytes free") {
		t.Errorf("under the reserve: Warnings() = %q, want one saying the archive was removed", w)
	}
	if _, err := os.Stat(archivePath); err == nil {
		// The archive opened again, empty, after the removal: it must
		// hold nothing of the earlier run.
		fi, _ := os.Stat(archivePath)
		if fi.Size() >= before.Size() {
			t.Errorf("archive of %d bytes after its removal, want a new one", fi.Size())
		}
	}
	stop = run(t, e)
	teleport(t, e, engine.Request{Player: "erin"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// run runs e until the returned function stops it, which returns Run's
// error.
func run(t *testing.T, e *engine.Engine) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// teleport hands out a place of the default region to the request's
// player, failing the test on error.
func teleport(t *testing.T, e *engine.Engine, req engine.Request) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := e.Teleport(ctx, config.DefaultRegionName, req); err != nil {
		t.Fatalf("Teleport: %v", err)
	}
}
