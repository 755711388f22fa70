package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// Region is one configured region: its shape and distribution, memory,
// safety checker, verifiers and pipeline, on its world. Regions are made by
// New; the zero value is not usable. A Region is safe for concurrent use.
type Region struct {
	e        *Engine
	name     string
	cfg      config.Region
	world    *worldState
	shape    geom.Shape
	dist     geom.Distribution
	checker  *safety.Checker
	verifier *verify.Registry
	mem      *memory.Table
	memPath  string
	pipe     *pipeline.Pipeline
	restored int
	log      *slog.Logger

	pulseMu sync.Mutex
	// pulseMu protects the following field.
	pulsed chan struct{} // closed and replaced after every pulse
}

// Name returns the region's name.
func (r *Region) Name() string { return r.name }

// Shape returns the region's shape, in chunks.
func (r *Region) Shape() geom.Shape { return r.shape }

// Distribution returns the region's distribution. (The pipeline draws
// candidates uniformly from the memory table in this first cut.)
func (r *Region) Distribution() geom.Distribution { return r.dist }

// Checker returns the region's safety checker.
func (r *Region) Checker() *safety.Checker { return r.checker }

// Pipeline returns the region's pipeline.
func (r *Region) Pipeline() *pipeline.Pipeline { return r.pipe }

// Memory returns the region's spatial memory.
func (r *Region) Memory() *memory.Table { return r.mem }

// MemoryPath returns the path of the region's memory file.
func (r *Region) MemoryPath() string { return r.memPath }

// screen is the pipeline's ScreenFunc: the safety screen on the chunk's
// surface summary, read through the archive, without a reservation.
func (r *Region) screen(ctx context.Context, c geom.Chunk) (pipeline.Screened, error) {
	ch, err := world.Summary(ctx, r.world.source, c)
	if err != nil {
		return pipeline.Screened{}, fmt.Errorf("engine: summary of %v: %w", c, err)
	}
	x, z, y, cause, ok := r.checker.Screen(ch)
	if !ok {
		return pipeline.Screened{Cause: cause}, nil
	}
	return pipeline.Screened{OK: true, Block: chunkBlock(c, x, z), Y: y}, nil
}

// check is the pipeline's CheckFunc: the full safety check of the column
// on the reserved chunk. The verifiers run after it, in the pipeline.
func (r *Region) check(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
	result, ok := r.checker.Accepts(res, b)
	if !ok {
		return 0, result.Cause(), false
	}
	return result.Y, 0, true
}

// waitPulse returns a channel closed after the region's next pulse.
func (r *Region) waitPulse() <-chan struct{} {
	r.pulseMu.Lock()
	defer r.pulseMu.Unlock()
	return r.pulsed
}

// signalPulse wakes the teleports waiting for a pulse.
func (r *Region) signalPulse() {
	r.pulseMu.Lock()
	close(r.pulsed)
	r.pulsed = make(chan struct{})
	r.pulseMu.Unlock()
}

// pulseLoop pulses the pipeline every cfg.Pulse until ctx ends.
func (r *Region) pulseLoop(ctx context.Context) {
	period := r.cfg.Pulse
	if period <= 0 {
		period = config.DefaultPulse
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		err := r.pipe.Pulse(ctx)
		r.signalPulse()
		switch {
		case errors.Is(err, pipeline.ErrClosed) || ctx.Err() != nil:
			return
		case err != nil:
			r.log.Warn("engine: pulse failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// saveLoop saves the memory file every interval until ctx ends (the final
// save is the shutdown's).
func (r *Region) saveLoop(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := r.mem.Save(r.memPath); err != nil {
				r.log.Warn("engine: saving memory failed", "path", r.memPath, "err", err)
			}
		}
	}
}

// sink returns the hot sink of that name: "" and "general" name the
// general sink.
func (r *Region) sink(name string) *pipeline.Sink {
	if name == "" || name == r.pipe.General().Name() {
		return r.pipe.General()
	}
	return r.pipe.Extra(name)
}
