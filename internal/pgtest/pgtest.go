// Package pgtest gives tests a PostgreSQL schema of their own on the
// server named by RTP_TEST_POSTGRES, and skips them, saying what to set,
// when it is not set.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env is the variable naming the test server.
const Env = "RTP_TEST_POSTGRES"

// URL returns the test server's connection URL, or skips t.
func URL(t testing.TB) string {
	t.Helper()
	s := os.Getenv(Env)
	if s == "" {
		t.Skip(Env + " is not set: this test needs a PostgreSQL server, " +
			"e.g. " + Env + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return s
}

// Schema creates an empty schema with a random name for t, dropped (with
// everything in it) when t ends, and returns its name and a connection
// URL whose search_path is that schema, so that what the code under test
// creates lands there.
func Schema(t testing.TB) (name, schemaURL string) {
	t.Helper()
	base := URL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "rtp_test_" + hex.EncodeToString(b[:])
	exec(t, base, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return name, WithSearchPath(t, base, name)
}

// WithSearchPath returns the connection URL dsn with its search_path set
// to schema (which need not exist).
func WithSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", Env, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs one statement on its own connection.
func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("connect to %s: %v", Env, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}
