package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/pipeline"
)

// BenchmarkHotPollSQLite is BenchmarkHotPoll with the SQLite persister
// attached: each Take queues a row removal (each silent give-back does
// not re-add it, so the table drains to nothing and the writer keeps
// applying no-op deletes).
func BenchmarkHotPollSQLite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "locations.db")
	r := openRegion(b, path, pipeline.NewKey(1, nil), 30)
	defer r.close(b)
	ctx := context.Background()
	g := r.p.General()
	for g.Len() < g.Cap() {
		if err := r.p.Pulse(ctx); err != nil {
			b.Fatal(err)
		}
		if err := r.p.Settle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		h, ok := g.Take()
		if !ok {
			b.Fatal("miss")
		}
		g.Stage().OfferSilent(h)
	}
}
