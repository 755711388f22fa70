package anvil

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// flatChunk is a full 1.18+ chunk at pos, stone up to y = level.
func flatChunk(t *testing.T, pos geom.Chunk, level int) []byte {
	top := func(int, int) int { return level }
	return modernChunk(t, int32(pos.X), int32(pos.Z), -4, "minecraft:full", heightsOf(-64, top), flatSections(-4, 19, top, nil)...)
}

func TestWorldSchemesAndExternal(t *testing.T) {
	dir := t.TempDir()
	r := geom.Region{X: -1, Z: 2}
	o := r.Origin()
	var chunks []regionChunk
	for i, tc := range []struct {
		scheme   byte
		external bool
	}{{CompressionGzip, false}, {CompressionZlib, false}, {CompressionNone, false}, {CompressionLZ4, false},
		{CompressionZlib, true}, {CompressionLZ4, true}} {
		pos := geom.Chunk{X: o.X + int64(i), Z: o.Z + 31}
		chunks = append(chunks, regionChunk{pos: pos, nbt: flatChunk(t, pos, 10+i), scheme: tc.scheme, external: tc.external, stamp: 1000})
	}
	writeRegion(t, dir, r, chunks)
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, c := range chunks {
		ch, err := w.Load(context.Background(), c.pos)
		if err != nil {
			t.Fatalf("scheme %d external %v: %v", c.scheme, c.external, err)
		}
		if ch.Pos != c.pos || int(ch.Column(5, 5).Top) != 10+i {
			t.Errorf("scheme %d external %v: chunk %v top %d, want %v top %d", c.scheme, c.external, ch.Pos, ch.Column(5, 5).Top, c.pos, 10+i)
		}
	}
	if regions, err := w.Regions(); err != nil || len(regions) != 1 || regions[0] != r {
		t.Errorf("Regions() = %v, %v; want [%v]", regions, err, r)
	}
}

func TestWorldTimestamps(t *testing.T) {
	dir := t.TempDir()
	r := geom.Region{}
	var chunks []regionChunk
	for i := range 5 {
		pos := geom.Chunk{X: int64(i), Z: int64(i)}
		chunks = append(chunks, regionChunk{pos: pos, nbt: flatChunk(t, pos, 5), scheme: CompressionZlib, stamp: uint32(1_700_000_000 + 100*i)})
	}
	writeRegion(t, dir, r, chunks)
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got, err := w.ChangedSince(r, time.Unix(1_700_000_200, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []geom.Chunk{{X: 2, Z: 2}, {X: 3, Z: 3}, {X: 4, Z: 4}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("ChangedSince = %v, want %v", got, want)
	}
	if m, ok, err := w.Modified(geom.Chunk{X: 1, Z: 1}); err != nil || !ok || !m.Equal(time.Unix(1_700_000_100, 0)) {
		t.Errorf("Modified(1,1) = %v %v %v", m, ok, err)
	}
	if _, ok, err := w.Modified(geom.Chunk{X: 9, Z: 1}); err != nil || ok {
		t.Errorf("Modified of an absent chunk = %v %v", ok, err)
	}
	if got, err := w.ChangedSince(geom.Region{X: 7}, time.Time{}); err != nil || len(got) != 0 {
		t.Errorf("ChangedSince of a missing region = %v, %v", got, err)
	}
}

func TestWorldLoadErrors(t *testing.T) {
	dir := t.TempDir()
	r := geom.Region{}
	good := geom.Chunk{X: 1, Z: 0}
	writeRegion(t, dir, r, []regionChunk{
		{pos: good, nbt: flatChunk(t, good, 5), scheme: CompressionZlib},
		// slot (2, 0) holds a chunk that says it is (3, 3)
		{pos: geom.Chunk{X: 2}, nbt: flatChunk(t, geom.Chunk{X: 3, Z: 3}, 5), scheme: CompressionZlib},
		{pos: geom.Chunk{X: 4}, nbt: modernChunk(t, 4, 0, -4, "minecraft:noise", nil), scheme: CompressionZlib},
	})
	// slot (5, 0) points into the header; slot (6, 0) past the end.
	name := filepath.Join(dir, RegionName(r))
	data, _ := os.ReadFile(name)
	binary.BigEndian.PutUint32(data[4*5:], 1<<8|1)
	binary.BigEndian.PutUint32(data[4*6:], 500<<8|2)
	os.WriteFile(name, data, 0o644)

	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		pos  geom.Chunk
		want error
	}{
		{geom.Chunk{X: 0}, world.ErrUngenerated},
		{geom.Chunk{X: 4}, world.ErrUngenerated},
		{geom.Chunk{X: 40}, world.ErrUngenerated}, // no region file
		{geom.Chunk{X: 2}, ErrCorrupt},
		{geom.Chunk{X: 5}, ErrCorrupt},
		{geom.Chunk{X: 6}, ErrCorrupt},
	} {
		_, err := w.Load(ctx, tc.pos)
		var pe *world.PosError
		if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Pos != tc.pos {
			t.Errorf("Load(%v) = %v, want %v in a PosError", tc.pos, err, tc.want)
		}
	}
	info, err := w.Info(ctx, geom.Chunk{X: 4})
	if err != nil || info.Full || info.Status != "minecraft:noise" {
		t.Errorf("Info of an unfinished chunk = %+v, %v", info, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.Load(cancelled, good); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context = %v", err)
	}
	w.Close()
	w.Close()
	if _, err := w.Load(ctx, good); !errors.Is(err, ErrClosed) {
		t.Errorf("Load after Close = %v, want ErrClosed", err)
	}
}

func writeLevel(t *testing.T, dir string, data map[string]any) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(marshal(t, map[string]any{"Data": data}))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "level.dat"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLevel(t *testing.T) {
	dir := t.TempDir()
	writeLevel(t, dir, map[string]any{
		"DataVersion": int32(3955), "LevelName": "survival", "Version": map[string]any{"Name": "1.21.1", "Id": int32(3955)},
		"SpawnX": int32(-120), "SpawnY": int32(70), "SpawnZ": int32(300),
		"BorderCenterX": 100.0, "BorderCenterZ": -50.0, "BorderSize": 2000.0,
		"Player": map[string]any{"Inventory": []map[string]any{{"id": "minecraft:stone"}}},
	})
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	lv := w.Level()
	want := Level{Found: true, Name: "survival", DataVersion: 3955, Version: "1.21.1",
		Spawn: geom.Block{X: -120, Z: 300}, SpawnY: 70, HasSpawn: true, Border: Border{CenterX: 100, CenterZ: -50, Size: 2000}}
	if lv != want {
		t.Errorf("Level() = %+v, want %+v", lv, want)
	}
	if !lv.Border.Contains(geom.Block{X: 1099, Z: 949}) || lv.Border.Contains(geom.Block{X: 1101, Z: 0}) {
		t.Error("Border.Contains is wrong at the edge")
	}
	// Newer saves keep the spawn in a compound.
	lv, err = ParseLevel(marshal(t, map[string]any{"Data": map[string]any{"spawn": map[string]any{"pos": []int32{5, 66, -9}, "dimension": "minecraft:overworld"}}}))
	if err != nil || lv.Spawn != (geom.Block{X: 5, Z: -9}) || lv.SpawnY != 66 || !lv.HasSpawn || lv.Border.Size != DefaultBorderSize {
		t.Errorf("ParseLevel(spawn compound) = %+v, %v", lv, err)
	}
	if _, err := ParseLevel([]byte{0x1f, 0x8b, 1, 2}); err == nil {
		t.Error("ParseLevel(garbage) succeeded")
	}
}

func TestOpenFolders(t *testing.T) {
	save := t.TempDir()
	writeLevel(t, save, map[string]any{"DataVersion": int32(3955)})
	for _, d := range []string{"region", "DIM-1/region", "DIM1/region"} {
		os.MkdirAll(filepath.Join(save, d), 0o755)
	}
	pos := geom.Chunk{X: 1, Z: 1}
	writeRegion(t, filepath.Join(save, "DIM-1/region"), geom.Region{}, []regionChunk{{pos: pos, nbt: flatChunk(t, pos, 30), scheme: CompressionZlib}})

	w, err := Open(save, Options{Dimension: Nether})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := w.Load(context.Background(), pos)
	if err != nil || ch.Blocks == nil {
		t.Fatalf("nether Load = %v, blocks %v: the nether always has blocks", err, ch != nil && ch.Blocks != nil)
	}
	w.Close()
	w, _ = Open(save, Options{Dimension: Overworld})
	if _, err := w.Load(context.Background(), pos); !errors.Is(err, world.ErrUngenerated) {
		t.Errorf("overworld Load = %v, want ErrUngenerated (the chunk is in the nether)", err)
	}
	w.Close()

	if _, err := Open(t.TempDir(), Options{}); err == nil {
		t.Error("Open of an empty folder succeeded")
	}
	for _, bad := range []Options{{RegionDir: "../elsewhere"}, {RegionDir: "/etc"}, {Dimension: "../x"}, {Dimension: "Nether"}, {MaxOpenFiles: -1}} {
		if _, err := Open(save, bad); err == nil {
			t.Errorf("Open(%+v) succeeded", bad)
		}
	}
	err = Options{RegionDir: "../x", MaxOpenFiles: -1, MaxChunkBytes: -1}.Validate()
	multi, ok := err.(interface{ Unwrap() []error })
	if !ok || len(multi.Unwrap()) != 3 {
		t.Errorf("Validate() = %v, want 3 problems at once", err)
	}
}

// TestNoEscape: a region file that is a symbolic link out of the save
// folder is not read.
func TestNoEscape(t *testing.T) {
	outside := t.TempDir()
	pos := geom.Chunk{}
	writeRegion(t, outside, geom.Region{}, []regionChunk{{pos: pos, nbt: flatChunk(t, pos, 5), scheme: CompressionZlib}})
	save := t.TempDir()
	writeLevel(t, save, map[string]any{})
	os.MkdirAll(filepath.Join(save, "region"), 0o755)
	if err := os.Symlink(filepath.Join(outside, RegionName(geom.Region{})), filepath.Join(save, "region", RegionName(geom.Region{}))); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	w, err := Open(save, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ch, err := w.Load(context.Background(), pos)
	if err == nil {
		t.Fatalf("Load through a link out of the save folder = %v, want an error", ch.Pos)
	}
	if errors.Is(err, world.ErrUngenerated) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load through a link out of the save folder = %v, want the escape refused", err)
	}
	t.Logf("refused: %v", err)
}

func TestConcurrentLoads(t *testing.T) {
	dir := t.TempDir()
	var all []geom.Chunk
	for rx := range int64(3) {
		r := geom.Region{X: rx, Z: -rx}
		var chunks []regionChunk
		for i := range 4 {
			pos := geom.Chunk{X: r.Origin().X + int64(i), Z: r.Origin().Z + int64(3*i)}
			chunks = append(chunks, regionChunk{pos: pos, nbt: flatChunk(t, pos, int(rx)*10+i), scheme: CompressionZlib})
			all = append(all, pos)
		}
		writeRegion(t, dir, r, chunks)
	}
	w, err := Open(dir, Options{MaxOpenFiles: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for k := range 40 {
				pos := all[(g*7+k)%len(all)]
				ch, err := w.Load(context.Background(), pos)
				if err != nil {
					errs <- err
					return
				}
				want := int(pos.Region().X)*10 + int(pos.X-pos.Region().Origin().X)
				if ch.Pos != pos || int(ch.Column(0, 0).Top) != want {
					errs <- errors.New("wrong chunk")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := w.files.openFiles(); n > 1 {
		t.Errorf("%d region files open, want at most 1", n)
	}
}

// netherChunk: netherrack floor to y 30, air to 100, netherrack to 122,
// a bedrock roof 123..127, air above (as MOTION_BLOCKING sees it, the
// top is the roof).
func netherChunk(t *testing.T, pos geom.Chunk) []byte {
	pal := []map[string]any{state("minecraft:air", nil), state("minecraft:netherrack", nil), state("minecraft:bedrock", nil), state("minecraft:lava", map[string]string{"level": "0"})}
	var secs []modernSection
	for sy := range 16 {
		s := modernSection{y: int8(sy), palette: pal, blocks: make([]int, 4096), biomes: []string{"minecraft:nether_wastes"}}
		for i := range 4096 {
			x, y := i&15, sy*16+i>>8
			switch {
			case y <= 30 && x == 0 && y == 30:
				s.blocks[i] = 3 // a lava column top at x 0
			case y <= 30:
				s.blocks[i] = 1
			case y >= 101 && y <= 122:
				s.blocks[i] = 1
			case y >= 123 && y <= 127:
				s.blocks[i] = 2
			}
		}
		secs = append(secs, s)
	}
	return modernChunk(t, int32(pos.X), int32(pos.Z), 0, "minecraft:full", heightsOf(0, func(int, int) int { return 127 }), secs...)
}

func TestNetherAndEndLandings(t *testing.T) {
	pos := geom.Chunk{X: -3, Z: 4}
	ch, _, err := Decode(netherChunk(t, pos), DecodeOptions{Blocks: true})
	if err != nil {
		t.Fatal(err)
	}
	if top := ch.Column(3, 3).Top; top != 127 || ch.Column(3, 3).Ground.String() != "minecraft:bedrock" {
		t.Fatalf("nether top %d %s, want the roof at 127", top, ch.Column(3, 3).Ground)
	}
	flat := *ch // the chunk as a source with no ceiling gives it
	ch.HasCeiling, ch.Ceiling = true, 127
	under := Landings(ch)
	if len(under) != 15*16 {
		t.Fatalf("%d nether landings, want 240 (every column but the lava row)", len(under))
	}
	for _, l := range under {
		x, z := l.Block.Local()
		if l.Y != 30 || x == 0 || l.Block.Chunk() != pos {
			t.Fatalf("nether landing %v at y %d (local %d,%d), want y 30 off the lava", l.Block, l.Y, x, z)
		}
	}
	if roof := Landings(&flat); len(roof) != 256 || roof[0].Y != 127 {
		t.Errorf("without a ceiling the rule lands on the roof: %d landings", len(roof))
	}
	noBlocks, _, _ := Decode(netherChunk(t, pos), DecodeOptions{})
	noBlocks.HasCeiling, noBlocks.Ceiling = true, 127
	if got := Landings(noBlocks); len(got) != 0 {
		t.Errorf("nether landings without blocks: %d", len(got))
	}

	// The end: an island over half the chunk, void elsewhere.
	island := func(x, z int) int {
		if x < 8 {
			return 60
		}
		return -1 << 15
	}
	secs := flatSections(0, 15, island, nil)
	heights := make([]int, 256)
	for i := range heights {
		if i&15 < 8 {
			heights[i] = 61
		}
	}
	end, _, err := Decode(modernChunk(t, 0, 0, 0, "minecraft:full", heights, secs...), DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ls := Landings(end)
	if len(ls) != 128 {
		t.Errorf("%d end landings, want 128 (the island only)", len(ls))
	}
	for _, l := range ls {
		if x, _ := l.Block.Local(); x >= 8 {
			t.Errorf("end landing over the void at %v", l.Block)
		}
	}
	if c := end.Column(12, 3); c.Top != world.NoTop || c.Ground != world.Air {
		t.Errorf("void column = %+v", c)
	}
}

// TestLoadAllocs pins the screening path through the file: a full chunk
// costs one allocation, its world.Chunk.
func TestLoadAllocs(t *testing.T) {
	if raceBuild {
		t.Skip("under the race detector sync.Pool drops items at random, so allocations are not counted")
	}
	dir := t.TempDir()
	pos := geom.Chunk{X: 3, Z: 3}
	writeRegion(t, dir, geom.Region{}, []regionChunk{{pos: pos, nbt: flatChunk(t, pos, 5), scheme: CompressionZlib}})
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()
	if _, err := w.Load(ctx, pos); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, func() { w.Load(ctx, pos) }); n > 1 {
		t.Errorf("Load allocates %v times per chunk, want 1 (its world.Chunk)", n)
	}
}
