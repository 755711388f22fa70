package pgpersist_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// dsn returns the PostgreSQL server the tests use, or skips.
func dsn(t testing.TB) string {
	t.Helper()
	s := os.Getenv("RTP_TEST_POSTGRES")
	if s == "" {
		t.Skip("RTP_TEST_POSTGRES is not set: these tests need a PostgreSQL server, " +
			"e.g. RTP_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return s
}

// newSchema creates an empty schema of its own for the test and drops it
// at cleanup.
func newSchema(t testing.TB) string {
	t.Helper()
	url := dsn(t)
	var b [6]byte
	rand.Read(b[:])
	name := "rtp_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to RTP_TEST_POSTGRES: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
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
