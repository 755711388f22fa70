package sqlitestore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rtpengine/rtp/terrain/archive"
)

// TestTouchSetModel checks touchSet against a naive model, a list of
// digests in hit order where a repeated hit moves the digest to the end,
// under random add, take and restore (of a taken batch, possibly after
// newer hits).
func TestTouchSetModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var set touchSet
		var model []archive.Digest
		var taken []touch // last batch taken, restorable once
		var takenModel []archive.Digest
		hit := func(d archive.Digest) {
			model = slices.DeleteFunc(model, func(x archive.Digest) bool { return x == d })
			model = append(model, d)
		}
		for step := range 400 {
			switch op := rng.IntN(10); {
			case op < 6:
				d := archive.Digest{byte(rng.IntN(12))}
				set.add(d)
				hit(d)
			case op < 8:
				taken = set.take()
				takenModel = model
				model = nil
				got := make([]archive.Digest, len(taken))
				for i, tc := range taken {
					got[i] = tc.digest
				}
				if !slices.Equal(got, takenModel) {
					t.Fatalf("seed %d step %d: take() = %v, want %v", seed, step, got, takenModel)
				}
			default:
				// A failed transaction puts its batch back: its touches
				// are older than any taken since, which keep their place.
				set.restore(taken)
				var merged []archive.Digest
				for _, d := range takenModel {
					if !slices.Contains(model, d) {
						merged = append(merged, d)
					}
				}
				model = append(merged, model...)
				taken, takenModel = nil, nil
			}
			if set.len() != len(model) {
				t.Fatalf("seed %d step %d: len() = %d, want %d", seed, step, set.len(), len(model))
			}
		}
	}
}
