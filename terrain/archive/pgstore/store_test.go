package pgstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/archivetest"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// postgresEnv names the connection string of the test database.
const postgresEnv = "RTP_TEST_POSTGRES"

func connString(t testing.TB) string {
	t.Helper()
	cs := os.Getenv(postgresEnv)
	if cs == "" {
		t.Skip(postgresEnv + " is not set (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); PostgreSQL store tests need a server")
	}
	return cs
}

// admin opens a plain connection for setup and inspection.
func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), connString(t))
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresEnv, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// newSchema returns a fresh random schema name and drops the schema when
// the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	cs := connString(t)
	var b [6]byte
	rand.Read(b[:])
	name := "rtp_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, cs)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func mustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.OpenTimeout == 0 {
		// What these tests check is the store, not Open's bound (its own
		// tests set one): on a loaded machine PostgreSQL can take longer
		// than the default second to create a schema and count it.
		opts.OpenTimeout = 30 * time.Second
	}
	s, err := Open(context.Background(), connString(t), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// record is a record whose payload is derived from its key.
func record(key string, n int) archive.Record {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(key))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return archive.Record{Digest: sha256.Sum256([]byte(key)), Key: []byte(key), Payload: out[:n]}
}

func putAll(t testing.TB, s *Store, rs ...archive.Record) {
	t.Helper()
	for _, r := range rs {
		if err := s.Put(context.Background(), r); err != nil {
			t.Fatalf("Put(%q) = %v", r.Key, err)
		}
	}
}

// checkSchema checks the tables directly: counters equal COUNT/SUM, every
// row's size and digest agree with its key and payload, and the limits
// hold. It returns the number of rows and bytes.
func checkSchema(t testing.TB, schema string, limits archive.Limits) (int64, int64) {
	t.Helper()
	conn := admin(t)
	ctx := context.Background()
	q := newQueries(schema)
	var entries, nbytes, n, sum int64
	if err := conn.QueryRow(ctx, q.stats).Scan(&entries, &nbytes); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, q.count).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if entries != n || nbytes != sum {
		t.Fatalf("meta counters = %d entries %d bytes, rows COUNT/SUM = %d %d", entries, nbytes, n, sum)
	}
	l := limits.WithDefaults()
	if n > l.MaxEntries || sum > l.MaxBytes {
		t.Fatalf("%d entries %d bytes over limits %+v", n, sum, l)
	}
	rows, err := conn.Query(ctx, `SELECT digest, size, key, payload FROM `+pgx.Identifier{schema, "records"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var d, key, payload []byte
		var size int64
		if err := rows.Scan(&d, &size, &key, &payload); err != nil {
			t.Fatal(err)
		}
		want := record(string(key), len(payload))
		if !bytes.Equal(d, want.Digest[:]) || size != want.Size() || !bytes.Equal(payload, want.Payload) {
			t.Fatalf("row %q is not intact", key)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n, sum
}

func TestContract(t *testing.T) {
	connString(t)
	archivetest.Run(t, func(t *testing.T, l archive.Limits) archive.Store {
		return mustOpen(t, Options{Limits: l, Schema: newSchema(t)})
	})
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("Options{}.Validate() = %v, want nil", err)
	}
	bad := Options{
		Limits:          archive.Limits{MaxEntries: -1, MaxBytes: -2},
		Schema:          strings.Repeat("s", 64),
		OpenTimeout:     -1,
		TxTimeout:       -1,
		MaxConcurrentTx: -1,
	}
	err := bad.Validate()
	for _, field := range []string{"MaxEntries", "MaxBytes", "Schema", "OpenTimeout", "TxTimeout", "MaxConcurrentTx"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want it to name %s", err, field)
		}
	}
	if err := (Options{Schema: "a\x00b"}).Validate(); err == nil {
		t.Error("Validate accepted a schema name with a NUL byte")
	}
	d := Options{}.withDefaults()
	if d.Schema != "rtp_archive" || d.OpenTimeout != time.Second || d.TxTimeout != 5*time.Second || d.MaxConcurrentTx != 8 || d.Logger == nil ||
		d.Limits.MaxEntries != 65536 || d.Limits.MaxBytes != 4<<30 {
		t.Errorf("defaults = %+v", d)
	}
}

func TestOpenErrors(t *testing.T) {
	// These need no server.
	_, err := Open(t.Context(), "postgres://user:s3cret@127.0.0.1:notaport/db", Options{Schema: "x"})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.HasPrefix(err.Error(), "pgstore: open schema x: parse connection string: invalid connection string") {
		t.Errorf("Open(bad URL) = %v, want a parse error without the password", err)
	}
	start := time.Now()
	_, err = Open(t.Context(), "postgres://user:s3cret@127.0.0.1:1/db?sslmode=disable&connect_timeout=30", Options{Schema: "x", OpenTimeout: 300 * time.Millisecond})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.HasPrefix(err.Error(), "pgstore: open schema x: ") {
		t.Errorf("Open(nothing listening) = %v, want a connect error", err)
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Open(nothing listening) took %v with a 300ms bound", elapsed)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Open(ctx, "postgres://127.0.0.1:1/db", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Open(cancelled) = %v, want context.Canceled", err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	schema := newSchema(t)
	s := mustOpen(t, Options{Schema: schema})
	s.Close()
	conn := admin(t)
	if _, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "meta"}.Sanitize()+` SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), connString(t), Options{Schema: schema})
	if err == nil || err.Error() != "pgstore: open schema "+schema+": schema version 99, this build reads 1" {
		t.Fatalf("Open(newer schema) = %v", err)
	}
}

func TestConcurrentOpen(t *testing.T) {
	schema := newSchema(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := Open(t.Context(), connString(t), Options{Schema: schema, OpenTimeout: 10 * time.Second})
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
				return
			}
			// Write while others are still opening: Open must not take
			// locks in an order that deadlocks with a running Put.
			for i := range 10 {
				if err := s.Put(t.Context(), record(fmt.Sprint("k", i%2), 10)); err != nil {
					t.Error(err)
				}
			}
			s.Close()
		})
	}
	wg.Wait()
	if n, _ := checkSchema(t, schema, archive.Limits{}); n != 2 {
		t.Fatalf("%d rows, want 2", n)
	}
}

func TestCountersRepairedOnOpen(t *testing.T) {
	schema := newSchema(t)
	s := mustOpen(t, Options{Schema: schema})
	rs := []archive.Record{record("a", 100), record("b", 200), record("c", 300)}
	putAll(t, s, rs...)
	s.Close()
	conn := admin(t)
	if _, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "meta"}.Sanitize()+` SET entries = 17, bytes = 5`); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	s = mustOpen(t, Options{Schema: schema, Logger: logs.logger()})
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, r := range rs {
		want += r.Size()
	}
	if st.Entries != 3 || st.Bytes != want {
		t.Fatalf("Stats after repair = %d entries %d bytes, want 3 %d", st.Entries, st.Bytes, want)
	}
	if !strings.Contains(logs.String(), "counters repaired") || !strings.Contains(logs.String(), "entries=17") {
		t.Fatalf("log = %q, want the repair logged", logs.String())
	}
	logs = logBuffer{}
	s2 := mustOpen(t, Options{Schema: schema, Logger: logs.logger()})
	s2.Close()
	if logs.String() != "" {
		t.Fatalf("log of a clean open = %q, want nothing", logs.String())
	}
}

func TestOpenTrimsToSmallerLimits(t *testing.T) {
	schema := newSchema(t)
	s := mustOpen(t, Options{Schema: schema})
	for i := range 10 {
		putAll(t, s, record(fmt.Sprint("r", i), 50))
	}
	s.Close()
	limits := archive.Limits{MaxEntries: 4}
	s = mustOpen(t, Options{Schema: schema, Limits: limits})
	for i := range 10 {
		_, ok, err := s.Get(t.Context(), record(fmt.Sprint("r", i), 0).Digest)
		if err != nil || ok != (i >= 6) {
			t.Fatalf("Get(r%d) = %v %v; want only r6..r9 kept", i, ok, err)
		}
	}
	checkSchema(t, schema, limits)
}

func TestEvictionDriftGuard(t *testing.T) {
	schema := newSchema(t)
	var logs logBuffer
	limits := archive.Limits{MaxEntries: 5}
	s := mustOpen(t, Options{Schema: schema, Limits: limits, Logger: logs.logger()})
	for i := range 3 {
		putAll(t, s, record(fmt.Sprint("d", i), 10))
	}
	conn := admin(t)
	if _, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "meta"}.Sanitize()+` SET entries = 1000`); err != nil {
		t.Fatal(err)
	}
	last := record("last", 10)
	putAll(t, s, last)
	if !strings.Contains(logs.String(), "counters repaired") {
		t.Fatalf("log = %q, want a repair", logs.String())
	}
	if _, ok, _ := s.Get(t.Context(), last.Digest); !ok {
		t.Fatal("the record just put was evicted")
	}
	checkSchema(t, schema, limits)
}

// TestSeveralWriters runs four Stores (four processes of a fleet) on one
// schema, all writing at once: the limits and counters must hold exactly.
func TestSeveralWriters(t *testing.T) {
	schema := newSchema(t)
	limits := archive.Limits{MaxEntries: 25, MaxBytes: 40_000}
	var stores []*Store
	for range 4 {
		stores = append(stores, mustOpen(t, Options{Schema: schema, Limits: limits}))
	}
	var wg sync.WaitGroup
	for w, s := range stores {
		for g := range 3 {
			wg.Go(func() {
				for i := range 40 {
					n := 50 + (i*131+w*17+g*7)%3000
					r := record(fmt.Sprintf("w%d-g%d-%d", w, g, i%30), n)
					if err := s.Put(t.Context(), r); err != nil {
						t.Errorf("Put: %v", err)
						return
					}
					switch i % 5 {
					case 1:
						if got, ok, err := s.Get(t.Context(), r.Digest); err != nil {
							t.Errorf("Get: %v", err)
							return
						} else if ok && !bytes.Equal(got.Key, r.Key) {
							t.Errorf("Get returned %q for %q", got.Key, r.Key)
						}
					case 3:
						if err := s.Delete(t.Context(), record(fmt.Sprintf("w%d-g%d-%d", (w+1)%4, g, i%30), 0).Digest); err != nil {
							t.Errorf("Delete: %v", err)
							return
						}
					}
					st, err := s.Stats(t.Context())
					if err != nil {
						t.Errorf("Stats: %v", err)
						return
					}
					if st.Entries > limits.MaxEntries || st.Bytes > limits.MaxBytes || st.Entries < 0 || st.Bytes < 0 {
						t.Errorf("Stats = %+v over limits", st)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	n, b := checkSchema(t, schema, limits)
	for _, s := range stores {
		st, err := s.Stats(t.Context())
		if err != nil || st.Entries != n || st.Bytes != b {
			t.Fatalf("Stats = %+v, %v; rows %d %d", st, err, n, b)
		}
	}
	if n == 0 {
		t.Fatal("nothing retained: the writers did not run")
	}
}

// TestFleetRecency: a hit through one Store protects the record from
// eviction by a write through another, at once (recency is global).
func TestFleetRecency(t *testing.T) {
	schema := newSchema(t)
	limits := archive.Limits{MaxEntries: 3}
	a := mustOpen(t, Options{Schema: schema, Limits: limits})
	b := mustOpen(t, Options{Schema: schema, Limits: limits})
	r1, r2, r3 := record("1", 10), record("2", 10), record("3", 10)
	putAll(t, a, r1, r2, r3)
	if _, ok, err := b.Get(t.Context(), r1.Digest); !ok || err != nil {
		t.Fatalf("Get via b = %v %v", ok, err)
	}
	putAll(t, a, record("4", 10))
	if _, ok, _ := a.Get(t.Context(), r2.Digest); ok {
		t.Fatal("2 survived: the hit on 1 through another Store was not seen")
	}
	if _, ok, _ := a.Get(t.Context(), r1.Digest); !ok {
		t.Fatal("1 was evicted although another Store had just read it")
	}
}

func TestTxTimeout(t *testing.T) {
	schema := newSchema(t)
	// A bound a loaded machine's reads and writes keep within.
	s := mustOpen(t, Options{Schema: schema, TxTimeout: time.Second})
	putAll(t, s, record("a", 10))
	conn := admin(t)
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM `+pgx.Identifier{schema, "meta"}.Sanitize()+` WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Put(t.Context(), record("b", 10))
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Put took %v with a 1s bound", elapsed)
	}
	if !errors.Is(err, errTxTimeout) || errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "pgstore: put: transaction timed out after 1s") {
		t.Fatalf("Put with the counters locked elsewhere = %v, want a transaction timeout", err)
	}
	// Reads do not take the meta lock.
	if _, ok, err := s.Get(t.Context(), record("a", 0).Digest); !ok || err != nil {
		t.Fatalf("Get while writes are blocked = %v %v", ok, err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	putAll(t, s, record("b", 10))
	checkSchema(t, schema, archive.Limits{})
}

func TestAdmission(t *testing.T) {
	// The bound is long enough for a loaded machine to commit within it.
	const txTimeout = time.Second
	s := mustOpen(t, Options{Schema: newSchema(t), MaxConcurrentTx: 2, TxTimeout: txTimeout})
	r := record("a", 10)
	putAll(t, s, r)
	_, free1, _ := s.gate.Admit(t.Context())
	_, free2, _ := s.gate.Admit(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, gerr := s.Get(ctx, r.Digest)
	_, serr := s.Stats(ctx)
	for name, err := range map[string]error{
		"Get":    gerr,
		"Put":    s.Put(ctx, record("b", 10)),
		"Delete": s.Delete(ctx, r.Digest),
		"Clear":  s.Clear(ctx),
		"Scan":   s.Scan(ctx, func(archive.Record) error { return nil }),
		"Stats":  serr,
	} {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with every slot taken = %v, want the caller's deadline", name, err)
		}
	}
	// Waiting longer than TxTimeout for a slot does not consume the
	// transaction's own bound.
	errs := make(chan error, 2)
	go func() { _, _, err := s.Get(t.Context(), r.Digest); errs <- err }()
	go func() { errs <- s.Put(t.Context(), record("c", 10)) }()
	time.Sleep(txTimeout * 3 / 2)
	free1()
	free2()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("call admitted after a long wait = %v, want nil", err)
		}
	}
}

func TestLargeRecords(t *testing.T) {
	s := mustOpen(t, Options{Schema: newSchema(t)})
	var want []archive.Record
	for i := range 3 * dbstore.ScanPageRows / 2 {
		n := 1 + (i*7919)%200_000
		want = append(want, record(fmt.Sprint("big", i), n))
	}
	putAll(t, s, want...)
	for _, r := range want[:10] {
		got, ok, err := s.Get(t.Context(), r.Digest)
		if err != nil || !ok || !bytes.Equal(got.Payload, r.Payload) {
			t.Fatalf("Get(%q) = %v %v, want the record", r.Key, ok, err)
		}
	}
	seen := 0
	var prev []byte
	err := s.Scan(t.Context(), func(r archive.Record) error {
		if prev != nil && bytes.Compare(prev, r.Digest[:]) >= 0 {
			return errors.New("Scan not in digest order")
		}
		prev = bytes.Clone(r.Digest[:])
		if !bytes.Equal(r.Payload, record(string(r.Key), len(r.Payload)).Payload) {
			return fmt.Errorf("Scan record %q corrupt", r.Key)
		}
		seen++
		return nil
	})
	if err != nil || seen != len(want) {
		t.Fatalf("Scan = %v after %d records, want nil after %d", err, seen, len(want))
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	schema := newSchema(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := Open(t.Context(), connString(t), Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	r := record("a", 10)
	putAll(t, s, r)
	if _, _, err := s.Get(t.Context(), r.Digest); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
