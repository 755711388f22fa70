package sqlitepersist_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
)

// The schemas earlier builds wrote, as they wrote them: an upgrade must
// keep everything in them.
var (
	schemaV1 = []string{
		`CREATE TABLE locations (
			id     INTEGER PRIMARY KEY,
			region TEXT NOT NULL,
			key    TEXT NOT NULL,
			world  TEXT NOT NULL,
			x      INTEGER NOT NULL,
			y      INTEGER NOT NULL,
			z      INTEGER NOT NULL,
			idx    INTEGER NOT NULL,
			n      INTEGER NOT NULL CHECK (n > 0),
			UNIQUE (region, key, world, x, y, z)
		)`,
		`PRAGMA user_version = 1`,
	}
	schemaV2 = []string{
		`CREATE TABLE locations (
			id     INTEGER PRIMARY KEY,
			region TEXT NOT NULL,
			key    TEXT NOT NULL,
			world  TEXT NOT NULL,
			x      INTEGER NOT NULL,
			y      INTEGER NOT NULL,
			z      INTEGER NOT NULL,
			idx    INTEGER NOT NULL,
			n      INTEGER NOT NULL CHECK (n > 0),
			hot    INTEGER NOT NULL DEFAULT 0,
			UNIQUE (region, key, world, x, y, z)
		)`,
		`CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`,
		`CREATE TABLE memory_journal (
			seq    INTEGER PRIMARY KEY,
			region TEXT NOT NULL,
			idx    INTEGER NOT NULL,
			cause  INTEGER NOT NULL,
			source TEXT NOT NULL,
			at     INTEGER NOT NULL
		)`,
		`CREATE INDEX memory_journal_region ON memory_journal (region, seq)`,
		`CREATE TABLE spots (
			region TEXT NOT NULL,
			x      INTEGER NOT NULL,
			z      INTEGER NOT NULL,
			at     INTEGER NOT NULL,
			PRIMARY KEY (region, x, z)
		) WITHOUT ROWID`,
		`PRAGMA user_version = 2`,
	}
)

// execRaw runs statements on the database at path, bypassing the package.
func execRaw(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(path, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func load(t *testing.T, db *sqlitepersist.DB, region string, key pipeline.Key) []pipeline.Location {
	t.Helper()
	r, err := db.Region(region, key)
	if err != nil {
		t.Fatal(err)
	}
	locs, err := r.Load(context.Background())
	if err != nil {
		t.Fatalf("Load %s: %v", region, err)
	}
	return locs
}

// The rows below are inserted with ids out of their column order, so a
// Load in insertion order is told apart from one in key order.
const rowsV1 = `INSERT INTO locations (id, region, key, world, x, y, z, idx, n) VALUES
	(7, 'north', 'k1', 'overworld', 50, 70, -3, 11, 1),
	(3, 'north', 'k1', 'overworld', -20, 64, 9, 12, 2),
	(9, 'north', 'k1', 'nether', 1, 40, 1, 13, 1),
	(5, 'north', 'old', 'overworld', 8, 64, 8, 14, 1),
	(4, 'south', 'k2', 'overworld', 100, 80, 100, 15, 1)`

func TestUpgradeFromVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	execRaw(t, path, append(slices.Clone(schemaV1), rowsV1)...)
	db := openDB(t, path)
	if db.Unclean() {
		t.Error("a version 1 database counts as unclean: it knew no hot rows")
	}
	want := []pipeline.Location{
		{World: "overworld", X: -20, Y: 64, Z: 9, Index: 12},
		{World: "overworld", X: -20, Y: 64, Z: 9, Index: 12},
		{World: "overworld", X: 50, Y: 70, Z: -3, Index: 11},
		{World: "nether", X: 1, Y: 40, Z: 1, Index: 13},
	}
	if got := load(t, db, "north", "k1"); !slices.Equal(got, want) {
		t.Errorf("north after the upgrade = %v, want %v", got, want)
	}
	if got := load(t, db, "south", "k2"); len(got) != 1 || got[0].X != 100 {
		t.Errorf("south after the upgrade = %v", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, path); v != 4 {
		t.Fatalf("user_version after the upgrade = %d, want 4", v)
	}
}

func TestUpgradeFromVersion2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	base := time.Unix(1_700_000_000, 0)
	execRaw(t, path, append(slices.Clone(schemaV2),
		rowsV1,
		// The first row of north was hot.
		`UPDATE locations SET hot = 1 WHERE id = 7`,
		`INSERT INTO meta (k, v) VALUES ('state', 'running')`,
		`INSERT INTO memory_journal (seq, region, idx, cause, source, at) VALUES (1, 'north', 42, 1, 'screen', 5), (2, 'south', 43, 1, 'screen', 6)`,
		`INSERT INTO spots (region, x, z, at) VALUES
			('north', 1, 2, `+itoa(base.UnixNano())+`),
			('north', 3, 4, `+itoa(base.Add(-time.Hour).UnixNano())+`),
			('north', 5, 6, `+itoa(base.Add(-2*time.Hour).UnixNano())+`),
			('south', 1, 2, `+itoa(base.UnixNano())+`)`,
	)...)
	db := openDB(t, path)
	// The run that wrote it was killed: the hot row is discarded.
	north, _ := db.Region("north", "k1")
	rec := north.Recovery()
	if !rec.Unclean || !slices.Equal(rec.Discarded, []pipeline.Location{{World: "overworld", X: 50, Y: 70, Z: -3, Index: 11}}) {
		t.Errorf("Recovery after the upgrade = %+v, want the hot row discarded", rec)
	}
	want := []pipeline.Location{
		{World: "overworld", X: -20, Y: 64, Z: 9, Index: 12},
		{World: "overworld", X: -20, Y: 64, Z: 9, Index: 12},
		{World: "nether", X: 1, Y: 40, Z: 1, Index: 13},
	}
	if got := load(t, db, "north", "k1"); !slices.Equal(got, want) {
		t.Errorf("north after the upgrade = %v, want %v", got, want)
	}
	marks, err := north.Marks(context.Background())
	if err != nil || len(marks) != 1 || marks[0].Index != 42 || marks[0].Seq != 1 {
		t.Errorf("Marks after the upgrade = %+v, %v", marks, err)
	}
	spots, err := north.Spots(context.Background(), base.Add(-90*time.Minute))
	wantSpots := []pipeline.Spot{{X: 3, Z: 4, At: base.Add(-time.Hour)}, {X: 1, Z: 2, At: base}}
	if err != nil || !slices.EqualFunc(spots, wantSpots, func(a, b pipeline.Spot) bool { return a.X == b.X && a.Z == b.Z && a.At.Equal(b.At) }) {
		t.Errorf("Spots after the upgrade = %v, %v; want %v", spots, err, wantSpots)
	}
	// Writes after the upgrade go on from the rows it kept: a new row
	// loads after them, a removal finds its row.
	north.Add(pipeline.Location{World: "overworld", X: 7, Y: 7, Z: 7, Index: 99})
	north.Remove(pipeline.Location{World: "overworld", X: -20, Y: 64, Z: 9, Index: 12})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path)
	defer db.Close()
	if db.Unclean() {
		t.Error("the run after the upgrade closed cleanly but counts as unclean")
	}
	want = []pipeline.Location{want[0], want[2], {World: "overworld", X: 7, Y: 7, Z: 7, Index: 99}}
	if got := load(t, db, "north", "k1"); !slices.Equal(got, want) {
		t.Errorf("north after writes and a reopen = %v, want %v", got, want)
	}
}

// An upgrade that fails changes nothing: the database stays at its
// version with all its rows, and Open says why.
func TestUpgradeFailureKeepsDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	// A version 2 database whose locations table lacks the hot column
	// (hand-edited, or half-written by something else).
	execRaw(t, path, append(slices.Clone(schemaV1[:1]),
		rowsV1, `CREATE TABLE spots (region TEXT, x INTEGER, z INTEGER, at INTEGER)`, `PRAGMA user_version = 2`)...)
	db, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{})
	if err == nil {
		db.Close()
		t.Fatal("Open of a damaged version 2 database succeeded")
	}
	if !strings.Contains(err.Error(), "upgrade schema 2 to 4") {
		t.Errorf("Open error = %v, want it to name the upgrade", err)
	}
	if v := userVersion(t, path); v != 2 {
		t.Errorf("user_version after a failed upgrade = %d, want 2", v)
	}
	raw, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM locations`).Scan(&n); err != nil || n != 5 {
		t.Errorf("rows after a failed upgrade = %d, %v; want 5", n, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// schemaV3 is the schema version 3 wrote (no leases table).
var schemaV3 = []string{
	`CREATE TABLE spaces (
		id     INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		key    TEXT NOT NULL,
		world  TEXT NOT NULL,
		UNIQUE (region, key, world)
	)`,
	`CREATE TABLE locations (
		space INTEGER NOT NULL,
		x     INTEGER NOT NULL,
		z     INTEGER NOT NULL,
		y     INTEGER NOT NULL,
		seq   INTEGER NOT NULL,
		idx   INTEGER NOT NULL,
		n     INTEGER NOT NULL CHECK (n > 0),
		hot   INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (space, x, z, y)
	) WITHOUT ROWID`,
	`CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE memory_journal (
		seq    INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		idx    INTEGER NOT NULL,
		cause  INTEGER NOT NULL,
		source TEXT NOT NULL,
		at     INTEGER NOT NULL
	)`,
	`CREATE INDEX memory_journal_region ON memory_journal (region, seq)`,
	`CREATE TABLE spots (
		seq    INTEGER PRIMARY KEY,
		region TEXT NOT NULL,
		x      INTEGER NOT NULL,
		z      INTEGER NOT NULL,
		at     INTEGER NOT NULL
	)`,
	`CREATE INDEX spots_region ON spots (region, at)`,
	`PRAGMA user_version = 3`,
}

// TestUpgradeFromVersion3 checks that a version 3 database gains the
// leases table and keeps its locations.
func TestUpgradeFromVersion3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.db")
	execRaw(t, path, append(slices.Clone(schemaV3),
		`INSERT INTO spaces (id, region, key, world) VALUES (1, 'north', 'k1', 'overworld')`,
		`INSERT INTO locations (space, x, z, y, seq, idx, n) VALUES (1, 5, 6, 70, 2, 11, 1), (1, -3, 4, 64, 1, 12, 1)`,
		`INSERT INTO meta (k, v) VALUES ('state', 'clean')`,
	)...)
	db := openDB(t, path)
	want := []pipeline.Location{
		{World: "overworld", X: -3, Y: 64, Z: 4, Index: 12},
		{World: "overworld", X: 5, Y: 70, Z: 6, Index: 11},
	}
	if got := load(t, db, "north", "k1"); !slices.Equal(got, want) {
		t.Errorf("north after the upgrade = %v, want %v", got, want)
	}
	ctx := context.Background()
	clock := newLeaseClock()
	s := openLeases(t, db, clock.Now)
	if err := s.Grant(ctx, "tok", lease.Lease{World: "overworld", X: 1}, time.Minute); err != nil {
		t.Fatalf("Grant after the upgrade: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v := userVersion(t, path); v != 4 {
		t.Fatalf("user_version after the upgrade = %d, want 4", v)
	}
	if n := countLeases(t, path); n != 1 {
		t.Errorf("leases after a Grant = %d rows, want 1", n)
	}
}
