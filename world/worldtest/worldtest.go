// Package worldtest is a contract suite for world.Source: Run checks, on
// chunks the caller names, what every Source must do for the engine to
// rely on it.
//
// A Source passes when:
//
//   - Load of a present chunk returns a chunk at that position whose build
//     height is not empty and whose columns are sane: Top within
//     [MinY, MaxY) or world.NoTop; a void column (NoTop) has air for
//     Ground and no fluid; any other column a Ground that is not air, and
//     Fluid exactly when world.IsFluid(Ground); with block data, the
//     block at Top is Ground;
//   - Load of an ungenerated or outside chunk returns no chunk and an error
//     that wraps world.ErrUngenerated or world.ErrOutside inside a
//     *world.PosError naming the chunk;
//   - Load with a cancelled context returns an error wrapping its cause;
//   - concurrent Loads (run the suite with -race) return what sequential
//     ones do;
//   - world.Summary returns the same columns as Load;
//   - a chunk once returned is never changed by later calls.
package worldtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// Case is one Source under test and the chunks the suite reads from it.
// Present must name at least one chunk; the other lists may be empty, and
// their checks are then skipped.
type Case struct {
	// Source is the source under test. Run closes nothing: the open
	// function registers any cleanup with t.Cleanup.
	Source world.Source
	// Present are chunks Load returns.
	Present []geom.Chunk
	// Ungenerated are chunks for which Load returns world.ErrUngenerated.
	Ungenerated []geom.Chunk
	// Outside are chunks for which Load returns world.ErrOutside.
	Outside []geom.Chunk
}

// Run runs the contract suite as subtests of t. open is called once per
// subtest and must return a fresh Source (so that nothing a subtest reads
// is cached for the next one) with the chunks to read; it may call
// t.Skip, for example when the files a source reads are absent.
func Run(t *testing.T, open func(t *testing.T) Case) {
	t.Helper()
	opened := func(t *testing.T) Case {
		t.Helper()
		c := open(t)
		if c.Source == nil {
			t.Fatal("worldtest: open returned no Source")
		}
		if len(c.Present) == 0 {
			t.Fatal("worldtest: open named no present chunk")
		}
		return c
	}
	t.Run("Present", func(t *testing.T) {
		c := opened(t)
		for _, pos := range c.Present {
			ch, err := c.Source.Load(t.Context(), pos)
			if err != nil {
				t.Errorf("Load(%v) = %v, want a chunk", pos, err)
				continue
			}
			if err := Sane(ch, pos); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("Ungenerated", func(t *testing.T) {
		c := opened(t)
		if len(c.Ungenerated) == 0 {
			t.Skip("worldtest: the source names no ungenerated chunk")
		}
		for _, pos := range c.Ungenerated {
			checkError(t, c.Source, pos, world.ErrUngenerated)
		}
	})
	t.Run("Outside", func(t *testing.T) {
		c := opened(t)
		if len(c.Outside) == 0 {
			t.Skip("worldtest: the source names no chunk outside its world")
		}
		for _, pos := range c.Outside {
			checkError(t, c.Source, pos, world.ErrOutside)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		c := opened(t)
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("worldtest: cancelled")
		cancel(cause)
		for _, pos := range c.Present {
			ch, err := c.Source.Load(ctx, pos)
			if !errors.Is(err, context.Canceled) && !errors.Is(err, cause) {
				t.Errorf("Load(%v) with a cancelled context = %v, %v; want context.Canceled", pos, chunkPos(ch), err)
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		c := opened(t)
		want := loadAll(t, c.Source, c.Present)
		c = opened(t) // a fresh source: the concurrent loads fill its caches
		const workers = 8
		got := make([][]*world.Chunk, workers)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range c.Present {
					// Each worker walks the chunks from another start, so
					// that loads of one chunk overlap.
					pos := c.Present[(i+w)%len(c.Present)]
					ch, err := c.Source.Load(t.Context(), pos)
					if err != nil {
						errs[w] = fmt.Errorf("Load(%v): %w", pos, err)
						return
					}
					got[w] = append(got[w], ch)
				}
			})
		}
		wg.Wait()
		for w := range workers {
			if errs[w] != nil {
				t.Errorf("worker %d: %v", w, errs[w])
				continue
			}
			for i, ch := range got[w] {
				j := (i + w) % len(c.Present)
				if ch.Pos != want[j].Pos || *ch.AllColumns() != *want[j].AllColumns() {
					t.Errorf("worker %d: concurrent Load(%v) differs from a sequential one", w, c.Present[j])
				}
			}
		}
	})
	t.Run("Summary", func(t *testing.T) {
		c := opened(t)
		for _, pos := range c.Present {
			sum, err := world.Summary(t.Context(), c.Source, pos)
			if err != nil {
				t.Errorf("Summary(%v) = %v", pos, err)
				continue
			}
			ch, err := c.Source.Load(t.Context(), pos)
			if err != nil {
				t.Errorf("Load(%v) = %v", pos, err)
				continue
			}
			same := *sum.AllColumns() == *ch.AllColumns()
			if sum.Pos != ch.Pos || sum.MinY != ch.MinY || sum.MaxY != ch.MaxY || !same {
				t.Errorf("Summary(%v) differs from Load: position %v/%v, height %d..%d/%d..%d, same columns %t",
					pos, sum.Pos, ch.Pos, sum.MinY, sum.MaxY, ch.MinY, ch.MaxY, same)
			}
		}
	})
	t.Run("Immutable", func(t *testing.T) {
		c := opened(t)
		first := loadAll(t, c.Source, c.Present)
		saved := make([][world.ChunkSize * world.ChunkSize]world.Column, len(first))
		for i, ch := range first {
			saved[i] = *ch.AllColumns()
		}
		for range 2 {
			loadAll(t, c.Source, c.Present)
			for _, pos := range c.Present {
				_, _ = world.Summary(t.Context(), c.Source, pos)
			}
		}
		for i, ch := range first {
			if *ch.AllColumns() != saved[i] || ch.Pos != c.Present[i] {
				t.Errorf("the chunk Load(%v) returned changed under later calls", c.Present[i])
			}
		}
	})
}

// Sane reports the first way ch, loaded for pos, breaks the column
// contract of world.Chunk (see the package documentation), or nil.
func Sane(ch *world.Chunk, pos geom.Chunk) error {
	if ch == nil {
		return fmt.Errorf("worldtest: chunk %v: nil chunk without an error", pos)
	}
	if ch.Pos != pos {
		return fmt.Errorf("worldtest: chunk %v: Load returned the chunk at %v", pos, ch.Pos)
	}
	if ch.MinY >= ch.MaxY {
		return fmt.Errorf("worldtest: chunk %v: empty build height %d..%d", pos, ch.MinY, ch.MaxY)
	}
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			col := ch.Column(x, z)
			if col.Top == world.NoTop {
				if !col.Ground.IsAir() || col.Fluid {
					return fmt.Errorf("worldtest: chunk %v column %d,%d: void column on %v (fluid %t), want air", pos, x, z, col.Ground, col.Fluid)
				}
				continue
			}
			if int32(col.Top) < ch.MinY || int32(col.Top) >= ch.MaxY {
				return fmt.Errorf("worldtest: chunk %v column %d,%d: top %d outside %d..%d", pos, x, z, col.Top, ch.MinY, ch.MaxY)
			}
			if col.Ground.IsAir() {
				return fmt.Errorf("worldtest: chunk %v column %d,%d: air at top %d", pos, x, z, col.Top)
			}
			if col.Fluid != world.IsFluid(col.Ground) {
				return fmt.Errorf("worldtest: chunk %v column %d,%d: Fluid %t on %v", pos, x, z, col.Fluid, col.Ground)
			}
			if ch.Blocks != nil {
				if b := ch.Blocks.Block(x, int(col.Top), z); b != col.Ground {
					return fmt.Errorf("worldtest: chunk %v column %d,%d: block %v at top %d, Ground %v", pos, x, z, b, col.Top, col.Ground)
				}
			}
		}
	}
	return nil
}

// checkError checks that Load(pos) fails with want inside a
// *world.PosError naming pos.
func checkError(t *testing.T, src world.Source, pos geom.Chunk, want error) {
	t.Helper()
	ch, err := src.Load(t.Context(), pos)
	if ch != nil || !errors.Is(err, want) {
		t.Errorf("Load(%v) = %v, %v; want no chunk and %v", pos, chunkPos(ch), err, want)
		return
	}
	var pe *world.PosError
	if !errors.As(err, &pe) || pe.Pos != pos {
		t.Errorf("Load(%v) error %v is not a *world.PosError naming the chunk", pos, err)
	}
}

// loadAll loads every chunk of ps, failing t on an error.
func loadAll(t *testing.T, src world.Source, ps []geom.Chunk) []*world.Chunk {
	t.Helper()
	out := make([]*world.Chunk, len(ps))
	for i, pos := range ps {
		ch, err := src.Load(t.Context(), pos)
		if err != nil {
			t.Fatalf("Load(%v) = %v", pos, err)
		}
		out[i] = ch
	}
	return out
}

// chunkPos describes a chunk returned, for error messages.
func chunkPos(ch *world.Chunk) string {
	if ch == nil {
		return "no chunk"
	}
	return fmt.Sprintf("chunk %v", ch.Pos)
}
