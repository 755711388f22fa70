// Package claimstest runs the contract every claims back end must keep
// (see claims.Backend) against one: the tests of a Store that hold
// whatever stores its rows. Each back end's package runs it
// (TestContract), with a Kind that opens its stores.
package claimstest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/verify/claims"
)

// Epoch is the Clock of the stores a Kind opens through OpenAt unless the
// options set one: the Created of the claims added without one.
var Epoch = time.Date(2026, 9, 3, 12, 0, 0, 0, time.UTC)

// Add adds c to s, failing the test on error, and returns it as stored.
func Add(t testing.TB, s *claims.Store, c claims.Claim) claims.Claim {
	t.Helper()
	got, err := s.Add(context.Background(), c)
	if err != nil {
		t.Fatalf("Add(%v): %v", c, err)
	}
	return got
}

// Rect returns the claim of owner on the rectangle of world with those
// corners.
func Rect(world, owner string, minX, minZ, maxX, maxZ int64) claims.Claim {
	return claims.Claim{World: world, Owner: owner, MinX: minX, MinZ: minZ, MaxX: maxX, MaxZ: maxZ}
}

// Recorder is a slog.Handler that keeps every record's level, message
// and attributes, for the tests of what a back end logs. Its zero value
// is ready; it is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	records []string
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *Recorder) WithGroup(string) slog.Handler            { return r }
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := rec.Level.String() + " " + rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	r.records = append(r.records, line)
	return nil
}

// Take returns the records kept since the last Take, one line each:
// "LEVEL message key=value ...".
func (r *Recorder) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.records
	r.records = nil
	return out
}

// Kind is one back end under test.
type Kind struct {
	Name string
	// Fresh returns where a new, empty store goes: an SQLite file path
	// (in a folder that does not exist yet), or a PostgreSQL URL whose
	// search_path is a schema of its own.
	Fresh func(t testing.TB) string
	// Open opens the store at at.
	Open func(ctx context.Context, at string, opts claims.Options) (*claims.Store, error)
	// Exec runs statements on the database at at directly, as another
	// program would.
	Exec func(t testing.TB, at string, stmts ...string)
}

// OpenAt opens the store at at, with Clock Epoch unless opts sets one; it
// is closed at cleanup.
func (k Kind) OpenAt(t testing.TB, at string, opts claims.Options) *claims.Store {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return Epoch }
	}
	s, err := k.Open(context.Background(), at, opts)
	if err != nil {
		t.Fatalf("open %s store: %v", k.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// OpenFresh opens a new, empty store.
func (k Kind) OpenFresh(t testing.TB) *claims.Store {
	t.Helper()
	return k.OpenAt(t, k.Fresh(t), claims.Options{})
}

// Run runs the tests every back end must pass, each a subtest.
func Run(t *testing.T, k Kind) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Kind)
	}{
		{"InvalidOptions", contractInvalidOptions},
		{"AddValidation", contractAddValidation},
		{"AddRemoveContains", contractAddRemoveContains},
		{"Persistence", contractPersistence},
		{"InvalidRow", contractInvalidRow},
		{"Closed", contractClosed},
		{"CanceledContext", contractCanceledContext},
		{"Verifier", contractVerifier},
		{"ContainsDoesNotAllocate", contractContainsDoesNotAllocate},
		{"Concurrent", contractConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, k) })
	}
}

func contractInvalidOptions(t *testing.T, k Kind) {
	if s, err := k.Open(context.Background(), k.Fresh(t), claims.Options{MaxSide: -1}); err == nil || !strings.Contains(err.Error(), "MaxSide") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("open with invalid options = %v, want the MaxSide error", err)
	}
}

func contractAddValidation(t *testing.T, k Kind) {
	s := k.OpenFresh(t)
	long := strings.Repeat("a", claims.MaxNameBytes+1)
	tests := []struct {
		name string
		c    claims.Claim
		want []string // every one must be in the error
	}{
		{"empty world", Rect("", "alice", 0, 0, 1, 1), []string{"empty world"}},
		{"empty owner", Rect("w", "", 0, 0, 1, 1), []string{"empty owner"}},
		{"long world", Rect(long, "alice", 0, 0, 1, 1), []string{"world of 257 bytes"}},
		{"long owner", Rect("w", long, 0, 0, 1, 1), []string{"owner of 257 bytes"}},
		{"bad utf-8", Rect("w\xff", "alice", 0, 0, 1, 1), []string{"not valid UTF-8"}},
		{"min above max x", Rect("w", "alice", 5, 0, 4, 1), []string{"minX 5 exceeds maxX 4"}},
		{"min above max z", Rect("w", "alice", 0, -1, 1, -2), []string{"minZ -1 exceeds maxZ -2"}},
		{"too wide", Rect("w", "alice", 0, 0, claims.DefaultMaxSide, 0), []string{"65537 blocks along X"}},
		{"too deep, extremes", Rect("w", "alice", 0, math.MinInt64, 0, math.MaxInt64), []string{"18446744073709551616 blocks along Z exceeds"}},
		{"too wide, half", Rect("w", "alice", math.MinInt64, 0, -1, 0), []string{"9223372036854775808 blocks along X exceeds"}},
		{"id set", claims.Claim{ID: 7, World: "w", Owner: "alice"}, []string{"ID 7 is assigned by the store"}},
		{"created out of range", claims.Claim{World: "w", Owner: "a", Created: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, []string{"Created"}},
		{"everything", claims.Claim{ID: -1, MinX: 3, MaxX: 2, MinZ: 0, MaxZ: claims.DefaultMaxSide * 2},
			[]string{"empty world", "empty owner", "minX 3 exceeds maxX 2", "along Z exceeds", "ID -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Add(context.Background(), tc.c)
			if !errors.Is(err, claims.ErrInvalidClaim) {
				t.Fatalf("Add(%v) = %v, %v; want ErrInvalidClaim", tc.c, got, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Add(%v) error %q does not mention %q", tc.c, err, w)
				}
			}
		})
	}
	if all, err := s.List(context.Background(), ""); err != nil || len(all) != 0 || s.Len() != 0 {
		t.Fatalf("after invalid adds: List = %v, %v; Len = %d; want nothing stored", all, err, s.Len())
	}
	// The limits themselves are allowed: a side of exactly MaxSide, a
	// configured larger MaxSide.
	Add(t, s, Rect("w", "alice", 0, 0, claims.DefaultMaxSide-1, 0))
	big := k.OpenAt(t, k.Fresh(t), claims.Options{MaxSide: math.MaxInt64})
	if _, err := big.Add(context.Background(), Rect("w", "server", math.MinInt64+1, 0, -1, 0)); err != nil {
		t.Fatalf("Add of a claim MaxInt64 blocks wide under MaxSide=MaxInt64: %v", err)
	}
	if c, ok := big.Contains("w", math.MinInt64+1, 0); !ok || c.Owner != "server" {
		t.Fatalf("Contains at MinInt64+1 = %v, %v; want the huge claim", c, ok)
	}
	if big.Claimed("w", math.MinInt64, 0) || big.Claimed("w", 0, 0) {
		t.Fatal("the huge claim is in force outside its corners")
	}
	if _, err := big.Add(context.Background(), Rect("w", "server", math.MinInt64, 0, -1, 0)); !errors.Is(err, claims.ErrInvalidClaim) {
		t.Fatalf("Add of a claim 2^63 blocks wide = %v, want ErrInvalidClaim", err)
	}
}

func contractAddRemoveContains(t *testing.T, k Kind) {
	ctx := context.Background()
	s := k.OpenFresh(t)
	a := Add(t, s, Rect("overworld", "alice", -10, -10, 10, 10))
	b := Add(t, s, Rect("overworld", "bob", 5, 5, 40, 40)) // overlaps a
	n := Add(t, s, Rect("nether", "carol", -10, -10, 10, 10))
	imported := Rect("overworld", "dave", 100, 100, 100, 100)
	imported.Created = time.Date(2020, 1, 2, 3, 4, 5, 6_789_000, time.FixedZone("x", 3600))
	d := Add(t, s, imported)

	if a.ID <= 0 || b.ID <= a.ID || n.ID <= b.ID || d.ID <= n.ID {
		t.Fatalf("ids %d, %d, %d, %d: want positive and increasing", a.ID, b.ID, n.ID, d.ID)
	}
	if !a.Created.Equal(Epoch) || a.Created.Location() != time.UTC {
		t.Errorf("Created = %v, want the clock's %v in UTC", a.Created, Epoch)
	}
	if want := time.UnixMilli(imported.Created.UnixMilli()).UTC(); !d.Created.Equal(want) {
		t.Errorf("imported Created = %v, want %v (kept, to the millisecond)", d.Created, want)
	}

	tests := []struct {
		world string
		x, z  int64
		want  int64 // claim id, 0 for none
	}{
		{"overworld", 0, 0, a.ID},
		{"overworld", -10, -10, a.ID}, {"overworld", 10, 10, a.ID}, // corners are inclusive
		{"overworld", -11, 0, 0}, {"overworld", 0, 11, 0}, {"overworld", 11, 11, b.ID},
		{"overworld", 7, 7, a.ID}, // both: the lowest id
		{"overworld", 40, 40, b.ID}, {"overworld", 41, 40, 0},
		{"nether", 0, 0, n.ID}, {"nether", 20, 20, 0},
		{"end", 0, 0, 0},
		{"overworld", 100, 100, d.ID},
	}
	check := func(stage string) {
		t.Helper()
		for _, tc := range tests {
			c, ok := s.Contains(tc.world, tc.x, tc.z)
			if ok != (tc.want != 0) || c.ID != tc.want {
				t.Errorf("%s: Contains(%q, %d, %d) = %d, %v; want %d", stage, tc.world, tc.x, tc.z, c.ID, ok, tc.want)
			}
			if got := s.Claimed(tc.world, tc.x, tc.z); got != (tc.want != 0) {
				t.Errorf("%s: Claimed(%q, %d, %d) = %v, want %v", stage, tc.world, tc.x, tc.z, got, !got)
			}
		}
	}
	check("after Add")
	if c, _ := s.Contains("overworld", 0, 0); c != a {
		t.Errorf("Contains returned %+v, want the claim Add returned %+v", c, a)
	}

	list, err := s.List(ctx, "overworld")
	if err != nil || !slices.Equal(list, []claims.Claim{a, b, d}) {
		t.Fatalf("List(overworld) = %v, %v; want a, b, d", list, err)
	}
	if list, _ := s.List(ctx, ""); !slices.Equal(list, []claims.Claim{a, b, n, d}) {
		t.Fatalf("List(\"\") = %v, want all four", list)
	}
	if list, err := s.List(ctx, "end"); err != nil || len(list) != 0 {
		t.Fatalf("List(end) = %v, %v; want none", list, err)
	}

	if ok, err := s.Remove(ctx, a.ID); !ok || err != nil {
		t.Fatalf("Remove(%d) = %v, %v; want true", a.ID, ok, err)
	}
	if ok, err := s.Remove(ctx, a.ID); ok || err != nil {
		t.Fatalf("second Remove(%d) = %v, %v; want false", a.ID, ok, err)
	}
	if ok, err := s.Remove(ctx, 12345); ok || err != nil {
		t.Fatalf("Remove(unknown) = %v, %v; want false", ok, err)
	}
	for i := range tests {
		if tests[i].want == a.ID {
			tests[i].want = 0
			if b.Contains(tests[i].x, tests[i].z) {
				tests[i].want = b.ID
			}
		}
	}
	check("after Remove")
	if s.Len() != 3 {
		t.Errorf("Len() = %d, want 3", s.Len())
	}
}

func contractPersistence(t *testing.T, k Kind) {
	ctx := context.Background()
	path := k.Fresh(t)
	s := k.OpenAt(t, path, claims.Options{})
	var kept []claims.Claim
	for i := range 20 {
		c := Add(t, s, Rect(fmt.Sprintf("w%d", i%3), fmt.Sprintf("owner%d", i), int64(i*100), -int64(i*100), int64(i*100+50), -int64(i*100)+50))
		kept = append(kept, c)
	}
	for _, i := range []int{3, 19} {
		if ok, err := s.Remove(ctx, kept[i].ID); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	last := kept[19].ID
	kept = slices.Delete(kept, 19, 20)
	kept = slices.Delete(kept, 3, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := k.OpenAt(t, path, claims.Options{})
	got, err := s2.List(ctx, "")
	if err != nil || !slices.Equal(got, kept) {
		t.Fatalf("after reopen: List = %v, %v\nwant %v", got, err, kept)
	}
	if s2.Len() != len(kept) {
		t.Fatalf("after reopen: Len = %d, want %d", s2.Len(), len(kept))
	}
	for _, c := range kept {
		if g, ok := s2.Contains(c.World, c.MaxX, c.MinZ); !ok || g != c {
			t.Errorf("after reopen: Contains at a corner of %v = %v, %v", c, g, ok)
		}
	}
	if _, ok := s2.Contains("w0", 300, -300); ok {
		t.Errorf("after reopen: a removed claim is in force")
	}
	// Ids are never reused, not even the highest after a reopen.
	if c := Add(t, s2, Rect("w", "new", 0, 0, 1, 1)); c.ID <= last {
		t.Errorf("new claim after reopen has id %d, want above %d", c.ID, last)
	}
}

// A row that is not a valid claim: opening the store names it.
func contractInvalidRow(t *testing.T, k Kind) {
	at := k.Fresh(t)
	s := k.OpenAt(t, at, claims.Options{})
	c := Add(t, s, Rect("w", "alice", 0, 0, 1, 1))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	k.Exec(t, at, fmt.Sprintf(`UPDATE claims SET owner = '%s' WHERE id = %d`, strings.Repeat("x", 300), c.ID))
	s2, err := k.Open(context.Background(), at, claims.Options{})
	if !errors.Is(err, claims.ErrInvalidClaim) || !strings.Contains(err.Error(), fmt.Sprintf("claim %d", c.ID)) {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("open(database with an invalid row) = %v, want ErrInvalidClaim naming claim %d", err, c.ID)
	}
}

func contractClosed(t *testing.T, k Kind) {
	ctx := context.Background()
	s := k.OpenFresh(t)
	c := Add(t, s, Rect("w", "alice", 0, 0, 9, 9))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := s.Add(ctx, Rect("w", "bob", 0, 0, 1, 1)); !errors.Is(err, claims.ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Remove(ctx, c.ID); !errors.Is(err, claims.ErrClosed) {
		t.Errorf("Remove after Close = %v, want ErrClosed", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, claims.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if got, ok := s.Contains("w", 5, 5); !ok || got != c {
		t.Errorf("Contains after Close = %v, %v; want the claim still in force", got, ok)
	}
}

func contractCanceledContext(t *testing.T, k Kind) {
	s := k.OpenFresh(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Add(ctx, Rect("w", "alice", 0, 0, 1, 1)); err == nil {
		t.Fatal("Add with a cancelled context succeeded")
	}
	if s.Len() != 0 || s.Claimed("w", 0, 0) {
		t.Fatal("a failed Add put its claim in force")
	}
	if all, err := s.List(context.Background(), ""); err != nil || len(all) != 0 {
		t.Fatalf("a failed Add stored a row: %v, %v", all, err)
	}
}

// The verifier through a registry: a place inside a claim is rejected and
// attributed to "claims"; outside, or in another world, it passes.
func contractVerifier(t *testing.T, k Kind) {
	s := k.OpenFresh(t)
	Add(t, s, Rect("w", "alice", -5, -5, 5, 5))
	reg := verify.New(verify.Options{})
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(reg); !errors.Is(err, verify.ErrDuplicateSource) {
		t.Errorf("second Register = %v, want ErrDuplicateSource", err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		loc  verify.Location
		pass bool
	}{
		{verify.Location{World: "w", X: 0, Y: 64, Z: 0}, false},
		{verify.Location{World: "w", X: 5, Y: -60, Z: -5}, false},
		{verify.Location{World: "w", X: 6, Y: 64, Z: 0}, true},
		{verify.Location{World: "other", X: 0, Y: 64, Z: 0}, true},
	} {
		got := reg.Check(ctx, tc.loc)
		want := verify.Result{Passed: tc.pass}
		if !tc.pass {
			want.Source = claims.Source
		}
		if got != want {
			t.Errorf("Check(%+v) = %+v, want %+v", tc.loc, got, want)
		}
	}
}

func contractContainsDoesNotAllocate(t *testing.T, k Kind) {
	s := k.OpenFresh(t)
	Add(t, s, Rect("w", "alice", 0, 0, 99, 99))
	Add(t, s, Rect("w", "bob", 50, 50, 5000, 5000))
	v := s.Verifier()
	loc := verify.Location{World: "w", X: 60, Z: 60}
	if n := testing.AllocsPerRun(1000, func() {
		if _, ok := s.Contains("w", 60, 60); !ok {
			panic("not found")
		}
		if v(loc) {
			panic("passed")
		}
	}); n != 0 {
		t.Errorf("Contains and the verifier allocate %v times per call, want 0", n)
	}
}

// Writers add and remove claims while readers look up: every answer must
// be explained by some state of the store. A base claim stays throughout;
// writer claims never overlap it or the empty probe.
func contractConcurrent(t *testing.T, k Kind) {
	ctx := context.Background()
	s := k.OpenFresh(t)
	base := Add(t, s, Rect("w", "base", 0, 0, 99, 99))
	var stop atomic.Bool
	var writers, readers sync.WaitGroup
	// Readers run a burst of lookups per write, so that they leave the
	// cores to the writers (and to a database server on this machine).
	wrote := make(chan struct{}, 1)
	writersDone := make(chan struct{})
	const nWriters = 2
	for w := range nWriters {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			var mine []int64
			for range 150 {
				if len(mine) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(mine))
					if ok, err := s.Remove(ctx, mine[i]); !ok || err != nil {
						t.Errorf("Remove(%d) = %v, %v", mine[i], ok, err)
						return
					}
					mine = slices.Delete(mine, i, i+1)
					continue
				}
				x := int64(1000*(w+1)) + rng.Int64N(800)
				c, err := s.Add(ctx, Rect("w", fmt.Sprint("writer", w), x, x, x+rng.Int64N(100), x+rng.Int64N(100)))
				if err != nil {
					t.Errorf("Add: %v", err)
					return
				}
				mine = append(mine, c.ID)
				select {
				case wrote <- struct{}{}:
				default:
				}
			}
		})
	}
	var lookups atomic.Int64
	for r := range 2 {
		readers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 10))
			for !stop.Load() {
				if c, ok := s.Contains("w", 50, 50); !ok || c != base {
					t.Errorf("Contains(base) = %v, %v; want %v", c, ok, base)
					return
				}
				if s.Claimed("w", -500, -500) {
					t.Errorf("Claimed(-500, -500) = true, want false")
					return
				}
				x, z := 1000+rng.Int64N(2000), 1000+rng.Int64N(2000)
				if c, ok := s.Contains("w", x, z); ok && (!c.Contains(x, z) || c.World != "w" || !strings.HasPrefix(c.Owner, "writer")) {
					t.Errorf("Contains(%d, %d) = %v, which is not there", x, z, c)
					return
				}
				if lookups.Add(1)%64 == 0 {
					select {
					case <-wrote:
					case <-writersDone:
					}
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	close(writersDone)
	readers.Wait()
	if lookups.Load() == 0 {
		t.Fatal("no lookups ran")
	}
	all, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != len(all) {
		t.Fatalf("Len() = %d, database holds %d claims", s.Len(), len(all))
	}
	for _, c := range all {
		if got, ok := s.Contains(c.World, c.MinX, c.MinZ); !ok || got.ID > c.ID {
			t.Errorf("claim %v in the database is not in force (Contains = %v, %v)", c, got, ok)
		}
	}
}
