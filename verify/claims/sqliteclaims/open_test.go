package sqliteclaims_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/claimstest"
	"github.com/rtpengine/rtp/verify/claims/sqliteclaims"
)

func openLogged(t *testing.T, path string, rec *claimstest.Recorder) *claims.Store {
	t.Helper()
	s, err := sqliteclaims.Open(context.Background(), path, sqliteclaims.Options{Options: claims.Options{Logger: slog.New(rec)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenLogsNewStoreOnlyWhenCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "claims.db")
	rec := &claimstest.Recorder{}
	s := openLogged(t, path, rec)
	if got := rec.Take(); len(got) != 1 || !strings.HasPrefix(got[0], "INFO ") || !strings.Contains(got[0], "new, empty claims store") {
		t.Fatalf("records of creating a store = %q, want one info record about a new, empty store", got)
	}
	add(t, s, rect("w", "alice", 0, 0, 9, 9))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openLogged(t, path, rec)
	if got := rec.Take(); len(got) != 0 {
		t.Fatalf("records of reopening a store = %q, want none", got)
	}
	if s2.Len() != 1 {
		t.Fatalf("reopened store holds %d claims, want 1", s2.Len())
	}
}

func TestOpenWarnsOnFileWithoutClaims(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noTables := filepath.Join(dir, "notables.db")
	execRaw(t, noTables, `CREATE TABLE scratch (x INTEGER)`, `DROP TABLE scratch`)
	if fi, err := os.Stat(noTables); err != nil || fi.Size() == 0 {
		t.Fatalf("stat of the table-less database = %v, %v; want a non-empty file", fi, err)
	}
	for path, want := range map[string]string{empty: "0-byte", noTables: "no tables"} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rec := &claimstest.Recorder{}
			s := openLogged(t, path, rec)
			got := rec.Take()
			if len(got) != 1 || !strings.HasPrefix(got[0], "WARN ") || !strings.Contains(got[0], want) {
				t.Fatalf("records = %q, want one warning saying %q", got, want)
			}
			// The store works and is a claims store from now on.
			add(t, s, rect("w", "alice", 0, 0, 9, 9))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s2 := openLogged(t, path, rec); s2.Len() != 1 || len(rec.Take()) != 0 {
				t.Fatalf("reopened: %d claims, want 1 and no records", s2.Len())
			}
		})
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		stmts []string
		want  []string // in the error
	}{
		"other tables": {
			[]string{`CREATE TABLE players (uuid TEXT PRIMARY KEY)`, `CREATE TABLE homes (owner TEXT, x INTEGER, z INTEGER)`,
				`INSERT INTO homes VALUES ('alice', 1, 2)`},
			[]string{"no claims table", "2 tables", "homes, players"},
		},
		"other tables, versioned": {
			[]string{`CREATE TABLE locations (id INTEGER)`, `PRAGMA user_version = 1`},
			[]string{"no claims table", "1 table", "locations"},
		},
		"unversioned claims table": {
			[]string{`CREATE TABLE claims (id INTEGER)`},
			[]string{"did not write"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".db")
			execRaw(t, path, tc.stmts...)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rec := &claimstest.Recorder{}
			_, err = sqliteclaims.Open(context.Background(), path, sqliteclaims.Options{Options: claims.Options{Logger: slog.New(rec)}})
			if !errors.Is(err, claims.ErrNotClaimsDatabase) {
				t.Fatalf("Open() = %v, want ErrNotClaimsDatabase", err)
			}
			for _, w := range append(tc.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := rec.Take(); len(got) != 0 {
				t.Errorf("records = %q, want none (the error says it)", got)
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the foreign database changed (%d bytes before, %d after, %v)", len(before), len(after), err)
			}
			for _, side := range []string{"-wal", "-journal"} {
				if _, err := os.Stat(path + side); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s%s exists after a refused Open (stat: %v)", path, side, err)
				}
			}
			db, err := sql.Open(sqlitedb.DriverName, sqlitedb.URI(path, true))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var mode string
			if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "delete" {
				t.Fatalf("journal_mode = %q, %v; want the untouched delete", mode, err)
			}
		})
	}
}
