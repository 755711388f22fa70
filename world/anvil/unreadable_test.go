package anvil_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// A chunk whose payload is gzip under the zlib byte (as some tools write
// it) is unreadable: its error matches world.ErrUnreadable and
// ErrCorrupt, and carries a *ChunkError; its neighbour reads fine, and an
// empty slot is ungenerated, not unreadable.
func TestGzipAsZlibIsUnreadable(t *testing.T) {
	dir := t.TempDir()
	good := anviltest.NewChunk(0, 0, anvil.Overworld)
	bad := anviltest.NewChunk(1, 0, anvil.Overworld)
	bad.GzipAsZlib = true
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{}, Chunks: []*anviltest.Chunk{good, bad}}); err != nil {
		t.Fatal(err)
	}
	w, err := anvil.Open(dir, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := t.Context()
	if _, err := w.Load(ctx, geom.Chunk{X: 0, Z: 0}); err != nil {
		t.Fatalf("Load of the good chunk: %v", err)
	}
	_, err = w.Load(ctx, geom.Chunk{X: 1, Z: 0})
	var ce *anvil.ChunkError
	if !errors.Is(err, world.ErrUnreadable) || !errors.Is(err, anvil.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("Load of gzip under zlib = %v, want ErrUnreadable, ErrCorrupt and a *ChunkError", err)
	}
	if ce.File != filepath.ToSlash(filepath.Join("region", "r.0.0.mca")) {
		t.Errorf("ChunkError.File = %q", ce.File)
	}
	_, err = w.Load(ctx, geom.Chunk{X: 2, Z: 0})
	if !errors.Is(err, world.ErrUngenerated) || errors.Is(err, world.ErrUnreadable) {
		t.Errorf("Load of an empty slot = %v, want ErrUngenerated only", err)
	}
}

// A damaged chunk of a region file at rest (not modified for longer than
// the rest window) fails at once: no retry, no pause.
func TestDamagedAtRestNotRetried(t *testing.T) {
	dir := t.TempDir()
	bad := anviltest.NewChunk(0, 0, anvil.Overworld)
	bad.GzipAsZlib = true
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{}, Chunks: []*anviltest.Chunk{bad}}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "region", "r.0.0.mca")
	load := func() anvil.Stats {
		t.Helper()
		w, err := anvil.Open(dir, anvil.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.Load(t.Context(), geom.Chunk{}); !errors.Is(err, world.ErrUnreadable) {
			t.Fatalf("Load = %v, want ErrUnreadable", err)
		}
		return w.Stats()
	}
	// Just written: the read may have met a write, so it is retried.
	if s := load(); s.TornRetries != 2 || s.ReadErrors != 1 {
		t.Errorf("fresh file: Stats = %+v, want 2 retries and 1 read error", s)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	if s := load(); s.TornRetries != 0 || s.ReadErrors != 1 || s.DamagedChunks != 1 {
		t.Errorf("file at rest: Stats = %+v, want no retry, 1 read error, 1 damaged chunk", s)
	}
}
