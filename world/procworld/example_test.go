package procworld_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/memstore"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world/procworld"
)

// The default world: the generator behind an archive (a memory store here;
// SQLite in `rtp serve`), read as chunks and screened by the default
// safety rules.
func Example() {
	ctx := context.Background()
	gen, err := procgen.New(procgen.DefaultParams())
	if err != nil {
		log.Fatal(err)
	}
	arch, err := archive.Wrap(gen, memstore.New(archive.Limits{}), archive.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer arch.Close(ctx)
	w, err := procworld.New(arch, procworld.Options{})
	if err != nil {
		log.Fatal(err)
	}
	checker, err := safety.New(safety.Default())
	if err != nil {
		log.Fatal(err)
	}

	pos := geom.Chunk{X: -42, Z: 151}
	sum, err := w.Summary(ctx, pos) // cold screening: columns only
	if err != nil {
		log.Fatal(err)
	}
	// A seeded source makes the pick, among the safe columns, repeatable.
	x, z, y, _, ok := checker.ScreenExcept(sum, rand.New(rand.NewPCG(1, 2)), nil)
	if !ok {
		fmt.Println("no safe column")
		return
	}
	full, err := w.Load(ctx, pos) // the same columns, with blocks
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("build height", full.MinY, "to", full.MaxY)
	fmt.Println("same columns:", *full.AllColumns() == *sum.AllColumns())
	fmt.Println("standing on", full.Blocks.Block(x, y-1, z), "with", full.Blocks.Block(x, y, z), "at the feet")
	// Output:
	// build height -64 to 320
	// same columns: true
	// standing on minecraft:grass_block with minecraft:air at the feet
}
