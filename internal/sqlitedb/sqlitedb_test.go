package sqlitedb

import (
	"context"
	"os"
	"path/filepath"
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
