package archive_test

import (
	"context"
	"testing"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
	"github.com/rtpengine/rtp/terrain/procgen"
)

// descent is a fixed walk a landing makes: around one point, from a wide
// low-resolution view down to narrow high-resolution tiles, the 2x2 tiles
// of each level nearest the point (24 tiles, 64 samples per side plus a
// border of one).
func descent() []terrain.Request {
	const px, pz = 1100, -700
	var reqs []terrain.Request
	for size := int32(2048); size >= 64; size /= 2 {
		s := int64(size)
		// The tile holding the point and its neighbours towards the
		// point's nearer edges.
		x0 := floorDiv(px, s) * s
		z0 := floorDiv(pz, s) * s
		dx, dz := s, s
		if px-x0 < s/2 {
			dx = -s
		}
		if pz-z0 < s/2 {
			dz = -s
		}
		for _, o := range [][2]int64{{0, 0}, {dx, 0}, {0, dz}, {dx, dz}} {
			reqs = append(reqs, terrain.Request{OriginX: x0 + o[0], OriginZ: z0 + o[1], Size: size, Resolution: 64, Border: 1})
		}
	}
	return reqs
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func newProcgen(b *testing.B) terrain.Source {
	g, err := procgen.New(procgen.DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func walk(b *testing.B, ctx context.Context, src terrain.Source, reqs []terrain.Request) {
	for _, req := range reqs {
		if _, err := src.Tile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDescent walks descent() through an archive over a memstore in
// front of the procedural generator. cold: each iteration starts from an
// empty archive and a fresh generator (no drainage cell cached) and ends
// when its writes are stored; warm: the archive already holds every tile.
// BenchmarkDescentSQLite is the same over the SQLite store.
func BenchmarkDescent(b *testing.B) {
	benchDescent(b, func(*testing.B) archive.Store { return memstore.New(archive.Limits{}) })
}

func benchDescent(b *testing.B, open func(*testing.B) archive.Store) {
	ctx := context.Background()
	reqs := descent()
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a, err := archive.Wrap(newProcgen(b), open(b), quietOptions())
			if err != nil {
				b.Fatal(err)
			}
			walk(b, ctx, a, reqs)
			if err := a.Close(ctx); err != nil { // drains the writes
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		a, err := archive.Wrap(newProcgen(b), open(b), quietOptions())
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close(ctx)
		walk(b, ctx, a, reqs)
		if err := a.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			walk(b, ctx, a, reqs)
		}
		b.StopTimer()
		if st, _ := a.Stats(ctx); st.Generations != int64(len(reqs)) || st.Misses != int64(len(reqs)) {
			b.Fatalf("warm descent generated: %+v", st)
		}
	})
}

// hitReq is a typical screening tile.
var hitReq = terrain.Request{OriginX: 1024, OriginZ: -768, Size: 256, Resolution: 64, Border: 1}

// BenchmarkArchiveHit is one hit through the archive (store read, key
// comparison, checksum, decode, validation) over a memstore; compare with
// BenchmarkStoreRead/memstore, the raw Get of the same record.
func BenchmarkArchiveHit(b *testing.B) {
	b.Run("memstore", func(b *testing.B) {
		benchHit(b, memstore.New(archive.Limits{}))
	})
}

// BenchmarkStoreRead is the raw Get of the record BenchmarkArchiveHit reads.
func BenchmarkStoreRead(b *testing.B) {
	b.Run("memstore", func(b *testing.B) {
		benchRead(b, memstore.New(archive.Limits{}))
	})
}

func benchHit(b *testing.B, store archive.Store) {
	ctx := context.Background()
	src := newFake()
	a, err := archive.Wrap(src, store, quietOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(ctx)
	if _, err := a.Tile(ctx, hitReq); err != nil {
		b.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Tile(ctx, hitReq); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if st, _ := a.Stats(ctx); st.Generations != 1 || st.ReadErrors != 0 {
		b.Fatalf("hits were not hits: %+v", st)
	}
}

func benchRead(b *testing.B, store archive.Store) {
	ctx := context.Background()
	defer store.Close()
	src := newFake()
	key, err := archive.EncodeKey(src.Producer(), src.Params(), hitReq)
	if err != nil {
		b.Fatal(err)
	}
	rec := archive.Record{Digest: archive.DigestOf(key), Key: key, Payload: archive.EncodeTile(makeTile(hitReq, src.seed))}
	if err := store.Put(ctx, rec); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := store.Get(ctx, rec.Digest); err != nil || !ok {
			b.Fatalf("Get = %v, %v", ok, err)
		}
	}
}
