package sqlitestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/internal/sqlitedb"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/internal/dbstore"
)

// logBuffer is a slog handler target that tests can read.
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

func dbPath(t testing.TB) string { return filepath.Join(t.TempDir(), "archive.db") }

func mustOpen(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	if opts.OpenTimeout == 0 {
		// What these tests check is the store, not Open's bound
		// (TestOpenTimeout does): on a loaded machine the open and its
		// checks can take longer than the default second.
		opts.OpenTimeout = time.Minute
	}
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// record is a record whose payload is derived from its key, so a check can
// tell an intact row from a torn or mixed-up one.
func record(key string, n int) archive.Record {
	return archive.Record{Digest: sha256.Sum256([]byte(key)), Key: []byte(key), Payload: derive(key, n)}
}

func derive(key string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	block := sha256.Sum256([]byte(key))
	for len(out) < n {
		out = append(out, block[:]...)
		block = sha256.Sum256(block[:])
	}
	return out[:n]
}

func putAll(t testing.TB, s *Store, rs ...archive.Record) {
	t.Helper()
	for _, r := range rs {
		if err := s.Put(context.Background(), r); err != nil {
			t.Fatalf("Put(%q) = %v", r.Key, err)
		}
	}
}

// raw opens a plain connection to the database file for inspection.
func raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db := sql.OpenDB(sqlitedb.NewConnector(sqlitedb.URI(path, false), sqlitedb.BusyTimeout(5*time.Second)))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// recencies returns the recency sequence of each record by key.
func recencies(t testing.TB, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT key, recency FROM records`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := make(map[string]int64)
	for rows.Next() {
		var k string
		var r int64
		if err := rows.Scan(&k, &r); err != nil {
			t.Fatal(err)
		}
		m[k] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkDB checks a database file directly: integrity_check is ok, the meta
// counters equal COUNT/SUM, and every row is intact (digest, size and
// payload agree with its key). It returns the keys present.
func checkDB(t testing.TB, path string) map[string]bool {
	t.Helper()
	db := raw(t, path)
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check = %q, %v", res, err)
	}
	var entries, nbytes, n, sum int64
	if err := db.QueryRow(`SELECT entries, bytes FROM meta WHERE id = 1`).Scan(&entries, &nbytes); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*), coalesce(sum(size), 0) FROM records`).Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	if entries != n || nbytes != sum {
		t.Fatalf("meta counters = %d entries %d bytes, rows COUNT/SUM = %d %d", entries, nbytes, n, sum)
	}
	rows, err := db.Query(`SELECT digest, size, key, payload FROM records`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	keys := make(map[string]bool)
	for rows.Next() {
		var d, key, payload []byte
		var size int64
		if err := rows.Scan(&d, &size, &key, &payload); err != nil {
			t.Fatal(err)
		}
		var want int
		if _, err := fmt.Sscanf(string(key[strings.LastIndexByte(string(key), '/')+1:]), "%d", &want); err != nil {
			t.Fatalf("row key %q: %v", key, err)
		}
		r := record(string(key), want)
		if !bytes.Equal(d, r.Digest[:]) || size != r.Size() || !bytes.Equal(payload, r.Payload) {
			t.Fatalf("row %q is not intact: digest %x.. size %d payload %d bytes, want size %d", key, d[:4], size, len(payload), r.Size())
		}
		keys[string(key)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// key returns a test key ending in "/n": checkDB reads the payload length
// from it.
func key(name string, n int) string { return fmt.Sprintf("%s/%d", name, n) }

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("Options{}.Validate() = %v, want nil", err)
	}
	bad := Options{
		Limits:           archive.Limits{MaxEntries: -1, MaxBytes: -2},
		OpenTimeout:      -1,
		QuickCheckBudget: -1,
		TxTimeout:        -1,
		MaxConcurrentTx:  -1,
		TouchDelay:       -1,
	}
	err := bad.Validate()
	for _, field := range []string{"MaxEntries", "MaxBytes", "OpenTimeout", "QuickCheckBudget", "TxTimeout", "MaxConcurrentTx", "TouchDelay"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate() = %v, want it to name %s", err, field)
		}
	}
	if _, oerr := Open(t.Context(), dbPath(t), bad); oerr == nil || oerr.Error() != err.Error() {
		t.Errorf("Open with invalid options = %v, want %v", oerr, err)
	}
	d := Options{}.withDefaults()
	if d.OpenTimeout != time.Second || d.QuickCheckBudget != 500*time.Millisecond || d.TxTimeout != 5*time.Second || d.MaxConcurrentTx != 8 || d.TouchDelay != 50*time.Millisecond || d.Logger == nil ||
		d.Limits.MaxEntries != 65536 || d.Limits.MaxBytes != 4<<30 {
		t.Errorf("defaults = %+v", d)
	}
}

func TestOpenCreatesParentsAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rtp-data", "nested", "archive.db")
	s := mustOpen(t, path, Options{})
	r := record(key("a", 100), 100)
	putAll(t, s, r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	var version int
	var mode string
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != schemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", version, err, schemaVersion)
	}
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	db.Close()
	// Reopening finds the record.
	s = mustOpen(t, path, Options{})
	got, ok, err := s.Get(t.Context(), r.Digest)
	if err != nil || !ok || !bytes.Equal(got.Payload, r.Payload) {
		t.Fatalf("Get after reopen = %v %v, want the record", ok, err)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%d", "archive.db")
	s := mustOpen(t, path, Options{})
	putAll(t, s, record(key("x", 10), 10))
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %s: %v", path, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("this is not sqlite "), 500), 0o644); err != nil {
		t.Fatal(err)
	}

	// A real archive, then truncated to half its size.
	truncated := filepath.Join(dir, "truncated.db")
	s := mustOpen(t, truncated, Options{})
	for i := range 40 {
		putAll(t, s, record(key(fmt.Sprint("t", i), 9000), 9000))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(truncated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(truncated, fi.Size()/2); err != nil {
		t.Fatal(err)
	}

	// A header cut short.
	stub := filepath.Join(dir, "stub.db")
	head, err := os.ReadFile(truncated)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stub, head[:60], 0o644); err != nil {
		t.Fatal(err)
	}

	// An archive from a newer build.
	newer := filepath.Join(dir, "newer.db")
	s = mustOpen(t, newer, Options{})
	s.Close()
	db := raw(t, newer)
	mustExec(t, db, `PRAGMA user_version = 99`)
	db.Close()

	// A database of something else with tables of the same names.
	foreign := filepath.Join(dir, "foreign.db")
	db = raw(t, foreign)
	mustExec(t, db, `CREATE TABLE records (x)`)
	db.Close()

	// Another program's database: rtp's tables must not move in beside
	// its own.
	other := filepath.Join(dir, "other.db")
	db = raw(t, other)
	mustExec(t, db, `CREATE TABLE users (id INTEGER)`)
	mustExec(t, db, `CREATE TABLE orders (id INTEGER)`)
	db.Close()

	isDir := filepath.Join(dir, "dir.db")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path, want string
	}{
		{"garbage", garbage, "file is not a database"},
		{"truncated", truncated, "malformed"},
		{"stub", stub, "database disk image is malformed"},
		{"newer", newer, "schema version 99 is newer than this build's 1"},
		{"foreign", foreign, "not an archive this package wrote"},
		{"other program", other, "holds tables rtp did not create (orders, users)"},
		{"directory", isDir, "is a directory"},
		{"empty path", "", "sqlitestore: open: empty path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			s, err := Open(t.Context(), tc.path, Options{})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil error, want one containing %q", tc.name, tc.want)
			}
			msg := err.Error()
			t.Log(msg)
			prefix := "sqlitestore: open " + tc.path + ": "
			if tc.path == "" {
				prefix = "sqlitestore: open: "
			}
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.want) || strings.Count(msg, "sqlitestore:") != 1 {
				t.Fatalf("Open(%s) = %q, want one message %q...%q", tc.name, msg, prefix, tc.want)
			}
			if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
				t.Fatalf("Open(%s) changed the file", tc.name)
			}
		})
	}
}

func TestOpenTimeout(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, Options{})
	s.Close()
	// Another connection holds the write lock: Open's schema transaction
	// cannot begin, and Open must give up at its bound.
	db := raw(t, path)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	start := time.Now()
	s, err = Open(t.Context(), path, Options{OpenTimeout: 150 * time.Millisecond})
	elapsed := time.Since(start)
	if err == nil {
		s.Close()
		t.Fatal("Open with the write lock held elsewhere succeeded")
	}
	if !errors.Is(err, errOpenTimeout) || errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "sqlitestore: open "+path+": open timed out after 150ms") {
		t.Fatalf("Open = %v, want an open timeout", err)
	}
	if elapsed > 2*time.Second {
		t.Fatalf("Open took %v with a 150ms bound", elapsed)
	}

	// A caller's cancelled context is reported as such.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open(cancelled) = %v, want context.Canceled", err)
	}
}

// TestQuickCheckBudget: a check that cannot finish in its budget is logged
// and Open goes on; a check that finds damage within it fails Open.
func TestQuickCheckBudget(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, Options{})
	putAll(t, s, record(key("a", 5000), 5000))
	s.Close()
	var logs logBuffer
	s = mustOpen(t, path, Options{QuickCheckBudget: time.Nanosecond, Logger: logs.logger()})
	if _, ok, err := s.Get(t.Context(), record(key("a", 5000), 5000).Digest); !ok || err != nil {
		t.Fatalf("Get after an unchecked open = %v %v", ok, err)
	}
	s.Close()
	if !strings.Contains(logs.String(), "quick_check did not finish within its budget") {
		t.Fatalf("log = %q, want the cut-short check logged", logs.String())
	}
}

func TestCountersRepairedOnOpen(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, Options{})
	rs := []archive.Record{record(key("a", 100), 100), record(key("b", 200), 200), record(key("c", 300), 300)}
	putAll(t, s, rs...)
	s.Close()
	db := raw(t, path)
	mustExec(t, db, `UPDATE meta SET entries = 17, bytes = 5`)
	db.Close()

	var logs logBuffer
	s = mustOpen(t, path, Options{Logger: logs.logger()})
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
	s.Close()
	checkDB(t, path)

	// A consistent store logs nothing.
	logs = logBuffer{}
	s = mustOpen(t, path, Options{Logger: logs.logger()})
	s.Close()
	if logs.String() != "" {
		t.Fatalf("log of a clean open = %q, want nothing", logs.String())
	}
}

func TestOpenTrimsToSmallerLimits(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path, Options{})
	for i := range 10 {
		putAll(t, s, record(key(fmt.Sprint("r", i), 50), 50))
	}
	s.Close()
	// NoTrim (inspection tools) leaves all ten in place.
	s = mustOpen(t, path, Options{Limits: archive.Limits{MaxEntries: 4}, NoTrim: true})
	if st, err := s.Stats(t.Context()); err != nil || st.Entries != 10 {
		t.Fatalf("Stats with NoTrim = %+v, %v; want all 10 entries", st, err)
	}
	s.Close()
	s = mustOpen(t, path, Options{Limits: archive.Limits{MaxEntries: 4}})
	st, err := s.Stats(t.Context())
	if err != nil || st.Entries != 4 {
		t.Fatalf("Stats = %+v, %v; want 4 entries", st, err)
	}
	s.Close()
	keys := checkDB(t, path)
	for i := 6; i < 10; i++ {
		if !keys[key(fmt.Sprint("r", i), 50)] {
			t.Fatalf("kept %v, want the 4 most recent (r6..r9)", keys)
		}
	}
}

// TestEvictionDriftGuard corrupts the counters of an open store: eviction
// must stop, recount and leave a consistent store instead of looping or
// failing.
func TestEvictionDriftGuard(t *testing.T) {
	path := dbPath(t)
	var logs logBuffer
	s := mustOpen(t, path, Options{Limits: archive.Limits{MaxEntries: 5}, Logger: logs.logger()})
	for i := range 3 {
		putAll(t, s, record(key(fmt.Sprint("d", i), 10), 10))
	}
	db := raw(t, path)
	mustExec(t, db, `UPDATE meta SET entries = 1000`)
	db.Close()

	last := record(key("last", 10), 10)
	putAll(t, s, last)
	if !strings.Contains(logs.String(), "counters repaired") {
		t.Fatalf("log = %q, want a repair", logs.String())
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries < 1 || st.Entries > 5 {
		t.Fatalf("Stats = %+v after drift, want 1..5 entries", st)
	}
	if _, ok, _ := s.Get(t.Context(), last.Digest); !ok {
		t.Fatal("the record just put was evicted")
	}
	s.Close()
	checkDB(t, path)
}

// TestTouchRule pins the batching rule for recency updates.
func TestTouchRule(t *testing.T) {
	t.Run("AppliedBeforeEviction", func(t *testing.T) {
		// Hits in the order c, a, b; then writes that evict one record
		// each: the order of eviction is exactly the hit order, although
		// the touches were still pending (TouchDelay is an hour).
		s := mustOpen(t, dbPath(t), Options{Limits: archive.Limits{MaxEntries: 3}, TouchDelay: time.Hour})
		a, b, c := record(key("a", 10), 10), record(key("b", 10), 10), record(key("c", 10), 10)
		putAll(t, s, a, b, c)
		for _, r := range []archive.Record{c, a, b} {
			if _, ok, err := s.Get(t.Context(), r.Digest); !ok || err != nil {
				t.Fatalf("Get = %v %v", ok, err)
			}
		}
		if n := s.touches.len(); n != 3 {
			t.Fatalf("%d touches pending, want 3 (nothing should have flushed them)", n)
		}
		for i, gone := range []archive.Record{c, a, b} {
			putAll(t, s, record(key(fmt.Sprint("new", i), 10), 10))
			if _, ok, _ := s.Get(t.Context(), gone.Digest); ok {
				t.Fatalf("after write %d: %q still present, want it evicted", i, gone.Key)
			}
		}
	})
	t.Run("AppliedAfterDelay", func(t *testing.T) {
		path := dbPath(t)
		s := mustOpen(t, path, Options{TouchDelay: 20 * time.Millisecond})
		a, b := record(key("a", 10), 10), record(key("b", 10), 10)
		putAll(t, s, a, b)
		if _, ok, _ := s.Get(t.Context(), a.Digest); !ok {
			t.Fatal("Get(a) missed")
		}
		db := raw(t, path)
		var rec map[string]int64
		if _, ok := eventually.Within(10*time.Second, func() bool {
			rec = recencies(t, db)
			return rec[string(a.Key)] > rec[string(b.Key)]
		}); !ok {
			t.Fatalf("recency %v: the hit on a was not applied without a write", rec)
		}
	})
	t.Run("AppliedWhenBatchFull", func(t *testing.T) {
		path := dbPath(t)
		s := mustOpen(t, path, Options{TouchDelay: time.Hour})
		var rs []archive.Record
		for i := range touchBatch + 1 {
			r := record(key(fmt.Sprint("r", i), 8), 8)
			rs = append(rs, r)
		}
		putAll(t, s, rs...)
		// Hit them in reverse: r0 becomes the most recent.
		for i := len(rs) - 1; i >= 0; i-- {
			if _, ok, _ := s.Get(t.Context(), rs[i].Digest); !ok {
				t.Fatal("miss")
			}
		}
		// TouchDelay is an hour: only the full batch can have flushed them.
		db := raw(t, path)
		var rec map[string]int64
		if _, ok := eventually.Within(10*time.Second, func() bool {
			rec = recencies(t, db)
			// r0, the last hit, may still be pending: it may be a batch's
			// 257th touch.
			return rec[string(rs[1].Key)] > rec[string(rs[2].Key)] && rec[string(rs[2].Key)] > rec[string(rs[3].Key)]
		}); !ok {
			t.Fatalf("recency r1 %d, r2 %d, r3 %d: a full batch of hits was not applied in hit order",
				rec[string(rs[1].Key)], rec[string(rs[2].Key)], rec[string(rs[3].Key)])
		}
	})
	t.Run("AppliedOnClose", func(t *testing.T) {
		path := dbPath(t)
		s := mustOpen(t, path, Options{TouchDelay: time.Hour})
		a, b := record(key("a", 10), 10), record(key("b", 10), 10)
		putAll(t, s, a, b)
		if _, ok, _ := s.Get(t.Context(), a.Digest); !ok {
			t.Fatal("Get(a) missed")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		rec := recencies(t, raw(t, path))
		if rec[string(a.Key)] <= rec[string(b.Key)] {
			t.Fatalf("recency %v: the pending hit was lost on Close", rec)
		}
	})
	t.Run("KeptWhenWriteFails", func(t *testing.T) {
		// A write that fails (here: it cannot take the database lock) puts
		// its touches back; the next write applies them before evicting.
		path := dbPath(t)
		s := mustOpen(t, path, Options{Limits: archive.Limits{MaxEntries: 2}, TouchDelay: time.Hour, TxTimeout: time.Second})
		a, b := record(key("a", 10), 10), record(key("b", 10), 10)
		putAll(t, s, a, b)
		if _, ok, _ := s.Get(t.Context(), a.Digest); !ok {
			t.Fatal("Get(a) missed")
		}
		db := raw(t, path)
		conn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(t.Context(), record(key("c", 10), 10)); err == nil {
			t.Fatal("Put with the lock held elsewhere succeeded")
		}
		if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if n := s.touches.len(); n != 1 {
			t.Fatalf("%d touches pending after the failed write, want 1", n)
		}
		putAll(t, s, record(key("d", 10), 10))
		if _, ok, _ := s.Get(t.Context(), b.Digest); ok {
			t.Fatal("b survived: the restored touch on a was not applied before eviction")
		}
		if _, ok, _ := s.Get(t.Context(), a.Digest); !ok {
			t.Fatal("a was evicted although it was hit after b was written")
		}
	})
}

func TestTxTimeout(t *testing.T) {
	path := dbPath(t)
	// A bound a loaded machine's reads and writes keep within.
	s := mustOpen(t, path, Options{TxTimeout: time.Second})
	putAll(t, s, record(key("a", 10), 10))
	db := raw(t, path)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Put(t.Context(), record(key("b", 10), 10))
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Fatalf("Put took %v with a 1s transaction bound", elapsed)
	}
	if !errors.Is(err, errTxTimeout) || errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "sqlitestore: put: transaction timed out after 1s") {
		t.Fatalf("Put = %v, want a transaction timeout that is not a context error", err)
	}
	// Reads are not blocked by a writer in WAL mode.
	if _, ok, err := s.Get(t.Context(), record(key("a", 10), 10).Digest); !ok || err != nil {
		t.Fatalf("Get during a foreign write lock = %v %v", ok, err)
	}
	if _, err := conn.ExecContext(t.Context(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	putAll(t, s, record(key("b", 10), 10))
}

// TestAdmission holds every transaction slot and checks that each method,
// and the background recency update, waits for one; then that the wait
// does not count against TxTimeout.
func TestAdmission(t *testing.T) {
	// The bound is long enough for a loaded machine to commit within it.
	const txTimeout = time.Second
	s := mustOpen(t, dbPath(t), Options{MaxConcurrentTx: 2, TxTimeout: txTimeout, TouchDelay: 10 * time.Millisecond})
	r := record(key("a", 10), 10)
	putAll(t, s, r)
	_, free1, _ := s.gate.Admit(t.Context())
	_, free2, _ := s.gate.Admit(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, _, err := s.Get(ctx, r.Digest)
	_, serr := s.Stats(ctx)
	for name, err := range map[string]error{
		"Get":    err,
		"Put":    s.Put(ctx, record(key("b", 10), 10)),
		"Delete": s.Delete(ctx, r.Digest),
		"Clear":  s.Clear(ctx),
		"Scan":   s.Scan(ctx, func(archive.Record) error { return nil }),
		"Stats":  serr,
	} {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with every slot taken = %v, want the caller's deadline", name, err)
		}
	}
	free1()
	free2()
	if _, ok, err := s.Get(t.Context(), r.Digest); !ok || err != nil {
		t.Fatalf("Get = %v %v", ok, err)
	}
	// The hit's recency update needs a slot too.
	_, free1, _ = s.gate.Admit(t.Context())
	_, free2, _ = s.gate.Admit(t.Context())
	// Calls that wait longer than TxTimeout for a slot then succeed: the
	// wait is not part of their transaction's time. Meanwhile the recency
	// update (due after TouchDelay, 10ms) waits too.
	errs := make(chan error, 2)
	go func() { _, _, err := s.Get(t.Context(), r.Digest); errs <- err }()
	go func() { errs <- s.Put(t.Context(), record(key("c", 10), 10)) }()
	time.Sleep(txTimeout * 3 / 2)
	if n := s.touches.len(); n != 1 {
		t.Fatalf("%d touches pending while every slot was taken, want 1", n)
	}
	free1()
	free2()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("call admitted after a long wait = %v, want nil", err)
		}
	}
	eventually.True(t, 10*time.Second, "the pending touches applied once the slots were freed", func() bool { return s.touches.len() == 0 })
}

// TestSharedFile runs two Stores (as two processes would) on one file.
func TestSharedFile(t *testing.T) {
	path := dbPath(t)
	limits := archive.Limits{MaxEntries: 20, MaxBytes: 20000}
	s1 := mustOpen(t, path, Options{Limits: limits})
	s2 := mustOpen(t, path, Options{Limits: limits})
	var wg sync.WaitGroup
	for w, s := range []*Store{s1, s2, s1, s2} {
		wg.Go(func() {
			for i := range 60 {
				n := 100 + (i*37+w*11)%1500
				r := record(key(fmt.Sprint("s", w, "-", i), n), n)
				if err := s.Put(t.Context(), r); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					if _, _, err := s.Get(t.Context(), r.Digest); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []*Store{s1, s2} {
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries > limits.MaxEntries || st.Bytes > limits.MaxBytes {
			t.Fatalf("Stats = %+v over limits", st)
		}
	}
	s1.Close()
	s2.Close()
	checkDB(t, path)
}

// TestLargeRecords round-trips tile-sized payloads, across Scan pages.
func TestLargeRecords(t *testing.T) {
	s := mustOpen(t, dbPath(t), Options{})
	var want []archive.Record
	for i := range 3 * dbstore.ScanPageRows / 2 {
		n := 1 + (i*7919)%200_000
		want = append(want, record(key(fmt.Sprint("big", i), n), n))
	}
	putAll(t, s, want...)
	for _, r := range want {
		got, ok, err := s.Get(t.Context(), r.Digest)
		if err != nil || !ok || !bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Payload, r.Payload) {
			t.Fatalf("Get(%q) = %v %v, want the record", r.Key, ok, err)
		}
	}
	seen := make(map[archive.Digest]bool)
	var prev []byte
	err := s.Scan(t.Context(), func(r archive.Record) error {
		if seen[r.Digest] {
			return fmt.Errorf("visited %q twice", r.Key)
		}
		if prev != nil && bytes.Compare(prev, r.Digest[:]) >= 0 {
			return errors.New("Scan not in digest order")
		}
		prev = bytes.Clone(r.Digest[:])
		seen[r.Digest] = true
		if !bytes.Equal(r.Payload, derive(string(r.Key), len(r.Payload))) {
			return fmt.Errorf("Scan record %q corrupt", r.Key)
		}
		return nil
	})
	if err != nil || len(seen) != len(want) {
		t.Fatalf("Scan = %v after %d records, want nil after %d", err, len(seen), len(want))
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := Open(t.Context(), dbPath(t), Options{TouchDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := record(key("a", 10), 10)
	putAll(t, s, r)
	if _, _, err := s.Get(t.Context(), r.Digest); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
