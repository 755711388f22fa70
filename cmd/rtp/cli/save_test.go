package cli

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/client"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/anvilfixture"
	"github.com/rtpengine/rtp/world/anvil"
)

// fixture116 is a real 1.16 region file: 253 chunks, all finished, in
// chunks x 3..25, z -11..-1, so the default spawn (block 0, 0) lies at a
// corner of the finished area, outside it.
const fixture116 = "prismarine-provider-anvil/1.16/r.0.-1.mca"

// fixtureFile returns the path of a real region file, skipping the test
// when the fixtures are absent.
func fixtureFile(t *testing.T, name string) string {
	t.Helper()
	return anvilfixture.Path(t, name)
}

// saveWith lays region files out as a save folder's overworld
// (DIR/region/NAME) and returns DIR.
func saveWith(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	reg := filepath.Join(dir, "region")
	if err := os.MkdirAll(reg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(reg, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fixtureSave(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fixtureFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return saveWith(t, map[string][]byte{filepath.Base(name): b})
}

// finishedChunks reads every slot of the save's regions with Info: the
// truth the derived shape is checked against.
func finishedChunks(t *testing.T, save string) []geom.Chunk {
	t.Helper()
	w, err := anvil.Open(save, anvil.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	regions, err := w.Regions()
	if err != nil {
		t.Fatal(err)
	}
	var out []geom.Chunk
	for _, r := range regions {
		for i := range anvil.ChunksPerRegion {
			c := anvil.SlotChunk(r, i)
			if info, err := w.Info(t.Context(), c); err == nil && info.Full {
				out = append(out, c)
			}
		}
	}
	return out
}

var shapeLog = regexp.MustCompile(`shape="circle of radius (\d+) blocks around block \((-?\d+), (-?\d+)\)"`)

// loggedCircle returns the circle the log line "region laid over the save"
// reports.
func loggedCircle(t *testing.T, log string) (radius, x, z int64) {
	t.Helper()
	if !strings.Contains(log, "region laid over the save") {
		t.Fatalf("no shape logged:\n%s", log)
	}
	m := shapeLog.FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no circle in the log:\n%s", log)
	}
	var v [3]int64
	for i := range v {
		v[i], _ = strconv.ParseInt(m[i+1], 10, 64)
	}
	return v[0], v[1], v[2]
}

type pickedLoc struct {
	World   string
	X, Y, Z int64
}

func pickJSON(t *testing.T, args ...string) ([]pickedLoc, string) {
	t.Helper()
	out, stderr, err := run(t, append([]string{"pick", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("pick %v: %v\n%s", args, err, stderr)
	}
	var locs []pickedLoc
	if err := json.Unmarshal([]byte(out), &locs); err != nil {
		t.Fatalf("pick --json printed %q: %v", out, err)
	}
	return locs, stderr
}

// TestPickSaveDefaults picks from a save with no region flags: the region
// is the circle round the middle of the finished chunks (the spawn lies
// off at their corner) that just covers them all.
func TestPickSaveDefaults(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	start := time.Now()
	locs, stderr := pickJSON(t, "--world", save, "-n", "20")
	took := time.Since(start)
	if len(locs) != 20 {
		t.Fatalf("pick printed %d locations, want 20", len(locs))
	}
	fin := finishedChunks(t, save)
	if len(fin) != 253 {
		t.Fatalf("the fixture holds %d finished chunks, want 253", len(fin))
	}
	radius, x, z := loggedCircle(t, stderr)
	if !strings.Contains(stderr, "finished_inside=253") || !strings.Contains(stderr, `from="the save (centre: the middle of the finished area`) {
		t.Errorf("log does not say the shape came from the finished area, with 253 finished chunks inside:\n%s", stderr)
	}
	// The centre is the middle of the finished chunks' box.
	box := anvil.ChunkBox{Min: fin[0], Max: fin[0]}
	for _, c := range fin {
		box.Min.X, box.Min.Z = min(box.Min.X, c.X), min(box.Min.Z, c.Z)
		box.Max.X, box.Max.Z = max(box.Max.X, c.X), max(box.Max.Z, c.Z)
	}
	centre := geom.Block{X: x, Z: z}.Chunk()
	if centre != box.Center() {
		t.Errorf("centre chunk %v, want the middle of %v", centre, box)
	}
	// The radius is the smallest (in chunks) that covers every finished chunk.
	covers := func(r int64) bool {
		c, err := geom.NewCircle(centre, r, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range fin {
			if !c.Contains(ch) {
				return false
			}
		}
		return true
	}
	if r := radius >> geom.ChunkShift; !covers(r) || covers(r-1) {
		t.Errorf("radius %d blocks (%d chunks): covers %v, one chunk less covers %v; want the smallest cover", radius, r, covers(r), covers(r-1))
	}
	circle, _ := geom.NewCircle(centre, radius>>geom.ChunkShift, 0)
	for _, l := range locs {
		if l.World != "world" {
			t.Errorf("location %+v: world %q, want \"world\"", l, l.World)
		}
		if b := (geom.Block{X: l.X, Z: l.Z}); !circle.Contains(b.Chunk()) {
			t.Errorf("location %v outside the logged circle", b)
		}
	}
	// Reading a 2 MB save and handing out 20 places takes well under a
	// second on a quiet machine; the bound leaves room for a busy one.
	if took > 30*time.Second {
		t.Errorf("pick took %v", took)
	}
}

// levelDat returns an uncompressed level.dat (which the reader accepts)
// with the spawn and the world border given.
func levelDat(spawnX, spawnZ int32, borderX, borderZ, borderSize float64) []byte {
	var b []byte
	name := func(tag byte, n string) {
		b = append(b, tag)
		b = binary.BigEndian.AppendUint16(b, uint16(len(n)))
		b = append(b, n...)
	}
	name(10, "") // the root compound
	name(10, "Data")
	for _, f := range []struct {
		n string
		v int32
	}{{"SpawnX", spawnX}, {"SpawnY", 70}, {"SpawnZ", spawnZ}} {
		name(3, f.n)
		b = binary.BigEndian.AppendUint32(b, uint32(f.v))
	}
	for _, f := range []struct {
		n string
		v float64
	}{{"BorderCenterX", borderX}, {"BorderCenterZ", borderZ}, {"BorderSize", borderSize}} {
		name(6, f.n)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(f.v))
	}
	return append(b, 0, 0) // end of Data, end of the root
}

func writeLevel(t *testing.T, save string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(save, "level.dat"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPickSaveSpawn keeps the spawn of level.dat as the centre when it
// lies in the finished area.
func TestPickSaveSpawn(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	writeLevel(t, save, levelDat(200, -90, 0, 0, 59_999_968))
	_, stderr := pickJSON(t, "--world", save, "-n", "3")
	r, x, z := loggedCircle(t, stderr)
	if x != 200 || z != -90 || !strings.Contains(stderr, "centre: the spawn;") {
		t.Errorf("centre (%d, %d), want the spawn (200, -90):\n%s", x, z, stderr)
	}
	// From chunk (12, -6) the farthest finished chunks are (25, -11) and
	// (25, -1): 13² + 5² = 194, so a radius of 14 chunks (196).
	if r != 14*16 {
		t.Errorf("radius %d blocks, want %d", r, 14*16)
	}
}

// TestPickSaveBorder cuts the radius down to the world border, and leaves
// a spawn outside the border.
func TestPickSaveBorder(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	// Blocks x 132..331, z -188..11; the spawn 0, 0 lies outside.
	writeLevel(t, save, levelDat(0, 0, 232, -88, 200))
	locs, stderr := pickJSON(t, "--world", save, "-n", "5")
	r, x, z := loggedCircle(t, stderr)
	if r != 5*16 || (geom.Block{X: x, Z: z}).Chunk() != (geom.Chunk{X: 14, Z: -6}) ||
		!strings.Contains(stderr, "cut down to stay inside the world border") || !strings.Contains(stderr, ", inside the world border") {
		t.Errorf("logged circle %d around (%d, %d), want 80 around chunk (14, -6), cut by the border:\n%s", r, x, z, stderr)
	}
	border := anvil.Border{CenterX: 232, CenterZ: -88, Size: 200}
	for _, l := range locs {
		if !border.Contains(geom.Block{X: l.X, Z: l.Z}) {
			t.Errorf("location %+v outside the world border", l)
		}
	}
}

// TestPickSaveFlags: --x/--z/--radius replace what they name.
func TestPickSaveFlags(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	locs, stderr := pickJSON(t, "--world", save, "-n", "5", "--x", "200", "--z", "-100", "--radius", "64")
	if r, x, z := loggedCircle(t, stderr); r != 64 || x != 200 || z != -100 || !strings.Contains(stderr, `from="the flags (`) {
		t.Errorf("logged circle %d around (%d, %d), want 64 around (200, -100) from the flags:\n%s", r, x, z, stderr)
	}
	for _, l := range locs {
		if dx, dz := l.X-200, l.Z+100; dx*dx+dz*dz > 100*100 {
			t.Errorf("location %+v far outside the requested circle", l)
		}
	}
	// --radius alone keeps the derived centre.
	_, stderr = pickJSON(t, "--world", save, "-n", "1", "--radius", "96")
	if r, x, z := loggedCircle(t, stderr); r != 96 || (geom.Block{X: x, Z: z}).Chunk() != (geom.Chunk{X: 14, Z: -6}) {
		t.Errorf("--radius 96: logged circle %d around (%d, %d), want 96 around the middle of the finished area:\n%s", r, x, z, stderr)
	}
}

// TestPickSaveConfigShape: a shape the configuration file writes is kept.
func TestPickSaveConfigShape(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	cfg := filepath.Join(t.TempDir(), "rtp.yml")
	text := "regions:\n  default:\n    shape:\n      kind: square\n      center_x: 100\n      center_z: -50\n      radius: 48\n"
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := pickJSON(t, "--world", save, "--config", cfg, "-n", "2")
	if !strings.Contains(stderr, `shape="square of radius 48 blocks around block (100, -50)"`) ||
		!strings.Contains(stderr, `from="the configuration file"`) {
		t.Errorf("the file's square is not the region's shape:\n%s", stderr)
	}
}

func TestPickSaveErrors(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	// Keep only the unfinished chunks of the 1.21.1 file: clear the
	// header slots of the finished ones.
	raw, err := os.ReadFile(fixtureFile(t, "prismarine-provider-anvil/1.21.1/r.0.0.mca"))
	if err != nil {
		t.Fatal(err)
	}
	unfinishedSave := saveWith(t, map[string][]byte{"r.0.0.mca": raw})
	cleared := 0
	for _, c := range finishedChunks(t, unfinishedSave) {
		binary.BigEndian.PutUint32(raw[4*anvil.Slot(c):], 0)
		cleared++
	}
	if cleared != 16 {
		t.Fatalf("cleared %d finished chunks, want 16", cleared)
	}
	unfinishedSave = saveWith(t, map[string][]byte{"r.0.0.mca": raw})
	emptySave := saveWith(t, map[string][]byte{"r.0.0.mca": make([]byte, anvil.HeaderSize)})
	levelOnly := t.TempDir()
	writeLevel(t, levelOnly, levelDat(0, 0, 0, 0, 1000))

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no nether", []string{"--world", save, "--dimension", "nether"},
			[]string{"no nether in " + save + " (no dimensions/minecraft/the_nether/region/ nor DIM-1/region/",
				"the save's dimensions: overworld (region/, 1 region file)"}},
		{"no end", []string{"--world", save, "--dimension", "minecraft:the_end"},
			[]string{"no end in", "DIM1/region/", "overworld (region/, 1 region file)"}},
		{"no custom dimension", []string{"--world", save, "--dimension", "mymod:mining"},
			[]string{"no mymod:mining in", "no dimensions/mymod/mining/region/;", "overworld (region/, 1 region file)"}},
		{"no region folder", []string{"--world", levelOnly},
			[]string{"no overworld in " + levelOnly, "the save has no dimension, only level.dat"}},
		{"nothing finished", []string{"--world", unfinishedSave},
			[]string{"holds no finished chunk", "1 region file, 209 chunks saved, "}},
		{"empty region file", []string{"--world", emptySave},
			[]string{"holds no finished chunk", "1 region file, 0 chunks saved, 0 finished"}},
		{"region off the finished area", []string{"--world", save, "--x", "100000", "--z", "100000", "--radius", "64"},
			[]string{`region "default", circle of radius 64 blocks around block (100000, 100000), holds no finished chunk`,
				"0 of its 49 chunks saved", "253 chunks saved", "chunks x 3..25, z -11..-1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, stderr, err := run(t, append([]string{"pick", "-n", "1"}, c.args...)...)
			if ExitCode(err) != 1 {
				t.Fatalf("pick %v: %v (exit %d), want exit 1\n%s", c.args, err, ExitCode(err), stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the error took %v: it must come before anything runs", took)
			}
		})
	}
}

func TestSaveFlagsNeedWorld(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"pick", "--x", "5"}, {"serve", "--radius", "100"}, {"pregen", "--z", "1"}} {
		if _, _, err := run(t, args...); ExitCode(err) != 2 || !strings.Contains(err.Error(), "needs --world") {
			t.Errorf("rtp %v: %v (exit %d), want a usage error saying it needs --world", args, err, ExitCode(err))
		}
	}
}

// TestServeSaveWorld serves a save with default flags: the world is
// "world" in every answer and the region is the derived one.
func TestServeSaveWorld(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	s := startServe(t, "--world", save, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	c := client.New(s.addr, client.Options{})
	waitReady(t, c)
	regs, err := c.Regions(t.Context())
	if err != nil || len(regs) != 1 || regs[0].World != "world" {
		t.Fatalf("Regions = %+v, %v; want one region on \"world\"", regs, err)
	}
	tp, err := c.Teleport(t.Context(), "default", client.TeleportRequest{Player: "alex", Wait: 20 * time.Second})
	if err != nil {
		t.Fatalf("Teleport: %v\n%s", err, s.log())
	}
	if tp.World != "world" {
		t.Errorf("Teleport answered world %q, want \"world\"", tp.World)
	}
	radius, x, z := loggedCircle(t, s.log())
	if dx, dz := tp.X-x, tp.Z-z; dx*dx+dz*dz > (radius+32)*(radius+32) {
		t.Errorf("teleport to (%d, %d) outside the logged circle %d around (%d, %d)", tp.X, tp.Z, radius, x, z)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("serve: %v\n%s", err, s.log())
	}
}

// TestServeSaveErrors: serve refuses to start on a save it cannot serve.
func TestServeSaveErrors(t *testing.T) {
	t.Parallel()
	save := fixtureSave(t, fixture116)
	for _, args := range [][]string{
		{"--dimension", "nether"},
		{"--x", "-90000", "--radius", "32"},
	} {
		out, stderr, err := run(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--world", save}, args...)...)
		if ExitCode(err) != 1 || strings.Contains(out, "listening") {
			t.Errorf("serve %v: %v (exit %d), printed %q; want exit 1 before listening\n%s", args, err, ExitCode(err), out, stderr)
		}
	}
	_, _, err := run(t, "serve", "--listen", "127.0.0.1:0", "--world", save, "--dimension", "nether")
	if err == nil || !strings.Contains(err.Error(), "DIM-1/region") {
		t.Errorf("serve --dimension nether: %v, want an error naming DIM-1/region", err)
	}
}

// TestBorderRoom checks the room inside a border by brute force over
// blocks.
func TestBorderRoom(t *testing.T) {
	for _, b := range []anvil.Border{
		{Size: 64}, {Size: 65}, {CenterX: 8.5, CenterZ: -3, Size: 100}, {Size: 16}, {Size: 10},
		{CenterX: 1000, Size: 320},
	} {
		for cx := int64(-8); cx <= 70; cx += 3 {
			c := geom.Chunk{X: cx, Z: -1}
			got := borderRoom(b, c)
			// The largest r such that every chunk within r (Chebyshev) is
			// wholly inside: checked block by block.
			inside := func(ch geom.Chunk) bool {
				o := ch.Origin()
				for _, d := range [][2]int64{{0, 0}, {15, 0}, {0, 15}, {15, 15}} {
					if !b.Contains(geom.Block{X: o.X + d[0], Z: o.Z + d[1]}) {
						return false
					}
				}
				return true
			}
			want := int64(-1)
			for r := int64(0); r < 200; r++ {
				ok := true
				for _, d := range [][2]int64{{-r, 0}, {r, 0}, {0, -r}, {0, r}} {
					ok = ok && inside(geom.Chunk{X: c.X + d[0], Z: c.Z + d[1]})
				}
				if !ok {
					break
				}
				want = r
			}
			if got != want {
				t.Errorf("borderRoom(%+v, %v) = %d, want %d", b, c, got, want)
			}
		}
	}
}
