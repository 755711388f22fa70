package sqlitedb

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub dir", "a?b#c%d.db")
	db, err := Open(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	var sync int
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 1 {
		t.Fatalf("synchronous = %d, %v; want 1 (NORMAL)", sync, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the path with special characters: %v", err)
	}
	if _, err := Open(context.Background(), filepath.Dir(path), time.Second); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
}

func TestInitSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(name string) *sql.DB {
		db, err := Open(ctx, filepath.Join(dir, name), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	schema := []string{`CREATE TABLE things (x INTEGER)`}
	db := open("a.db")
	for range 2 { // create, then find it in place
		if err := InitSchema(ctx, db, "things", 2, schema); err != nil {
			t.Fatal(err)
		}
	}
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != 2 {
		t.Fatalf("user_version = %d, %v; want 2", v, err)
	}
	if err := InitSchema(ctx, db, "things", 1, schema); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("older build on a newer database = %v", err)
	}
	if err := InitSchema(ctx, db, "stuff", 2, nil); err == nil || !strings.Contains(err.Error(), "not a stuff database") {
		t.Fatalf("same version without the table = %v", err)
	}
	foreign := open("b.db")
	if _, err := foreign.Exec(`CREATE TABLE things (y TEXT)`); err != nil {
		t.Fatal(err)
	}
	if err := InitSchema(ctx, foreign, "things", 2, schema); err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Fatalf("foreign table at version 0 = %v", err)
	}
}
