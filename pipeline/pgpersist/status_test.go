package pgpersist_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// execIn runs statements in schema, outside any node.
func execIn(t *testing.T, schema string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET search_path TO "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// tableExists reports whether schema holds the table.
func tableExists(t *testing.T, schema, table string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{schema, table}.Sanitize()).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func listNodes(t *testing.T, schema string) []pgpersist.NodeInfo {
	t.Helper()
	nodes, err := pgpersist.ListNodes(context.Background(), dsn(t), schema)
	if err != nil {
		t.Fatalf("ListNodes: %v", err)
	}
	return nodes
}

// Before any node has opened, a schema has no nodes; ListNodes neither
// creates its tables nor fails.
func TestListNodesEmpty(t *testing.T) {
	schema := newSchema(t)
	if nodes := listNodes(t, schema); len(nodes) != 0 {
		t.Fatalf("ListNodes of an empty schema = %+v, want none", nodes)
	}
	if tableExists(t, schema, "schema_version") || tableExists(t, schema, "nodes") {
		t.Fatal("ListNodes created tables: it must not migrate")
	}
	// A schema that does not exist at all reads the same.
	if nodes := listNodes(t, schema+"_missing"); len(nodes) != 0 {
		t.Fatalf("ListNodes of a missing schema = %+v, want none", nodes)
	}
	// A migration that has created the table but not yet its row.
	execIn(t, schema, `CREATE TABLE schema_version (one boolean PRIMARY KEY DEFAULT true, version integer NOT NULL)`)
	if nodes := listNodes(t, schema); len(nodes) != 0 {
		t.Fatalf("ListNodes with an empty schema_version = %+v, want none", nodes)
	}
}

// ListNodes reports what DB.Nodes reports, software and regions included,
// without registering a node.
func TestListNodesMatchesNodes(t *testing.T) {
	schema := newSchema(t)
	fill(t, schema, 20)
	a := open(t, schema, "a", pgpersist.Options{Software: "rtp v1.2.3"})
	b := open(t, schema, "b", pgpersist.Options{Software: "rtp v1.2.4"})
	ra := region(t, a, "r", "k")
	region(t, a, "north", "k")
	region(t, a, "r", "k2") // a region opened twice is listed once
	region(t, b, "south", "k")
	if got := claim(t, ra, 5); len(got) != 5 {
		t.Fatalf("a claimed %d rows, want 5", len(got))
	}
	markHot(t, ra, persisttest.Loc(0))

	listed := listNodes(t, schema)
	byDB, err := b.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 3 {
		t.Fatalf("ListNodes = %+v, want a, b and filler", listed)
	}
	// The rows match but for the time they were read.
	strip := func(ns []pgpersist.NodeInfo) []pgpersist.NodeInfo {
		out := slices.Clone(ns)
		for i := range out {
			out[i].AsOf = time.Time{}
		}
		return out
	}
	if !reflect.DeepEqual(strip(listed), strip(byDB)) {
		t.Errorf("ListNodes =\n%+v\nDB.Nodes =\n%+v", listed, byDB)
	}
	want := map[string]struct {
		state, software string
		regions         []string
		live            bool
		owned, hot      int64
	}{
		"a":      {"running", "rtp v1.2.3", []string{"r", "north"}, true, 5, 1},
		"b":      {"running", "rtp v1.2.4", []string{"south"}, true, 0, 0},
		"filler": {"clean", "", []string{"r"}, false, 0, 0},
	}
	for _, n := range listed {
		w := want[n.Name]
		if n.State != w.state || n.Software != w.software || !slices.Equal(n.Regions, w.regions) || n.Live != w.live ||
			n.Owned != w.owned || n.Hot != w.hot || n.Version != 1 {
			t.Errorf("node %s = %+v, want %+v, run 1", n.Name, n, w)
		}
		if n.AsOf.IsZero() || n.HeartbeatAge() < 0 || n.HeartbeatAge() > time.Minute {
			t.Errorf("node %s: read at %v, heartbeat age %v", n.Name, n.AsOf, n.HeartbeatAge())
		}
		if live := n.ExpiresIn() > 0; live != w.live {
			t.Errorf("node %s: expires in %v, want live %v", n.Name, n.ExpiresIn(), w.live)
		}
	}

	// A new run of a starts with the regions it opens again.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = open(t, schema, "a", pgpersist.Options{Software: "rtp v2.0.0"})
	region(t, a, "west", "k")
	for _, n := range listNodes(t, schema) {
		if n.Name == "a" && (n.Version != 2 || n.Software != "rtp v2.0.0" || !slices.Equal(n.Regions, []string{"west"})) {
			t.Errorf("a's second run = %+v, want run 2 of rtp v2.0.0 serving west", n)
		}
	}
}

// A schema of version 1 has no software nor regions columns: its nodes are
// listed without them. A newer schema than the build's is an error.
func TestListNodesSchemaVersions(t *testing.T) {
	schema := newSchema(t)
	db := open(t, schema, "a", pgpersist.Options{Software: "x"})
	region(t, db, "r", "k")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	execIn(t, schema, `ALTER TABLE nodes DROP COLUMN software, DROP COLUMN regions`, `UPDATE schema_version SET version = 1`)
	nodes := listNodes(t, schema)
	if len(nodes) != 1 || nodes[0].Name != "a" || nodes[0].State != "clean" || nodes[0].Software != "" || len(nodes[0].Regions) != 0 {
		t.Fatalf("ListNodes of a version 1 schema = %+v, want node a, clean, without software or regions", nodes)
	}
	execIn(t, schema, `UPDATE schema_version SET version = 99`)
	if _, err := pgpersist.ListNodes(context.Background(), dsn(t), schema); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("ListNodes of a version 99 schema = %v, want an error naming the version", err)
	}
}

func TestListNodesBadDSN(t *testing.T) {
	dsn(t)
	if _, err := pgpersist.ListNodes(context.Background(), "postgres://h:port/db", ""); err == nil {
		t.Fatal("ListNodes with a bad port: no error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pgpersist.ListNodes(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", ""); err == nil {
		t.Fatal("ListNodes of a closed port: no error")
	}
}
