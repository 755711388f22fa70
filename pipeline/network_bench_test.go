package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/local"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
)

// networkBenchCapacity is the network pool of the benchmarks.
const networkBenchCapacity = 64

// networkRegion opens a region with a network sink over a SQLite
// locations database in a temporary folder, its leases in memory (journal
// false: the pipeline's default store) or journaled to the database, as a
// single rtp node keeps them, and fills the sink.
func networkRegion(b *testing.B, journal bool) region {
	b.Helper()
	ctx := context.Background()
	k, err := safety.New(safety.Default())
	if err != nil {
		b.Fatal(err)
	}
	screen, check := safetyFuncs(k)
	shape, _ := geom.NewCircle(geom.Chunk{}, 30, 0)
	mem, err := memory.New(memory.Options{Shape: shape, World: "overworld"})
	if err != nil {
		b.Fatal(err)
	}
	db, err := sqlitepersist.Open(ctx, filepath.Join(b.TempDir(), "locations.db"), sqlitepersist.Options{})
	if err != nil {
		b.Fatal(err)
	}
	pers, err := db.Region("spawn", pipeline.NewKey(1, nil))
	if err != nil {
		b.Fatal(err)
	}
	nc := pipeline.NetworkConfig{
		Enabled: true, Capacity: networkBenchCapacity, LeaseTTL: time.Minute,
		Secret: []byte("0123456789abcdef-network"),
	}
	if journal {
		var s lease.Store
		if s, err = local.Open(ctx, db.Leases(), local.Options{}); err != nil {
			b.Fatal(err)
		}
		nc.Leases, nc.Node = s, "bench"
	}
	res := world.NewResident(grassland{}, world.ResidentOptions{})
	p, err := pipeline.New(pipeline.Options{
		Region: "spawn", World: "overworld", Shape: shape, Memory: mem, Reserver: res,
		Screen: screen, Check: check, Persister: pers, ColdCapacity: 256,
		Network: nc,
	})
	if err != nil {
		b.Fatal(err)
	}
	r := region{p, res, db}
	refillNetwork(b, r)
	return r
}

// refillNetwork pulses until the network pool is full.
func refillNetwork(b *testing.B, r region) {
	b.Helper()
	ctx := context.Background()
	n := r.p.Network()
	for i := 0; n.Len() < n.Cap(); i++ {
		if i == 200 {
			b.Fatalf("the network pool holds %d of %d after %d pulses", n.Len(), n.Cap(), i)
		}
		if err := r.p.Pulse(ctx); err != nil {
			b.Fatal(err)
		}
		if err := r.p.Settle(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNetworkReserveRelease measures a proxy's reservation of a
// location under a fresh token, given up again (the entry goes back to
// the pool), with the leases in memory and journaled to the locations
// database.
func BenchmarkNetworkReserveRelease(b *testing.B) {
	for _, c := range []struct {
		name    string
		journal bool
	}{{"memory", false}, {"journal", true}} {
		b.Run(c.name, func(b *testing.B) {
			r := networkRegion(b, c.journal)
			defer r.close(b)
			n := r.p.Network()
			b.ReportAllocs()
			for b.Loop() {
				tok := n.NewToken()
				if _, err := n.Reserve(tok); err != nil {
					b.Fatal(err)
				}
				if err := n.ReleaseLease(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNetworkReserveRedeem measures a network hop: a reservation
// under a fresh token, then its redemption and the hand-out's close, with
// the leases in memory and journaled to the locations database. The pool
// is refilled, off the clock, whenever it runs dry.
func BenchmarkNetworkReserveRedeem(b *testing.B) {
	for _, c := range []struct {
		name    string
		journal bool
	}{{"memory", false}, {"journal", true}} {
		b.Run(c.name, func(b *testing.B) {
			r := networkRegion(b, c.journal)
			defer r.close(b)
			n := r.p.Network()
			b.ReportAllocs()
			for b.Loop() {
				if n.Len() == 0 {
					b.StopTimer()
					refillNetwork(b, r)
					b.StartTimer()
				}
				tok := n.NewToken()
				if _, err := n.Reserve(tok); err != nil {
					b.Fatal(err)
				}
				h, err := n.Redeem(tok)
				if err != nil {
					b.Fatal(err)
				}
				h.Close()
			}
		})
	}
}
