// Package sqlitedb opens the small embedded SQLite databases the engine
// keeps (locations, claims) the one way they all want: WAL journal,
// synchronous=NORMAL (a process kill loses nothing committed; only power
// loss can), a busy timeout, and a single connection, so writes through it
// are serialised in the process and readers in other processes still see
// consistent snapshots.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the project's SQLite driver (see terrain/archive/sqlitestore)
)

// uriPath escapes the characters that end a path in a file: URI.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// Open opens (creating it and its directory when missing) the database at
// path with one connection in WAL mode, and checks the mode took effect.
// busy is the busy timeout (at least 1 ms). The caller owns the *sql.DB.
func Open(ctx context.Context, path string, busy time.Duration) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	dsn := fmt.Sprintf("file:%s?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=%d",
		uriPath.Replace(path), max(busy.Milliseconds(), 1))
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, err
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("journal_mode is %q, want wal", mode)
	}
	return db, nil
}
