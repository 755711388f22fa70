package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/eventually"
	"github.com/rtpengine/rtp/internal/pgtest"
	"github.com/rtpengine/rtp/memory"
)

// Shape of the fleet test's region: a circle of fleetRadius blocks.
const (
	fleetRadius = 640
	fleetLease  = 3 * time.Second
)

// fleetServices returns the PostgreSQL URL (its search_path a fresh
// schema, dropped at cleanup) and the Redis URL the fleet test uses, or
// skips when either is not configured.
func fleetServices(t *testing.T) (pg, redis string) {
	t.Helper()
	redis = os.Getenv("RTP_TEST_REDIS")
	if redis == "" {
		t.Skip("RTP_TEST_REDIS is not set: the fleet test runs nodes on a real Redis (and PostgreSQL), " +
			"e.g. RTP_TEST_REDIS=redis://127.0.0.1:6379/0")
	}
	_, pg = pgtest.Schema(t)
	return pg, redis
}

// judge is an HTTP verifier that rejects a fixed share of the places it
// is asked about and records, per chunk, which node rejected it first and
// when. Each node's configuration names it under a path of its own.
type judge struct {
	mu       sync.Mutex
	rejected map[geom.Chunk]rejection
	asked    map[geom.Chunk]map[string]bool
}

type rejection struct {
	node string
	at   time.Time
}

func (j *judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct{ X, Z int64 }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	node := filepath.Base(r.URL.Path)
	c := geom.Block{X: req.X, Z: req.Z}.Chunk()
	// About one chunk in six is refused, whatever its column.
	refuse := (uint64(c.X)*0x9e3779b97f4a7c15^uint64(c.Z)*0xbf58476d1ce4e5b9)%6 == 0
	j.mu.Lock()
	if j.asked[c] == nil {
		j.asked[c] = map[string]bool{}
	}
	j.asked[c][node] = true
	if _, ok := j.rejected[c]; refuse && !ok {
		j.rejected[c] = rejection{node: node, at: time.Now()}
	}
	j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"allowed": %t}`, !refuse)
}

// fleetDelivery is one place a node handed out.
type fleetDelivery struct {
	x, z int64
	node string
}

// TestFleet runs three rtp serve nodes on one PostgreSQL database and one
// Redis, drives teleports through all of them and SIGKILLs one mid-load.
// It asserts that no place is handed out twice across the fleet, that the
// survivors answer without errors, that a network token reserved through
// one node is redeemed through another, that the dead node's claims are
// back in the pool within its lease, and that a rejection learnt on one
// node reaches the others within a second.
func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rtp and runs three nodes for several seconds; skipped with -short")
	}
	pg, redis := fleetServices(t)
	bin := buildRTP(t)
	j := &judge{rejected: map[geom.Chunk]rejection{}, asked: map[geom.Chunk]map[string]bool{}}
	verifier := httptest.NewServer(j)
	defer verifier.Close()
	secret := filepath.Join(t.TempDir(), "network-secret")
	if err := os.WriteFile(secret, []byte(hex.EncodeToString(make([]byte, 16))+"fleet-test-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The lease store keeps a set per node name under a prefix every run
	// on this Redis shares: the names are this run's own.
	run := strings.ToLower(rand.Text()[:8])
	names := []string{"node-a-" + run, "node-b-" + run, "node-c-" + run}
	nodes := make([]*server, len(names))
	clients := make([]*client.Client, len(names))
	for i, name := range names {
		cfg := filepath.Join(t.TempDir(), "rtp.yml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`data_dir: %s
server:
  listen: 127.0.0.1:0
database: {kind: postgres, url: %q}
leases: {kind: redis, url: %q}
node: {name: %s, lease: %s}
verifiers:
  - {name: judge, kind: http, url: %q, timeout: 2s}
regions:
  default:
    world: world
    shape: {kind: circle, radius: %d}
    sinks:
      general: {capacity: 16}
      network: {enabled: true, capacity: 4, lease: 30s, secret_file: %q}
    pulse: 10ms
    queues: {backlog: 64, cold: 64}
    unique_placement: {radius: 4}
`, t.TempDir(), pg, redis, name, fleetLease, verifier.URL+"/judge/"+name, fleetRadius, secret)), 0o600); err != nil {
			t.Fatal(err)
		}
		nodes[i] = startServer(t, bin, cfg)
		clients[i] = client.New(nodes[i].addr, client.Options{})
	}
	for i, c := range clients {
		waitServerReady(t, c)
		t.Logf("%s listening on %s", names[i], nodes[i].addr)
	}

	// Load on every node; node-c is killed mid-load.
	var (
		mu         sync.Mutex
		deliveries []fleetDelivery
		errs       = map[string][]error{}
		misses     atomic.Int64
	)
	ctx, cancel := context.WithCancel(context.Background())
	killed := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		for w := range 2 {
			wg.Go(func() {
				for n := 0; ctx.Err() == nil; n++ {
					player := fmt.Sprintf("%s-w%d-%d", names[i], w, n)
					tp, err := c.Teleport(ctx, "default", client.TeleportRequest{Player: player, Wait: time.Second})
					switch {
					case ctx.Err() != nil:
						return
					case err != nil && i == 2:
						select {
						case <-killed:
							return // the dead node's answers stop
						default:
						}
					}
					if err != nil {
						if isMiss(err) {
							misses.Add(1)
							continue
						}
						mu.Lock()
						errs[names[i]] = append(errs[names[i]], err)
						mu.Unlock()
						continue
					}
					mu.Lock()
					deliveries = append(deliveries, fleetDelivery{x: tp.X, z: tp.Z, node: names[i]})
					mu.Unlock()
					complete(nodes[i].addr, tp.ID)
				}
			})
		}
	}
	watch := watchMemory(clients[:2])
	delivered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(deliveries)
	}
	rejected := func() int {
		j.mu.Lock()
		defer j.mu.Unlock()
		return len(j.rejected)
	}
	eventually.True(t, 60*time.Second, "the load under way: 50 deliveries and 10 rejections", func() bool {
		return delivered() >= 50 && rejected() >= 10
	})

	// A token reserved through a and redeemed through b.
	res, err := clients[0].Reserve(ctx, "default", "")
	if err != nil {
		t.Fatalf("reserve on node-a: %v", err)
	}
	tp, err := clients[1].Redeem(ctx, "default", res.Token)
	if err != nil {
		t.Fatalf("redeem on node-b of a token reserved on node-a: %v", err)
	}
	if tp.X != res.Location.X || tp.Z != res.Location.Z {
		t.Errorf("node-b redeemed (%d, %d), node-a reserved (%d, %d)", tp.X, tp.Z, res.Location.X, res.Location.Z)
	}
	if _, err := clients[0].Redeem(ctx, "default", res.Token); err == nil {
		t.Error("the token was redeemed a second time, on node-a")
	}
	mu.Lock()
	deliveries = append(deliveries, fleetDelivery{x: tp.X, z: tp.Z, node: names[1] + " (token)"})
	mu.Unlock()

	// Kill node-c mid-load; its claims must be back within its lease.
	ownedBefore := ownedRows(t, pg, names[2])
	close(killed)
	nodes[2].kill()
	killedAt := time.Now()
	var failover time.Duration
	if d, ok := eventually.Within(4*fleetLease, func() bool { return ownedRows(t, pg, names[2]) == 0 }); ok {
		failover = d
	}
	if failover == 0 {
		t.Errorf("node-c still owns %d rows %v after its death (it owned %d)", ownedRows(t, pg, names[2]), 4*fleetLease, ownedBefore)
	} else if bound := fleetLease + fleetLease/10 + time.Second; failover > bound {
		// The lease lapses fleetLease after the last heartbeat; a sweep
		// runs every tenth of it; a second for the machine.
		t.Errorf("node-c's %d rows came back %v after its death, want within %v", ownedBefore, failover, bound)
	}
	// Load on the survivors after the failover.
	after := delivered()
	eventually.True(t, 60*time.Second, "40 deliveries by the survivors after the failover", func() bool { return delivered() >= after+40 })
	cancel()
	wg.Wait()
	// The last rejections reach the watch (propagation reports those that
	// never do).
	eventually.Within(10*time.Second, func() bool { return unseen(j, watch, names[:2], names[2], killedAt) == 0 })

	// No place handed out twice across the fleet.
	seen := map[[2]int64]string{}
	twice := 0
	per := map[string]int{}
	for _, d := range deliveries {
		k := [2]int64{d.x, d.z}
		if other, ok := seen[k]; ok {
			twice++
			t.Errorf("place %v handed out by %s and by %s", k, other, d.node)
		}
		seen[k] = d.node
		per[d.node]++
	}
	for _, name := range names[:2] {
		for _, err := range errs[name] {
			t.Errorf("%s answered an error: %v", name, err)
		}
	}

	// Propagation: chunks one node rejected that another never asked
	// about, seen in that other node's memory.
	delays := propagation(t, j, watch, names[:2], names[2], killedAt)
	t.Logf("deliveries %d (per node %v), delivered twice %d, misses %d, node-c owned %d rows at its death, back in the pool after %v",
		len(deliveries), per, twice, misses.Load(), ownedBefore, failover)
	if len(delays) == 0 {
		t.Fatal("no rejection of one node was seen by another")
	}
	slices.Sort(delays)
	q := func(p float64) time.Duration { return delays[max(int(math.Ceil(p*float64(len(delays))))-1, 0)] }
	// The watch sees a node's memory up to one of its rounds late: a
	// loaded machine slows the rounds, not the propagation under test.
	round := watch.slowestRound()
	t.Logf("rejection propagation over %d chunks: p50 %v, p99 %v, max %v (the watch's slowest round %v)", len(delays), q(0.5), q(0.99), delays[len(delays)-1], round)
	if q(0.99) > time.Second+round {
		t.Errorf("rejections took up to %v (p99) to reach another node, want under 1 s plus the watch's slowest round (%v)", q(0.99), round)
	}
	if len(deliveries) < 100 {
		t.Errorf("only %d deliveries: the test exercised too little", len(deliveries))
	}
}

// isMiss reports whether err is the server's no-location answer.
func isMiss(err error) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.Code == client.CodeNoLocation
}

// ownedRows counts the location rows node owns.
func ownedRows(t *testing.T, pg, node string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM locations WHERE owner = $1`, node).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// memoryWatch records when each node's memory first held each chunk
// index, exporting it every 20 ms (a round: every node once) until
// stopped.
type memoryWatch struct {
	mu      sync.Mutex
	seenAt  []map[int64]time.Time
	errs    int
	slowest time.Duration // the longest round, from its start to the next one's
	stop    func()
	done    chan struct{}
}

// slowestRound returns the longest time between two rounds so far.
func (m *memoryWatch) slowestRound() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.slowest
}

func watchMemory(clients []*client.Client) *memoryWatch {
	ctx, cancel := context.WithCancel(context.Background())
	m := &memoryWatch{stop: cancel, done: make(chan struct{})}
	for range clients {
		m.seenAt = append(m.seenAt, map[int64]time.Time{})
	}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for last := time.Now(); ctx.Err() == nil; {
			for i, c := range clients {
				var buf bytes.Buffer
				err := c.ExportMemory(ctx, "default", &buf)
				now := time.Now()
				var ex memory.Export
				if err == nil {
					err = json.Unmarshal(buf.Bytes(), &ex)
				}
				m.mu.Lock()
				if err != nil {
					m.errs++
				}
				for _, r := range ex.Active {
					for idx := r.Start; idx < r.Start+r.Len; idx++ {
						if _, ok := m.seenAt[i][idx]; !ok {
							m.seenAt[i][idx] = now
						}
					}
				}
				m.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			now := time.Now()
			m.mu.Lock()
			m.slowest = max(m.slowest, now.Sub(last))
			m.mu.Unlock()
			last = now
		}
	}()
	return m
}

// propagation returns, for each chunk one node rejected and another
// never asked about, the delay from the first export of the rejecting
// node's memory that held it (the judge's answer for node-c, which is not
// watched) to the first export of the other node's memory that held it.
//
// A node that is killed loses the marks its writer had not committed yet
// (one batch delay's worth): its rejections from the last second before
// its death (killed, killedAt) are not counted.
func propagation(t *testing.T, j *judge, m *memoryWatch, names []string, killed string, killedAt time.Time) []time.Duration {
	t.Helper()
	m.stop()
	<-m.done
	out, lost, total := spread(j, m, names, killed, killedAt)
	if missing := unseenIn(lost); missing > 0 {
		t.Errorf("%d of %d rejections never reached the other node's memory (from -> to: %v)", missing, total, lost)
	}
	return out
}

// unseen counts the rejections propagation would count that the watch
// has not seen reach the other node yet.
func unseen(j *judge, m *memoryWatch, names []string, killed string, killedAt time.Time) int {
	_, lost, _ := spread(j, m, names, killed, killedAt)
	return unseenIn(lost)
}

func unseenIn(lost map[string]int) int {
	n := 0
	for _, k := range lost {
		n += k
	}
	return n
}

// spread returns the propagation delays seen so far, the rejections not
// seen yet (by from -> to) and how many rejections count.
func spread(j *judge, m *memoryWatch, names []string, killed string, killedAt time.Time) (out []time.Duration, lost map[string]int, total int) {
	shape, err := geom.NewCircle(geom.Chunk{}, fleetRadius>>4, 0)
	if err != nil {
		panic(err) // a constant shape
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	lost = map[string]int{}
	for c, rej := range j.rejected {
		idx, ok := shape.Index(c)
		if !ok || rej.node == killed && rej.at.After(killedAt.Add(-time.Second)) {
			continue
		}
		for i, name := range names {
			if name == rej.node || j.asked[c][name] {
				continue
			}
			total++
			at, ok := m.seenAt[i][idx]
			if !ok {
				lost[rej.node+" -> "+name]++
				continue
			}
			// From when the rejecting node's own memory held it, as the
			// watch saw it (the judge's answer for the unwatched node).
			from := rej.at
			if k := slices.Index(names, rej.node); k >= 0 {
				if own, ok := m.seenAt[k][idx]; ok {
					from = own
				}
			}
			out = append(out, max(at.Sub(from), 0))
		}
	}
	return out, lost, total
}
