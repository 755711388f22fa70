package pgclaims_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/verify/claims"
	"github.com/rtpengine/rtp/verify/claims/claimstest"
	"github.com/rtpengine/rtp/verify/claims/pgclaims"
)

// The tests of what only a shared PostgreSQL store does: several stores
// on one database, the migration, and the follower's notifications,
// fallback and reconnection.

// noResync disables the fallback revision check, so that only
// notifications (and reconnections) can carry a change.
const noResync = time.Hour

// propagationLimit is the delay within which a change made through one
// store must be in force on the others.
const propagationLimit = time.Second

// pgOpen opens the store of u, with Clock claimstest.Epoch unless opts
// sets one; it is closed at cleanup.
func pgOpen(t testing.TB, u string, opts pgclaims.Options) *claims.Store {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return claimstest.Epoch }
	}
	s, err := pgclaims.Open(context.Background(), u, opts)
	if err != nil {
		t.Fatalf("open postgres store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// countRecords counts the records of level (e.g. "WARN") that mention sub.
func countRecords(recs []string, level, sub string) int {
	n := 0
	for _, r := range recs {
		if strings.HasPrefix(r, level+" ") && strings.Contains(r, sub) {
			n++
		}
	}
	return n
}

// Two nodes on one database: an addition through one is in force on the
// other within a second, and so is a removal the other way; the delay is
// measured on each change.
func TestPostgresPropagation(t *testing.T) {
	ctx := context.Background()
	u, _ := newSchema(t)
	a := pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync})
	b := pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync})

	const rounds = 20
	var addDelays, removeDelays []time.Duration
	var ids []int64
	// A delay runs from the call of Add or Remove on one store to the
	// change being in force on the other: the write's own round trips
	// and commit, then the notification.
	for i := range rounds {
		x := int64(i) * 1000
		start := time.Now()
		c := add(t, a, rect("overworld", fmt.Sprint("player", i), x, 0, x+15, 15))
		ids = append(ids, c.ID)
		if _, ok := waitFor(propagationLimit, func() bool { got, ok := b.Contains("overworld", x+7, 7); return ok && got == c }); !ok {
			t.Fatalf("claim %d added on A is not in force on B after %v", c.ID, time.Since(start))
		}
		addDelays = append(addDelays, time.Since(start))
	}
	if a.Len() != rounds || b.Len() != rounds {
		t.Fatalf("Len() = %d on A, %d on B; want %d", a.Len(), b.Len(), rounds)
	}
	for i, id := range ids {
		start := time.Now()
		if ok, err := b.Remove(ctx, id); !ok || err != nil {
			t.Fatalf("Remove(%d) on B = %v, %v", id, ok, err)
		}
		if b.Claimed("overworld", int64(i)*1000, 0) {
			t.Fatalf("claim %d removed on B is still in force on B", id)
		}
		if _, ok := waitFor(propagationLimit, func() bool { return !a.Claimed("overworld", int64(i)*1000, 0) }); !ok {
			t.Fatalf("claim %d removed on B is still in force on A after %v", id, time.Since(start))
		}
		removeDelays = append(removeDelays, time.Since(start))
	}
	if a.Len() != 0 || b.Len() != 0 {
		t.Fatalf("Len() = %d on A, %d on B after removing everything", a.Len(), b.Len())
	}
	for name, ds := range map[string][]time.Duration{"addition on A seen on B": addDelays, "removal on B seen on A": removeDelays} {
		slices.Sort(ds)
		t.Logf("%s, from the call to in force on the other store, over %d changes: min %v, median %v, max %v (limit %v)",
			name, len(ds), ds[0], ds[len(ds)/2], ds[len(ds)-1], propagationLimit)
	}
}

// Nodes adding at once get distinct ids from the shared sequence, and
// each ends up with every claim in force.
func TestPostgresConcurrentAdds(t *testing.T) {
	ctx := context.Background()
	u, _ := newSchema(t)
	stores := []*claims.Store{
		pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync}),
		pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync}),
	}
	const perWriter = 40
	var mu sync.Mutex
	var all []claims.Claim
	var wg sync.WaitGroup
	for w := range 4 {
		s := stores[w%2]
		wg.Go(func() {
			for i := range perWriter {
				x := int64(w*perWriter+i) * 100
				c, err := s.Add(ctx, rect("w", fmt.Sprint("writer", w), x, 0, x+9, 9))
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				mu.Lock()
				all = append(all, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[int64]bool{}
	for _, c := range all {
		if c.ID <= 0 || seen[c.ID] {
			t.Fatalf("id %d given twice (or not positive)", c.ID)
		}
		seen[c.ID] = true
	}
	for i, s := range stores {
		d, ok := waitFor(propagationLimit, func() bool { return s.Len() == len(all) })
		if !ok {
			t.Fatalf("store %d holds %d claims %v after the writers, want %d", i, s.Len(), d, len(all))
		}
		for _, c := range all {
			if got, ok := s.Contains(c.World, c.MinX, c.MinZ); !ok || got != c {
				t.Fatalf("store %d: Contains at %v = %v, %v", i, c, got, ok)
			}
		}
	}
	list, err := stores[0].List(ctx, "")
	if err != nil || len(list) != len(all) {
		t.Fatalf("List = %d claims, %v; want %d", len(list), err, len(all))
	}
}

// Connection strings that cannot work fail OpenPostgres with an error
// that says why and does not quote the password. No server needed.
func TestOpenPostgresBadURL(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		want string
	}{
		{"postgres://alice:s3cret@127.0.0.1:notaport/db", "invalid connection string"},
		{"postgres://alice:s3cret@127.0.0.1:5432/d%zzb", "invalid connection string"},
		{"postgres://alice:s3%zzcret@127.0.0.1:5432/db", "invalid connection string"},
		{"postgres://alice:s3cret@127.0.0.1/db?sslmode=sideways", "invalid connection string"},
		{"host=127.0.0.1 password=s3cret port=notaport", "invalid connection string"},
		// Nothing listens on port 1 of the loopback.
		{"postgres://alice:s3cret@127.0.0.1:1/db?connect_timeout=5", "connect"},
	} {
		s, err := pgclaims.Open(ctx, tc.url, pgclaims.Options{})
		if err == nil {
			s.Close()
			t.Errorf("OpenPostgres(%q) succeeded", tc.url)
			continue
		}
		msg := err.Error()
		t.Logf("error: %s", msg)
		if !strings.HasPrefix(msg, "claims: open postgres") || !strings.Contains(msg, tc.want) {
			t.Errorf("OpenPostgres(%q) = %q, want a claims: open postgres error saying %q", tc.url, msg, tc.want)
		}
		if strings.Contains(msg, "s3cret") {
			t.Errorf("OpenPostgres(%q) error %q quotes the password", tc.url, msg)
		}
	}
	if _, err := pgclaims.Open(ctx, "postgres://127.0.0.1:1/db", pgclaims.Options{ResyncInterval: -1}); err == nil || !strings.Contains(err.Error(), "ResyncInterval") {
		t.Errorf("OpenPostgres with invalid options = %v, want the ResyncInterval error", err)
	}
}

func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	server := pgServer(t)
	for _, tc := range []struct {
		name  string
		stmts []string // run in the fresh schema
		is    error
		want  string
	}{
		{"foreign claims table", []string{`CREATE TABLE claims (id integer)`}, claims.ErrNotClaimsDatabase, "did not write"},
		{"newer schema", []string{`CREATE TABLE claims_meta (version integer, rev bigint)`, `INSERT INTO claims_meta VALUES (9, 0)`}, nil, "newer than this build's 1"},
		{"meta without a row", []string{`CREATE TABLE claims_meta (version integer, rev bigint)`}, claims.ErrNotClaimsDatabase, "no row"},
		{"meta without claims", []string{`CREATE TABLE claims_meta (version integer, rev bigint)`, `INSERT INTO claims_meta VALUES (1, 0)`}, claims.ErrNotClaimsDatabase, "without a claims table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, schema := newSchema(t)
			pgExec(t, u, tc.stmts...)
			s, err := pgclaims.Open(ctx, u, pgclaims.Options{})
			if err == nil {
				s.Close()
				t.Fatal("OpenPostgres succeeded")
			}
			if (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), schema) {
				t.Fatalf("OpenPostgres = %v, want an error naming schema %s and saying %q", err, schema, tc.want)
			}
		})
	}
	t.Run("missing schema", func(t *testing.T) {
		for _, opts := range []pgclaims.Options{{Schema: "rtp_claims_test_absent"}} {
			s, err := pgclaims.Open(ctx, server, opts)
			if err == nil {
				s.Close()
				t.Fatal("OpenPostgres into a missing schema succeeded")
			}
			if !strings.Contains(err.Error(), "rtp_claims_test_absent does not exist") {
				t.Fatalf("OpenPostgres = %v, want the schema named as missing", err)
			}
		}
		s, err := pgclaims.Open(ctx, withSearchPath(t, server, "rtp_claims_test_absent"), pgclaims.Options{})
		if err == nil {
			s.Close()
			t.Fatal("OpenPostgres with a search_path of no existing schema succeeded")
		}
		if !strings.Contains(err.Error(), "no schema of the search_path") {
			t.Fatalf("OpenPostgres = %v, want no schema of the search_path", err)
		}
	})
}

// Options.Schema puts the tables in the schema it names, whatever the
// connection's search_path.
func TestPostgresSchemaOption(t *testing.T) {
	server := pgServer(t)
	_, schema := newSchema(t)
	s := pgOpen(t, server, pgclaims.Options{Schema: schema})
	c := add(t, s, rect("w", "alice", 0, 0, 9, 9))
	// The row is in that schema: a store on its search_path finds it.
	u := withSearchPath(t, server, schema)
	other := pgOpen(t, u, pgclaims.Options{})
	if got, ok := other.Contains("w", 5, 5); !ok || got != c {
		t.Fatalf("a store on search_path %s: Contains = %v, %v; want %v", schema, got, ok, c)
	}
}

// Nodes starting together on an empty schema migrate once: the advisory
// lock serializes them, one creates the tables and the others find them.
func TestPostgresMigrateOnce(t *testing.T) {
	u, _ := newSchema(t)
	rec := &claimstest.Recorder{}
	const nodes = 4
	stores := make([]*claims.Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			stores[i], errs[i] = pgclaims.Open(context.Background(), u, pgclaims.Options{Options: claims.Options{Logger: slog.New(rec)}})
		})
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("node %d: OpenPostgres = %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	if got := countRecords(rec.Take(), "INFO", "created the claims tables"); got != 1 {
		t.Fatalf("%d nodes logged creating the tables, want 1", got)
	}
	c := add(t, stores[0], rect("w", "alice", 0, 0, 9, 9))
	for i, s := range stores {
		if _, ok := waitFor(propagationLimit, func() bool { return s.Claimed("w", 0, 0) }); !ok {
			t.Fatalf("node %d does not have claim %d", i, c.ID)
		}
	}
}

// A change committed without a notification (as if it were lost) is
// caught up by the fallback check of the revision.
func TestPostgresFallbackResync(t *testing.T) {
	u, _ := newSchema(t)
	const interval = 100 * time.Millisecond
	s := pgOpen(t, u, pgclaims.Options{ResyncInterval: interval})
	kept := add(t, s, rect("w", "alice", 0, 0, 9, 9))
	pgExec(t, u,
		`BEGIN`,
		`UPDATE claims_meta SET rev = rev + 1`,
		`INSERT INTO claims (world, owner, min_x, min_z, max_x, max_z, created) VALUES ('w', 'bob', 100, 100, 109, 109, now())`,
		`COMMIT`)
	d, ok := waitFor(20*interval, func() bool { return s.Claimed("w", 105, 105) })
	if !ok {
		t.Fatalf("a claim added without a notification is not in force after %v", d)
	}
	t.Logf("an unnotified addition was caught up after %v (ResyncInterval %v)", d, interval)
	pgExec(t, u, `BEGIN`, `UPDATE claims_meta SET rev = rev + 1`, fmt.Sprintf(`DELETE FROM claims WHERE id = %d`, kept.ID), `COMMIT`)
	if d, ok := waitFor(20*interval, func() bool { return !s.Claimed("w", 5, 5) }); !ok {
		t.Fatalf("a claim removed without a notification is still in force after %v", d)
	}
	if s.Len() != 1 {
		t.Fatalf("Len() = %d, want 1", s.Len())
	}
}

// A notification that does not follow the store's revision reveals a
// missed one: the store reloads at once and has both changes, with the
// fallback check off.
func TestPostgresGapReloads(t *testing.T) {
	u, _ := newSchema(t)
	a := pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync})
	b := pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync})
	pgExec(t, u,
		`BEGIN`,
		`UPDATE claims_meta SET rev = rev + 1`,
		`INSERT INTO claims (world, owner, min_x, min_z, max_x, max_z, created) VALUES ('w', 'unnotified', 0, 0, 9, 9, now())`,
		`COMMIT`)
	time.Sleep(50 * time.Millisecond)
	if a.Claimed("w", 0, 0) {
		t.Fatal("the unnotified claim is in force with neither a notification nor the fallback check: the test proves nothing")
	}
	add(t, b, rect("w", "notified", 100, 100, 109, 109))
	d, ok := waitFor(propagationLimit, func() bool { return a.Claimed("w", 0, 0) && a.Claimed("w", 100, 100) })
	if !ok {
		t.Fatalf("after a gap in the revisions A has unnotified %v, notified %v after %v; want both",
			a.Claimed("w", 0, 0), a.Claimed("w", 100, 100), d)
	}
}

// The database drops the follower's connection (pg_terminate_backend):
// the store logs the outage once, reconnects, and catches up on the
// changes made meanwhile.
func TestPostgresReconnectAfterTerminate(t *testing.T) {
	ctx := context.Background()
	u, _ := newSchema(t)
	rec := &claimstest.Recorder{}
	a, listenerPID, err := pgclaims.OpenWatched(ctx, u, pgclaims.Options{Options: claims.Options{Logger: slog.New(rec)}, ResyncInterval: noResync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := pgOpen(t, u, pgclaims.Options{ResyncInterval: noResync})
	rec.Take()
	before := add(t, b, rect("w", "before", 0, 0, 9, 9))
	if _, ok := waitFor(propagationLimit, func() bool { return a.Claimed("w", 0, 0) }); !ok {
		t.Fatal("A does not have the first claim")
	}
	pid := listenerPID()
	if pid == 0 {
		t.Fatal("ListenerPID = 0 on an open store")
	}
	pgExec(t, u, fmt.Sprintf(`SELECT pg_terminate_backend(%d)`, pid))
	// Changes while A may be reconnecting: their notifications may be lost.
	if ok, err := b.Remove(ctx, before.ID); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	after := add(t, b, rect("w", "after", 100, 100, 109, 109))
	d, ok := waitFor(5*time.Second, func() bool { return !a.Claimed("w", 0, 0) && a.Claimed("w", 100, 100) })
	if !ok {
		t.Fatalf("A has not caught up %v after its connection was terminated (Len %d)", d, a.Len())
	}
	if _, ok := waitFor(5*time.Second, func() bool { p := listenerPID(); return p != 0 && p != pid }); !ok {
		t.Fatalf("ListenerPID = %d after the termination of %d, want a new connection", listenerPID(), pid)
	}
	recs := rec.Take()
	if countRecords(recs, "WARN", "lost the PostgreSQL connection") != 1 || countRecords(recs, "INFO", "reconnected") != 1 || len(recs) != 2 {
		t.Fatalf("records = %q, want one warning of the outage and one info of the reconnection", recs)
	}
	// And it follows notifications again.
	if ok, err := b.Remove(ctx, after.ID); !ok || err != nil {
		t.Fatalf("Remove = %v, %v", ok, err)
	}
	if d, ok := waitFor(propagationLimit, func() bool { return a.Len() == 0 }); !ok {
		t.Fatalf("after reconnecting, a removal on B is not seen on A within %v (Len %d)", d, a.Len())
	}
}

// The database goes away for a while (the proxy to it cuts every
// connection and refuses new ones): the store keeps answering from memory,
// retries with back-off logging once per outage, catches up when the
// database is back, and Close during an outage stops everything.
func TestPostgresOutage(t *testing.T) {
	ctx := context.Background()
	ignore := goleak.IgnoreCurrent()
	u, _ := newSchema(t)
	proxy, viaProxy := startProxy(t, u)
	rec := &claimstest.Recorder{}
	a, err := pgclaims.Open(ctx, viaProxy, pgclaims.Options{Options: claims.Options{Logger: slog.New(rec)}, ResyncInterval: noResync})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pgclaims.Open(ctx, u, pgclaims.Options{ResyncInterval: noResync})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec.Take()
	gone := add(t, b, rect("w", "gone", 0, 0, 9, 9))
	if _, ok := waitFor(propagationLimit, func() bool { return a.Claimed("w", 0, 0) }); !ok {
		t.Fatal("A does not have the first claim")
	}

	for outage := 1; outage <= 2; outage++ {
		proxy.setDown(true)
		refused := proxy.refused.Load()
		if ok, err := b.Remove(ctx, gone.ID); !ok || err != nil {
			t.Fatalf("Remove = %v, %v", ok, err)
		}
		gone = add(t, b, rect("w", fmt.Sprint("outage", outage), 0, 0, 9, 9))
		// Several attempts fail while the database is away.
		if _, ok := waitFor(10*time.Second, func() bool { return proxy.refused.Load() >= refused+4 }); !ok {
			t.Fatalf("outage %d: %d connections refused in 10 s, want 4", outage, proxy.refused.Load()-refused)
		}
		// The index still answers, at once, from what it had.
		start := time.Now()
		if c, ok := a.Contains("w", 5, 5); !ok || c.ID == gone.ID {
			t.Fatalf("outage %d: Contains = %v, %v; want the claim A had before the outage", outage, c, ok)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Fatalf("outage %d: Contains took %v during the outage", outage, d)
		}
		proxy.setDown(false)
		d, ok := waitFor(10*time.Second, func() bool { c, ok := a.Contains("w", 5, 5); return ok && c == gone })
		if !ok {
			t.Fatalf("outage %d: A has not caught up %v after the database came back", outage, d)
		}
		t.Logf("outage %d: %d connections refused; caught up %v after the database came back", outage, proxy.refused.Load()-refused, d)
		recs := rec.Take()
		if countRecords(recs, "WARN", "lost the PostgreSQL connection") != 1 || countRecords(recs, "INFO", "reconnected") != 1 || len(recs) != 2 {
			t.Fatalf("outage %d: records = %q, want one warning and one info", outage, recs)
		}
		// The info record counts the attempts that were not logged.
		var attempts int
		if i := strings.Index(recs[1], " attempts="); i < 0 {
			t.Fatalf("outage %d: %q does not give the attempts", outage, recs[1])
		} else if _, err := fmt.Sscan(recs[1][i+len(" attempts="):], &attempts); err != nil || attempts < 3 {
			t.Fatalf("outage %d: %q: attempts %d (%v), want at least 3 (2 failed)", outage, recs[1], attempts, err)
		}
	}

	// Close while the database is away and the store is retrying.
	proxy.setDown(true)
	if _, ok := waitFor(5*time.Second, func() bool { return countRecords(rec.Take(), "WARN", "lost") == 1 }); !ok {
		t.Fatal("no warning of the third outage")
	}
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatalf("Close during an outage = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close during an outage took %v", d)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	proxy.stop()
	goleak.VerifyNone(t, ignore)
}
