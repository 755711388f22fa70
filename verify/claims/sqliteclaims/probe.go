package sqliteclaims

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/verify/claims"
)

// fileState is what Open found at its path before opening it for writing.
type fileState int

const (
	fileMissing  fileState = iota // nothing there: a new store
	fileEmpty                     // an existing 0-byte file
	fileNoTables                  // an existing SQLite database without any table
	fileStore                     // an existing database with a claims table
)

// probe looks at path without changing it: through a read-only connection
// when it is a non-empty file. A database with tables but no claims table
// is refused (claims.ErrNotClaimsDatabase, naming its tables) before anything is
// written to it; opening it for writing would already switch its journal
// mode.
func probe(ctx context.Context, path string, busy time.Duration) (fileState, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fileMissing, nil
	case err != nil:
		return 0, err
	case fi.IsDir():
		return 0, errors.New("is a directory")
	case fi.Size() == 0:
		return fileEmpty, nil
	}
	db := sql.OpenDB(sqlitedb.NewConnector(sqlitedb.URI(path, true), sqlitedb.BusyTimeout(busy)))
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		// SQLite says only "unable to open database file" of a database
		// on a read-only disk: say which file or directory, and why.
		if cerr := sqlitedb.Check(path); cerr != nil {
			return 0, cerr
		}
		return 0, fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return 0, fmt.Errorf("read schema: %w", err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read schema: %w", err)
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("read schema: %w", err)
	}
	var version int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	// The checks of sqlitedb.InitSchema, made here before anything is
	// written; it makes them again.
	hasClaims := slices.Contains(tables, "claims")
	switch {
	case len(tables) > 0 && !hasClaims:
		return 0, fmt.Errorf("%w: it has no claims table but holds %s %s; refusing to change it",
			claims.ErrNotClaimsDatabase, plural(len(tables), "table", "tables"), strings.Join(tables, ", "))
	case version > schemaVersion:
		return 0, fmt.Errorf("schema version %d is newer than this build's %d", version, schemaVersion)
	case hasClaims && version == 0:
		return 0, fmt.Errorf("%w: a claims table this package did not write (schema version 0); refusing to change it", claims.ErrNotClaimsDatabase)
	case version != 0 && version != schemaVersion:
		return 0, fmt.Errorf("schema version %d is not supported", version)
	case version == schemaVersion && !hasClaims:
		return 0, fmt.Errorf("%w: schema version %d without a claims table; refusing to change it", claims.ErrNotClaimsDatabase, version)
	case hasClaims:
		return fileStore, nil
	}
	return fileNoTables, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
