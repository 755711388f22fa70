package sqlitepersist_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/pipeline/persisttest"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
)

// BenchmarkPersist is the persistence throughput: each iteration adds a
// batch of 64 new locations, removes the batch before it, and waits for the
// commit with Flush, so every iteration is one transaction of 128 row
// changes on a table of steady size. The rows/s figure is the rate at which
// locations reach the disk.
func BenchmarkPersist(b *testing.B) {
	const batch = 64
	db, err := sqlitepersist.Open(context.Background(), filepath.Join(b.TempDir(), "locations.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := db.Region("overworld", "k")
	if err != nil {
		b.Fatal(err)
	}
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
