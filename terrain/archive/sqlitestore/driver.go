package sqlitestore

import (
	"fmt"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver; see the package documentation for the choice
)

// driverName is the database/sql name github.com/mattn/go-sqlite3 registers.
const driverName = "sqlite3"

// uriPath escapes the characters that would end or alter the path part of
// an SQLite URI filename.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// writerDSN is the data source of the writing connection.
func writerDSN(path string, busy time.Duration) string {
	return fmt.Sprintf("file:%s?_busy_timeout=%d", uriPath.Replace(path), busyMillis(busy))
}

// readerDSN is the data source of the read-only pool: opened read-only and
// query_only, so no read can write even by mistake.
func readerDSN(path string, busy time.Duration) string {
	return fmt.Sprintf("file:%s?mode=ro&_query_only=1&_busy_timeout=%d", uriPath.Replace(path), busyMillis(busy))
}
