package sqlitedb

import "github.com/ncruces/go-sqlite3"

// sqliteErrorFor returns an error the driver would report with the primary
// result code code and no system error.
func sqliteErrorFor(code int) error { return sqlite3.ErrorCode(code) }
