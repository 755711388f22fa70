package anviltest_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/anvil/anviltest"
	"github.com/rtpengine/rtp/world/blockdata"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// name strips the properties off a block state's name.
func name(b world.BlockID) string {
	n, _, _ := strings.Cut(b.String(), "[")
	return n
}

func TestParseFormatState(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"stone", "minecraft:stone"},
		{"minecraft:oak_slab[waterlogged=false,type=bottom]", "minecraft:oak_slab[type=bottom,waterlogged=false]"},
		{"mymod:thing[]", "mymod:thing"},
	} {
		n, p, err := anviltest.ParseState(tc.in)
		if err != nil {
			t.Fatalf("ParseState(%q): %v", tc.in, err)
		}
		if got := anviltest.FormatState(n, p); got != tc.want {
			t.Errorf("round trip of %q = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "[a=b]", "stone[a=b", "stone[a]", "stone[a=b,a=c]", "stone[=b]"} {
		if _, _, err := anviltest.ParseState(bad); err == nil {
			t.Errorf("ParseState(%q) = nil error, want one", bad)
		}
	}
}

func TestChunkSetGet(t *testing.T) {
	c := anviltest.NewChunk(3, -2, anvil.Overworld)
	if c.MinY() != -64 || c.MaxY() != 320 {
		t.Fatalf("overworld bounds %d..%d, want -64..320", c.MinY(), c.MaxY())
	}
	must(t, c.Set(1, -64, 2, "bedrock"))
	must(t, c.Set(15, 319, 15, "minecraft:glass"))
	if got := c.Get(1, -64, 2); got != "minecraft:bedrock" {
		t.Errorf("Get = %q", got)
	}
	if got := c.Get(0, -64, 0); got != anviltest.Air {
		t.Errorf("unset block = %q, want air", got)
	}
	for _, p := range [][3]int{{16, 0, 0}, {-1, 0, 0}, {0, 320, 0}, {0, -65, 0}, {0, 0, 16}} {
		if err := c.Set(p[0], p[1], p[2], "stone"); err == nil {
			t.Errorf("Set at %v = nil error, want out of chunk", p)
		}
	}
	if err := c.Fill(0, 5, 0, 0, 4, 0, "stone"); err == nil {
		t.Error("Fill of an empty box = nil error")
	}
	n := anviltest.NewChunk(0, 0, anvil.Nether)
	if n.MinY() != 0 || n.MaxY() != 256 {
		t.Errorf("nether bounds %d..%d, want 0..256", n.MinY(), n.MaxY())
	}
}

func TestBlocksMotion(t *testing.T) {
	tb := blockdata.Newest()
	for st, want := range map[string]bool{
		"minecraft:air":                                    false,
		"minecraft:stone":                                  true,
		"minecraft:water[level=0]":                         true,
		"minecraft:oak_stairs[waterlogged=true]":           true,
		"minecraft:oak_sign[rotation=0,waterlogged=false]": true,
		"minecraft:white_wall_banner[facing=north]":        true,
		"minecraft:stone_pressure_plate[powered=false]":    true,
		"minecraft:moving_piston":                          true,
		"minecraft:torch":                                  false,
		"minecraft:short_grass":                            false,
		"minecraft:cobweb":                                 false,
		"minecraft:white_carpet":                           false,
		"minecraft:snow[layers=1]":                         false,
		"minecraft:snow[layers=5]":                         true,
		"minecraft:stone_slab[type=bottom]":                true,
		"minecraft:oak_fence":                              true,
		"mymod:unknown_block":                              true,
	} {
		if got := anviltest.BlocksMotion(tb, st); got != want {
			t.Errorf("BlocksMotion(%s) = %v, want %v", st, got, want)
		}
	}
}

func TestHeights(t *testing.T) {
	c := anviltest.NewChunk(0, 0, anvil.Overworld)
	must(t, c.Fill(0, -64, 0, 15, 10, 15, "stone"))
	must(t, c.Set(2, 11, 3, "minecraft:oak_sign[rotation=4]"))
	must(t, c.Set(4, 11, 4, "minecraft:torch"))
	must(t, c.Set(5, 200, 5, "minecraft:water[level=0]"))
	must(t, c.Fill(6, -64, 6, 6, 10, 6, "air"))
	for _, tc := range []struct {
		x, z, top int
		ok        bool
	}{{0, 0, 10, true}, {2, 3, 11, true}, {4, 4, 10, true}, {5, 5, 200, true}, {6, 6, 0, false}} {
		top, ok, err := c.Top(tc.x, tc.z)
		must(t, err)
		if ok != tc.ok || ok && top != tc.top {
			t.Errorf("Top(%d, %d) = %d, %v; want %d, %v", tc.x, tc.z, top, ok, tc.top, tc.ok)
		}
	}
}

// TestRoundTrip writes chunks of three dimensions and reads them back with
// the project's reader: positions, tops, blocks and the header.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	stamp := time.Unix(1_700_000_000, 0)
	var chunks []*anviltest.Chunk
	// Chunks on both sides of region borders.
	for _, p := range [][2]int{{0, 0}, {-1, 0}, {31, 31}, {32, -33}} {
		c := anviltest.NewChunk(p[0], p[1], anvil.Overworld)
		c.Modified = stamp
		must(t, c.Fill(0, -64, 0, 15, 62, 15, "minecraft:stone"))
		must(t, c.Fill(0, 63, 0, 15, 63, 15, "minecraft:grass_block[snowy=false]"))
		must(t, c.Set(1, 64, 2, "minecraft:oak_sign[rotation=0,waterlogged=false]"))
		must(t, c.Set(3, 64, 3, "minecraft:dandelion"))
		must(t, c.Set(5, 63, 5, "minecraft:water[level=0]"))
		// Many states in one section: a wider palette.
		for i := range 40 {
			must(t, c.Set(i%16, 100+i/16, 8, []string{"stone", "dirt", "oak_planks", "glass", "gold_block"}[i%5]))
		}
		chunks = append(chunks, c)
	}
	nether := anviltest.NewChunk(0, 0, anvil.Nether)
	must(t, nether.Fill(0, 0, 0, 15, 127, 15, "minecraft:bedrock"))
	must(t, nether.Fill(0, 1, 0, 15, 100, 15, "minecraft:air"))
	end := anviltest.NewChunk(0, 0, anvil.End)
	must(t, end.Set(8, 50, 8, "minecraft:end_stone"))
	chunks = append(chunks, nether, end)
	lv := anviltest.Level{Name: "t", SpawnX: 5, SpawnY: 70, SpawnZ: -3, BorderSize: 1000, BorderCenterX: 10, BorderCenterZ: 20}
	must(t, anviltest.WriteSave(dir, anviltest.Save{Level: &lv, Chunks: chunks}))

	for _, f := range []string{"region/r.0.0.mca", "region/r.-1.0.mca", "region/r.1.-2.mca", "DIM-1/region/r.0.0.mca", "DIM1/region/r.0.0.mca", "level.dat"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".mca") && st.Size()%anvil.SectorSize != 0 {
			t.Errorf("%s is %d bytes, not whole sectors", f, st.Size())
		}
	}

	w, err := anvil.Open(dir, anvil.Options{Blocks: true})
	must(t, err)
	defer w.Close()
	lvr := w.Level()
	if !lvr.Found || lvr.Spawn != (geom.Block{X: 5, Z: -3}) || lvr.SpawnY != 70 || lvr.Border.Size != 1000 || lvr.Border.CenterX != 10 || lvr.Border.CenterZ != 20 || lvr.DataVersion != anviltest.DefaultDataVersion {
		t.Errorf("level = %+v", lvr)
	}
	ctx := context.Background()
	for _, c := range chunks[:4] {
		pos := geom.Chunk{X: int64(c.X), Z: int64(c.Z)}
		ch, info, err := w.LoadInfo(ctx, pos)
		must(t, err)
		if info.DataVersion != anviltest.DefaultDataVersion || !info.Full || ch.MinY != -64 || ch.MaxY != 320 {
			t.Errorf("%v: info %+v, y %d..%d", pos, info, ch.MinY, ch.MaxY)
		}
		check := func(x, z, top int, ground string) {
			t.Helper()
			col := ch.Column(x, z)
			if int(col.Top) != top || name(col.Ground) != ground {
				t.Errorf("%v column %d, %d: top %d %s, want %d %s", pos, x, z, col.Top, col.Ground, top, ground)
			}
			if got := col.Biome.String(); got != "minecraft:plains" {
				t.Errorf("%v column %d, %d: biome %q", pos, x, z, got)
			}
		}
		check(0, 0, 63, "minecraft:grass_block")
		check(1, 2, 64, "minecraft:oak_sign")
		check(3, 3, 63, "minecraft:grass_block") // a flower blocks no motion
		check(5, 5, 63, "minecraft:water")
		check(7, 8, 102, "minecraft:gold_block") // block 39 of the row below
		for i := range 40 {
			want := "minecraft:" + []string{"stone", "dirt", "oak_planks", "glass", "gold_block"}[i%5]
			if got := name(ch.Blocks.Block(i%16, 100+i/16, 8)); got != want {
				t.Fatalf("%v block %d, %d, 8 = %s, want %s", pos, i%16, 100+i/16, got, want)
			}
		}
		mod, ok, err := w.Modified(pos)
		must(t, err)
		if !ok || !mod.Equal(stamp) {
			t.Errorf("%v modified %v, %v; want %v", pos, mod, ok, stamp)
		}
	}

	nw, err := anvil.Open(dir, anvil.Options{Dimension: anvil.Nether})
	must(t, err)
	defer nw.Close()
	nch, err := nw.Load(ctx, geom.Chunk{})
	must(t, err)
	if col := nch.Column(4, 4); col.Top != 127 || name(col.Ground) != "minecraft:bedrock" || nch.MinY != 0 || nch.MaxY != 256 {
		t.Errorf("nether column = %+v, y %d..%d; want the roof at 127", col, nch.MinY, nch.MaxY)
	}
	if b := name(nch.Blocks.Block(4, 50, 4)); b != "minecraft:air" {
		t.Errorf("nether cave block = %s", b)
	}

	ew, err := anvil.Open(dir, anvil.Options{Dimension: anvil.End})
	must(t, err)
	defer ew.Close()
	ech, err := ew.Load(ctx, geom.Chunk{})
	must(t, err)
	if col := ech.Column(8, 8); col.Top != 50 || name(col.Ground) != "minecraft:end_stone" {
		t.Errorf("end island column = %+v", col)
	}
	if col := ech.Column(0, 0); col.Top != world.NoTop {
		t.Errorf("end void column = %+v, want no top", col)
	}
	if _, err := ew.Load(ctx, geom.Chunk{X: 1}); !errors.Is(err, world.ErrUngenerated) {
		t.Errorf("Load of an unwritten chunk = %v, want ErrUngenerated", err)
	}
}

// TestUnfinished: a chunk with another status reads as ungenerated.
func TestUnfinished(t *testing.T) {
	dir := t.TempDir()
	c := anviltest.NewChunk(0, 0, anvil.Overworld)
	c.Status = "minecraft:features"
	c.NoHeightmaps = true
	must(t, anviltest.WriteRegions(dir, []*anviltest.Chunk{c}))
	w, err := anvil.Open(dir, anvil.Options{})
	must(t, err)
	defer w.Close()
	if _, err := w.Load(context.Background(), geom.Chunk{}); !errors.Is(err, world.ErrUngenerated) {
		t.Errorf("Load = %v, want ErrUngenerated", err)
	}
}

func TestEncodeRegionErrors(t *testing.T) {
	a := anviltest.NewChunk(0, 0, anvil.Overworld)
	b := anviltest.NewChunk(32, 0, anvil.Overworld)
	if _, err := anviltest.EncodeRegion([]*anviltest.Chunk{a, b}); err == nil {
		t.Error("EncodeRegion of two regions = nil error")
	}
	if err := anviltest.WriteRegions(t.TempDir(), []*anviltest.Chunk{a, anviltest.NewChunk(0, 0, anvil.Overworld)}); err == nil {
		t.Error("WriteRegions of one position twice = nil error")
	}
	old := anviltest.NewChunk(0, 0, anvil.Overworld)
	old.DataVersion = 2730
	if _, err := old.Encode(); err == nil {
		t.Error("Encode of a 1.17 data version = nil error")
	}
}

// TestRegionLayout checks the header against the sectors: each chunk
// starts on its own sector with its length and zlib scheme.
func TestRegionLayout(t *testing.T) {
	var chunks []*anviltest.Chunk
	for i := range 3 {
		c := anviltest.NewChunk(i, 1, anvil.Overworld)
		must(t, c.Fill(0, -64, 0, 15, 0, 15, "stone"))
		chunks = append(chunks, c)
	}
	file, err := anviltest.EncodeRegion(chunks)
	must(t, err)
	next := 2
	for i := range 3 {
		loc := binary.BigEndian.Uint32(file[4*(i+32):])
		sector, count := int(loc>>8), int(loc&0xff)
		if sector != next || count == 0 {
			t.Fatalf("chunk %d at sector %d+%d, want %d", i, sector, count, next)
		}
		off := sector * anvil.SectorSize
		n := int(binary.BigEndian.Uint32(file[off:]))
		if n > count*anvil.SectorSize-4 || file[off+4] != anvil.CompressionZlib {
			t.Errorf("chunk %d: length %d in %d sectors, scheme %d", i, n, count, file[off+4])
		}
		if binary.BigEndian.Uint32(file[anvil.SectorSize+4*(i+32):]) == 0 {
			t.Errorf("chunk %d: no timestamp", i)
		}
		next += count
	}
	if len(file) != next*anvil.SectorSize {
		t.Errorf("file of %d bytes, want %d sectors", len(file), next)
	}
}

// TestScenes writes the three hard-case saves and reads each back: every
// state they use is known to blockdata, and the tops are the ones the
// scenes promise.
func TestScenes(t *testing.T) {
	tb := blockdata.Newest()
	ctx := context.Background()

	dir := t.TempDir()
	sc, err := anviltest.WriteBuildsSave(dir)
	must(t, err)
	if len(sc.Cases) != len(anviltest.HardCaseNames()) {
		t.Errorf("%d cases placed, want all %d", len(sc.Cases), len(anviltest.HardCaseNames()))
	}
	w, err := anvil.Open(dir, anvil.Options{})
	must(t, err)
	defer w.Close()
	regions, err := w.Regions()
	must(t, err)
	if len(regions) != 4 {
		t.Errorf("builds save has regions %v, want 4", regions)
	}
	for _, cs := range sc.Cases {
		if _, ok := tb.State(cs.State); !ok {
			t.Errorf("case %s: state %s unknown to blockdata", cs.Name, cs.State)
		}
		b := geom.Block{X: cs.X, Z: cs.Z}
		ch, err := w.Load(ctx, b.Chunk())
		must(t, err)
		x, z := b.Local()
		col := ch.Column(x, z)
		n, _, _ := strings.Cut(cs.State, "[")
		if anviltest.BlocksMotion(tb, cs.State) {
			if int(col.Top) != cs.Y || name(col.Ground) != n {
				t.Errorf("case %s: top %d %s, want %d %s", cs.Name, col.Top, col.Ground, cs.Y, n)
			}
		} else if int(col.Top) != cs.Y-1 {
			t.Errorf("case %s: top %d %s, want the block under it at %d", cs.Name, col.Top, col.Ground, cs.Y-1)
		}
	}

	ndir := t.TempDir()
	nsc, err := anviltest.WriteNetherSave(ndir)
	must(t, err)
	nw, err := anvil.Open(ndir, anvil.Options{Dimension: anvil.Nether})
	must(t, err)
	defer nw.Close()
	lavaSeen, caveSeen := false, false
	for cz := nsc.MinChunkZ; cz <= nsc.MaxChunkZ; cz++ {
		for cx := nsc.MinChunkX; cx <= nsc.MaxChunkX; cx++ {
			ch, err := nw.Load(ctx, geom.Chunk{X: int64(cx), Z: int64(cz)})
			must(t, err)
			for z := range 16 {
				for x := range 16 {
					if col := ch.Column(x, z); col.Top != 127 {
						t.Fatalf("nether chunk %d, %d column %d, %d: top %d, want the roof", cx, cz, x, z, col.Top)
					}
					lavaSeen = lavaSeen || name(ch.Blocks.Block(x, anviltest.NetherLavaY, z)) == "minecraft:lava"
					caveSeen = caveSeen || ch.Blocks.Block(x, 80, z).IsAir()
				}
			}
		}
	}
	if !lavaSeen || !caveSeen {
		t.Errorf("nether: lava sea %v, open caves %v; want both", lavaSeen, caveSeen)
	}

	edir := t.TempDir()
	esc, err := anviltest.WriteEndSave(edir)
	must(t, err)
	ew, err := anvil.Open(edir, anvil.Options{Dimension: anvil.End})
	must(t, err)
	defer ew.Close()
	void, land := 0, 0
	for cz := esc.MinChunkZ; cz <= esc.MaxChunkZ; cz++ {
		for cx := esc.MinChunkX; cx <= esc.MaxChunkX; cx++ {
			ch, err := ew.Load(ctx, geom.Chunk{X: int64(cx), Z: int64(cz)})
			must(t, err)
			for i := range ch.Columns {
				if ch.Columns[i].Top == world.NoTop {
					void++
				} else {
					land++
				}
			}
		}
	}
	if void <= land || land == 0 {
		t.Errorf("end: %d void columns, %d island columns; want mostly void and some land", void, land)
	}
}

func BenchmarkEncodeChunk(b *testing.B) {
	c := anviltest.NewChunk(0, 0, anvil.Overworld)
	if err := c.Fill(0, -64, 0, 15, 63, 15, "stone"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSaveLayouts: WriteSave puts each dimension's chunks in the folder of
// the layout asked for, a datapack's dimension under dimensions/ in both,
// writes the extra files, and refuses a file that would leave the save.
func TestSaveLayouts(t *testing.T) {
	mk := func(dim anvil.Dimension) *anviltest.Chunk {
		c, err := anviltest.NewChunkIn(0, 0, dim, 0, 128)
		must(t, err)
		must(t, c.Fill(0, 0, 0, 15, 60, 15, "minecraft:stone"))
		return c
	}
	for _, tc := range []struct {
		layout26 bool
		want     []string
	}{
		{false, []string{"region/r.0.0.mca", "DIM-1/region/r.0.0.mca", "DIM1/region/r.0.0.mca", "dimensions/mymod/a/b/region/r.0.0.mca"}},
		{true, []string{"dimensions/minecraft/overworld/region/r.0.0.mca", "dimensions/minecraft/the_nether/region/r.0.0.mca",
			"dimensions/minecraft/the_end/region/r.0.0.mca", "dimensions/mymod/a/b/region/r.0.0.mca"}},
	} {
		dir := t.TempDir()
		err := anviltest.WriteSave(dir, anviltest.Save{
			Chunks:   []*anviltest.Chunk{mk(anvil.Overworld), mk(anvil.Nether), mk(anvil.End), mk("mymod:a/b")},
			Layout26: tc.layout26,
			Files:    map[string][]byte{"datapacks/p/pack.mcmeta": []byte("{}")},
		})
		must(t, err)
		for _, f := range append(tc.want, "datapacks/p/pack.mcmeta") {
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
				t.Errorf("layout 26.1 %v: %v", tc.layout26, err)
			}
		}
		w, err := anvil.Open(dir, anvil.Options{Dimension: "mymod:a/b"})
		must(t, err)
		ch, err := w.Load(context.Background(), geom.Chunk{})
		if err != nil || ch.MinY != 0 || ch.MaxY != 128 || ch.Column(3, 3).Top != 60 {
			t.Errorf("mymod:a/b chunk: %v (%+v)", err, ch)
		}
		w.Close()
	}
	for _, bad := range []string{"../x", "/etc/x", "a/../../x"} {
		if err := anviltest.WriteSave(t.TempDir(), anviltest.Save{Files: map[string][]byte{bad: nil}}); err == nil {
			t.Errorf("WriteSave of file %q: no error", bad)
		}
	}
	if _, err := anviltest.NewChunkIn(0, 0, anvil.Overworld, 8, 128); err == nil {
		t.Error("NewChunkIn with min y 8: no error")
	}
}

// TestLegacyEncode writes a pre-1.13 chunk, reads its blocks back with
// anvil's legacy decoder, and refuses what the layout cannot hold.
func TestLegacyEncode(t *testing.T) {
	c, err := anviltest.NewChunkIn(-3, 7, anvil.Overworld, 0, 256)
	must(t, err)
	c.Legacy = &anviltest.Legacy{}
	must(t, c.Fill(0, 0, 0, 15, 0, 15, "minecraft:bedrock"))
	must(t, c.Fill(0, 1, 0, 15, 69, 15, "minecraft:dirt"))
	must(t, c.Set(4, 70, 9, "minecraft:sand"))
	raw, err := c.Encode()
	must(t, err)
	ch, info, err := anvil.Decode(raw, anvil.DecodeOptions{Blocks: true})
	must(t, err)
	if info.Pos != (geom.Chunk{X: -3, Z: 7}) || info.DataVersion != anviltest.LegacyDataVersion || !info.Full || info.NoStatus || info.Status != "" {
		t.Errorf("info %+v", info)
	}
	for _, tc := range []struct {
		x, y, z int
		want    string
	}{{0, 0, 0, "minecraft:bedrock"}, {15, 69, 15, "minecraft:dirt"}, {4, 70, 9, "minecraft:sand"}, {5, 70, 9, "minecraft:air"}} {
		if got := ch.Blocks.Block(tc.x, tc.y, tc.z).String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("block (%d, %d, %d) = %s, want %s", tc.x, tc.y, tc.z, got, tc.want)
		}
	}
	if col := ch.Column(4, 9); col.Top != 70 {
		t.Errorf("top of (4, 9) = %d, want 70", col.Top)
	}
	c.Legacy.Population = anviltest.NotPopulated
	raw, err = c.Encode()
	must(t, err)
	if _, info, err := anvil.Decode(raw, anvil.DecodeOptions{}); !errors.Is(err, world.ErrUngenerated) || info.NoStatus {
		t.Errorf("not populated: %+v, %v", info, err)
	}
	bad := anviltest.NewChunk(0, 0, anvil.Overworld)
	bad.Legacy = &anviltest.Legacy{}
	must(t, bad.Set(0, -5, 0, "minecraft:stone"))
	if _, err := bad.Encode(); err == nil {
		t.Error("a block below y 0 encoded in the legacy layout")
	}
	bad = anviltest.NewChunk(0, 0, anvil.Overworld)
	bad.Legacy = &anviltest.Legacy{}
	must(t, bad.Set(0, 5, 0, "minecraft:deepslate"))
	if _, err := bad.Encode(); err == nil {
		t.Error("a block without a numeric id encoded in the legacy layout")
	}
	c.Legacy.Population = 9
	if _, err := c.Encode(); err == nil {
		t.Error("an unknown population encoded")
	}
}
