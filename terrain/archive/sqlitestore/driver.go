package sqlitestore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3" // the SQLite driver; see the package documentation for the choice
)

// driverName is the database/sql name github.com/mattn/go-sqlite3 registers
// (tests open plain inspection connections with it).
const driverName = "sqlite3"

// maxMmap is SQLite's compile-time ceiling on mmap_size on Linux
// (SQLITE_MAX_MMAP_SIZE, 0x7fff0000): a larger request is clamped to it.
const maxMmap = 0x7fff0000

// uriPath escapes the characters that would end or alter the path part of
// an SQLite URI filename.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// connector opens connections of one data source, running setup (if any)
// on each new connection: per-connection PRAGMAs that the DSN of
// mattn/go-sqlite3 cannot carry.
type connector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func newConnector(dsn string, setup ...string) *connector {
	drv := &sqlite3.SQLiteDriver{}
	if len(setup) > 0 {
		drv.ConnectHook = func(c *sqlite3.SQLiteConn) error {
			for _, q := range setup {
				if _, err := c.Exec(q, nil); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			return nil
		}
	}
	return &connector{dsn: dsn, drv: drv}
}

func (c *connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c *connector) Driver() driver.Driver                        { return c.drv }

// isBusy reports whether err is SQLITE_BUSY: a lock wait that ran out of
// busy_timeout, which this package sets to the time the transaction (or
// Open) has, so it means that time is spent.
func isBusy(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && e.Code == sqlite3.ErrBusy
}

// writerDSN is the data source of the writing connection.
func writerDSN(path string, busy time.Duration) string {
	return fmt.Sprintf("file:%s?_busy_timeout=%d", uriPath.Replace(path), busyMillis(busy))
}

// readerDSN is the data source of the read-only pool: opened read-only and
// query_only, so no read can write even by mistake.
func readerDSN(path string, busy time.Duration) string {
	return fmt.Sprintf("file:%s?mode=ro&_query_only=1&_busy_timeout=%d", uriPath.Replace(path), busyMillis(busy))
}
