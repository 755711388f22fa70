package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
)

// benchRadius is the radius in chunks of the benchmark's region: a circle
// of 1024 blocks, 12,853 chunks on about 830 tiles of the default size,
// which warming generates once (a few seconds, before the timer).
const benchRadius = 64

// BenchmarkPipelineThroughput measures the verified locations one region
// delivers per second on the procedural world with a warm archive: procgen
// -> archive (memory store, every tile of the region stored before the
// timer) -> procworld -> resident store, the default safety rules as
// Screen and Check, the default Options otherwise. One op is one location
// taken from the general sink and closed; a miss pulses and waits for the
// next promotion (Options.OnPromote), pulsing again after 1 ms at most.
//
// It reports locations/s and the resident store's chunk loads per
// delivered location (loads/location); allocs/op are the allocations of
// the whole pipeline per location.
//
// The sub-benchmarks differ in the archive's store: memstore, and the
// embedded SQLite database rtp serve uses (sqlitestore, in a temporary
// directory).
func BenchmarkPipelineThroughput(b *testing.B) {
	b.Run("store=memory", func(b *testing.B) { benchThroughput(b, nil) })
	b.Run("store=sqlite", func(b *testing.B) {
		st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "archive.db"), sqlitestore.Options{Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		benchThroughput(b, st)
	})
}

func benchThroughput(b *testing.B, store archive.Store) {
	w := newProcWorld(b, 0, store)
	defer w.close(b)
	shape, err := geom.NewCircle(geom.Chunk{}, benchRadius, 0)
	if err != nil {
		b.Fatal(err)
	}
	w.warm(b, shape)
	tk := newTaker()
	r := newProcRegion(b, w, shape, regionConfig{pipeline: func(o *pipeline.Options) { o.OnPromote = tk.onPromote }})
	defer r.close(b)
	tk.p = r.p
	ctx := context.Background()

	loads0 := w.res.Stats().Loads
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h, err := tk.take(ctx, time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "locations/s")
	b.ReportMetric(float64(w.res.Stats().Loads-loads0)/n, "loads/location")
	if st := r.p.Stats(); st.Reservations.DoubleReleases != 0 || st.Reservations.ForeignClosed != 0 {
		b.Fatalf("reservation releases: %+v", st.Reservations)
	}
}
