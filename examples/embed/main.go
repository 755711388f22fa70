// Command embed runs the teleport engine inside a Go program, on a world
// of its own: a gentle sine terrain of grass, computed on demand. It hands
// out ten landing places to ten players, prints them and exits.
//
//	go run ./examples/embed
//
// A game server embeds the engine the same way, with a world.Source that
// reads its own chunks. The engine keeps its state in the stores the
// program picks: here the embedded ones (package stores/sqlite, SQLite
// files in the data folder), so the program links neither PostgreSQL nor
// Redis (TestLinksNoFleetDrivers).
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stores/sqlite"
	"github.com/rtpengine/rtp/world"
)

// sineWorld is a world.Source of grass hills: the ground rises and falls
// with the sine of x and z. Its zero value is usable and it is safe for
// concurrent use (it holds no state).
type sineWorld struct{}

// Block states the world is made of.
var (
	grass  = world.Block("minecraft:grass_block[snowy=false]")
	plains = world.Biome("minecraft:plains")
)

// Load implements world.Source: every chunk is generated.
func (sineWorld) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := world.NewChunk(pos, -64, 320)
	o := pos.Origin()
	for z := range world.ChunkSize {
		for x := range world.ChunkSize {
			bx, bz := float64(o.X+int64(x)), float64(o.Z+int64(z))
			top := 70 + 6*math.Sin(bx/40) + 4*math.Cos(bz/25)
			ch.Columns[z*world.ChunkSize+x] = world.Column{
				Top:    int16(math.Floor(top)),
				Ground: grass,
				Above:  [2]world.BlockID{world.Air, world.Air},
				Biome:  plains,
			}
		}
	}
	return ch, nil
}

// spec is the engine's description: one world, the sine one, and one
// region on it, a circle of 512 blocks around the origin, its files under
// dataDir.
func spec(dataDir string) engine.Spec {
	return engine.Spec{
		Stores:  sqlite.Stores{},
		DataDir: dataDir,
		Worlds: map[string]engine.WorldSpec{
			"hills": {Source: sineWorld{}, Key: "sine-1"},
		},
		Regions: map[string]engine.RegionSpec{
			"spawn": {
				Shape: geom.ShapeSpec{Radius: 512},
				Live:  engine.RegionLive{Pulse: 5 * time.Millisecond},
			},
		},
	}
}

// run opens the engine on spec(dataDir), runs it, hands out n places to n
// players and writes them to out; ctx bounds the whole run.
func run(ctx context.Context, out io.Writer, dataDir string, n int) (err error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := engine.New(ctx, spec(dataDir), engine.Options{Logger: quiet})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	defer func() {
		stop()
		if rerr := <-done; err == nil {
			err = rerr
		}
	}()
	for i := range n {
		loc, err := e.Teleport(ctx, "spawn", engine.Request{Player: fmt.Sprintf("player%d", i+1)})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-9s -> %s %d %d %d (%s)\n", fmt.Sprintf("player%d", i+1), loc.World, loc.X, loc.Y, loc.Z, loc.Biome)
		if err := e.Complete(loc.ID); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if err := embed(); err != nil {
		log.Fatal(err)
	}
}

// embed runs the example in a temporary data folder, within a minute.
func embed() error {
	dir, err := os.MkdirTemp("", "rtp-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return run(ctx, os.Stdout, dir, 10)
}
