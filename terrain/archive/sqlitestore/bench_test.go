package sqlitestore

import (
	"context"
	"fmt"
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
)

// BenchmarkStoreRead is the raw blob read the archive's hit is measured
// against: Get of one 64 KB record by digest from a store holding 256 such
// records (the touch it queues is applied in the background, as in use).
// Package archive pairs it with its own hit benchmark over a Store from Open.
func BenchmarkStoreRead(b *testing.B) { benchmarkStoreRead(b, Options{}) }

// BenchmarkStoreReadNoMmap is BenchmarkStoreRead with the read pool's
// memory map disabled (MmapSize < 0): the comparison behind its default.
func BenchmarkStoreReadNoMmap(b *testing.B) { benchmarkStoreRead(b, Options{MmapSize: -1}) }

func benchmarkStoreRead(b *testing.B, opts Options) {
	const (
		records = 256
		size    = 64 << 10
	)
	s := mustOpen(b, dbPath(b), opts)
	ctx := context.Background()
	for i := range records {
		putAll(b, s, record(key(fmt.Sprint("bench", i), size), size))
	}
	d := record(key("bench100", size), size).Digest
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		r, ok, err := s.Get(ctx, d)
		if err != nil || !ok || len(r.Payload) != size {
			b.Fatalf("Get = %v %v, %d bytes", ok, err, len(r.Payload))
		}
	}
}

// BenchmarkStorePut writes 64 KB records into a full store (128 entries),
// each write evicting the least recently used record.
func BenchmarkStorePut(b *testing.B) {
	const size = 64 << 10
	s := mustOpen(b, dbPath(b), Options{Limits: archive.Limits{MaxEntries: 128}})
	ctx := context.Background()
	rs := make([]archive.Record, 256)
	for i := range rs {
		rs[i] = record(key(fmt.Sprint("put", i), size), size)
	}
	i := 0
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Put(ctx, rs[i%len(rs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkBareSelect is the floor under BenchmarkStoreRead: the same
// prepared SELECT on the same kind of file through database/sql with no
// admission, transaction bound or recency update. The ratio of the two,
// measured in one run, is the store's own overhead on a read.
func BenchmarkBareSelect(b *testing.B) {
	const (
		records = 256
		size    = 64 << 10
	)
	s := mustOpen(b, dbPath(b), Options{})
	for i := range records {
		putAll(b, s, record(key(fmt.Sprint("bench", i), size), size))
	}
	d := record(key("bench100", size), size).Digest
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		var k, p []byte
		if err := s.getStmt.QueryRow(d[:]).Scan(&k, &p); err != nil || len(p) != size {
			b.Fatalf("select = %v, %d bytes", err, len(p))
		}
	}
}
