package dbstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/internal/txgate"
	"github.com/rtpengine/rtp/terrain/archive"
)

// fakeTx is a table of records in recency order (oldest first) with
// counters that may disagree with it. lose makes the next Delete skip that
// many of the records it is given, as if another writer had removed them.
type fakeTx struct {
	rows     []Victim // oldest first
	batch    int
	lose     int
	repairs  []string
	deletes  [][]string
	failWith error
}

func (f *fakeTx) Candidates(keep []byte) ([]Victim, error) {
	if f.failWith != nil {
		return nil, f.failWith
	}
	var out []Victim
	for _, v := range f.rows {
		if !bytes.Equal(v.Digest, keep) && len(out) < f.batch {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeTx) Delete(vs []Victim) (removed, freed int64, err error) {
	var names []string
	for _, v := range vs {
		names = append(names, string(v.Digest))
		if f.lose > 0 {
			f.lose--
			f.rows = slices.DeleteFunc(f.rows, func(r Victim) bool { return bytes.Equal(r.Digest, v.Digest) })
			continue
		}
		i := slices.IndexFunc(f.rows, func(r Victim) bool { return bytes.Equal(r.Digest, v.Digest) })
		if i < 0 {
			continue
		}
		removed++
		freed += f.rows[i].Size
		f.rows = slices.Delete(f.rows, i, i+1)
	}
	f.deletes = append(f.deletes, names)
	return removed, freed, nil
}

func (f *fakeTx) Count() (Counters, error) {
	var c Counters
	for _, v := range f.rows {
		c.Entries++
		c.Bytes += v.Size
	}
	return c, nil
}

func (f *fakeTx) Repaired(why string, was, now Counters) {
	f.repairs = append(f.repairs, fmt.Sprintf("%s: %v -> %v", why, was, now))
}

func table(sizes ...int64) *fakeTx {
	f := &fakeTx{batch: 4}
	for i, s := range sizes {
		f.rows = append(f.rows, Victim{Digest: []byte{byte('a' + i)}, Size: s})
	}
	return f
}

// TestEvictShortestPrefix: of each batch, exactly the oldest records that
// bring both limits back are deleted, never the kept one, and the counters
// follow.
func TestEvictShortestPrefix(t *testing.T) {
	f := table(10, 20, 30, 40, 50, 60)
	c, _ := f.Count()
	if err := Evict(f, &c, archive.Limits{MaxEntries: 10, MaxBytes: 150}, []byte("a")); err != nil {
		t.Fatal(err)
	}
	// 210 bytes, limit 150: b (20) and c (30) and d (40) leave (a is kept).
	if got := fmt.Sprint(f.deletes); got != "[[b c d]]" {
		t.Errorf("deletes = %s, want [[b c d]]", got)
	}
	want, _ := f.Count()
	if c != want || c != (Counters{Entries: 3, Bytes: 120}) || len(f.repairs) != 0 {
		t.Errorf("counters %v (rows %v), repairs %v", c, want, f.repairs)
	}
	// Over the entry limit only, across batches of 4.
	f = table(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	c, _ = f.Count()
	if err := Evict(f, &c, archive.Limits{MaxEntries: 3, MaxBytes: 1 << 30}, nil); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.deletes); got != "[[a b c d] [e f g]]" || c.Entries != 3 {
		t.Errorf("deletes = %s, counters %v; want two batches down to 3 entries", got, c)
	}
	// Within the limits: nothing is asked.
	f = table(5)
	c, _ = f.Count()
	if err := Evict(f, &c, archive.Limits{MaxEntries: 1, MaxBytes: 5}, nil); err != nil || len(f.deletes) != 0 {
		t.Errorf("within limits: %v, deletes %v", err, f.deletes)
	}
}

// TestEvictDriftGuard: counters above the rows, and deletes that remove
// less than chosen, are repaired once from the rows; a second disagreement
// in one call is an error.
func TestEvictDriftGuard(t *testing.T) {
	f := table(10, 10)
	c := Counters{Entries: 1000, Bytes: 20} // drifted
	if err := Evict(f, &c, archive.Limits{MaxEntries: 5, MaxBytes: 100}, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if c != (Counters{Entries: 1, Bytes: 10}) || len(f.repairs) != 1 || !strings.Contains(f.repairs[0], "no record left") {
		t.Errorf("counters %v, repairs %q; want one repair and the true figures", c, f.repairs)
	}

	f = table(10, 10, 10)
	f.lose = 1 // a record vanishes under the first delete
	c, _ = f.Count()
	if err := Evict(f, &c, archive.Limits{MaxEntries: 1, MaxBytes: 100}, nil); err != nil {
		t.Fatal(err)
	}
	if want, _ := f.Count(); c != want || c.Entries != 1 || len(f.repairs) != 1 || !strings.Contains(f.repairs[0], "removed less than chosen") {
		t.Errorf("counters %v (rows %v), repairs %q", c, want, f.repairs)
	}

	// Counters the rows cannot explain even after a recount: the kept
	// record alone is over the byte limit, so candidates run out twice.
	f = table(500)
	c = Counters{Entries: 9, Bytes: 9000}
	err := Evict(f, &c, archive.Limits{MaxEntries: 5, MaxBytes: 100}, []byte("a"))
	if err == nil || !strings.Contains(err.Error(), "disagree with the rows again") || len(f.repairs) != 1 {
		t.Errorf("Evict = %v with repairs %q; want one repair, then an error", err, f.repairs)
	}

	f = table(10)
	f.failWith = errors.New("disk gone")
	c = Counters{Entries: 9}
	if err := Evict(f, &c, archive.Limits{MaxEntries: 1, MaxBytes: 100}, nil); err == nil || !strings.Contains(err.Error(), "evict: disk gone") {
		t.Errorf("Evict with failing candidates = %v", err)
	}
}

func TestRecount(t *testing.T) {
	f := table(3, 4)
	c := Counters{Entries: 2, Bytes: 7}
	if err := Recount(f, &c, "open"); err != nil || len(f.repairs) != 0 {
		t.Errorf("agreeing counters: %v, repairs %q", err, f.repairs)
	}
	c = Counters{Entries: 17, Bytes: 5}
	if err := Recount(f, &c, "open"); err != nil || c != (Counters{2, 7}) || len(f.repairs) != 1 || f.repairs[0] != "open: {17 5} -> {2 7}" {
		t.Errorf("drifted counters: %v, %v, repairs %q", err, c, f.repairs)
	}
}

// fakeRows serves (digest, key, payload) rows.
type fakeRows struct {
	rows    [][3][]byte
	i       int
	scanErr error
	err     error
}

func (r *fakeRows) Next() bool { r.i++; return r.i <= len(r.rows) }

func (r *fakeRows) Scan(dest ...any) error {
	if r.scanErr != nil {
		return r.scanErr
	}
	for k, d := range dest {
		*d.(*[]byte) = r.rows[r.i-1][k]
	}
	return nil
}

func (r *fakeRows) Err() error { return r.err }

func digest(n int) []byte {
	d := make([]byte, len(archive.Digest{}))
	d[0], d[1] = byte(n>>8), byte(n)
	return d
}

func TestReadPage(t *testing.T) {
	// A full page of small records: more may follow; nil slices become
	// empty ones.
	rows := &fakeRows{}
	for i := range ScanPageRows {
		rows.rows = append(rows.rows, [3][]byte{digest(i), nil, []byte("p")})
	}
	page, more, err := ReadPage(rows)
	if err != nil || !more || len(page) != ScanPageRows || page[0].Key == nil || string(page[3].Payload) != "p" {
		t.Fatalf("full page: %d records, more %v, %v", len(page), more, err)
	}
	// A short page: the last.
	rows = &fakeRows{rows: [][3][]byte{{digest(1), []byte("k"), []byte("p")}}}
	if page, more, err := ReadPage(rows); err != nil || more || len(page) != 1 {
		t.Fatalf("short page: %d records, more %v, %v", len(page), more, err)
	}
	// Large records: the page ends at ScanPageBytes, with more to come.
	big := make([]byte, ScanPageBytes/3+1)
	rows = &fakeRows{}
	for i := range 5 {
		rows.rows = append(rows.rows, [3][]byte{digest(i), nil, big})
	}
	if page, more, err := ReadPage(rows); err != nil || !more || len(page) != 3 {
		t.Fatalf("large records: %d records, more %v, %v; want 3 and more", len(page), more, err)
	}
	// A damaged digest and database errors.
	rows = &fakeRows{rows: [][3][]byte{{[]byte("short"), nil, nil}}}
	if _, _, err := ReadPage(rows); err == nil || err.Error() != "row with a 5-byte digest" {
		t.Errorf("short digest: %v", err)
	}
	boom := errors.New("boom")
	for _, rows := range []*fakeRows{{rows: [][3][]byte{{digest(1), nil, nil}}, scanErr: boom}, {err: boom}} {
		if _, _, err := ReadPage(rows); err != boom {
			t.Errorf("database error: %v, want it as is", err)
		}
	}
}

func TestScan(t *testing.T) {
	var all []archive.Record
	for i := range 10 {
		all = append(all, archive.Record{Digest: archive.Digest(digest(i))})
	}
	// Pages of 3, found by the digest they follow.
	var afters [][]byte
	page := func(after []byte) ([]archive.Record, bool, error) {
		afters = append(afters, after)
		i := 0
		if len(after) > 0 {
			i = slices.IndexFunc(all, func(r archive.Record) bool { return bytes.Equal(r.Digest[:], after) }) + 1
		}
		end := min(i+3, len(all))
		return all[i:end], end-i == 3, nil
	}
	var seen []archive.Record
	if err := Scan(context.Background(), "st", page, func(r archive.Record) error { seen = append(seen, r); return nil }); err != nil {
		t.Fatal(err)
	}
	same := slices.EqualFunc(seen, all, func(a, b archive.Record) bool { return a.Digest == b.Digest })
	if !same || len(afters) != 4 || len(afters[0]) != 0 {
		t.Fatalf("saw %d records in %d pages", len(seen), len(afters))
	}
	stop := errors.New("stop")
	n := 0
	if err := Scan(context.Background(), "st", page, func(archive.Record) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn error: %v after %d records, want it as is after 1", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Scan(ctx, "st", page, func(archive.Record) error { return nil }); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "st: scan: ") {
		t.Errorf("cancelled Scan = %v", err)
	}
}

// victimRows serves (digest, size) rows.
type victimRows struct {
	rows []Victim
	i    int
	err  error
}

func (r *victimRows) Next() bool { r.i++; return r.i <= len(r.rows) }

func (r *victimRows) Scan(dest ...any) error {
	*dest[0].(*[]byte), *dest[1].(*int64) = r.rows[r.i-1].Digest, r.rows[r.i-1].Size
	return nil
}

func (r *victimRows) Err() error { return r.err }

func TestReadVictims(t *testing.T) {
	want := []Victim{{Digest: []byte("a"), Size: 3}, {Digest: []byte("b"), Size: 4}}
	got, err := ReadVictims(&victimRows{rows: want})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ReadVictims = %v, %v; want %v", got, err, want)
	}
	boom := errors.New("boom")
	if _, err := ReadVictims(&victimRows{rows: want, err: boom}); err != boom {
		t.Errorf("ReadVictims with a failing cursor = %v", err)
	}
}

func TestValidateLimits(t *testing.T) {
	if errs := ValidateLimits("st", archive.Limits{MaxEntries: -1, MaxBytes: -2}); len(errs) != 2 ||
		errs[0].Error() != "st: Limits.MaxEntries -1 is negative" || errs[1].Error() != "st: Limits.MaxBytes -2 is negative" {
		t.Errorf("ValidateLimits = %v", errs)
	}
	if errs := ValidateLimits("st", archive.Limits{}); len(errs) != 0 {
		t.Errorf("ValidateLimits of zero limits = %v", errs)
	}
	if b := NonNil(nil); b == nil || len(b) != 0 {
		t.Error("NonNil(nil) is not an empty slice")
	}
}

// TestCalls: admission, the transaction's context and the wrapping of each
// kind of error, and a closed store.
func TestCalls(t *testing.T) {
	var failed []string
	c := Calls{Gate: txgate.New(1, time.Minute), Pkg: "st", Fail: func(op string, ctx, txctx context.Context, err error) error {
		failed = append(failed, op)
		return fmt.Errorf("st: %s: failed: %w", op, err)
	}}
	ran := false
	err := c.Run(context.Background(), "get", func(txctx context.Context) error {
		_, bounded := txctx.Deadline()
		ran = bounded
		return nil
	})
	if err != nil || !ran || len(failed) != 0 {
		t.Fatalf("Run = %v (ran with a bounded context: %v), failed %v", err, ran, failed)
	}
	boom := errors.New("boom")
	if err := c.Run(context.Background(), "stats", func(context.Context) error { return boom }); !errors.Is(err, boom) ||
		err.Error() != "st: stats: failed: boom" || fmt.Sprint(failed) != "[stats]" {
		t.Errorf("Run with a failing transaction = %v, failed %v", err, failed)
	}
	// The slot and the admission are both freed: a second call gets in.
	if err := c.Run(context.Background(), "get", func(context.Context) error { return nil }); err != nil {
		t.Errorf("second Run = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Enter(ctx, "get"); !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "st: get: ") {
		t.Errorf("Enter with a done context = %v", err)
	}
	// Waiting for a slot honours the caller's context.
	if err := c.Enter(context.Background(), "scan"); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- c.Tx(context.Background(), "scan", func(context.Context) error { <-hold; return nil }) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer wcancel()
	for {
		err := c.Tx(wctx, "scan", func(context.Context) error { return nil })
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "st: scan: ") {
				t.Errorf("Tx waiting for a slot = %v", err)
			}
			break
		}
		// The goroutine had not taken the slot yet: try again.
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.Gate.Leave()
	c.Gate.Close()
	if err := c.Run(context.Background(), "get", func(context.Context) error { return nil }); !errors.Is(err, archive.ErrStoreClosed) {
		t.Errorf("Run after Close = %v, want ErrStoreClosed", err)
	}
}
