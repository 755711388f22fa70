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

// InitSchema creates table with the statements of schema in a new database
// (user_version 0, no such table) and sets user_version to version; in an
// existing database it checks the version instead. A database at version 0
// that already has the table, one at a newer or other version, or one at
// this version without the table, is not this package's: an error says
// which, and nothing is changed.
func InitSchema(ctx context.Context, db *sql.DB, table string, version int, schema []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var have, tables int
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&have); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&tables); err != nil {
		return err
	}
	switch {
	case have == 0 && tables != 0:
		return fmt.Errorf("a %s table this package did not write (schema version 0)", table)
	case have > version:
		return fmt.Errorf("schema version %d is newer than this build's %d", have, version)
	case have == version && tables == 0:
		return fmt.Errorf("schema version %d without a %s table: not a %s database", have, table, table)
	case have == version:
		return tx.Commit()
	case have != 0:
		return fmt.Errorf("schema version %d is not supported", have)
	}
	for _, q := range schema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, version)); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return tx.Commit()
}
