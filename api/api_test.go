package api

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJSON pins the keys, their order and their encoding: the wire form of
// every shape.
func TestJSON(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	player, owner := "steve", "town"
	wait, capacity := int64(250), int64(8)
	x1, z1, x2, z2 := int64(-10), int64(-20), int64(10), int64(20)
	tp := Teleport{ID: 7, Region: "r", World: "w", X: 1, Y: 64, Z: -3, StandY: 63.5, Biome: "plains", Sink: "login", WaitedMs: 1.5}
	const tpJSON = `{"id":7,"region":"r","world":"w","x":1,"y":64,"z":-3,"standY":63.5,"biome":"plains","sink":"login","waitedMs":1.5}`
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"Teleport", tp, tpJSON},
		{"Reservation", Reservation{Token: "tok", Location: tp, Expires: created},
			`{"token":"tok","location":` + tpJSON + `,"expires":"2026-01-02T03:04:05Z"}`},
		{"Regions", Regions{Regions: []Region{{Name: "r", World: "w", Paused: true}}},
			`{"regions":[{"name":"r","world":"w","paused":true}]}`},
		{"Claims", Claims{Claims: []Claim{{ID: 3, World: "w", Owner: "o", MinX: -1, MinZ: -2, MaxX: 1, MaxZ: 2, Created: created}}},
			`{"claims":[{"id":3,"world":"w","owner":"o","minX":-1,"minZ":-2,"maxX":1,"maxZ":2,"created":"2026-01-02T03:04:05Z"}]}`},
		{"Latency", Latency{Count: 2, P50Ms: 0.5, P90Ms: 1, P99Ms: 2.25, MaxMs: 3},
			`{"count":2,"p50Ms":0.5,"p90Ms":1,"p99Ms":2.25,"maxMs":3}`},
		{"Resident", Resident{Opened: 1, Closed: 2, Forced: 3, Open: 4, Hits: 5, Misses: 6, Loads: 7, LoadErrors: 8, Evictions: 9, Stale: 14, Resident: 10, Reserved: 11, Retired: 15, Bytes: 12, Loading: 13},
			`{"opened":1,"closed":2,"forced":3,"open":4,"hits":5,"misses":6,"loads":7,"loadErrors":8,"evictions":9,"stale":14,"resident":10,"reserved":11,"retired":15,"bytes":12,"loading":13}`},
		{"Status", Status{Status: "ok"}, `{"status":"ok"}`},
		{"Error", Error{Error: ErrorDetail{Code: "no-location", Message: "none yet"}},
			`{"error":{"code":"no-location","message":"none yet"}}`},
		{"TeleportRequest", TeleportRequest{Player: &player, Sink: "login", Token: "tok", WaitMs: &wait},
			`{"player":"steve","sink":"login","token":"tok","waitMs":250}`},
		{"TeleportRequest/minimal", TeleportRequest{Player: &player}, `{"player":"steve"}`},
		{"QueueRequest", QueueRequest{Capacity: &capacity}, `{"capacity":8}`},
		{"QueueRequest/empty", QueueRequest{}, `{}`},
		{"ReservationRequest", ReservationRequest{Token: "tok"}, `{"token":"tok"}`},
		{"ReservationRequest/empty", ReservationRequest{}, `{}`},
		{"ClaimRequest", ClaimRequest{Owner: &owner, MinX: &x1, MinZ: &z1, MaxX: &x2, MaxZ: &z2},
			`{"owner":"town","minX":-10,"minZ":-20,"maxX":10,"maxZ":20}`},
	} {
		got, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("json.Marshal(%s) = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestStandardLibraryOnly keeps the package light for the client: it
// imports nothing outside the standard library.
func TestStandardLibraryOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %q, want the standard library only", name, path)
			}
		}
	}
}
