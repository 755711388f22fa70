package world_test

import (
	"context"
	"fmt"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// flat is a Source of empty chunks.
type flat struct{}

func (flat) Load(ctx context.Context, pos geom.Chunk) (*world.Chunk, error) {
	return &world.Chunk{Pos: pos, MinY: -64, MaxY: 320}, nil
}

func ExampleResident() {
	store := world.NewResident(flat{}, world.ResidentOptions{MaxChunks: 1024})
	defer store.Close()

	res, err := store.Reserve(context.Background(), geom.Chunk{X: 3, Z: -1})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Chunk().Pos)
	res.Close()
	res.Close() // idempotent
	fmt.Println(res.Chunk() == nil, res.Closed())

	st := store.Stats()
	fmt.Println(st.Opened, st.Closed, st.Loads, st.Resident)
	// Output:
	// chunk(3, -1)
	// true true
	// 1 1 1 1
}
