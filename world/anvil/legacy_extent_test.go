package anvil_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
)

// legacyGround returns a 1.12 chunk of stone up to y 62 under grass at
// y 63, with the population record pop.
func legacyGround(t *testing.T, x, z int, pop anviltest.Population) *anviltest.Chunk {
	t.Helper()
	c, err := anviltest.NewChunkIn(x, z, anvil.Overworld, 0, 256)
	if err != nil {
		t.Fatal(err)
	}
	c.Legacy = &anviltest.Legacy{Population: pop}
	if err := c.Fill(0, 0, 0, 15, 62, 15, "minecraft:stone"); err != nil {
		t.Fatal(err)
	}
	if err := c.Fill(0, 63, 0, 15, 63, 15, "minecraft:grass_block"); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestLegacyPopulation reads a 1.12 save whose chunks record their
// population three ways: TerrainPopulated 1 is finished, 0 is not, and
// no flag at all (a generator outside the game) is read as finished and
// counted apart.
func TestLegacyPopulation(t *testing.T) {
	dir := t.TempDir()
	chunks := []*anviltest.Chunk{
		legacyGround(t, 0, 0, anviltest.Populated),
		legacyGround(t, 1, 0, anviltest.NotPopulated),
		legacyGround(t, 2, 0, anviltest.NoPopulationFlag),
		legacyGround(t, 3, 0, anviltest.NoPopulationFlag),
	}
	if err := anviltest.WriteSave(dir, anviltest.Save{Level: &anviltest.Level{DataVersion: anviltest.LegacyDataVersion, SpawnY: 64}, Chunks: chunks}); err != nil {
		t.Fatal(err)
	}
	w, err := anvil.Open(dir, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, tc := range []struct {
		x              int64
		full, noStatus bool
	}{{0, true, false}, {1, false, false}, {2, true, true}, {3, true, true}} {
		ch, info, err := w.LoadInfo(t.Context(), geom.Chunk{X: tc.x})
		if info.Full != tc.full || info.NoStatus != tc.noStatus || info.DataVersion != anviltest.LegacyDataVersion {
			t.Errorf("chunk %d: info %+v; want full %v, no status %v", tc.x, info, tc.full, tc.noStatus)
		}
		switch {
		case tc.full && err != nil:
			t.Errorf("chunk %d: %v", tc.x, err)
		case tc.full && ch.Column(5, 5).Top != 63:
			t.Errorf("chunk %d: top %d, want 63", tc.x, ch.Column(5, 5).Top)
		case !tc.full && !errors.Is(err, world.ErrUngenerated):
			t.Errorf("chunk %d: %v, want ErrUngenerated", tc.x, err)
		}
	}
	e, err := w.Extent(t.Context(), anvil.ExtentOptions{Budget: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Exact || e.Present != 4 || e.Finished != 3 || e.NoStatus != 2 {
		t.Errorf("extent: %d present, %d finished, %d without status, exact %v; want 4, 3, 2, exact", e.Present, e.Finished, e.NoStatus, e.Exact)
	}
}

// TestLevelWithoutSpawn tells a level.dat without a spawn from one
// spawning at 0, 0.
func TestLevelWithoutSpawn(t *testing.T) {
	for _, tc := range []struct {
		lv   anviltest.Level
		want bool
	}{{anviltest.Level{}, true}, {anviltest.Level{SpawnX: 7, SpawnZ: -2}, true}, {anviltest.Level{NoSpawn: true}, false}} {
		dir := t.TempDir()
		if err := anviltest.WriteLevel(dir, tc.lv); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "level.dat"))
		if err != nil {
			t.Fatal(err)
		}
		lv, err := anvil.ParseLevel(data)
		if err != nil {
			t.Fatal(err)
		}
		if lv.HasSpawn != tc.want || lv.Spawn != (geom.Block{X: int64(tc.lv.SpawnX), Z: int64(tc.lv.SpawnZ)}) {
			t.Errorf("%+v: spawn %v, has %v; want has %v", tc.lv, lv.Spawn, lv.HasSpawn, tc.want)
		}
	}
	if anvil.DefaultLevel().HasSpawn {
		t.Error("DefaultLevel has a spawn")
	}
}
