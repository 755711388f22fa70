package pgpersist_test

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/pgpersist"
)

// BenchmarkPersist is the write throughput: each iteration adds 64 new
// locations, removes the 64 of the iteration before and waits for the
// commit, one transaction of 128 row changes on a table of steady size.
func BenchmarkPersist(b *testing.B) {
	const batch = 64
	db := open(b, newSchema(b), "bench", pgpersist.Options{})
	r := region(b, db, "overworld", "k")
	if _, err := r.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			r.Add(persisttest.Loc(n*batch + i))
			if n > 0 {
				r.Remove(persisttest.Loc((n-1)*batch + i))
			}
		}
		if err := r.Flush(context.Background()); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAddRemove is the cost of the request path alone: an Add and
// the Remove that undoes it, coalesced before any commit.
func BenchmarkAddRemove(b *testing.B) {
	db := open(b, newSchema(b), "bench", pgpersist.Options{})
	r := region(b, db, "overworld", "k")
	l := persisttest.Loc(1)
	b.ReportAllocs()
	for b.Loop() {
		r.Add(l)
		r.Remove(l)
	}
}

// BenchmarkClaimCold claims 64 cold rows per iteration from a region of
// 20,000; when they run out they are returned (outside the timing).
func BenchmarkClaimCold(b *testing.B) {
	const rows, each = 20000, 64
	schema := newSchema(b)
	filler := open(b, schema, "filler", pgpersist.Options{})
	fr := region(b, filler, "overworld", "k")
	for i := range rows {
		fr.Add(persisttest.Loc(i))
	}
	if err := filler.Close(); err != nil {
		b.Fatal(err)
	}
	db := open(b, schema, "bench", pgpersist.Options{})
	r := region(b, db, "overworld", "k")
	left := rows
	b.ReportAllocs()
	for b.Loop() {
		if left < each {
			b.StopTimer()
			if _, err := pgpersist.Pool(db).Exec(context.Background(), `UPDATE locations SET owner = NULL`); err != nil {
				b.Fatal(err)
			}
			left = rows
			b.StartTimer()
		}
		locs, err := r.ClaimCold(context.Background(), each)
		if err != nil || len(locs) != each {
			b.Fatalf("ClaimCold: %d rows, %v", len(locs), err)
		}
		left -= each
	}
	b.ReportMetric(float64(b.N*each)/b.Elapsed().Seconds(), "rows/s")
}
