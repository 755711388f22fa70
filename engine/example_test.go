package engine_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/stores/sqlite"
	"github.com/rtpengine/rtp/world"
)

// flatWorld is a world of the embedder's: grass at y 64 everywhere.
type flatWorld struct{}

func (flatWorld) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := world.NewChunk(pos, -64, 320)
	for i := range ch.Columns {
		ch.Columns[i] = world.Column{Top: 64, Ground: world.Block("minecraft:grass_block[snowy=false]")}
	}
	return ch, nil
}

// A Go program embeds the engine on a world of its own: a Spec names it,
// with a region on it and the stores the program picks (here the
// embedded ones: SQLite files in the data folder), and the engine hands
// out places on it. The places are drawn at random; what is sure is where
// they stand.
func Example() {
	dir, err := os.MkdirTemp("", "engine-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	spec := engine.Spec{
		Stores:  sqlite.Stores{},
		DataDir: dir,
		Worlds:  map[string]engine.WorldSpec{"flat": {Source: flatWorld{}, Key: "flat-64"}},
		Regions: map[string]engine.RegionSpec{
			"spawn": {Shape: geom.ShapeSpec{Radius: 256}, Live: engine.RegionLive{Pulse: 5 * time.Millisecond}},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := engine.New(ctx, spec, engine.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	for _, player := range []string{"alice", "bob", "carol"} {
		loc, err := e.Teleport(ctx, "spawn", engine.Request{Player: player})
		if err != nil {
			log.Fatal(err)
		}
		inside := loc.X*loc.X+loc.Z*loc.Z <= 300*300
		fmt.Printf("%s: world %s, y %d, near the centre: %t\n", player, loc.World, loc.Y, inside)
		_ = e.Complete(loc.ID)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	// Output:
	// alice: world flat, y 65, near the centre: true
	// bob: world flat, y 65, near the centre: true
	// carol: world flat, y 65, near the centre: true
}
