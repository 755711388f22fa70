package sqlitedb

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// uriPath escapes the characters that end or alter the path part of an
// SQLite URI filename.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// URI returns the data source name of the database file at path for the
// project's driver: a file: URI, opened read-only when readOnly (SQLite's
// mode=ro), with the driver's own parameters (see driver.go). It works with
// sql.Open(DriverName, URI(path, ro)) and with NewConnector.
func URI(path string, readOnly bool) string {
	var q []string
	if readOnly {
		q = append(q, "mode=ro")
	}
	q = append(q, driverParams...)
	uri := "file:" + uriPath.Replace(path)
	if len(q) > 0 {
		uri += "?" + strings.Join(q, "&")
	}
	return uri
}

// ImmutableURI returns the data source name that opens the database file
// at path read-only and immutable (SQLite's immutable=1): SQLite then takes
// no locks and creates no -wal or -shm file beside it, so it opens on a
// full disk. The caller must know that nothing writes the file meanwhile.
func ImmutableURI(path string) string {
	return "file:" + uriPath.Replace(path) + "?" + strings.Join(append([]string{"mode=ro", "immutable=1"}, driverParams...), "&")
}

// BusyTimeout is the PRAGMA that sets a connection's busy timeout to d,
// rounded down to whole milliseconds and at least 1 ms (0 would turn the
// wait off).
func BusyTimeout(d time.Duration) string {
	return fmt.Sprintf("PRAGMA busy_timeout = %d", max(d.Milliseconds(), 1))
}

// connector opens connections of one data source, running setup on each.
type connector struct {
	uri   string
	setup []string
}

// NewConnector returns a connector (for sql.OpenDB) that opens uri (see
// URI) with the project's driver and runs the statements of setup, in
// order, on each new connection: per-connection PRAGMAs such as
// BusyTimeout, query_only or mmap_size. A statement that fails closes the
// connection and fails the connect with an error naming the statement.
// The connector is safe for concurrent use.
func NewConnector(uri string, setup ...string) driver.Connector {
	return &connector{uri: uri, setup: setup}
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := sqliteDriver.Open(c.uri)
	if err != nil {
		return nil, err
	}
	if len(c.setup) == 0 {
		return conn, nil
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, errors.New("sqlitedb: the SQLite driver cannot execute statements")
	}
	for _, q := range c.setup {
		if _, err := ex.ExecContext(ctx, q, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return sqliteDriver }

// SQLite's primary result codes this package tells apart
// (https://sqlite.org/rescode.html).
const (
	codeBusy     = 5
	codeReadOnly = 8
	codeIOErr    = 10
	codeCorrupt  = 11
	codeFull     = 13
	codeCantOpen = 14
)

// sqliteError is what classify needs of an error SQLite reported: the
// primary result code and the system error under it (nil when the driver
// does not tell).
type sqliteError struct {
	code int
	sys  error
}

// IsBusy reports whether err, or an error in its chain, is SQLITE_BUSY: a
// lock wait that ran out of the busy timeout.
func IsBusy(err error) bool {
	se, ok := asSQLite(err)
	return ok && se.code == codeBusy
}

// IsDiskFull reports whether err, or an error in its chain, says the disk
// (or the database's page limit) is full: SQLITE_FULL, or an I/O error
// whose system error is ENOSPC.
func IsDiskFull(err error) bool {
	se, ok := asSQLite(err)
	return ok && (se.code == codeFull || isNoSpace(se.sys))
}

// sysCause returns the system error of se for a message: the bare errno of
// a *fs.PathError (the path is said by the caller).
func (se sqliteError) sysCause() error {
	var pe *fs.PathError
	if errors.As(se.sys, &pe) {
		return pe.Err
	}
	return se.sys
}
