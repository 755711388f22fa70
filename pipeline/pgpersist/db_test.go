package pgpersist_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

type store struct{ db *pgpersist.DB }

func (s store) Region(t *testing.T, name string, key pipeline.Key) pipeline.Persister {
	t.Helper()
	return region(t, s.db, name, key)
}

func (s store) Close(t *testing.T) {
	t.Helper()
	if err := s.db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Crash implements persisttest.Crasher.
func (s store) Crash(t *testing.T) {
	t.Helper()
	if err := pgpersist.Abandon(s.db); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
}

// TestContract runs the Persister suite, a schema standing for each of
// its directories and one node name for every run, as a restarted
// process keeps its name.
func TestContract(t *testing.T) {
	dsn(t)
	var mu sync.Mutex
	schemas := map[string]string{}
	persisttest.Run(t, func(t *testing.T, dir string) persisttest.Store {
		mu.Lock()
		schema, ok := schemas[dir]
		if !ok {
			schema = newSchema(t)
			schemas[dir] = schema
		}
		mu.Unlock()
		db, err := pgpersist.Open(context.Background(), dsn(t), pgpersist.Options{Schema: schema, Node: "node-a"})
		if err != nil {
			t.Fatal(err)
		}
		return store{db}
	})
}

func TestOptionsValidate(t *testing.T) {
	err := pgpersist.Options{QueueLimit: -1, LeaseTTL: -1, RetryMin: -1, RetryMax: -1, Timeout: -1, MaxConns: -1}.Validate()
	for _, field := range []string{"QueueLimit", "LeaseTTL", "RetryMin", "RetryMax", "Timeout", "MaxConns"} {
		if err == nil || !strings.Contains(err.Error(), field+" -1") {
			t.Errorf("Validate() = %v, want %s reported", err, field)
		}
	}
	if err := (pgpersist.Options{LeaseTTL: time.Second, HeartbeatEvery: time.Second}).Validate(); err == nil {
		t.Error("Validate accepted a heartbeat as slow as the lease")
	}
	if err := (pgpersist.Options{RetryMin: time.Minute, RetryMax: time.Second}).Validate(); err == nil {
		t.Error("Validate accepted RetryMin above RetryMax")
	}
	if err := (pgpersist.Options{}).Validate(); err != nil {
		t.Errorf("Validate of the zero Options = %v", err)
	}
	if _, err := pgpersist.Open(context.Background(), "not a url ::", pgpersist.Options{Node: "n"}); err == nil {
		t.Error("Open of a malformed connection string succeeded")
	}
}

func TestRegionArguments(t *testing.T) {
	db := open(t, newSchema(t), "n", pgpersist.Options{})
	if _, err := db.Region("", ""); err == nil || !strings.Contains(err.Error(), "region") || !strings.Contains(err.Error(), "key") {
		t.Fatalf("Region(\"\", \"\") = %v, want both problems reported", err)
	}
}

func TestMissingSchema(t *testing.T) {
	_, err := pgpersist.Open(context.Background(), dsn(t), pgpersist.Options{Node: "n", Schema: "rtp_test_absent_schema"})
	if err == nil || !strings.Contains(err.Error(), "no schema") {
		t.Fatalf("Open on a schema that does not exist = %v, want an error naming the cause", err)
	}
}

// TestConcurrentMigrations opens four nodes at once on a fresh schema:
// one migrates, the others wait for the advisory lock and find the schema
// done, and all work.
func TestConcurrentMigrations(t *testing.T) {
	schema := newSchema(t)
	const n = 4
	dbs := make([]*pgpersist.DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			dbs[i], errs[i] = pgpersist.Open(context.Background(), dsn(t),
				pgpersist.Options{Schema: schema, Node: "node-" + string(rune('a'+i))})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var version, rows int
	pool := pgpersist.Pool(dbs[0])
	if err := pool.QueryRow(context.Background(), `SELECT version, (SELECT count(*) FROM schema_version) FROM schema_version`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != pgpersist.SchemaVersion || rows != 1 {
		t.Fatalf("schema_version = %d in %d rows, want %d in one", version, rows, pgpersist.SchemaVersion)
	}
	for i, db := range dbs {
		r := region(t, db, "r", "k")
		r.Add(persisttest.Loc(i))
		if err := r.Flush(context.Background()); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	nodes, err := dbs[0].Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != n {
		t.Fatalf("Nodes() = %+v, want %d", nodes, n)
	}
	for _, nd := range nodes {
		if !nd.Live || nd.State != "running" || nd.Owned != 1 || nd.Version != 1 {
			t.Errorf("node %+v: want live, running, version 1, owning its one row", nd)
		}
	}
}

// TestQueueLimitDrops: past QueueLimit the oldest rows are dropped and
// counted, and what was written is what Load finds.
func TestQueueLimitDrops(t *testing.T) {
	db := open(t, newSchema(t), "n", pgpersist.Options{QueueLimit: 1, BatchDelay: time.Hour})
	r := region(t, db, "r", "k")
	for i := range 1000 {
		r.Add(persisttest.Loc(i))
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Dropped == 0 || st.Written+st.Dropped != 1000 {
		t.Fatalf("Stats() = %+v, want drops and written+dropped = 1000", st)
	}
	locs, err := r.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(locs)) != st.Written {
		t.Fatalf("Load() has %d rows, Stats.Written %d", len(locs), st.Written)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	r.Add(persisttest.Loc(1)) // after Close: dropped
	if err := db.Flush(context.Background()); err != pgpersist.ErrClosed {
		t.Fatalf("Flush after Close = %v, want ErrClosed", err)
	}
	done := make(chan error, 1)
	r.MarkHot(persisttest.Loc(1), true, func(err error) { done <- err })
	if err := <-done; err != pgpersist.ErrClosed {
		t.Fatalf("MarkHot after Close called back with %v, want ErrClosed", err)
	}
}

// TestAddDoesNotAllocate: the request path costs no allocation in steady
// state.
func TestAddDoesNotAllocate(t *testing.T) {
	db := open(t, newSchema(t), "n", pgpersist.Options{})
	r := region(t, db, "r", "k")
	l := persisttest.Loc(1)
	for range 64 {
		r.Add(l)
		r.Remove(l)
	}
	if err := db.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(1000, func() { r.Add(l); r.Remove(l) }); a > 0.1 {
		t.Fatalf("Add and Remove allocate %.2f times per pair, want 0", a)
	}
}
