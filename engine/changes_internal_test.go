package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// okSource loads every chunk as an empty one.
type okSource struct{}

func (okSource) Load(_ context.Context, pos geom.Chunk) (*world.Chunk, error) {
	return &world.Chunk{Pos: pos}, nil
}

// TestHeldSource holds the order of a hold's end: a save the first poll
// after the report sees may predate the report and ends nothing; a save
// seen by a later poll ends it; an unsaved chunk is released after
// DefaultChangeHold.
func TestHeldSource(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newHeldSource(okSource{}, func() time.Time { return now }, 0)
	a, b := geom.Chunk{X: 1, Z: 2}, geom.Chunk{X: -3, Z: 4}
	held := func(c geom.Chunk) bool {
		_, err := h.Load(t.Context(), c)
		_, serr := h.Summary(t.Context(), c)
		if errors.Is(err, world.ErrUngenerated) != errors.Is(serr, world.ErrUngenerated) {
			t.Fatalf("Load and Summary disagree on %v: %v, %v", c, err, serr)
		}
		return errors.Is(err, world.ErrUngenerated)
	}
	if held(a) {
		t.Fatal("a chunk held before any report")
	}
	h.pollStarted() // a poll in flight at the report
	if n := h.report([]geom.Chunk{a, b}); n != 2 {
		t.Fatalf("report held %d new chunks, want 2", n)
	}
	if n := h.report([]geom.Chunk{a}); n != 0 {
		t.Fatalf("a second report of a held chunk counted %d new", n)
	}
	if !held(a) || !held(b) {
		t.Fatal("reported chunks not held")
	}
	h.saved(1, []geom.Chunk{a}) // the poll in flight at the report
	p := h.pollStarted()        // the first poll started after it
	h.saved(p, []geom.Chunk{a})
	if !held(a) {
		t.Fatal("a save the first poll after the report saw ended the hold")
	}
	p = h.pollStarted()
	h.saved(p, []geom.Chunk{a})
	if held(a) || !held(b) {
		t.Fatalf("after a later save: a held %v (want false), b held %v (want true)", held(a), held(b))
	}
	now = now.Add(DefaultChangeHold)
	if held(b) || h.heldCount() != 0 {
		t.Fatalf("b still held after DefaultChangeHold (%d held)", h.heldCount())
	}
}
