package sqlitedb

import (
	"database/sql/driver"
	"errors"

	"github.com/ncruces/go-sqlite3"
	sqlite3driver "github.com/ncruces/go-sqlite3/driver" // registers DriverName
)

// The project's SQLite driver is github.com/ncruces/go-sqlite3, pure Go
// (SQLite compiled to Wasm, translated to Go); docs/sqlite-driver.md says
// why. This file is the only one that names it.

// DriverName is the database/sql name of the project's SQLite driver,
// registered when this package is imported.
const DriverName = "sqlite3"

// sqliteDriver opens the connections of NewConnector.
var sqliteDriver driver.Driver = &sqlite3driver.SQLite{}

// driverParams are the driver's own URI parameters URI adds: transactions
// begin DEFERRED, as SQLite's own BEGIN does (this driver otherwise begins
// IMMEDIATE on a writable connection, taking the write lock even for a
// read).
var driverParams = []string{"_txlock=deferred"}

// asSQLite returns the result code and system error of an SQLite error in
// err's chain. The driver reports most as a *sqlite3.Error, which carries
// the system error, and some as a bare (extended) result code; each of
// them converts to its primary sqlite3.ErrorCode with errors.As.
func asSQLite(err error) (sqliteError, bool) {
	var code sqlite3.ErrorCode
	if !errors.As(err, &code) {
		return sqliteError{}, false
	}
	se := sqliteError{code: int(code)}
	if e := (*sqlite3.Error)(nil); errors.As(err, &e) {
		se.sys = e.Unwrap()
	}
	return se, true
}
