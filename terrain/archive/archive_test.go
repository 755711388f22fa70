package archive_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
)

func TestHitMiss(t *testing.T) {
	src := newFake()
	store := memstore.New(archive.Limits{})
	a := wrap(t, src, store, quietOptions())
	if a.Producer() != src.Producer() || !reflect.DeepEqual(a.Params(), src.Params()) {
		t.Fatalf("archive Producer/Params = %v %v, want the source's", a.Producer(), a.Params())
	}
	first := tileOK(t, a, req0)
	flush(t, a)
	second := tileOK(t, a, req0)
	if !sameTile(first, second) || !sameTile(first, makeTile(req0, src.seed)) {
		t.Fatalf("hit differs from the generated tile")
	}
	if first == second {
		t.Fatalf("hit returned the generated tile's pointer, want a decoded copy")
	}
	if n := src.calls.Load(); n != 1 {
		t.Fatalf("source calls = %d, want 1", n)
	}
	st := stats(t, a)
	want := archive.Stats{Hits: 1, Misses: 1, Generations: 1, Store: true, Entries: 1, Limits: archive.Limits{}.WithDefaults()}
	want.Bytes = st.Bytes
	if st != want || st.Bytes <= 0 {
		t.Fatalf("Stats = %+v, want %+v with positive Bytes", st, want)
	}
	rec, ok := storedFor(t, store, src, req0)
	if !ok {
		t.Fatal("store lacks the generated tile")
	}
	if _, _, err := archive.Verify(rec); err != nil {
		t.Fatalf("stored record does not verify: %v", err)
	}
	if st.Bytes != rec.Size() {
		t.Fatalf("Stats.Bytes = %d, record size %d", st.Bytes, rec.Size())
	}
}

// An invalid request goes to the source untouched, and never to the store.
func TestInvalidRequestPassesThrough(t *testing.T) {
	src := newFake()
	store := newHookStore(archive.Limits{})
	a := wrap(t, src, store, quietOptions())
	bad := terrain.Request{Size: -1, Resolution: 0}
	if _, err := a.Tile(t.Context(), bad); err == nil || err.Error() != bad.Validate().Error() {
		t.Fatalf("Tile(%v) = %v, want the request's validation error", bad, err)
	}
	if n := store.calls.Load(); n != 0 {
		t.Fatalf("store calls = %d, want 0", n)
	}
}

func TestIdentityChangesWithEveryRequestField(t *testing.T) {
	src := newFake()
	store := memstore.New(archive.Limits{})
	a := wrap(t, src, store, quietOptions())
	tileOK(t, a, req0)
	flush(t, a)
	rt := reflect.TypeFor[terrain.Request]()
	for i := range rt.NumField() {
		t.Run(rt.Field(i).Name, func(t *testing.T) {
			req := req0
			f := reflect.ValueOf(&req).Elem().Field(i)
			f.SetInt(f.Int() + 1)
			before := src.calls.Load()
			tile := tileOK(t, a, req)
			if src.calls.Load() != before+1 {
				t.Fatalf("Tile(%v) after Tile(%v) was a hit, want a miss", req, req0)
			}
			if tile.Request != req {
				t.Fatalf("Tile(%v).Request = %v", req, tile.Request)
			}
		})
	}
}

func TestIdentityChangesWithEveryParamsField(t *testing.T) {
	base := defaultFakeParams()
	baseKey, err := archive.EncodeKey(terrain.Producer{Name: "fake", Version: "1"}, base, req0)
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]func(*fakeParams){
		"Seed":         func(p *fakeParams) { p.Seed++ },
		"Relief":       func(p *fakeParams) { p.Relief = math.Nextafter(p.Relief, 2) },
		"Name":         func(p *fakeParams) { p.Name += "x" },
		"Clamp":        func(p *fakeParams) { p.Clamp = !p.Clamp },
		"Weights":      func(p *fakeParams) { p.Weights = []float32{0.5, 0.26} },
		"WeightsLen":   func(p *fakeParams) { p.Weights = append(p.Weights, 0) },
		"Pair":         func(p *fakeParams) { p.Pair[1]++ },
		"Inner.Level":  func(p *fakeParams) { p.Inner.Level++ },
		"Inner.Scale":  func(p *fakeParams) { p.Inner.Scale = -p.Inner.Scale },
		"small":        func(p *fakeParams) { p.small++ },
		"NegativeZero": func(p *fakeParams) { p.Relief = 0 },
	}
	// Every field of fakeParams has a variant: a new field without one fails here.
	for _, f := range reflect.VisibleFields(reflect.TypeFor[fakeParams]()) {
		if f.Anonymous {
			continue
		}
		if _, ok := variants[f.Name]; !ok && f.Name != "Inner" {
			t.Errorf("no variant changes field %s", f.Name)
		}
	}
	seen := map[string]string{string(baseKey): "base"}
	for name, change := range variants {
		p := defaultFakeParams()
		change(&p)
		key, err := archive.EncodeKey(terrain.Producer{Name: "fake", Version: "1"}, p, req0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if other, dup := seen[string(key)]; dup {
			t.Errorf("params changed in %s encode like %s", name, other)
		}
		seen[string(key)] = name
	}
	negZero := defaultFakeParams()
	negZero.Relief = math.Copysign(0, -1)
	kz, _ := archive.EncodeKey(terrain.Producer{Name: "fake", Version: "1"}, negZero, req0)
	if _, dup := seen[string(kz)]; dup {
		t.Errorf("-0 and +0 relief encode alike; floats must be keyed by their bits")
	}
	for name, p := range map[string]terrain.Producer{
		"name":    {Name: "fake2", Version: "1"},
		"version": {Name: "fake", Version: "2"},
		"split":   {Name: "fake1", Version: ""}, // rejected: empty version
	} {
		key, err := archive.EncodeKey(p, base, req0)
		if name == "split" {
			if err == nil {
				t.Errorf("EncodeKey with an empty version succeeded")
			}
			continue
		}
		if err != nil || string(key) == string(baseKey) {
			t.Errorf("producer %v: key equal to the base key (err %v)", p, err)
		}
	}

	// Through the archive: another parameter set misses on the same store.
	src := newFake()
	store := memstore.New(archive.Limits{})
	a := wrap(t, src, store, quietOptions())
	tileOK(t, a, req0)
	flush(t, a)
	other := defaultFakeParams()
	other.Inner.Scale = 3
	src2 := newFake()
	src2.params = other
	if _, ok := storedFor(t, store, src2, req0); ok {
		t.Fatalf("a record for other params exists before they were ever used")
	}
}

type paramsV1 struct {
	Seed   int64
	Relief float64
}

type paramsV2 struct {
	Seed   int64
	Relief float64
	Extra  int64
}

type paramsRenamed struct {
	Seed  int64
	Scale float64
}

type paramsRetyped struct {
	Seed   int32
	Relief float64
}

// Adding, renaming or retyping a field changes identity even when every
// shared value is equal and the new field holds its zero value.
func TestIdentityFollowsStructShape(t *testing.T) {
	p := terrain.Producer{Name: "p", Version: "1"}
	keys := map[string]any{
		"v1":      paramsV1{Seed: 1, Relief: 2},
		"v2":      paramsV2{Seed: 1, Relief: 2},
		"renamed": paramsRenamed{Seed: 1, Scale: 2},
		"retyped": paramsRetyped{Seed: 1, Relief: 2},
	}
	seen := map[string]string{}
	for name, params := range keys {
		k, err := archive.EncodeKey(p, params, req0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if other, dup := seen[string(k)]; dup {
			t.Errorf("%s and %s share a key", name, other)
		}
		seen[string(k)] = name
	}
	k1, _ := archive.EncodeKey(p, paramsV1{Seed: 1, Relief: 2}, req0)
	k1again, _ := archive.EncodeKey(p, paramsV1{Seed: 1, Relief: 2}, req0)
	if string(k1) != string(k1again) {
		t.Errorf("EncodeKey is not deterministic")
	}
}

func TestKeyRoundTrip(t *testing.T) {
	p := terrain.Producer{Name: "fake", Version: "9"}
	for _, req := range []terrain.Request{req0, {OriginX: math.MinInt64, OriginZ: math.MaxInt64, Size: 1, Resolution: 4096, Border: 64}} {
		key, err := archive.EncodeKey(p, defaultFakeParams(), req)
		if err != nil {
			t.Fatal(err)
		}
		k, err := archive.ParseKey(key)
		if err != nil {
			t.Fatalf("ParseKey(EncodeKey(%v)) error %v", req, err)
		}
		if k.Producer != p || k.Request != req || len(k.Params) == 0 {
			t.Fatalf("ParseKey(EncodeKey(%v)) = %+v", req, k)
		}
		for cut := range len(key) {
			if _, err := archive.ParseKey(key[:cut]); err == nil {
				t.Fatalf("ParseKey of a key cut to %d bytes succeeded", cut)
			}
		}
	}
}

type withMap struct{ M map[string]int }
type withPointer struct{ P *int }
type withFunc struct{ F func() }
type withChan struct{ C chan int }
type withInterface struct{ I any }
type withComplex struct{ C complex128 }
type nestedBad struct {
	OK    int
	Inner []struct {
		Fine bool
		M    map[int]int
		P    *int
	}
}

func TestWrapRejectsUnencodableParams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params any
		want   []string // substrings of the error
	}{
		{"map", withMap{}, []string{"withMap.M", "map"}},
		{"pointer", withPointer{}, []string{"withPointer.P", "ptr"}},
		{"func", withFunc{}, []string{"withFunc.F", "func"}},
		{"chan", withChan{}, []string{"withChan.C", "chan"}},
		{"interface", withInterface{}, []string{"withInterface.I", "interface"}},
		{"complex", withComplex{}, []string{"withComplex.C", "complex128"}},
		{"nested, every problem reported", nestedBad{}, []string{"Inner[].M", "Inner[].P"}},
		{"nil", nil, []string{"returned nil"}},
		{"pointer to struct", &paramsV1{}, []string{"must return a struct value"}},
		{"not a struct", 42, []string{"int", "must return a struct value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake()
			src.params = tc.params
			a, err := archive.Wrap(src, memstore.New(archive.Limits{}), quietOptions())
			if err == nil {
				a.Close(t.Context())
				t.Fatalf("Wrap with params %T succeeded, want an error", tc.params)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Wrap error %q lacks %q", err, w)
				}
			}
		})
	}
	src := newFake()
	src.producer = terrain.Producer{}
	if _, err := archive.Wrap(src, memstore.New(archive.Limits{}), quietOptions()); err == nil || !strings.Contains(err.Error(), "empty name") {
		t.Errorf("Wrap with an empty producer = %v, want an empty-name error", err)
	}
	if _, err := archive.Wrap(nil, memstore.New(archive.Limits{}), quietOptions()); err == nil {
		t.Errorf("Wrap(nil source) succeeded")
	}
}

// corruptions each turn the good record for req0 into a bad one.
var corruptions = []struct {
	name string
	fn   func(good archive.Record, src *fakeSource) archive.Record
}{
	{"wrong key with the same digest", func(r archive.Record, _ *fakeSource) archive.Record {
		other := req0
		other.OriginX++
		key, _ := archive.EncodeKey(terrain.Producer{Name: "fake", Version: "1"}, defaultFakeParams(), other)
		return archive.Record{Digest: r.Digest, Key: key, Payload: archive.EncodeTile(makeTile(other, 7))}
	}},
	{"truncated payload", func(r archive.Record, _ *fakeSource) archive.Record {
		r.Payload = r.Payload[:len(r.Payload)/2]
		return r
	}},
	{"empty payload", func(r archive.Record, _ *fakeSource) archive.Record {
		r.Payload = nil
		return r
	}},
	{"bad checksum", func(r archive.Record, _ *fakeSource) archive.Record {
		r.Payload[len(r.Payload)/2] ^= 0x10
		return r
	}},
	{"NaN elevation", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Elevations[0] = float32(math.NaN())
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"infinite water", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Water[3] = float32(math.Inf(1))
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"wrong extrema", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Max++
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"short elevations", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Elevations = t.Elevations[:len(t.Elevations)-1]
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"long water", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Water = append(t.Water, 0)
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"unknown cover", func(r archive.Record, s *fakeSource) archive.Record {
		t := makeTile(req0, s.seed)
		t.Cover[0] = terrain.Cover(terrain.NumCovers)
		r.Payload = archive.EncodeTile(t)
		return r
	}},
	{"another region in the payload", func(r archive.Record, s *fakeSource) archive.Record {
		other := req0
		other.OriginZ += 64
		r.Payload = archive.EncodeTile(makeTile(other, s.seed))
		return r
	}},
	{"another border in the payload", func(r archive.Record, s *fakeSource) archive.Record {
		other := req0
		other.Border = 2
		r.Payload = archive.EncodeTile(makeTile(other, s.seed))
		return r
	}},
	{"another resolution in the payload", func(r archive.Record, s *fakeSource) archive.Record {
		other := req0
		other.Resolution = 8
		r.Payload = archive.EncodeTile(makeTile(other, s.seed))
		return r
	}},
}

func TestInvalidRecordsAreDeletedCountedAndRegenerated(t *testing.T) {
	for _, tc := range corruptions {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake()
			store := memstore.New(archive.Limits{})
			key, err := archive.EncodeKey(src.Producer(), src.Params(), req0)
			if err != nil {
				t.Fatal(err)
			}
			good := archive.Record{Digest: archive.DigestOf(key), Key: key, Payload: archive.EncodeTile(makeTile(req0, src.seed))}
			clone := archive.Record{Digest: good.Digest, Key: slices.Clone(good.Key), Payload: slices.Clone(good.Payload)}
			if err := store.Put(t.Context(), tc.fn(clone, src)); err != nil {
				t.Fatal(err)
			}
			a := wrap(t, src, store, quietOptions())
			got := tileOK(t, a, req0)
			if !sameTile(got, makeTile(req0, src.seed)) {
				t.Fatalf("Tile returned something other than the source's tile")
			}
			flush(t, a)
			st := stats(t, a)
			if st.Invalid != 1 || st.Hits != 0 || st.Misses != 1 || st.Generations != 1 {
				t.Fatalf("Stats = %+v, want 1 invalid, 0 hits, 1 miss, 1 generation", st)
			}
			rec, ok := storedFor(t, store, src, req0)
			if !ok || !slices.Equal(rec.Payload, good.Payload) || !slices.Equal(rec.Key, good.Key) {
				t.Fatalf("store does not hold the regenerated record")
			}
			tileOK(t, a, req0)
			if st := stats(t, a); st.Hits != 1 || st.Generations != 1 {
				t.Fatalf("after regeneration: Stats = %+v, want a hit", st)
			}
		})
	}
}

// When regeneration fails, the invalid record is still deleted.
func TestInvalidRecordDeletedEvenIfRegenerationFails(t *testing.T) {
	src := newFake()
	src.err = errBoom
	store := memstore.New(archive.Limits{})
	key, _ := archive.EncodeKey(src.Producer(), src.Params(), req0)
	bad := archive.Record{Digest: archive.DigestOf(key), Key: key, Payload: []byte("garbage")}
	if err := store.Put(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	a := wrap(t, src, store, quietOptions())
	if _, err := a.Tile(t.Context(), req0); !errors.Is(err, errBoom) {
		t.Fatalf("Tile = %v, want the source's error %v", err, errBoom)
	}
	flush(t, a)
	if _, ok := storedFor(t, store, src, req0); ok {
		t.Fatalf("invalid record still stored")
	}
	if st := stats(t, a); st.Invalid != 1 || st.Entries != 0 {
		t.Fatalf("Stats = %+v, want 1 invalid and no entries", st)
	}
}

// A tile the source returns invalid is delivered (the source is the
// authority) but never archived.
func TestInvalidGeneratedTileNotArchived(t *testing.T) {
	src := &brokenSource{fakeSource: newFake()}
	store := memstore.New(archive.Limits{})
	a := wrap(t, src, store, quietOptions())
	if _, err := a.Tile(t.Context(), req0); err != nil {
		t.Fatal(err)
	}
	flush(t, a)
	if st := stats(t, a); st.Entries != 0 {
		t.Fatalf("an invalid generated tile was archived: %+v", st)
	}
}

type brokenSource struct{ *fakeSource }

func (s *brokenSource) Tile(ctx context.Context, req terrain.Request) (*terrain.Tile, error) {
	t, err := s.fakeSource.Tile(ctx, req)
	if err == nil {
		t.Min--
	}
	return t, err
}

func TestWriteDoesNotDelayDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		store := newHookStore(archive.Limits{})
		release := make(chan struct{})
		store.set(func(h *hookStore) {
			h.onPut = func(ctx context.Context, _ archive.Record) error {
				<-release
				return nil
			}
		})
		a := wrap(t, src, store, quietOptions())
		tileOK(t, a, req0) // returns although the Put is blocked
		synctest.Wait()
		if n := store.puts.Load(); n != 1 {
			t.Fatalf("puts = %d, want 1 (blocked)", n)
		}
		if st := stats(t, a); st.PendingWrites != 1 {
			t.Fatalf("PendingWrites = %d, want 1", st.PendingWrites)
		}
		// Flush waits for the blocked write.
		flushed := make(chan error, 1)
		go func() { flushed <- a.Flush(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-flushed:
			t.Fatalf("Flush returned %v before the write finished", err)
		default:
		}
		// Another miss is delivered while the writer is still stuck.
		other := req0
		other.OriginX += 64
		tileOK(t, a, other)
		close(release)
		if err := <-flushed; err != nil {
			t.Fatalf("Flush = %v", err)
		}
		flush(t, a)
		if st := stats(t, a); st.PendingWrites != 0 || st.Entries != 2 {
			t.Fatalf("after Flush: %+v, want 0 pending and 2 entries", st)
		}
	})
}

func TestFlushHonoursCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newHookStore(archive.Limits{})
		release := make(chan struct{})
		store.set(func(h *hookStore) {
			h.onPut = func(context.Context, archive.Record) error { <-release; return nil }
		})
		a := wrap(t, newFake(), store, quietOptions())
		tileOK(t, a, req0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := a.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush with a blocked write = %v, want deadline exceeded", err)
		}
		close(release)
		flush(t, a)
	})
}

// stuckPuts returns a store whose Puts wait until release is closed.
func stuckPuts() (store *hookStore, release chan struct{}) {
	store = newHookStore(archive.Limits{})
	release = make(chan struct{})
	store.set(func(h *hookStore) {
		h.onPut = func(context.Context, archive.Record) error { <-release; return nil }
	})
	return store, release
}

// nthRequest returns req0 moved i tiles east: a distinct tile for each i.
func nthRequest(i int) terrain.Request {
	req := req0
	req.OriginX += int64(64 * i)
	return req
}

// requestTiles asks a for tiles from to from+n-1 of nthRequest, each on a
// goroutine of its own, and returns the channel their errors arrive on.
func requestTiles(t *testing.T, a *archive.Archive, from, n int) <-chan error {
	done := make(chan error, n)
	for i := range n {
		go func() {
			_, err := a.Tile(t.Context(), nthRequest(from+i))
			done <- err
		}()
	}
	return done
}

func TestFullQueueDropsWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		store, release := stuckPuts()
		opts := quietOptions()
		opts.QueueLength = 1
		a := wrap(t, src, store, opts)
		for i := range 4 {
			tileOK(t, a, nthRequest(i))
			synctest.Wait() // the writer has taken what it can
		}
		// Write 1 is in the stuck Put, write 2 waits in the queue, 3 and 4 were dropped.
		st := stats(t, a)
		if st.DroppedWrites != 2 || st.PendingWrites != 2 {
			t.Fatalf("Stats = %+v, want 2 dropped and 2 pending", st)
		}
		close(release)
		flush(t, a)
		if st := stats(t, a); st.Entries != 2 {
			t.Fatalf("entries = %d, want 2", st.Entries)
		}
	})
}

// waitForRoomOptions are quiet options with WaitForRoom set and a queue
// of one write, so that a second write fills it.
func waitForRoomOptions() archive.Options {
	opts := quietOptions()
	opts.QueueLength = 1
	opts.WaitForRoom = true
	return opts
}

// With WaitForRoom a full queue holds the generation back instead of
// dropping its write: every tile generated ends up in the store.
func TestWaitForRoomKeepsEveryWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		store, release := stuckPuts()
		opts := waitForRoomOptions()
		a := wrap(t, src, store, opts)
		unstick := sync.OnceFunc(func() { close(release) })
		t.Cleanup(unstick) // runs before wrap's Close, even on failure
		// Write 1 first, alone, so that the writer has taken it into the
		// stuck Put before the others come: otherwise write 1 may still
		// fill the queue when the next generations try to enqueue.
		tileOK(t, a, nthRequest(0))
		synctest.Wait()
		const n = 4
		done := requestTiles(t, a, 1, n-1)
		synctest.Wait()
		// Write 1 is in the stuck Put and one of the next three fills the
		// queue: the other two generations wait for room, none was dropped
		// or delivered.
		if len(done) != 1 {
			t.Fatalf("%d of the later tiles delivered while the writer was stuck, want 1 (the one queued)", len(done))
		}
		st := stats(t, a)
		if st.DroppedWrites != 0 || st.WaitedWrites < 2 || st.Generations != n {
			t.Fatalf("Stats = %+v, want 0 dropped, at least 2 waits and %d generations", st, n)
		}
		unstick()
		for range n - 1 {
			if err := <-done; err != nil {
				t.Fatalf("Tile = %v", err)
			}
		}
		flush(t, a)
		if st := stats(t, a); st.Entries != n || st.DroppedWrites != 0 {
			t.Fatalf("after Flush: %+v, want %d entries and 0 dropped", st, n)
		}
	})
}

// A generation waiting for room in the queue is let go when the archive
// closes: Close drains the queue, and the write that waited is dropped
// as every write after Close is, never blocking its caller for good.
func TestWaitForRoomEndsAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		store, release := stuckPuts()
		opts := waitForRoomOptions()
		a, err := archive.Wrap(src, store, opts)
		if err != nil {
			t.Fatal(err)
		}
		done := requestTiles(t, a, 0, 3)
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- a.Close(t.Context()) }()
		synctest.Wait()
		close(release)
		for range 3 {
			if err := <-done; err != nil {
				t.Fatalf("Tile = %v", err)
			}
		}
		if err := <-closed; err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
}

func TestClearPreventsRepopulation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		store := memstore.New(archive.Limits{})
		a := wrap(t, src, store, quietOptions())
		old := req0
		old.OriginX += 640
		tileOK(t, a, old)
		flush(t, a)

		src.gate = make(chan struct{})
		src.started = make(chan terrain.Request, 1)
		got := make(chan error, 1)
		go func() {
			_, err := a.Tile(context.Background(), req0)
			got <- err
		}()
		<-src.started // generation in flight
		if err := a.Clear(t.Context()); err != nil {
			t.Fatalf("Clear: %v", err)
		}
		if st := stats(t, a); st.Entries != 0 {
			t.Fatalf("entries after Clear = %d", st.Entries)
		}
		src.gate <- struct{}{}
		if err := <-got; err != nil {
			t.Fatalf("Tile in flight during Clear = %v", err)
		}
		flush(t, a)
		if _, ok := storedFor(t, store, src, req0); ok {
			t.Fatal("a generation started before Clear repopulated the store")
		}
		// A request after Clear is archived as usual.
		close(src.gate)
		src.started = nil
		tileOK(t, a, req0)
		flush(t, a)
		if _, ok := storedFor(t, store, src, req0); !ok {
			t.Fatal("a generation started after Clear was not archived")
		}
		if _, ok := storedFor(t, store, src, old); ok {
			t.Fatal("Clear left an old record")
		}
	})
}

func TestClearDiscardsQueuedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newHookStore(archive.Limits{})
		release := make(chan struct{})
		store.set(func(h *hookStore) {
			h.onPut = func(context.Context, archive.Record) error { <-release; return nil }
		})
		a := wrap(t, newFake(), store, quietOptions())
		for i := range 3 {
			req := req0
			req.OriginZ += int64(64 * i)
			tileOK(t, a, req)
		}
		synctest.Wait()
		cleared := make(chan error, 1)
		go func() { cleared <- a.Clear(context.Background()) }()
		synctest.Wait()
		close(release)
		if err := <-cleared; err != nil {
			t.Fatal(err)
		}
		flush(t, a)
		if st := stats(t, a); st.Entries != 0 {
			t.Fatalf("entries = %d after Clear, want 0", st.Entries)
		}
		if n := store.puts.Load(); n != 1 {
			t.Fatalf("puts = %d, want 1 (the one in progress); the queued ones are stale", n)
		}
	})
}

func TestClosePassesThrough(t *testing.T) {
	src := newFake()
	store := newHookStore(archive.Limits{})
	a, err := archive.Wrap(src, store, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	tileOK(t, a, req0)
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	ops := store.ops()
	if ops[len(ops)-1] != "close" || !slices.Contains(ops, "put") {
		t.Fatalf("store ops = %v, want the write drained before close", ops)
	}
	calls := store.calls.Load()
	for range 3 {
		tileOK(t, a, req0) // archived, but the archive is closed
	}
	if n := src.calls.Load(); n != 4 {
		t.Fatalf("source calls = %d, want 4 (every call after Close generates)", n)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush after Close = %v", err)
	}
	if err := a.Clear(t.Context()); !errors.Is(err, archive.ErrClosed) {
		t.Fatalf("Clear after Close = %v, want %v", err, archive.ErrClosed)
	}
	st := stats(t, a)
	if st.Store || st.Entries != 0 {
		t.Fatalf("Stats after Close = %+v, want no store", st)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if n := store.calls.Load(); n != calls {
		t.Fatalf("store calls after Close: %d, want none (%v)", n-calls, store.ops()[calls:])
	}
	if n := store.closes.Load(); n != 1 {
		t.Fatalf("store closed %d times, want 1", n)
	}
}

func TestCloseGivesUpOnCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := newHookStore(archive.Limits{})
		store.set(func(h *hookStore) {
			h.onPut = func(ctx context.Context, _ archive.Record) error { <-ctx.Done(); return ctx.Err() }
		})
		src := newFake()
		a, err := archive.Wrap(src, store, quietOptions())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			req := req0
			req.OriginX += int64(64 * i)
			tileOK(t, a, req)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := a.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close with stuck writes = %v, want deadline exceeded", err)
		}
		if n := store.closes.Load(); n != 1 {
			t.Fatalf("store closes = %d, want 1", n)
		}
		if n := store.puts.Load(); n != 1 {
			t.Fatalf("puts = %d, want 1 (the stuck one; the rest dropped)", n)
		}
	})
}

func TestSingleFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFake()
		src.gate = make(chan struct{})
		a := wrap(t, src, memstore.New(archive.Limits{}), quietOptions())
		const n = 16
		tiles := make([]*terrain.Tile, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				tile, err := a.Tile(context.Background(), req0)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
				}
				tiles[i] = tile
			})
		}
		synctest.Wait() // all callers wait on one generation
		close(src.gate)
		wg.Wait()
		if c := src.calls.Load(); c != 1 {
			t.Fatalf("source calls = %d, want 1", c)
		}
		for i, tile := range tiles {
			if tile != tiles[0] {
				t.Fatalf("caller %d got another tile", i)
			}
		}
		if st := stats(t, a); st.Generations != 1 || st.Misses != n {
			t.Fatalf("Stats = %+v, want 1 generation and %d misses", st, n)
		}
	})
}

func TestCancelBeforeReadStartsNoGeneration(t *testing.T) {
	t.Run("already cancelled", func(t *testing.T) {
		src := newFake()
		store := newHookStore(archive.Limits{})
		a := wrap(t, src, store, quietOptions())
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := a.Tile(ctx, req0); !errors.Is(err, context.Canceled) {
			t.Fatalf("Tile = %v, want context.Canceled", err)
		}
		if src.calls.Load() != 0 || store.gets.Load() != 0 {
			t.Fatalf("source calls %d, store gets %d, want 0 and 0", src.calls.Load(), store.gets.Load())
		}
		if st := stats(t, a); st.Cancelled != 1 || st.Misses != 0 {
			t.Fatalf("Stats = %+v, want 1 cancelled, 0 misses", st)
		}
	})
	t.Run("during the read", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := newFake()
			store := newHookStore(archive.Limits{})
			store.set(func(h *hookStore) {
				h.onGet = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
			})
			a := wrap(t, src, store, quietOptions())
			ctx, cancel := context.WithCancel(t.Context())
			got := make(chan error, 1)
			go func() { _, err := a.Tile(ctx, req0); got <- err }()
			synctest.Wait()
			cancel()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("Tile = %v, want context.Canceled", err)
			}
			if n := src.calls.Load(); n != 0 {
				t.Fatalf("source calls = %d, want 0", n)
			}
			if st := stats(t, a); st.Cancelled != 1 || st.ReadErrors != 0 || st.Generations != 0 {
				t.Fatalf("Stats = %+v, want 1 cancelled, no read error, no generation", st)
			}
		})
	})
}

func TestCancelDuringGeneration(t *testing.T) {
	t.Run("sole caller", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := newFake()
			src.gate = make(chan struct{})
			a := wrap(t, src, memstore.New(archive.Limits{}), quietOptions())
			ctx, cancel := context.WithCancel(t.Context())
			got := make(chan error, 1)
			go func() { _, err := a.Tile(ctx, req0); got <- err }()
			synctest.Wait()
			cancel()
			if err := <-got; !errors.Is(err, context.Canceled) {
				t.Fatalf("Tile = %v, want context.Canceled", err)
			}
			synctest.Wait()
			if n := src.sawCancel.Load(); n != 1 {
				t.Fatalf("generator saw %d cancellations, want 1", n)
			}
			// A new caller starts a fresh generation.
			close(src.gate)
			tileOK(t, a, req0)
			if n := src.calls.Load(); n != 2 {
				t.Fatalf("source calls = %d, want 2", n)
			}
		})
	})
	t.Run("one of two callers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			src := newFake()
			src.gate = make(chan struct{})
			a := wrap(t, src, memstore.New(archive.Limits{}), quietOptions())
			ctx1, cancel1 := context.WithCancel(t.Context())
			got1 := make(chan error, 1)
			got2 := make(chan *terrain.Tile, 1)
			go func() { _, err := a.Tile(ctx1, req0); got1 <- err }()
			go func() {
				tile, err := a.Tile(context.Background(), req0)
				if err != nil {
					t.Errorf("second caller: %v", err)
				}
				got2 <- tile
			}()
			synctest.Wait()
			cancel1()
			if err := <-got1; !errors.Is(err, context.Canceled) {
				t.Fatalf("first caller = %v, want context.Canceled", err)
			}
			synctest.Wait()
			if n := src.sawCancel.Load(); n != 0 {
				t.Fatalf("generator cancelled while a caller still waits")
			}
			close(src.gate)
			if tile := <-got2; tile == nil || tile.Validate(req0) != nil {
				t.Fatalf("second caller got no valid tile")
			}
			if n := src.calls.Load(); n != 1 {
				t.Fatalf("source calls = %d, want 1", n)
			}
		})
	})
}

// A store that fails in every way costs regeneration, never a failed request.
func TestStorageFailuresCostRegeneration(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(h *hookStore)
		readErrs   bool
		writeErrs  bool
		closeFails bool
	}{
		{"get errors", func(h *hookStore) {
			h.onGet = func(context.Context) error { return errBoom }
		}, true, false, false},
		{"get panics", func(h *hookStore) {
			h.onGet = func(context.Context) error { panic("store exploded") }
		}, true, false, false},
		{"put errors", func(h *hookStore) {
			h.onPut = func(context.Context, archive.Record) error { return errBoom }
		}, false, true, false},
		{"put panics", func(h *hookStore) {
			h.onPut = func(context.Context, archive.Record) error { panic("disk on fire") }
		}, false, true, false},
		{"closed underneath", func(h *hookStore) {
			h.onGet = func(context.Context) error { return archive.ErrStoreClosed }
			h.onPut = func(context.Context, archive.Record) error { return archive.ErrStoreClosed }
		}, true, true, false},
		{"close panics", func(h *hookStore) {
			h.onClose = func() error { panic("close exploded") }
		}, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFake()
			store := newHookStore(archive.Limits{})
			store.set(tc.setup)
			a, err := archive.Wrap(src, store, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				got := tileOK(t, a, req0)
				if !sameTile(got, makeTile(req0, src.seed)) {
					t.Fatal("wrong tile")
				}
				flush(t, a)
			}
			st := stats(t, a)
			if tc.readErrs != (st.ReadErrors == 3) || tc.writeErrs != (st.WriteErrors > 0) {
				t.Fatalf("Stats = %+v, want read errors %v, write errors %v", st, tc.readErrs, tc.writeErrs)
			}
			if (tc.readErrs || tc.writeErrs) && src.calls.Load() != 3 {
				t.Fatalf("source calls = %d, want 3", src.calls.Load())
			}
			err = a.Close(t.Context())
			if tc.closeFails != (err != nil) {
				t.Fatalf("Close = %v, want failure %v", err, tc.closeFails)
			}
		})
	}
	t.Run("stats errors", func(t *testing.T) {
		store := newHookStore(archive.Limits{})
		store.set(func(h *hookStore) { h.onStats = func() error { return errBoom } })
		a := wrap(t, newFake(), store, quietOptions())
		tileOK(t, a, req0)
		st, err := a.Stats(t.Context())
		if !errors.Is(err, errBoom) || st.Misses != 1 {
			t.Fatalf("Stats = %+v, %v; want the counters and the store's error", st, err)
		}
	})
}

func TestSourceErrorsAndPanicsReachCaller(t *testing.T) {
	src := newFake()
	src.err = errBoom
	a := wrap(t, src, memstore.New(archive.Limits{}), quietOptions())
	if _, err := a.Tile(t.Context(), req0); !errors.Is(err, errBoom) {
		t.Fatalf("Tile = %v, want %v", err, errBoom)
	}
	src.err = nil
	src.panicMsg = "generator bug"
	if _, err := a.Tile(t.Context(), req0); err == nil || !strings.Contains(err.Error(), "generator bug") {
		t.Fatalf("Tile with a panicking source = %v, want an error naming the panic", err)
	}
	flush(t, a)
	if st := stats(t, a); st.Entries != 0 {
		t.Fatalf("a failed generation was archived")
	}
}

func TestNilStorePassesThroughWithOneLogLine(t *testing.T) {
	for name, store := range map[string]archive.Store{"nil": nil, "typed nil": (*memstore.Store)(nil)} {
		t.Run(name, func(t *testing.T) {
			var logs logCapture
			src := newFake()
			a, err := archive.Wrap(src, store, archive.Options{Logger: logs.logger()})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				tileOK(t, a, req0)
			}
			if src.calls.Load() != 3 {
				t.Fatalf("source calls = %d, want 3", src.calls.Load())
			}
			if err := a.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := a.Clear(t.Context()); err != nil {
				t.Fatal(err)
			}
			if st := stats(t, a); st.Store || st.Hits+st.Misses != 0 {
				t.Fatalf("Stats = %+v, want a pass-through", st)
			}
			if err := a.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			lines := logs.lines()
			if len(lines) != 1 || !strings.Contains(lines[0], "no store") || !strings.Contains(lines[0], "fake@1") {
				t.Fatalf("log = %q, want one line about the missing store", lines)
			}
		})
	}
}

func TestOneArchivePerStore(t *testing.T) {
	store := memstore.New(archive.Limits{})
	a, err := archive.Wrap(newFake(), store, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Wrap(newFake(), store, quietOptions()); !errors.Is(err, archive.ErrStoreInUse) {
		t.Fatalf("second Wrap of one store = %v, want %v", err, archive.ErrStoreInUse)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The store is closed now, but it is no longer claimed.
	b, err := archive.Wrap(newFake(), store, quietOptions())
	if err != nil {
		t.Fatalf("Wrap after the owner closed = %v", err)
	}
	b.Close(t.Context())
}

func TestStorageWarningsAreRateLimited(t *testing.T) {
	var logs logCapture
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	store := newHookStore(archive.Limits{})
	store.set(func(h *hookStore) { h.onGet = func(context.Context) error { return errBoom } })
	a := wrap(t, newFake(), store, archive.Options{
		Logger:      logs.logger(),
		Clock:       func() time.Time { return now },
		LogInterval: time.Minute,
	})
	for range 3 {
		tileOK(t, a, req0)
	}
	if n := len(logs.lines()); n != 1 {
		t.Fatalf("%d log lines after 3 failures within a minute, want 1: %q", n, logs.lines())
	}
	now = now.Add(time.Minute)
	tileOK(t, a, req0)
	lines := logs.lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=2") || !strings.Contains(lines[1], "boom") {
		t.Fatalf("log = %q, want a second line counting 2 suppressed", lines)
	}
}

func TestConcurrentMixedUse(t *testing.T) {
	src := newFake()
	store := memstore.New(archive.Limits{MaxEntries: 20})
	a := wrap(t, src, store, quietOptions())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				req := req0
				req.OriginX += int64(64 * ((w + i) % 30))
				tile, err := a.Tile(t.Context(), req)
				if err != nil || !sameTile(tile, makeTile(req, src.seed)) {
					t.Errorf("Tile(%v) = wrong tile or %v", req, err)
					return
				}
				if i%17 == 0 {
					if err := a.Flush(t.Context()); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if err := a.Clear(t.Context()); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	flush(t, a)
	st := stats(t, a)
	if st.Hits+st.Misses != 400 || st.Entries > 20 {
		t.Fatalf("Stats = %+v, want 400 lookups and at most 20 entries", st)
	}
	var n int64
	store.Scan(t.Context(), func(r archive.Record) error {
		if _, _, err := archive.Verify(r); err != nil {
			t.Errorf("stored record invalid: %v", err)
		}
		n++
		return nil
	})
	if n != st.Entries {
		t.Fatalf("Scan found %d records, Stats %d", n, st.Entries)
	}
}

func TestNoGoroutineLeakAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := newFake()
	a, err := archive.Wrap(src, memstore.New(archive.Limits{}), quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		req := req0
		req.OriginZ += int64(64 * i)
		tileOK(t, a, req)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func ExampleWrap() {
	src := newFake()
	a, err := archive.Wrap(src, memstore.New(archive.Limits{MaxEntries: 1024}), archive.Options{})
	if err != nil {
		panic(err)
	}
	defer a.Close(context.Background())
	ctx := context.Background()
	a.Tile(ctx, req0) // generated, then archived in the background
	a.Flush(ctx)
	a.Tile(ctx, req0) // answered from the store
	st, _ := a.Stats(ctx)
	fmt.Println(st.Hits, st.Misses, st.Generations)
	// Output: 1 1 1
}

// Counters reports what Stats does without the store's figures, and
// reports the store gone once the archive is closed.
func TestCounters(t *testing.T) {
	src := newFake()
	store := memstore.New(archive.Limits{})
	a, err := archive.Wrap(src, store, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	tileOK(t, a, req0)
	flush(t, a) // archived: the next request is a hit
	tileOK(t, a, req0)
	st := stats(t, a)
	c := a.Counters()
	if c.Generations != 1 || c.Hits != 1 || !c.Store || c.Entries != 0 || c.Bytes != 0 {
		t.Fatalf("Counters = %+v, want 1 generation, 1 hit, a store and no entries read", c)
	}
	if c.Generations != st.Generations || c.Hits != st.Hits || c.PendingWrites != st.PendingWrites || st.Entries != 1 {
		t.Fatalf("Counters %+v disagree with Stats %+v", c, st)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := a.Counters(); c.Store || c.Generations != 1 {
		t.Fatalf("Counters after Close = %+v, want no store and the counts kept", c)
	}
}
