package fleet_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/pgtest"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/stores/fleet"
	"github.com/rtpengine/rtp/verify/claims"
)

func env(node string) stores.Env {
	return stores.Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: time.Now, Node: node, Software: "test"}
}

func local(dir string) stores.Config {
	return stores.Config{
		Database: filepath.Join(dir, "rtp.db"),
		Claims:   filepath.Join(dir, "claims.db"),
		Fleet:    stores.FleetSpec{NodeLease: 2 * time.Second},
		Archive:  stores.ArchiveSpec{Path: filepath.Join(dir, "archive.db")},
	}
}

// TestLocalWithoutURLs: with no URL, the stores are the embedded ones: an
// SQLite database of one node, whose network leases it keeps.
func TestLocalWithoutURLs(t *testing.T) {
	ctx := context.Background()
	cfg := local(t.TempDir())
	db, err := fleet.Stores{}.OpenDatabase(ctx, cfg, env("n"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Fleet() != nil || db.Fresh() != cfg.Database || db.LeaseJournal() == nil {
		t.Errorf("database without a URL: Fleet %v, Fresh %q, LeaseJournal %v; want an SQLite one's", db.Fleet(), db.Fresh(), db.LeaseJournal())
	}
	ls, closer, err := fleet.Stores{}.OpenLeases(ctx, cfg, env("n"), db)
	if err != nil || ls == nil || closer != nil {
		t.Errorf("OpenLeases without a URL = %v, %v, %v; want the database's", ls, closer, err)
	}
}

// TestDatabaseInPostgres: with a DatabaseURL the locations and the claims
// are the fleet's: the node is registered under its name, each region's
// Persister is shared (a feed and a pool), and the leases are in no
// store of the node's (its sinks keep them in memory) without a
// LeasesURL.
func TestDatabaseInPostgres(t *testing.T) {
	_, u := pgtest.Schema(t)
	ctx := context.Background()
	cfg := local(t.TempDir())
	cfg.Fleet.DatabaseURL = u
	db, err := fleet.Stores{}.OpenDatabase(ctx, cfg, env("node-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f := db.Fleet()
	if f == nil {
		t.Fatal("Fleet() = nil on PostgreSQL")
	}
	if f.Node() != "node-a" || f.LeaseLost() || !f.LeaseUntil().After(time.Now()) {
		t.Errorf("fleet side: node %q, lease lost %v, until %v; want node-a holding a lease", f.Node(), f.LeaseLost(), f.LeaseUntil())
	}
	if db.Fresh() != "" || db.LeaseJournal() != nil {
		t.Errorf("Fresh %q, LeaseJournal %v; want neither on PostgreSQL", db.Fresh(), db.LeaseJournal())
	}
	if err := f.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := db.Region("r", pipeline.NewKey(1, []byte("k")))
	if err != nil {
		t.Fatal(err)
	}
	shared, ok := p.(stores.SharedRegion)
	if _, journal := p.(pipeline.Journal); !ok || !journal {
		t.Fatalf("the region's Persister %T: shared %v, journal %v; want both", p, ok, journal)
	}
	feed, err := shared.Follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if marks, spots, more, err := feed.Next(ctx); err != nil || len(marks) != 0 || len(spots) != 0 || more {
		t.Errorf("Next on a new database = %v, %v, %v, %v; want nothing", marks, spots, more, err)
	}
	if locs, err := shared.ClaimPool(ctx, 10); err != nil || len(locs) != 0 {
		t.Errorf("ClaimPool on a new database = %v, %v; want nothing", locs, err)
	}
	if _, err := db.Claims().Add(ctx, claims.Claim{World: "w", Owner: "alice", MaxX: 9, MaxZ: 9}); err != nil {
		t.Fatal(err)
	}
	ls, closer, err := fleet.Stores{}.OpenLeases(ctx, cfg, env("node-a"), db)
	if ls != nil || closer != nil || err != nil {
		t.Errorf("OpenLeases on PostgreSQL without a LeasesURL = %v, %v, %v; want none", ls, closer, err)
	}
}

// TestBadURLs: a database or leases URL that cannot be used fails its
// Open, without quoting the password.
func TestBadURLs(t *testing.T) {
	ctx := context.Background()
	cfg := local(t.TempDir())
	cfg.Fleet.DatabaseURL = "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=1"
	if db, err := (fleet.Stores{}).OpenDatabase(ctx, cfg, env("n")); err == nil {
		db.Close()
		t.Error("OpenDatabase of a server nobody answers succeeded")
	} else if containsPassword(err) {
		t.Errorf("OpenDatabase error %q", err)
	}
	cfg = local(t.TempDir())
	cfg.Fleet.LeasesURL = "http://:hunter2@cache"
	if _, _, err := (fleet.Stores{}).OpenLeases(ctx, cfg, env("n"), nil); err == nil || containsPassword(err) {
		t.Errorf("OpenLeases of an http:// URL = %v, want an error not quoting the password", err)
	}
}

func containsPassword(err error) bool { return strings.Contains(err.Error(), "hunter2") }

func TestArchiveSchema(t *testing.T) {
	long := "s23456789012345678901234567890123456789012345678901234567890"
	for _, tc := range []struct {
		base  string
		n     int
		world string
		want  string
	}{
		{"rtp_archive", 0, "w", "rtp_archive"},
		{"rtp_archive", 1, "nether", "rtp_archive_nether"},
		{long, 1, "world", (long + "_world")[:63]},
	} {
		if got := fleet.ArchiveSchema(tc.base, tc.n, tc.world); got != tc.want {
			t.Errorf("ArchiveSchema(%q, %d, %q) = %q, want %q", tc.base, tc.n, tc.world, got, tc.want)
		}
	}
}
