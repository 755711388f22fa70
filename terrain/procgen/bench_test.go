package procgen

import (
	"context"
	"fmt"
	"testing"

	"github.com/rtpengine/rtp/terrain"
)

// BenchmarkGenerateTile measures typical requests with their drainage cells
// warm (cached), and a 256-block tile whose drainage cell is cold (each
// iteration uses a fresh generator, so it pays for one drainage cell).
func BenchmarkGenerateTile(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		size, res int32
	}{{256, 64}, {512, 128}} {
		b.Run(fmt.Sprintf("size=%d/res=%d/warm", tc.size, tc.res), func(b *testing.B) {
			g, err := New(DefaultParams())
			if err != nil {
				b.Fatal(err)
			}
			req := terrain.Request{OriginX: 1280, OriginZ: -768, Size: tc.size, Resolution: tc.res, Border: 1}
			if _, err := g.Tile(ctx, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Tile(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("size=256/res=64/cold", func(b *testing.B) {
		// The tile lies inside one cell, away from the blend band, so a
		// cold iteration computes exactly one drainage cell.
		req := terrain.Request{OriginX: 1280, OriginZ: -768, Size: 256, Resolution: 64, Border: 1}
		b.ReportAllocs()
		for b.Loop() {
			g, err := New(DefaultParams())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := g.Tile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDrainageCell measures one drainage cell alone.
func BenchmarkDrainageCell(b *testing.B) {
	f := newField(DefaultParams())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := computeCell(context.Background(), f, 1, -1); err != nil {
			b.Fatal(err)
		}
	}
}
