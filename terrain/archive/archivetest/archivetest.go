// Package archivetest checks an archive.Store implementation against the
// Store contract. Every store package runs it from its own tests:
//
//	func TestContract(t *testing.T) {
//		archivetest.Run(t, func(t *testing.T, l archive.Limits) archive.Store {
//			s, err := mystore.Open(..., l)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// open must return a new, empty store with the given limits each time it is
// called; Run closes every store it opens (open may also register its own
// cleanup, Close being idempotent).
package archivetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
)

// Opener opens a new, empty store with the given limits.
type Opener func(t *testing.T, limits archive.Limits) archive.Store

// Run runs the whole contract suite against stores made by open. It takes a
// few seconds for an in-memory store.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"Clear", testClear},
		{"Scan", testScan},
		{"StatsLimits", testStatsLimits},
		{"LimitEntries", testLimitEntries},
		{"LimitBytes", testLimitBytes},
		{"EvictionOrder", testEvictionOrder},
		{"Oversized", testOversized},
		{"Ownership", testOwnership},
		{"Cancelled", testCancelled},
		{"Closed", testClosed},
		{"Concurrent", testConcurrent},
		{"Model", testModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// openStore opens a store and closes it when the test ends.
func openStore(t *testing.T, open Opener, l archive.Limits) archive.Store {
	t.Helper()
	s := open(t, l)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// rec builds a record with id as its identity (key "k<id>", digest its
// SHA-256) and a payload of the given version, sized so that Size() == size.
// Every byte of the payload depends on id and version, so a mix-up shows.
func rec(id, version, size int) archive.Record {
	key := fmt.Appendf(nil, "k%04d", id)
	n := max(size-len(key), 0)
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(id*31 + version*7 + i)
	}
	return archive.Record{Digest: sha256.Sum256(key), Key: key, Payload: payload}
}

func digestOf(id int) archive.Digest { return sha256.Sum256(fmt.Appendf(nil, "k%04d", id)) }

func sameRecord(a, b archive.Record) bool {
	return a.Digest == b.Digest && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Payload, b.Payload)
}

func describe(r archive.Record) string {
	return fmt.Sprintf("{digest %x.. key %q payload %d bytes}", r.Digest[:4], r.Key, len(r.Payload))
}

func put(t *testing.T, s archive.Store, r archive.Record) {
	t.Helper()
	if err := s.Put(t.Context(), r); err != nil {
		t.Fatalf("Put(%s) = %v, want nil", describe(r), err)
	}
}

func mustGet(t *testing.T, s archive.Store, d archive.Digest) (archive.Record, bool) {
	t.Helper()
	r, ok, err := s.Get(t.Context(), d)
	if err != nil {
		t.Fatalf("Get(%x..) error %v", d[:4], err)
	}
	return r, ok
}

func wantRecord(t *testing.T, s archive.Store, want archive.Record) {
	t.Helper()
	got, ok := mustGet(t, s, want.Digest)
	if !ok {
		t.Fatalf("Get(%x..) found nothing, want %s", want.Digest[:4], describe(want))
	}
	if !sameRecord(got, want) {
		t.Fatalf("Get(%x..) = %s, want %s", want.Digest[:4], describe(got), describe(want))
	}
}

func wantAbsent(t *testing.T, s archive.Store, d archive.Digest) {
	t.Helper()
	if got, ok := mustGet(t, s, d); ok {
		t.Fatalf("Get(%x..) = %s, want nothing", d[:4], describe(got))
	}
}

func stats(t *testing.T, s archive.Store) archive.StoreStats {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// scan returns every record by digest, failing on duplicates.
func scan(t *testing.T, s archive.Store) map[archive.Digest]archive.Record {
	t.Helper()
	m := make(map[archive.Digest]archive.Record)
	err := s.Scan(t.Context(), func(r archive.Record) error {
		if _, dup := m[r.Digest]; dup {
			return fmt.Errorf("scan visited %x.. twice", r.Digest[:4])
		}
		m[r.Digest] = archive.Record{Digest: r.Digest, Key: bytes.Clone(r.Key), Payload: bytes.Clone(r.Payload)}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return m
}

// checkConsistent checks that Stats agrees with Scan and that both limits hold.
func checkConsistent(t *testing.T, s archive.Store) archive.StoreStats {
	t.Helper()
	st := stats(t, s)
	all := scan(t, s)
	var bytesSum int64
	for _, r := range all {
		bytesSum += r.Size()
	}
	if st.Entries != int64(len(all)) || st.Bytes != bytesSum {
		t.Fatalf("Stats = %d entries %d bytes, Scan found %d entries %d bytes", st.Entries, st.Bytes, len(all), bytesSum)
	}
	if st.Entries > st.Limits.MaxEntries || st.Bytes > st.Limits.MaxBytes {
		t.Fatalf("Stats = %d entries %d bytes, over limits %+v", st.Entries, st.Bytes, st.Limits)
	}
	return st
}

// wantPresent checks that exactly the records with the given ids are
// retained (by Scan, which changes no recency).
func wantPresent(t *testing.T, s archive.Store, ids ...int) {
	t.Helper()
	all := scan(t, s)
	want := make(map[archive.Digest]bool)
	for _, id := range ids {
		want[digestOf(id)] = true
	}
	var missing, extra []string
	for d := range want {
		if _, ok := all[d]; !ok {
			missing = append(missing, fmt.Sprintf("%x..", d[:4]))
		}
	}
	for d, r := range all {
		if !want[d] {
			extra = append(extra, string(r.Key))
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("retained records: missing %v, unexpected %v (want ids %v)", missing, extra, ids)
	}
}

func testGetMissing(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	wantAbsent(t, s, digestOf(1))
	if st := stats(t, s); st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("Stats of an empty store = %d entries %d bytes, want 0 0", st.Entries, st.Bytes)
	}
}

func testPutGet(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	r1, r2 := rec(1, 0, 100), rec(2, 0, 3000)
	put(t, s, r1)
	put(t, s, r2)
	wantRecord(t, s, r1)
	wantRecord(t, s, r2)
	wantAbsent(t, s, digestOf(3))
	st := checkConsistent(t, s)
	if st.Entries != 2 || st.Bytes != r1.Size()+r2.Size() {
		t.Fatalf("Stats = %d entries %d bytes, want 2 %d", st.Entries, st.Bytes, r1.Size()+r2.Size())
	}
	// An empty payload is a valid record.
	r3 := archive.Record{Digest: digestOf(3), Key: []byte("k0003")}
	put(t, s, r3)
	wantRecord(t, s, r3)
}

func testReplace(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	old, other := rec(1, 0, 500), rec(2, 0, 50)
	put(t, s, old)
	put(t, s, other)
	for _, size := range []int{800, 20} { // grow, then shrink
		r := rec(1, size, size)
		put(t, s, r)
		wantRecord(t, s, r)
		st := checkConsistent(t, s)
		if want := r.Size() + other.Size(); st.Entries != 2 || st.Bytes != want {
			t.Fatalf("after replacing with %d bytes: Stats = %d entries %d bytes, want 2 %d", size, st.Entries, st.Bytes, want)
		}
	}
}

func testDelete(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	r1, r2 := rec(1, 0, 100), rec(2, 0, 200)
	put(t, s, r1)
	put(t, s, r2)
	if err := s.Delete(t.Context(), r1.Digest); err != nil {
		t.Fatalf("Delete(present) = %v", err)
	}
	wantAbsent(t, s, r1.Digest)
	wantRecord(t, s, r2)
	if err := s.Delete(t.Context(), r1.Digest); err != nil {
		t.Fatalf("Delete(absent) = %v, want nil", err)
	}
	if err := s.Delete(t.Context(), digestOf(99)); err != nil {
		t.Fatalf("Delete(never stored) = %v, want nil", err)
	}
	st := checkConsistent(t, s)
	if st.Entries != 1 || st.Bytes != r2.Size() {
		t.Fatalf("Stats = %d entries %d bytes, want 1 %d", st.Entries, st.Bytes, r2.Size())
	}
	put(t, s, r1) // a deleted record can come back
	wantRecord(t, s, r1)
}

func testClear(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	for i := range 5 {
		put(t, s, rec(i, 0, 100+i))
	}
	if err := s.Clear(t.Context()); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	st := checkConsistent(t, s)
	if st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("Stats after Clear = %d entries %d bytes, want 0 0", st.Entries, st.Bytes)
	}
	for i := range 5 {
		wantAbsent(t, s, digestOf(i))
	}
	if err := s.Clear(t.Context()); err != nil {
		t.Fatalf("Clear of an empty store: %v", err)
	}
	r := rec(3, 1, 70)
	put(t, s, r)
	wantRecord(t, s, r)
	wantPresent(t, s, 3)
}

func testScan(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	calls := 0
	if err := s.Scan(t.Context(), func(archive.Record) error { calls++; return nil }); err != nil || calls != 0 {
		t.Fatalf("Scan(empty) = %v with %d calls, want nil and 0", err, calls)
	}
	want := make(map[archive.Digest]archive.Record)
	for i := range 7 {
		r := rec(i, 0, 50*(i+1))
		want[r.Digest] = r
		put(t, s, r)
	}
	got := scan(t, s)
	if len(got) != len(want) {
		t.Fatalf("Scan visited %d records, want %d", len(got), len(want))
	}
	for d, w := range want {
		if g, ok := got[d]; !ok || !sameRecord(g, w) {
			t.Fatalf("Scan record %x.. = %s (found %v), want %s", d[:4], describe(g), ok, describe(w))
		}
	}
	stop := errors.New("stop here")
	calls = 0
	err := s.Scan(t.Context(), func(archive.Record) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("Scan with fn failing on call 3 = %v after %d calls, want %v after 3", err, calls, stop)
	}
	checkConsistent(t, s)
}

func testStatsLimits(t *testing.T, open Opener) {
	for _, l := range []archive.Limits{
		{},
		{MaxEntries: 7},
		{MaxBytes: 12345},
		{MaxEntries: 3, MaxBytes: 999},
	} {
		s := openStore(t, open, l)
		if got, want := stats(t, s).Limits, l.WithDefaults(); got != want {
			t.Errorf("opened with %+v: Stats().Limits = %+v, want %+v", l, got, want)
		}
	}
}

func testLimitEntries(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{MaxEntries: 3})
	for i := range 10 {
		put(t, s, rec(i, 0, 64))
		st := checkConsistent(t, s)
		if want := int64(min(i+1, 3)); st.Entries != want {
			t.Fatalf("after %d Puts: %d entries, want %d", i+1, st.Entries, want)
		}
	}
	wantPresent(t, s, 7, 8, 9)
}

func testLimitBytes(t *testing.T, open Opener) {
	const limit = 1000
	s := openStore(t, open, archive.Limits{MaxBytes: limit})
	m := newModel(archive.Limits{MaxBytes: limit})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 40 {
		r := rec(i, 0, 10+rng.IntN(400))
		put(t, s, r)
		m.put(r)
		checkConsistent(t, s)
		wantPresent(t, s, m.ids()...)
	}
}

func testEvictionOrder(t *testing.T, open Opener) {
	t.Run("GetRefreshes", func(t *testing.T) {
		s := openStore(t, open, archive.Limits{MaxEntries: 3})
		for i := 1; i <= 3; i++ {
			put(t, s, rec(i, 0, 40))
		}
		mustGet(t, s, digestOf(1)) // 1 was read recently: 2 is now the oldest
		put(t, s, rec(4, 0, 40))
		wantPresent(t, s, 1, 3, 4)
		put(t, s, rec(5, 0, 40))
		wantPresent(t, s, 1, 4, 5)
		mustGet(t, s, digestOf(4))
		mustGet(t, s, digestOf(1))
		put(t, s, rec(6, 0, 40))
		wantPresent(t, s, 1, 4, 6)
	})
	t.Run("MissChangesNothing", func(t *testing.T) {
		s := openStore(t, open, archive.Limits{MaxEntries: 2})
		put(t, s, rec(1, 0, 40))
		put(t, s, rec(2, 0, 40))
		wantAbsent(t, s, digestOf(9))
		put(t, s, rec(3, 0, 40))
		wantPresent(t, s, 2, 3)
	})
	t.Run("ReplaceRefreshes", func(t *testing.T) {
		s := openStore(t, open, archive.Limits{MaxEntries: 3})
		for i := 1; i <= 3; i++ {
			put(t, s, rec(i, 0, 40))
		}
		put(t, s, rec(1, 1, 45))
		put(t, s, rec(4, 0, 40))
		wantPresent(t, s, 1, 3, 4)
		wantRecord(t, s, rec(1, 1, 45))
	})
	t.Run("BytesEvictOldestFirst", func(t *testing.T) {
		s := openStore(t, open, archive.Limits{MaxBytes: 1000})
		for i := 1; i <= 5; i++ {
			put(t, s, rec(i, 0, 200))
		}
		mustGet(t, s, digestOf(2))
		// 550 bytes must go: the three least recently used (1, 3, 4) leave,
		// the recently read 2 and the newest 5 stay.
		put(t, s, rec(6, 0, 550))
		wantPresent(t, s, 2, 5, 6)
		checkConsistent(t, s)
	})
	t.Run("ScanAndStatsChangeNoRecency", func(t *testing.T) {
		s := openStore(t, open, archive.Limits{MaxEntries: 2})
		put(t, s, rec(1, 0, 40))
		put(t, s, rec(2, 0, 40))
		checkConsistent(t, s) // Scan + Stats
		put(t, s, rec(3, 0, 40))
		wantPresent(t, s, 2, 3)
	})
}

func testOversized(t *testing.T, open Opener) {
	const limit = 1000
	s := openStore(t, open, archive.Limits{MaxBytes: limit})
	small := rec(1, 0, 300)
	put(t, s, small)
	put(t, s, rec(2, 0, limit+1))
	wantAbsent(t, s, digestOf(2))
	wantPresent(t, s, 1)
	// Replacing with an oversized version leaves the old record as it was.
	put(t, s, rec(1, 1, limit+500))
	wantRecord(t, s, small)
	st := checkConsistent(t, s)
	if st.Entries != 1 || st.Bytes != small.Size() {
		t.Fatalf("after oversized Puts: Stats = %d entries %d bytes, want 1 %d", st.Entries, st.Bytes, small.Size())
	}
	// A record of exactly MaxBytes fits, alone.
	exact := rec(3, 0, limit)
	put(t, s, exact)
	wantRecord(t, s, exact)
	wantPresent(t, s, 3)
}

func testOwnership(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	r := rec(1, 0, 200)
	want := archive.Record{Digest: r.Digest, Key: bytes.Clone(r.Key), Payload: bytes.Clone(r.Payload)}
	put(t, s, r)
	r.Key[0] ^= 0xff // the caller's slices stay the caller's
	r.Payload[0] ^= 0xff
	wantRecord(t, s, want)
	got, _ := mustGet(t, s, want.Digest)
	got.Key[1] ^= 0xff // returned slices are the caller's
	clear(got.Payload)
	wantRecord(t, s, want)
	err := s.Scan(t.Context(), func(r archive.Record) error {
		clear(r.Payload)
		return nil
	})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	wantRecord(t, s, want)
}

func testCancelled(t *testing.T, open Opener) {
	s := openStore(t, open, archive.Limits{})
	kept := rec(1, 0, 100)
	put(t, s, kept)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled ctx = %v, want an error wrapping context.Canceled", op, err)
		}
	}
	_, _, err := s.Get(ctx, kept.Digest)
	check("Get", err)
	check("Put", s.Put(ctx, rec(2, 0, 100)))
	check("Delete", s.Delete(ctx, kept.Digest))
	check("Clear", s.Clear(ctx))
	called := false
	check("Scan", s.Scan(ctx, func(archive.Record) error { called = true; return nil }))
	if called {
		t.Errorf("Scan with a cancelled ctx called fn")
	}
	_, err = s.Stats(ctx)
	check("Stats", err)
	// Nothing changed.
	wantPresent(t, s, 1)
	wantRecord(t, s, kept)
}

func testClosed(t *testing.T, open Opener) {
	s := open(t, archive.Limits{})
	put(t, s, rec(1, 0, 100))
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, archive.ErrStoreClosed) {
			t.Errorf("%s after Close = %v, want %v", op, err, archive.ErrStoreClosed)
		}
	}
	ctx := t.Context()
	_, ok, err := s.Get(ctx, digestOf(1))
	check("Get", err)
	if ok {
		t.Errorf("Get after Close reported a record")
	}
	check("Put", s.Put(ctx, rec(2, 0, 100)))
	check("Delete", s.Delete(ctx, digestOf(1)))
	check("Clear", s.Clear(ctx))
	check("Scan", s.Scan(ctx, func(archive.Record) error { return nil }))
	_, err = s.Stats(ctx)
	check("Stats", err)
	for i := range 2 {
		if err := s.Close(); err != nil {
			t.Errorf("Close #%d after Close = %v, want nil", i+2, err)
		}
	}
}

func testConcurrent(t *testing.T, open Opener) {
	const (
		workers = 8
		ops     = 60
		ids     = 24
	)
	limits := archive.Limits{MaxEntries: 10, MaxBytes: 3000}
	s := openStore(t, open, limits)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 77))
			ctx := t.Context()
			for range ops {
				id := rng.IntN(ids)
				switch op := rng.IntN(10); {
				case op < 5:
					r := rec(id, w, 20+rng.IntN(600))
					if err := s.Put(ctx, r); err != nil {
						errs <- fmt.Errorf("put: %w", err)
						return
					}
					st, err := s.Stats(ctx)
					if err != nil {
						errs <- fmt.Errorf("stats: %w", err)
						return
					}
					if st.Entries > limits.MaxEntries || st.Bytes > limits.MaxBytes || st.Entries < 0 || st.Bytes < 0 {
						errs <- fmt.Errorf("after Put: %d entries %d bytes, limits %+v", st.Entries, st.Bytes, limits)
						return
					}
				case op < 9:
					got, ok, err := s.Get(ctx, digestOf(id))
					if err != nil {
						errs <- fmt.Errorf("get: %w", err)
						return
					}
					if ok && !isVersionOf(got, id) {
						errs <- fmt.Errorf("get(%d) = %s, not a record put under that digest", id, describe(got))
						return
					}
				default:
					if err := s.Delete(ctx, digestOf(id)); err != nil {
						errs <- fmt.Errorf("delete: %w", err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkConsistent(t, s)
	for d, r := range scan(t, s) {
		if d != r.Digest || !isVersionOf(r, idOf(t, r)) {
			t.Errorf("retained record %s is not one that was put", describe(r))
		}
	}
}

// isVersionOf reports whether r is exactly rec(id, v, r.Size()) for some
// version v used by testConcurrent.
func isVersionOf(r archive.Record, id int) bool {
	for v := range 8 {
		if sameRecord(r, rec(id, v, int(r.Size()))) {
			return true
		}
	}
	return false
}

func idOf(t *testing.T, r archive.Record) int {
	var id int
	if _, err := fmt.Sscanf(string(r.Key), "k%04d", &id); err != nil {
		t.Fatalf("record key %q: %v", r.Key, err)
	}
	return id
}

// model is a naive LRU store: a slice ordered from least to most recently used.
type model struct {
	limits archive.Limits
	order  []archive.Record
}

func newModel(l archive.Limits) *model { return &model{limits: l.WithDefaults()} }

func (m *model) index(d archive.Digest) int {
	return slices.IndexFunc(m.order, func(r archive.Record) bool { return r.Digest == d })
}

func (m *model) get(d archive.Digest) (archive.Record, bool) {
	i := m.index(d)
	if i < 0 {
		return archive.Record{}, false
	}
	r := m.order[i]
	m.order = append(slices.Delete(m.order, i, i+1), r)
	return r, true
}

func (m *model) put(r archive.Record) {
	if r.Size() > m.limits.MaxBytes {
		return
	}
	if i := m.index(r.Digest); i >= 0 {
		m.order = slices.Delete(m.order, i, i+1)
	}
	m.order = append(m.order, r)
	for int64(len(m.order)) > m.limits.MaxEntries || m.bytes() > m.limits.MaxBytes {
		m.order = m.order[1:]
	}
}

func (m *model) delete(d archive.Digest) {
	if i := m.index(d); i >= 0 {
		m.order = slices.Delete(m.order, i, i+1)
	}
}

func (m *model) bytes() int64 {
	var n int64
	for _, r := range m.order {
		n += r.Size()
	}
	return n
}

func (m *model) ids() []int {
	var ids []int
	for _, r := range m.order {
		var id int
		fmt.Sscanf(string(r.Key), "k%04d", &id)
		ids = append(ids, id)
	}
	return ids
}

func testModel(t *testing.T, open Opener) {
	const (
		seeds = 4
		steps = 250
		ids   = 12
	)
	limits := archive.Limits{MaxEntries: 6, MaxBytes: 900}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := openStore(t, open, limits)
			m := newModel(limits)
			rng := rand.New(rand.NewPCG(seed, 0xa4c))
			for step := range steps {
				id := rng.IntN(ids)
				var desc string
				switch op := rng.IntN(100); {
				case op < 45:
					size := 10 + rng.IntN(300)
					if rng.IntN(20) == 0 {
						size = int(limits.MaxBytes) + 1 + rng.IntN(50) // oversized
					}
					r := rec(id, step, size)
					desc = fmt.Sprintf("Put(%d, %d bytes)", id, size)
					put(t, s, r)
					m.put(r)
				case op < 80:
					desc = fmt.Sprintf("Get(%d)", id)
					got, ok := mustGet(t, s, digestOf(id))
					want, wok := m.get(digestOf(id))
					if ok != wok || (ok && !sameRecord(got, want)) {
						t.Fatalf("step %d: %s = %s %v, model has %s %v", step, desc, describe(got), ok, describe(want), wok)
					}
				case op < 97:
					desc = fmt.Sprintf("Delete(%d)", id)
					if err := s.Delete(t.Context(), digestOf(id)); err != nil {
						t.Fatalf("step %d: %s: %v", step, desc, err)
					}
					m.delete(digestOf(id))
				default:
					desc = "Clear()"
					if err := s.Clear(t.Context()); err != nil {
						t.Fatalf("step %d: Clear: %v", step, err)
					}
					m.order = nil
				}
				st := checkConsistent(t, s)
				if st.Entries != int64(len(m.order)) || st.Bytes != m.bytes() {
					t.Fatalf("step %d after %s: Stats = %d entries %d bytes, model %d entries %d bytes", step, desc, st.Entries, st.Bytes, len(m.order), m.bytes())
				}
				got := slices.Collect(maps.Keys(scan(t, s)))
				for _, r := range m.order {
					if !slices.Contains(got, r.Digest) {
						t.Fatalf("step %d after %s: store lacks %q, model ids %v", step, desc, r.Key, m.ids())
					}
				}
			}
		})
	}
}
