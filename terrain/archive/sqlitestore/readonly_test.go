package sqlitestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/terrain/archive"
)

// TestReadOnly: a store opened ReadOnly serves what the archive holds,
// stores nothing, refuses Delete and Clear, and creates no file beside the
// database (so it opens on a full disk); one that is missing or empty is
// refused without being created.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path := dbPath(t)
	const size = 4 << 10
	w := mustOpen(t, path, Options{OpenTimeout: time.Minute})
	putAll(t, w, record("a", size), record("b", size))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Fatalf("%s%s still present after Close", path, suffix)
		}
	}

	s := mustOpen(t, path, Options{ReadOnly: true, OpenTimeout: time.Minute})
	if !s.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	got, ok, err := s.Get(ctx, record("a", size).Digest)
	if err != nil || !ok || string(got.Payload) != string(record("a", size).Payload) {
		t.Fatalf("Get(a) = %v, %v; want the stored record", ok, err)
	}
	putAll(t, s, record("c", size))
	if _, ok, err := s.Get(ctx, record("c", size).Digest); ok || err != nil {
		t.Errorf("Get(c) after a read-only Put = %v, %v; want a miss", ok, err)
	}
	if s.Yielded() != 1 {
		t.Errorf("Yielded() = %d, want 1", s.Yielded())
	}
	if err := s.Delete(ctx, record("a", size).Digest); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Delete = %v, want ErrReadOnly", err)
	}
	if err := s.Clear(ctx); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Clear = %v, want ErrReadOnly", err)
	}
	if st, err := s.Stats(ctx); err != nil || st.Entries != 2 {
		t.Errorf("Stats() = %+v, %v; want 2 entries", st, err)
	}
	n := 0
	if err := s.Scan(ctx, func(archive.Record) error {
		n++
		return nil
	}); err != nil || n != 2 {
		t.Errorf("Scan visited %d, %v; want 2", n, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + suffix); err == nil {
			t.Errorf("a read-only store created %s%s", path, suffix)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(t.TempDir(), "missing.db")
	if s, err := Open(ctx, missing, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Error("Open(missing, ReadOnly) succeeded")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("Open(missing, ReadOnly) created the file")
	}
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(ctx, empty, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Error("Open(empty, ReadOnly) succeeded")
	}
}
