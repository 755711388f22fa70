package pgstore

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStoreRead is a Get of one 64 KB record by digest (with its
// recency update, one statement) from a schema holding 256 such records.
func BenchmarkStoreRead(b *testing.B) {
	const (
		records = 256
		size    = 64 << 10
	)
	s := mustOpen(b, Options{Schema: newSchema(b)})
	for i := range records {
		putAll(b, s, record(fmt.Sprint("bench", i), size))
	}
	d := record("bench100", size).Digest
	ctx := context.Background()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		r, ok, err := s.Get(ctx, d)
		if err != nil || !ok || len(r.Payload) != size {
			b.Fatalf("Get = %v %v, %d bytes", ok, err, len(r.Payload))
		}
	}
}
