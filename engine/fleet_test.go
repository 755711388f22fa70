package engine_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/pgtest"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// fleetDatabase returns a PostgreSQL URL whose search_path is a fresh
// schema of its own (see pgtest.Schema), or skips without
// RTP_TEST_POSTGRES.
func fleetDatabase(t testing.TB) string {
	t.Helper()
	_, u := pgtest.Schema(t)
	return u
}

// fleetNode starts one engine of a fleet on db under name.
func fleetNode(t *testing.T, db, name string) *engine.Engine {
	t.Helper()
	cfg := testConfig(t)
	spec := specOf(t, cfg)
	spec.Fleet = engine.FleetSpec{DatabaseURL: db, Node: name, NodeLease: 2 * time.Second}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger(), Software: "test"})
	if err != nil {
		t.Fatalf("engine.New %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	run(t, e)
	waitFor(t, name+" ready", func() bool { return e.Ready() == nil })
	return e
}

// TestFleetTwoNodes: two engines on one database hand out no place twice,
// split the screening, learn each other's rejections within a second,
// and a node that stops has its cached places taken up by the other.
func TestFleetTwoNodes(t *testing.T) {
	db := fleetDatabase(t)
	a := fleetNode(t, db, "a")
	b := fleetNode(t, db, "b")
	region := config.DefaultRegionName

	waitFor(t, "both nodes sharing the screening", func() bool {
		sa, sb := stats(t, a, region).Fleet, stats(t, b, region).Fleet
		return sa != nil && sb != nil && sa.Nodes == 2 && sb.Nodes == 2 && sa.Share != sb.Share
	})

	seen := map[[2]int64]string{}
	for i := range 120 {
		e, name := a, "a"
		if i%2 == 1 {
			e, name = b, "b"
		}
		loc := teleport(t, e, engine.Request{Player: "p" + name + string(rune('a'+i%26)) + time.Now().Format("150405.000000")})
		k := [2]int64{loc.X, loc.Z}
		if other, ok := seen[k]; ok {
			t.Fatalf("place %v handed out by %s and by %s", k, other, name)
		}
		seen[k] = name
		if err := e.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}

	// The shared database's writer counts the node's writes.
	waitFor(t, "node a's writes committed", func() bool { return a.Locations().Written > 0 })
	if w := a.Locations(); w.Failing || w.Dropped != 0 {
		t.Errorf("node a's location writes = %+v, want neither failing nor dropped", w)
	}

	// A rejection learnt on a reaches b.
	ma, mb := a.Region(region).Memory(), b.Region(region).Memory()
	var delays []time.Duration
	for idx := int64(5); len(delays) < 20 && idx < ma.Len(); idx += 37 {
		if ma.IsBad(idx) || mb.IsBad(idx) {
			continue
		}
		start := time.Now()
		if err := ma.AddBad(idx, memory.CauseSafetyExternal, "fleet-test"); err != nil {
			t.Fatal(err)
		}
		waitForUpTo(t, 5*time.Second, "b to learn a's rejection", func() bool { return mb.IsBad(idx) })
		delays = append(delays, time.Since(start))
	}
	slices.Sort(delays)
	p := func(q float64) time.Duration { return delays[int(math.Ceil(q*float64(len(delays))))-1] }
	t.Logf("rejection propagation over %d marks: p50 %v, p99 %v, max %v", len(delays), p(0.5), p(0.99), delays[len(delays)-1])
	if worst := delays[len(delays)-1]; worst > time.Second {
		t.Errorf("a rejection took %v to reach the other node, want under 1 s", worst)
	}
	if st := stats(t, b, region).Fleet; st.FeedMarks < uint64(len(delays)) {
		t.Errorf("b's FeedMarks = %d, want at least %d", st.FeedMarks, len(delays))
	}

	// a stops cleanly: its rows go back to the pool, for b to take.
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ownedBy(t, db, "a"); n != 0 {
		t.Fatalf("a owns %d rows after a clean stop, want 0", n)
	}
	waitForUpTo(t, 10*time.Second, "b to screen alone", func() bool { return stats(t, b, region).Fleet.Nodes == 1 })
	for range 20 {
		loc := teleport(t, b, engine.Request{Player: "after-" + time.Now().Format("150405.000000")})
		k := [2]int64{loc.X, loc.Z}
		if other, ok := seen[k]; ok {
			t.Fatalf("place %v handed out again by b after %s", k, other)
		}
		seen[k] = "b"
		if err := b.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("b adopted %d rows from the pool", stats(t, b, region).Fleet.Adopted)
}

// ownedBy counts the location rows node owns in the database at db.
func ownedBy(t *testing.T, db, node string) int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM locations WHERE owner = $1`, node).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// proxy forwards TCP connections to target until cut, which closes every
// connection and refuses new ones until restore.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestFleetDatabaseLoss: a node cut off from its database says so
// (/readyz, stats), keeps handing out the hot entries it holds, and once
// the database is back catches up and serves as before.
func TestFleetDatabaseLoss(t *testing.T) {
	db := fleetDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("connect_timeout", "1")
	u.RawQuery = q.Encode()
	a := fleetNode(t, u.String(), "a")
	region := config.DefaultRegionName
	waitFor(t, "the general sink full", func() bool {
		return fill(stats(t, a, region), "general") == 4 // smallRegion's capacity
	})
	held := fill(stats(t, a, region), "general")

	p.cut()
	cut := time.Now()
	waitForUpTo(t, 10*time.Second, "Ready to fail without the database", func() bool { return a.Ready() != nil })
	t.Logf("Ready failed %v after the cut: %v", time.Since(cut).Round(time.Millisecond), a.Ready())
	if st := stats(t, a, region).Fleet; !st.Degraded {
		t.Fatalf("fleet stats without the database: %+v, want Degraded", st)
	}
	served := 0
	for i := range held {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		loc, err := a.Teleport(ctx, region, engine.Request{Player: "cut-" + string(rune('a'+i))})
		cancel()
		if err != nil {
			break
		}
		served++
		_ = a.Complete(loc.ID)
	}
	if served == 0 {
		t.Fatalf("no teleport served from the %d hot entries held while the database was away", held)
	}

	p.restore()
	back := time.Now()
	waitForUpTo(t, 20*time.Second, "Ready again with the database back", func() bool { return a.Ready() == nil })
	waitForUpTo(t, 20*time.Second, "the node to catch up", func() bool {
		st := stats(t, a, region).Fleet
		return !st.Degraded && !st.LeaseLost
	})
	t.Logf("served %d of %d hot entries while cut off; ready %v after the database came back", served, held, time.Since(back).Round(time.Millisecond))
	for i := range 10 {
		loc := teleport(t, a, engine.Request{Player: "back-" + string(rune('a'+i))})
		if err := a.Complete(loc.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// recordingSource counts the chunks a node screens (Summary) on a world
// shared by the test's nodes.
type recordingSource struct {
	src     *procworld.World
	mu      sync.Mutex
	counted bool
	seen    map[geom.Chunk]bool
}

func (s *recordingSource) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	return s.src.Load(ctx, pos)
}

func (s *recordingSource) Summary(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	s.mu.Lock()
	if s.counted {
		s.seen[pos] = true
	}
	s.mu.Unlock()
	return s.src.Summary(ctx, pos)
}

func (s *recordingSource) start() {
	s.mu.Lock()
	s.counted, s.seen = true, map[geom.Chunk]bool{}
	s.mu.Unlock()
}

func (s *recordingSource) chunks() map[geom.Chunk]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.seen)
}

// TestFleetScreeningSplit: once two nodes see each other, they screen
// disjoint chunks of their region (the duplicate-screening share is 0
// but for the seconds a change of membership takes to be seen).
func TestFleetScreeningSplit(t *testing.T) {
	db := fleetDatabase(t)
	shared := independentWorld(t, procgen.DefaultParams())
	region := config.DefaultRegionName
	var srcs []*recordingSource
	var nodes []*engine.Engine
	for _, name := range []string{"a", "b"} {
		src := &recordingSource{src: shared}
		cfg := testConfig(t)
		spec := specOf(t, cfg)
		spec.Worlds = map[string]engine.WorldSpec{config.DefaultWorldName: {Source: src, Key: "shared-procedural"}}
		rs := spec.Regions[region]
		rs.World = config.DefaultWorldName
		spec.Regions[region] = rs
		spec.Fleet = engine.FleetSpec{DatabaseURL: db, Node: name, NodeLease: 2 * time.Second}
		e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close(context.Background()) })
		run(t, e)
		srcs, nodes = append(srcs, src), append(nodes, e)
	}
	waitFor(t, "both nodes sharing the screening", func() bool {
		return stats(t, nodes[0], region).Fleet.Nodes == 2 && stats(t, nodes[1], region).Fleet.Nodes == 2
	})
	for _, s := range srcs {
		s.start()
	}
	// Drain both nodes so they keep screening.
	for i := 0; len(srcs[0].chunks()) < 150 || len(srcs[1].chunks()) < 150; i++ {
		for n, e := range nodes {
			loc := teleport(t, e, engine.Request{Player: fmt.Sprintf("p%d-%d", n, i)})
			if err := e.Complete(loc.ID); err != nil {
				t.Fatal(err)
			}
		}
		if i > 5000 {
			t.Fatalf("screened only %d and %d chunks", len(srcs[0].chunks()), len(srcs[1].chunks()))
		}
	}
	a, b := srcs[0].chunks(), srcs[1].chunks()
	both := 0
	for c := range a {
		if b[c] {
			both++
		}
	}
	share := float64(both) / float64(len(a)+len(b)-both)
	t.Logf("duplicate-screening share: %d of %d chunks screened by both nodes (%.1f%%); a screened %d, b %d",
		both, len(a)+len(b)-both, 100*share, len(a), len(b))
	if both != 0 {
		t.Errorf("%d chunks screened by both nodes once they shared the region, want 0", both)
	}
}

// TestFleetArchiveInPostgres: with Archive.URL a procedural world keeps
// its terrain tiles in PostgreSQL (the schema Archive.Schema), where every
// node of a fleet finds them.
func TestFleetArchiveInPostgres(t *testing.T) {
	schema, db := pgtest.Schema(t)
	cfg := testConfig(t)
	spec := specOf(t, cfg)
	spec.Archive.URL, spec.Archive.Schema = db, schema
	spec.Fleet = engine.FleetSpec{DatabaseURL: db, Node: "archivist"}
	e, err := engine.New(t.Context(), spec, engine.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	run(t, e)
	loc := teleport(t, e, engine.Request{Player: "p"})
	if err := e.Complete(loc.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(context.Background()); err != nil { // flushes the archive
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{schema, "records"}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("the archive's table in schema %s: %v", schema, err)
	}
	if n == 0 {
		t.Fatal("no terrain tile in the PostgreSQL archive after a teleport")
	}
	t.Logf("%d tiles archived in %s", n, schema)
}
