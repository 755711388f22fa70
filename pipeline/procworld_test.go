package pipeline_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/procworld"
)

// procWorld is the procedural world as the engine builds it: procgen ->
// archive (over a memory store) -> procworld -> resident store.
type procWorld struct {
	arch *archive.Archive
	src  *procworld.World
	res  *world.Resident
}

// newProcWorld builds the procedural world of seed over the archive store
// (nil: a memory store). The archive's write queue is long enough that
// warming it drops no write.
func newProcWorld(tb testing.TB, seed int64, store archive.Store) *procWorld {
	tb.Helper()
	params := procgen.DefaultParams()
	params.Seed = seed
	gen, err := procgen.New(params)
	if err != nil {
		tb.Fatal(err)
	}
	if store == nil {
		store = memstore.New(archive.Limits{})
	}
	arch, err := archive.Wrap(gen, store, archive.Options{QueueLength: 1 << 16, Logger: quietLogger()})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := procworld.New(arch, procworld.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	res := world.NewResident(src, world.ResidentOptions{Logger: quietLogger()})
	return &procWorld{arch: arch, src: src, res: res}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(discard{}, &slog.HandlerOptions{Level: slog.LevelError}))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// warm reads every tile of the shape once, so the archive holds them all,
// and waits for the archive's writes. It returns how many tiles it read.
func (w *procWorld) warm(tb testing.TB, shape geom.Shape) int {
	tb.Helper()
	ctx := context.Background()
	seen := map[terrain.Request]bool{}
	var first []geom.Chunk // one chunk per tile
	for i := range shape.Len() {
		c := shape.Chunk(i)
		req, err := w.src.TileRequest(c)
		if err != nil {
			tb.Fatal(err)
		}
		if !seen[req] {
			seen[req] = true
			first = append(first, c)
		}
	}
	work := make(chan geom.Chunk)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for c := range work {
				if _, err := w.src.Summary(ctx, c); err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, c := range first {
		work <- c
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	if err := w.arch.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	st, err := w.arch.Stats(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if st.DroppedWrites != 0 || st.Entries < int64(len(first)) {
		tb.Fatalf("archive after warming: %+v; want all %d tiles stored", st, len(first))
	}
	return len(first)
}

func (w *procWorld) close(tb testing.TB) {
	tb.Helper()
	if err := w.res.Close(); err != nil {
		tb.Error(err)
	}
	if err := w.arch.Close(context.Background()); err != nil {
		tb.Error(err)
	}
}

// procRegion is one region over a procWorld, wired as the engine wires it:
// the safety checker's Screen on the chunk summaries read through the
// archive (no reservation) and its Accepts on the reserved chunk.
type procRegion struct {
	w     *procWorld
	shape geom.Shape
	mem   *memory.Table
	p     *pipeline.Pipeline
}

// regionConfig adjusts a procRegion: its memory options (Shape and World
// are set) and its pipeline options (Memory, Reserver, Screen and Check
// are set), and an extra check after the safety checker's (nil: none).
type regionConfig struct {
	memory   func(*memory.Options)
	pipeline func(*pipeline.Options)
	check    func(mem *memory.Table, b geom.Block) (memory.Cause, bool)
}

func newProcRegion(tb testing.TB, w *procWorld, shape geom.Shape, cfg regionConfig) *procRegion {
	tb.Helper()
	k, err := safety.New(safety.Default())
	if err != nil {
		tb.Fatal(err)
	}
	mo := memory.Options{Shape: shape, World: "world"}
	if cfg.memory != nil {
		cfg.memory(&mo)
	}
	mem, err := memory.New(mo)
	if err != nil {
		tb.Fatal(err)
	}
	o := pipeline.Options{
		Region: "default", World: "world", Shape: shape, Memory: mem, Reserver: w.res,
		Screen: func(ctx context.Context, c geom.Chunk) (pipeline.Screened, error) {
			ch, err := world.Summary(ctx, w.src, c)
			if err != nil {
				return pipeline.Screened{}, err
			}
			x, z, y, cause, ok := k.Screen(ch)
			if !ok {
				return pipeline.Screened{Cause: cause}, nil
			}
			o := c.Origin()
			return pipeline.Screened{OK: true, Block: geom.Block{X: o.X + int64(x), Z: o.Z + int64(z)}, Y: y}, nil
		},
		Check: func(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
			r, ok := k.Accepts(res, b)
			if !ok {
				return 0, r.Cause(), false
			}
			if cfg.check != nil {
				if c, ok := cfg.check(mem, b); !ok {
					return 0, c, false
				}
			}
			return r.Y, 0, true
		},
		Seed:   7,
		Logger: quietLogger(),
	}
	if cfg.pipeline != nil {
		cfg.pipeline(&o)
	}
	p, err := pipeline.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	return &procRegion{w: w, shape: shape, mem: mem, p: p}
}

func (r *procRegion) close(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.p.Close(ctx); err != nil {
		tb.Error(err)
	}
}

// taker serves requests from the general sink the way a teleport does:
// take; on a miss, pulse and wait for the next promotion (OnPromote), at
// most wait before pulsing again.
type taker struct {
	p    *pipeline.Pipeline
	wake chan struct{}
	wait *time.Timer
}

func newTaker() *taker {
	t := &taker{wake: make(chan struct{}, 1), wait: time.NewTimer(time.Hour)}
	t.wait.Stop()
	return t
}

// onPromote is the pipeline's Options.OnPromote.
func (t *taker) onPromote(string) {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// take returns the next location of the general sink, pulsing as needed.
func (t *taker) take(ctx context.Context, wait time.Duration) (*pipeline.Hot, error) {
	g := t.p.General()
	for {
		if h, ok := g.Take(); ok {
			return h, nil
		}
		if err := t.p.Pulse(ctx); err != nil {
			return nil, err
		}
		if h, ok := g.Take(); ok {
			return h, nil
		}
		t.wait.Reset(wait)
		select {
		case <-t.wake:
		case <-t.wait.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.wait.Stop()
	}
}

// withResident returns w with a resident store of its own that keeps at
// most maxChunks unreserved chunks (the archive and the World are shared).
func (w *procWorld) withResident(maxChunks int) *procWorld {
	return &procWorld{arch: w.arch, src: w.src, res: world.NewResident(w.src, world.ResidentOptions{MaxChunks: maxChunks, Logger: quietLogger()})}
}
