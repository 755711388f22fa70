package archive_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// openSQLite opens a fresh SQLite store in a temporary directory.
func openSQLite(b *testing.B) archive.Store {
	s, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "archive.db"), sqlitestore.Options{Logger: quietOptions().Logger})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkArchiveHitSQLite and BenchmarkStoreReadSQLite pair one hit
// through the archive with the raw Get of the same record from the same
// kind of SQLite store; the target is hit <= 1.2x read.
func BenchmarkArchiveHitSQLite(b *testing.B) { benchHit(b, openSQLite(b)) }

func BenchmarkStoreReadSQLite(b *testing.B) { benchRead(b, openSQLite(b)) }

// BenchmarkDescentSQLite is BenchmarkDescent over the SQLite store.
func BenchmarkDescentSQLite(b *testing.B) { benchDescent(b, openSQLite) }
