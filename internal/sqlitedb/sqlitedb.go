// Package sqlitedb opens the small embedded SQLite databases the engine
// keeps (locations, claims) the one way they all want: WAL journal,
// synchronous=NORMAL (a process kill loses nothing committed; only power
// loss can), a busy timeout, and a single connection, so writes through it
// are serialised in the process and readers in other processes still see
// consistent snapshots.
//
// Open is the one place the engine opens these databases, so it is also
// the one place that tells a read-only or missing data directory, or a
// read-only database file, from other failures to open (see Open).
//
// The package is also the one place that imports the project's SQLite
// driver, github.com/ncruces/go-sqlite3 (pure Go: the module builds with
// CGO_ENABLED=0; docs/sqlite-driver.md says why this one), and registers
// it as DriverName. Other packages reach SQLite through NewConnector, URI
// and BusyTimeout, and read its errors with IsBusy and IsDiskFull, so a
// change of driver touches driver.go here only.
package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rtpengine/rtp/internal/diskspace"
)

// Errors in the chain of the error Open returns, for errors.Is. The
// error's text names the path and the system's own error.
var (
	// ErrReadOnly: the data directory or the database file cannot be
	// written (permissions, or a read-only file system).
	ErrReadOnly = errors.New("sqlitedb: read-only")
	// ErrNoDirectory: the data directory does not exist and could not be
	// created.
	ErrNoDirectory = errors.New("sqlitedb: no data directory")
	// ErrDiskFull: the file system has no space left.
	ErrDiskFull = errors.New("sqlitedb: disk full")
)

// openError is an error of Open that is one of the kinds above.
type openError struct {
	msg         string
	kind, cause error
}

func (e *openError) Error() string   { return e.msg }
func (e *openError) Unwrap() []error { return []error{e.kind, e.cause} }

// Open opens (creating it and its directory when missing) the database at
// path with one connection in WAL mode, and checks the mode took effect.
// busy is the busy timeout (at least 1 ms); setup are further statements
// (PRAGMAs) each new connection runs after those. The caller owns the
// *sql.DB.
//
// Before SQLite sees the path, Open checks what SQLite would otherwise
// report only as "unable to open database file": that the data directory
// exists or can be created, and that it and an existing database file can
// be written (WAL mode creates files beside the database, so a writable
// file in a read-only directory is not enough). Such errors say which
// directory or file and why, and have ErrReadOnly, ErrNoDirectory or
// ErrDiskFull in their chain. An error SQLite reports on opening is
// classified the same way.
func Open(ctx context.Context, path string, busy time.Duration, setup ...string) (*sql.DB, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	db := sql.OpenDB(NewConnector(URI(path, false),
		append([]string{BusyTimeout(busy), `PRAGMA journal_mode = WAL`, `PRAGMA synchronous = NORMAL`}, setup...)...))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		db.Close()
		return nil, classify(path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		db.Close()
		return nil, fmt.Errorf("sqlitedb: %s: journal_mode is %q, want wal", path, mode)
	}
	return db, nil
}

// Check makes sure a database can be opened for writing at path: it
// creates the data directory (filepath.Dir(path)) when it is missing and
// the database file (empty, which SQLite takes for an empty database) when
// that is missing; an existing file must open for writing, and its
// directory must be writable (checked by creating and removing a probe
// file). Open calls it first; errors are as described there.
func Check(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR): // ENOTDIR: a file on the way
		if err := os.MkdirAll(dir, 0o755); err != nil {
			why := ""
			if isReadOnly(err) {
				why = " (its parent is read-only)"
			}
			return &openError{
				msg:  fmt.Sprintf("sqlitedb: data directory %s does not exist and could not be created%s: %v", dir, why, err),
				kind: ErrNoDirectory, cause: err,
			}
		}
	case err != nil:
		return fmt.Errorf("sqlitedb: data directory %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("sqlitedb: data directory %s is not a directory", dir)
	}
	fi, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Create the file SQLite would create (an empty file is an empty
		// database), so that the error names it.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) { // created by someone else meanwhile
			return nil
		}
		if err != nil {
			return classifyAt(dir, "data directory", err)
		}
		return f.Close()
	case err != nil:
		return fmt.Errorf("sqlitedb: database file %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("sqlitedb: database file %s is a directory", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return classifyAt(path, "database file", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlitedb: database file %s: %w", path, err)
	}
	// The write-ahead log and its index are files beside the database,
	// created on opening: the directory must be writable too.
	probe, err := os.CreateTemp(dir, ".sqlitedb-probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the probe's name means nothing to the reader
		}
		if isReadOnly(err) {
			return &openError{
				msg:  fmt.Sprintf("sqlitedb: data directory %s is read-only: the write-ahead log beside %s cannot be created (%v)", dir, filepath.Base(path), err),
				kind: ErrReadOnly, cause: err,
			}
		}
		return classifyAt(dir, "data directory", err)
	}
	name := probe.Name()
	probe.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("sqlitedb: data directory %s: remove probe file: %w", dir, err)
	}
	return nil
}

// classify turns an error SQLite reported on opening path into one that
// says what is wrong with the directory or the file, when the system error
// under it tells; other errors come back as they are.
func classify(path string, err error) error {
	se, ok := asSQLite(err)
	if !ok {
		return err
	}
	return classifyCode(path, err, se)
}

// Explain returns err, an error met using the database at path, in words
// that name its cause where that can be told: a full disk ("disk full (N
// bytes free on DIR)", with ErrDiskFull in the chain), a read-only
// database or directory (ErrReadOnly, naming the file). SQLite reports a
// write the disk had no room for as a bare "disk I/O error", so an I/O
// error on a file system with almost no space left counts as a full disk.
// Other errors, and nil, come back as they are.
func Explain(path string, err error) error {
	if err == nil {
		return nil
	}
	var oe *openError
	if errors.As(err, &oe) {
		return err // explained already
	}
	return classify(path, err)
}

// lowSpace is the free space under which an I/O error counts as a full
// disk: less than a few of SQLite's writes.
const lowSpace = 1 << 20

// classifyCode is classify for the SQLite error err whose code and system
// error are se.
func classifyCode(path string, err error, se sqliteError) error {
	cause := err
	sys := se.sysCause()
	if sys != nil {
		cause = fmt.Errorf("open %s: %w", path, sys)
	}
	dir := filepath.Dir(path)
	switch {
	case se.code == codeReadOnly || sys != nil && isReadOnly(sys):
		return &openError{
			msg:  fmt.Sprintf("sqlitedb: database %s is read-only (%v)", path, cause),
			kind: ErrReadOnly, cause: err,
		}
	case se.code == codeFull || isNoSpace(sys) || se.code == codeIOErr && spaceBelow(dir, lowSpace):
		return &openError{
			msg:  fmt.Sprintf("sqlitedb: %s: %s (%v)", path, diskFull(dir), cause),
			kind: ErrDiskFull, cause: err,
		}
	case sys != nil && errors.Is(sys, fs.ErrNotExist):
		return &openError{
			msg:  fmt.Sprintf("sqlitedb: data directory %s does not exist (%v)", dir, cause),
			kind: ErrNoDirectory, cause: err,
		}
	}
	return err
}

// diskUsage is diskspace.Of; tests replace it.
var diskUsage = diskspace.Of

// spaceBelow reports whether the file system of dir has less than n bytes
// free; false when that cannot be told.
func spaceBelow(dir string, n uint64) bool {
	u, err := diskUsage(dir)
	return err == nil && u.Free < n
}

// diskFull says that the disk of dir is full, with its free bytes when
// they can be told.
func diskFull(dir string) string {
	if u, err := diskUsage(dir); err == nil {
		return fmt.Sprintf("disk full (%d bytes free on %s)", u.Free, dir)
	}
	return "disk full on " + dir
}

// isNoSpace reports whether err is ENOSPC (nil is not).
func isNoSpace(err error) bool { return err != nil && errors.Is(err, syscall.ENOSPC) }

// classifyAt describes err, met creating or opening what (the data
// directory or the database file) at path.
func classifyAt(path, what string, err error) error {
	switch {
	case isReadOnly(err):
		return &openError{msg: fmt.Sprintf("sqlitedb: %s %s is read-only (%v)", what, path, err), kind: ErrReadOnly, cause: err}
	case isNoSpace(err):
		return &openError{msg: fmt.Sprintf("sqlitedb: %s %s: %s (%v)", what, path, diskFull(filepath.Dir(path)), err), kind: ErrDiskFull, cause: err}
	}
	return fmt.Errorf("sqlitedb: %s %s: %w", what, path, err)
}

// isReadOnly reports whether err is a permission error (EACCES, EPERM) or
// a read-only file system (EROFS).
func isReadOnly(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
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

// ErrForeign is in the chain of the error CheckTables and CheckFile return
// for a database that holds tables its caller did not create: another
// program's database, which must not be changed.
var ErrForeign = errors.New("sqlitedb: another program's database")

// Querier is what CheckTables reads through: a *sql.DB, *sql.Conn or
// *sql.Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// CheckTables lists the tables of the database q reads (SQLite's own,
// named sqlite_*, aside) and returns an error naming those not in ours,
// with ErrForeign in its chain, or nil when there are none. It reads only.
func CheckTables(ctx context.Context, q Querier, ours ...string) error {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	var foreign []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
		if !slices.Contains(ours, name) {
			foreign = append(foreign, name)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if len(foreign) == 0 {
		return nil
	}
	noun := "table"
	if len(foreign) > 1 {
		noun = "tables"
	}
	return fmt.Errorf("%w: it holds %s rtp did not create (%s); refusing to change it (give rtp a file of its own)",
		ErrForeign, noun, strings.Join(foreign, ", "))
}

// CheckFile is CheckTables on the database file at path, read through a
// read-only connection before anything opens it for writing (opening it
// for writing would already switch its journal mode). A missing or empty
// file holds no table: nil.
func CheckFile(ctx context.Context, path string, busy time.Duration, ours ...string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir() || fi.Size() == 0:
		return nil // Check names a directory; an empty file is an empty database
	}
	db := sql.OpenDB(NewConnector(URI(path, true), BusyTimeout(busy)))
	defer db.Close()
	err = CheckTables(ctx, db, ours...)
	if err != nil && !errors.Is(err, ErrForeign) {
		// SQLite says only "unable to open database file" of a database
		// on a read-only disk: say which file or directory, and why.
		if cerr := Check(path); cerr != nil {
			return cerr
		}
	}
	return err
}
