package pgpersist_test

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/internal/pgtest"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// dsn returns the PostgreSQL server the tests use, or skips.
func dsn(t testing.TB) string { return pgtest.URL(t) }

// newSchema creates an empty schema of its own for the test and drops it
// at cleanup.
func newSchema(t testing.TB) string {
	t.Helper()
	name, _ := pgtest.Schema(t)
	return name
}

// open opens node on schema; the DB is closed at cleanup if the test has
// not closed it.
func open(t testing.TB, schema, node string, opts pgpersist.Options) *pgpersist.DB {
	t.Helper()
	opts.Schema, opts.Node = schema, node
	db, err := pgpersist.Open(context.Background(), dsn(t), opts)
	if err != nil {
		t.Fatalf("Open %s: %v", node, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func region(t testing.TB, db *pgpersist.DB, name string, key pipeline.Key) *pgpersist.Region {
	t.Helper()
	r, err := db.Region(name, key)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
