package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/pipeline/sqlitepersist"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/world"
)

// grassland is a world.Source of flat grass chunks.
type grassland struct{}

var grass = world.Block("minecraft:grass_block")

func grassChunk(pos geom.Chunk) *world.Chunk {
	c := world.NewChunk(pos, -64, 320)
	for i := range c.Columns {
		c.Columns[i] = world.Column{Top: 70, Ground: grass, Biome: world.Biome("minecraft:plains")}
	}
	return c
}

func (grassland) Load(_ context.Context, pos geom.Chunk) (*world.Chunk, error) {
	return grassChunk(pos), nil
}

// safetyFuncs adapts a safety.Checker to the pipeline's injected checks:
// Screen on summaries (here made directly, as a terrain archive would
// give them), Accepts on the reserved chunk.
func safetyFuncs(k *safety.Checker) (pipeline.ScreenFunc, pipeline.CheckFunc) {
	screen := func(_ context.Context, c geom.Chunk) (pipeline.Screened, error) {
		x, z, y, cause, ok := k.Screen(grassChunk(c))
		if !ok {
			return pipeline.Screened{Cause: cause}, nil
		}
		o := c.Origin()
		return pipeline.Screened{OK: true, Block: geom.Block{X: o.X + int64(x), Z: o.Z + int64(z)}, Y: y}, nil
	}
	check := func(res *world.Reservation, b geom.Block) (int, memory.Cause, bool) {
		r, ok := k.Accepts(res, b)
		return r.Y, r.Cause(), ok
	}
	return screen, check
}

type region struct {
	p   *pipeline.Pipeline
	res *world.Resident
	db  *sqlitepersist.DB
}

func openRegion(t testing.TB, path string, key pipeline.Key, coldCap int) region {
	t.Helper()
	k, err := safety.New(safety.Default())
	if err != nil {
		t.Fatal(err)
	}
	screen, check := safetyFuncs(k)
	shape, _ := geom.NewCircle(geom.Chunk{}, 30, 0)
	mem, err := memory.New(memory.Options{Shape: shape, World: "overworld"})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pers, err := db.Region("spawn", key)
	if err != nil {
		t.Fatal(err)
	}
	res := world.NewResident(grassland{}, world.ResidentOptions{})
	p, err := pipeline.New(pipeline.Options{
		Region: "spawn", World: "overworld", Shape: shape, Memory: mem, Reserver: res,
		Screen: screen, Check: check, Persister: pers, ColdCapacity: coldCap,
	})
	if err != nil {
		t.Fatal(err)
	}
	return region{p, res, db}
}

func (r region) close(t testing.TB) {
	t.Helper()
	if err := r.p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.res.Close(); err != nil {
		t.Fatal(err)
	}
	if st := r.res.Stats(); st.Opened != st.Closed {
		t.Fatalf("reservations opened %d, closed %d", st.Opened, st.Closed)
	}
}

func held(st pipeline.Stats) int {
	n := st.Cold.Fill
	for _, s := range st.Sinks {
		n += s.Fill
	}
	return n
}

// TestSQLiteRestart: the locations held at shutdown come back from the
// SQLite table as cold entries after a restart; under another key they do
// not, and their rows are deleted.
func TestSQLiteRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "rtp-data", "locations.db")
	keyA := pipeline.NewKey(1, []byte("circle 30, default safety"))
	r := openRegion(t, path, keyA, 30)
	for range 50 {
		if err := r.p.Pulse(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.p.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		if r.p.General().Len() == 10 && r.p.Stats().Cold.Fill > 5 {
			break
		}
	}
	// One location leaves for good: its row must not come back.
	h, ok := r.p.General().Take()
	if !ok {
		t.Fatal("miss")
	}
	h.Close()
	want := held(r.p.Stats())
	if want < 15 {
		t.Fatalf("only %d locations held before the restart", want)
	}
	r.close(t)

	r = openRegion(t, path, keyA, 64)
	n, err := r.p.Restore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != want || r.p.Stats().Cold.Fill != want {
		t.Fatalf("Restore = %d, cold %d; want the %d locations held at shutdown", n, r.p.Stats().Cold.Fill, want)
	}
	r.close(t)

	r = openRegion(t, path, pipeline.NewKey(1, []byte("circle 30, stricter safety")), 64)
	if n, err := r.p.Restore(ctx); err != nil || n != 0 {
		t.Fatalf("Restore under another key = %d, %v; want 0", n, err)
	}
	r.close(t)
	r = openRegion(t, path, keyA, 64)
	defer r.close(t)
	if n, err := r.p.Restore(ctx); err != nil || n != 0 {
		t.Fatalf("rows of the old key survived: Restore = %d, %v", n, err)
	}
}
