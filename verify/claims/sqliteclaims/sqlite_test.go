package sqliteclaims_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/claimstest"
	"github.com/rtpengine/rtp/verify/claims/sqliteclaims"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// kind opens stores in new SQLite files, in folders Open creates.
var kind = claimstest.Kind{
	Name:  "sqlite",
	Fresh: func(t testing.TB) string { return filepath.Join(t.TempDir(), "sub", "dir", "claims.db") },
	Open: func(ctx context.Context, at string, opts claims.Options) (*claims.Store, error) {
		return sqliteclaims.Open(ctx, at, sqliteclaims.Options{Options: opts})
	},
	Exec: execRaw,
}

func TestContract(t *testing.T) { claimstest.Run(t, kind) }

var (
	add  = claimstest.Add
	rect = claimstest.Rect
)

func TestOptionsValidate(t *testing.T) {
	err := sqliteclaims.Options{Options: claims.Options{MaxSide: -1}, BusyTimeout: -time.Second}.Validate()
	for _, want := range []string{"MaxSide", "BusyTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %s reported", err, want)
		}
	}
	if err := (sqliteclaims.Options{}).Validate(); err != nil {
		t.Fatalf("zero Options: Validate() = %v, want nil", err)
	}
	if _, err := sqliteclaims.Open(context.Background(), "", sqliteclaims.Options{}); err == nil {
		t.Fatal("Open with an empty path succeeded")
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := sqliteclaims.Open(ctx, dir, sqliteclaims.Options{}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open(a directory) = %v, want an error", err)
	}

	// Someone else's database (another package's schema).
	other := filepath.Join(dir, "other.db")
	execRaw(t, other, `CREATE TABLE locations (id INTEGER)`, `PRAGMA user_version = 1`)
	if _, err := sqliteclaims.Open(ctx, other, sqliteclaims.Options{}); err == nil || !strings.Contains(err.Error(), "not a claims database") {
		t.Errorf("Open(another database) = %v, want not a claims database", err)
	}
	newer := filepath.Join(dir, "newer.db")
	execRaw(t, newer, `PRAGMA user_version = 9`)
	if _, err := sqliteclaims.Open(ctx, newer, sqliteclaims.Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open(newer schema) = %v, want an error", err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	execRaw(t, foreign, `CREATE TABLE claims (id INTEGER)`)
	if _, err := sqliteclaims.Open(ctx, foreign, sqliteclaims.Options{}); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Errorf("Open(unversioned claims table) = %v, want an error", err)
	}
}

// execRaw runs statements on an SQLite file directly, as another program
// would.
func execRaw(t testing.TB, path string, stmts ...string) {
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
