package sqlitepersist_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
)

// openRegion opens a new database with opts, closed when b ends, and
// returns its region "overworld", loaded.
func openRegion(b *testing.B, opts sqlitepersist.Options) *sqlitepersist.Region {
	b.Helper()
	db, err := sqlitepersist.Open(context.Background(), filepath.Join(b.TempDir(), "locations.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	r, err := db.Region("overworld", "k")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Load(context.Background()); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkPersist is the persistence throughput: each iteration adds a
// batch of 64 new locations, removes the batch before it, and waits for the
// commit with Flush, so every iteration is one transaction of 128 row
// changes on a table of steady size. The rows/s figure is the rate at which
// locations reach the disk.
func BenchmarkPersist(b *testing.B) {
	const batch = 64
	r := openRegion(b, sqlitepersist.Options{})
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

// scattered returns a distinct location for i, its column spread over the
// region as screening spreads them (so each row change lands on a page of
// its own, as in a real table, not beside the last one).
func scattered(i int) pipeline.Location {
	h := uint64(i) * 0x9E3779B97F4A7C15 // odd: distinct i give distinct h
	x, z := int64(h>>44)-1<<19, int64(h>>24&(1<<20-1))-1<<19
	return pipeline.Location{World: "overworld", X: x, Y: 64, Z: z, Index: int64(i)}
}

// BenchmarkLifecycle is what a serving region asks of the database for
// each location it hands out, on a table of steady size: the location is
// added when screened, marked hot when promoted (the promotion waits for
// that commit), removed when its hand-out completes, and its column
// claimed for unique placement. Promotions come 16 at a time, as a pulse
// starts them. The cpu-µs/op figure is the process's CPU time (user and
// system) per location: what the writer costs the request path on a
// machine with cores to spare for nothing.
func BenchmarkLifecycle(b *testing.B) {
	const (
		group = 16
		cold  = 32768 // locations added, not yet promoted
		hot   = 1024  // promoted, not yet completed
	)
	ctx := context.Background()
	// No HotDelay: this loop waits for each group's marks before the
	// next, so a delay would only idle it and thin the batches.
	r := openRegion(b, sqlitepersist.Options{HotDelay: -1})
	for i := range cold + hot {
		r.Add(scattered(i))
	}
	for i := range hot {
		r.MarkHot(scattered(i), true, func(error) {})
	}
	if err := r.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	errs := make(chan error, group)
	next := hot // the next location to promote
	cpu0, _ := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += group {
		for i := range group {
			n := next + i
			r.Add(scattered(n + cold))
			r.MarkHot(scattered(n), true, func(err error) { errs <- err })
		}
		for range group {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		for i := range group {
			gone := scattered(next + i - hot)
			r.Remove(gone)
			r.Claim(pipeline.Spot{X: gone.X, Z: gone.Z, At: time.Unix(int64(next+i), 0)})
		}
		next += group
	}
	b.StopTimer()
	if cpu, ok := cpuTime(); ok {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
	}
}

// BenchmarkServeMix is what a region serving a steady stream of hand-outs
// asks of the database, as rtp serve does under the load test: for each
// hand-out one promotion's hot mark (not urgent: it rides the batch), one
// removal and one claimed spot, and for one in five a new location
// screened into cold, committed a batch of 100 hand-outs at a time (a
// BatchDelay's worth at 1,000/s), on a table of the load test's steady
// size. The cpu-µs/op figure is the process's CPU time per hand-out.
func BenchmarkServeMix(b *testing.B) {
	const (
		batch = 100
		cold  = 32768
		hot   = 8192
	)
	ctx := context.Background()
	r := openRegion(b, sqlitepersist.Options{})
	for i := range cold + hot {
		r.Add(scattered(i))
	}
	for i := range hot {
		r.MarkHot(scattered(i), false, func(error) {})
	}
	if err := r.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	next := hot // the next location to promote
	cpu0, _ := cpuTime()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		for i := range batch {
			n := next + i
			if n%5 == 0 {
				r.Add(scattered(n + cold))
			}
			r.MarkHot(scattered(n), false, func(error) {})
			gone := scattered(n - hot)
			r.Remove(gone)
			r.Claim(pipeline.Spot{X: gone.X, Z: gone.Z, At: time.Unix(int64(n), 0)})
		}
		if err := r.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		next += batch
	}
	b.StopTimer()
	if cpu, ok := cpuTime(); ok {
		b.ReportMetric(float64(cpu-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
	}
}
