package archive_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// TestCorruptDatabaseDisablesArchive: a database that is not one cannot be
// opened; wrapped without a store, the archive still serves every tile and
// says why in exactly one log line.
func TestCorruptDatabaseDisablesArchive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "archive.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 400)), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	store, err := sqlitestore.Open(context.Background(), path, sqlitestore.Options{Logger: logger})
	if err == nil {
		store.Close()
		t.Fatal("Open of a garbage file succeeded")
	}
	src := newFake()
	a, werr := archive.Wrap(src, nil, archive.Options{Logger: logger, StoreError: err})
	if werr != nil {
		t.Fatal(werr)
	}
	defer a.Close(context.Background())
	req := terrain.Request{Size: 64, Resolution: 8, Border: 1}
	for range 2 {
		tile, err := a.Tile(context.Background(), req)
		if err != nil {
			t.Fatalf("Tile() = %v with the archive disabled", err)
		}
		if err := tile.Validate(req); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "no store") || !strings.Contains(lines[0], "not a database") {
		t.Fatalf("log = %q, want one line naming the reason", lines)
	}
}
