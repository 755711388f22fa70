package sqlitestore

import (
	"database/sql/driver"
	"time"

	"github.com/rtpengine/rtp/internal/sqlitedb"
)

// The SQLite driver is internal/sqlitedb's (see docs/sqlite-driver.md for
// the choice): this file is where this package meets it.

// maxMmap is the driver's compile-time ceiling on mmap_size
// (SQLITE_MAX_MMAP_SIZE, 1 GiB in the build of SQLite that
// github.com/ncruces/go-sqlite3 embeds): a larger request is clamped to it.
const maxMmap = 1 << 30

// isBusy reports whether err is SQLITE_BUSY: a lock wait that ran out of
// busy_timeout, which this package sets to the time the transaction (or
// Open) has, so it means that time is spent.
func isBusy(err error) bool { return sqlitedb.IsBusy(err) }

// writerConnector opens the writing connection.
func writerConnector(path string, busy time.Duration) driver.Connector {
	return sqlitedb.NewConnector(sqlitedb.URI(path, false), sqlitedb.BusyTimeout(busy))
}

// readerConnector opens the connections of the read-only pool: opened
// read-only and query_only, so no read can write even by mistake; setup
// runs after those. An immutable pool (Options.ReadOnly) takes no locks and
// creates no file.
func readerConnector(path string, busy time.Duration, immutable bool, setup ...string) driver.Connector {
	uri := sqlitedb.URI(path, true)
	if immutable {
		uri = sqlitedb.ImmutableURI(path)
	}
	return sqlitedb.NewConnector(uri,
		append([]string{sqlitedb.BusyTimeout(busy), `PRAGMA query_only = 1`}, setup...)...)
}
