package sqlite_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/stores/sqlite"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/verify/claims"
)

func env() stores.Env {
	return stores.Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: time.Now, Node: "test"}
}

func storesConfig(dir string) stores.Config {
	return stores.Config{
		Database: filepath.Join(dir, "rtp.db"),
		Claims:   filepath.Join(dir, "claims.db"),
		Archive:  stores.ArchiveSpec{Path: filepath.Join(dir, "archive.db")},
	}
}

// TestDatabase: the database and the claims are files of the data folder;
// a new database says so (Fresh) and a reopened one does not; the rows
// and claims written before a Close are there after it; the network
// leases are kept in the database, through a lease/local store; and it
// is no fleet's.
func TestDatabase(t *testing.T) {
	ctx := context.Background()
	cfg := storesConfig(t.TempDir())
	db, err := sqlite.Stores{}.OpenDatabase(ctx, cfg, env())
	if err != nil {
		t.Fatal(err)
	}
	if got := db.Fresh(); got != cfg.Database {
		t.Errorf("Fresh() of a new database = %q, want %q", got, cfg.Database)
	}
	if db.Fleet() != nil {
		t.Error("Fleet() of an SQLite database is not nil")
	}
	p, err := db.Region("r", pipeline.NewKey(1, []byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(pipeline.Journal); !ok {
		t.Errorf("the region's Persister %T is no pipeline.Journal", p)
	}
	loc := pipeline.Location{World: "w", Index: 3, X: 1, Y: 64, Z: 2}
	p.Add(loc)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if w := db.Writes(); w.Written == 0 || w.Pending != 0 {
		t.Errorf("Writes() after a flushed Add = %+v, want a write written and none pending", w)
	}
	c, err := db.Claims().Add(ctx, claims.Claim{World: "w", Owner: "alice", MaxX: 9, MaxZ: 9})
	if err != nil {
		t.Fatal(err)
	}
	ls, closer, err := sqlite.Stores{}.OpenLeases(ctx, cfg, env(), db)
	if err != nil || ls == nil || closer != nil {
		t.Fatalf("OpenLeases = %v, %v, %v; want a store and nothing to close", ls, closer, err)
	}
	granted := lease.Lease{World: "w", X: 1, Y: 64, Z: 2, Index: 3, Owner: "test"}
	if err := ls.Grant(ctx, "token-1", granted, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cfg.Database, cfg.Claims} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after Close: %v", err)
		}
	}

	db, err = sqlite.Stores{}.OpenDatabase(ctx, cfg, env())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Fresh(); got != "" {
		t.Errorf("Fresh() of a reopened database = %q, want \"\"", got)
	}
	if got, ok := db.Claims().Contains("w", 5, 5); !ok || got != c {
		t.Errorf("claim after reopening = %v, %v; want %v", got, ok, c)
	}
	p, err = db.Region("r", pipeline.NewKey(1, []byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	if locs, err := p.Load(ctx); err != nil || len(locs) != 1 || locs[0] != loc {
		t.Errorf("Load after reopening = %v, %v; want [%v]", locs, err, loc)
	}
	ls, _, err = sqlite.Stores{}.OpenLeases(ctx, cfg, env(), db)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ls.Redeem(ctx, "token-1"); err != nil || got != granted {
		t.Errorf("Redeem after reopening = %+v, %v; want the lease granted before", got, err)
	}
}

// TestRefusesFleetStores: a Config naming PostgreSQL or Redis is refused
// with ErrNotEmbedded, before anything opens.
func TestRefusesFleetStores(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := storesConfig(dir)
	cfg.Fleet.DatabaseURL = "postgres://db/rtp"
	if db, err := (sqlite.Stores{}).OpenDatabase(ctx, cfg, env()); !errors.Is(err, sqlite.ErrNotEmbedded) {
		if db != nil {
			db.Close()
		}
		t.Errorf("OpenDatabase with a DatabaseURL = %v, want ErrNotEmbedded", err)
	}
	cfg = storesConfig(dir)
	cfg.Archive.URL = "postgres://db/tiles"
	if _, err := (sqlite.Stores{}).OpenArchives(ctx, cfg, env(), []string{"w"}); !errors.Is(err, sqlite.ErrNotEmbedded) {
		t.Errorf("OpenArchives with an Archive.URL = %v, want ErrNotEmbedded", err)
	}
	cfg = storesConfig(dir)
	cfg.Fleet.LeasesURL = "redis://cache:6379/0"
	if _, _, err := (sqlite.Stores{}).OpenLeases(ctx, cfg, env(), nil); !errors.Is(err, sqlite.ErrNotEmbedded) {
		t.Errorf("OpenLeases with a LeasesURL = %v, want ErrNotEmbedded", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("refused stores left files: %v, %v", entries, err)
	}
}

// TestArchives: each procedural world has its own file (ArchivePath), and
// an archive whose file held data (its schema, at least) when opened is
// Found.
func TestArchives(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := storesConfig(dir)
	worlds := []string{"a", "b"}
	open := func() (stores.Archives, []archive.Store) {
		t.Helper()
		as, err := sqlite.Stores{}.OpenArchives(ctx, cfg, env(), worlds)
		if err != nil {
			t.Fatal(err)
		}
		var out []archive.Store
		for _, w := range worlds {
			s, err := as.Open(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return as, out
	}
	as, ss := open()
	if f := as.Found(); len(f) != 0 {
		t.Errorf("Found() of new archives = %q, want none", f)
	}
	if _, err := as.Open(ctx, "c"); err == nil {
		t.Error("Open of a world not readied succeeded")
	}
	if err := ss[1].Put(ctx, archive.Record{Digest: archive.Digest{1}, Key: []byte("k"), Payload: []byte("tile")}); err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range worlds {
		if _, err := os.Stat(sqlite.ArchivePath(cfg.Archive.Path, i, w)); err != nil {
			t.Errorf("archive of world %s: %v", w, err)
		}
	}
	as, ss = open()
	defer func() {
		for _, s := range ss {
			s.Close()
		}
	}()
	if f := as.Found(); len(f) != 2 || f[0] != filepath.Join(dir, "archive.db") || f[1] != filepath.Join(dir, "archive-b.db") {
		t.Errorf("Found() = %q, want both archives, in the order opened", f)
	}
	if rec, ok, err := ss[1].Get(ctx, archive.Digest{1}); err != nil || !ok || string(rec.Payload) != "tile" {
		t.Errorf("b's tile after reopening = %v, %v, %v", rec, ok, err)
	}
}

func TestArchivePath(t *testing.T) {
	for _, tc := range []struct {
		p     string
		n     int
		world string
		want  string
	}{
		{"d/archive.db", 0, "w", "d/archive.db"},
		{"d/archive.db", 1, "nether", "d/archive-nether.db"},
		{"d/tiles", 2, "end", "d/tiles-end.db"},
		{"d/x.sqlite", 1, "w", "d/x-w.sqlite"},
	} {
		if got := sqlite.ArchivePath(tc.p, tc.n, tc.world); got != tc.want {
			t.Errorf("ArchivePath(%q, %d, %q) = %q, want %q", tc.p, tc.n, tc.world, got, tc.want)
		}
	}
}
