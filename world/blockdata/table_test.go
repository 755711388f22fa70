package blockdata

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
)

// check decodes every table and reports the first corruption (for tests).
func check() error {
	for i := range tables {
		t := &tables[i]
		t.modern.once.Do(t.modern.decode)
		t.legacy.once.Do(t.legacy.decode)
		if err := errors.Join(t.modern.err, t.legacy.err); err != nil {
			return err
		}
	}
	return nil
}

func TestGeneratedDataDecodes(t *testing.T) {
	if err := check(); err != nil {
		t.Fatal(err)
	}
	if dataSetName != "minecraft-data" || dataSetVersion != "3.119.0" {
		t.Errorf("data set %s %s", dataSetName, dataSetVersion)
	}
}

// table returns the table named name.
func table(t *testing.T, name string) *Table {
	t.Helper()
	for _, tb := range Tables() {
		if tb.Name() == name {
			return tb
		}
	}
	t.Fatalf("no table %q", name)
	return nil
}

// atLeast reports whether the table covers version v or later (by the
// DataVersion of the table named v).
func atLeast(t *testing.T, tb *Table, v string) bool {
	lo, _ := table(t, v).DataVersions()
	tlo, _ := tb.DataVersions()
	return tlo >= lo
}

func TestTablesList(t *testing.T) {
	ts := Tables()
	if len(ts) < 30 {
		t.Fatalf("%d tables, want one per data set from 1.8 on", len(ts))
	}
	if ts[0].Name() != "1.8" || !slices.Equal(ts[0].Versions(), []string{"1.8"}) {
		t.Errorf("oldest table %s %v", ts[0].Name(), ts[0].Versions())
	}
	if Newest() != ts[len(ts)-1] {
		t.Error("Newest is not the last table")
	}
	names := map[string]bool{}
	for i, tb := range ts {
		if tb.Index() != i {
			t.Errorf("%s: Index %d, at %d", tb.Name(), tb.Index(), i)
		}
		if names[tb.Name()] {
			t.Errorf("table name %s twice", tb.Name())
		}
		names[tb.Name()] = true
		vs := tb.Versions()
		if len(vs) == 0 || vs[0] != tb.Name() {
			t.Errorf("%s: versions %v", tb.Name(), vs)
		}
		lo, hi := tb.DataVersions()
		if lo >= hi {
			t.Errorf("%s: empty range [%d, %d)", tb.Name(), lo, hi)
		}
		if i+1 < len(ts) {
			if next, _ := ts[i+1].DataVersions(); next != hi {
				t.Errorf("%s: range ends at %d, next table starts at %d", tb.Name(), hi, next)
			}
		} else if hi != math.MaxInt32 {
			t.Errorf("newest table ends at %d", hi)
		}
		if ForDataVersion(lo) != tb || ForDataVersion(hi-1) != tb {
			t.Errorf("%s: ForDataVersion of its own range gives another table", tb.Name())
		}
	}
	for _, v := range []string{"1.9", "1.12", "1.13", "1.16.2", "1.20.3", "1.21.11"} {
		if !names[v] {
			t.Errorf("no table %s", v)
		}
	}
	if vs := table(t, "1.12").Versions(); !slices.Equal(vs, []string{"1.12", "1.12.1", "1.12.2"}) {
		t.Errorf("1.12 table covers %v", vs)
	}
	// The slices are the caller's.
	ts[0] = nil
	Tables()[1].Versions()[0] = "changed"
	if Tables()[0] == nil || Tables()[1].Versions()[0] != Tables()[1].Name() {
		t.Error("callers can change the package's slices")
	}
}

func TestForDataVersion(t *testing.T) {
	tests := []struct {
		v    int32
		want string
	}{
		{math.MinInt32, "1.8"},
		{-1, "1.8"},
		{0, "1.8"}, // chunks saved before 1.9 have no DataVersion
		{1, "1.8"},
		{169, "1.9"}, // 1.9
		{1343, "1.12"},
		{1518, "1.12"},
		{1519, "1.13"},
		{1631, "1.13.2"},
		{2586, "1.16.2"}, // 1.16.5
		{4670, "1.21.9"},
		{4671, "1.21.11"},
	}
	for _, tt := range tests {
		if got := ForDataVersion(tt.v).Name(); got != tt.want {
			t.Errorf("ForDataVersion(%d) = %s, want %s", tt.v, got, tt.want)
		}
	}
	if ForDataVersion(math.MaxInt32) != Newest() || ForDataVersion(1_000_000) != Newest() {
		t.Error("a DataVersion past the newest must give Newest")
	}
}

// fact is a shape every table in [from, until) must give a state; the
// other tables must not know the state.
type fact struct {
	state string
	want  Shape
	from  string // oldest table name ("" from 1.8)
	until string // first table name without it ("" for none)
}

var facts = []fact{
	{"minecraft:air", Empty, "", ""},
	{"minecraft:cave_air", Empty, "", ""},
	{"minecraft:water[level=0]", Empty, "", ""},
	{"minecraft:lava", Empty, "", ""},
	{"minecraft:stone", Full, "", ""},
	{"minecraft:glass", Full, "", ""},
	{"minecraft:grass_block[snowy=false]", Full, "", ""},
	{"minecraft:sign[rotation=0,waterlogged=false]", Empty, "", "1.14"},
	{"minecraft:wall_sign[facing=north,waterlogged=false]", Empty, "", "1.14"},
	{"minecraft:oak_sign[rotation=0,waterlogged=false]", Empty, "1.14", ""},
	{"minecraft:oak_wall_sign[facing=north,waterlogged=false]", Empty, "1.14", ""},
	{"minecraft:white_banner[rotation=0]", Empty, "", ""},
	{"minecraft:stone_pressure_plate[powered=false]", Empty, "", ""},
	{"minecraft:moving_piston[facing=north,type=normal]", Empty, "", ""},
	{"minecraft:torch", Empty, "", ""},
	{"minecraft:grass", Empty, "", "1.20.3"},
	{"minecraft:short_grass", Empty, "1.20.3", ""},
	{"minecraft:oak_slab[type=bottom,waterlogged=false]", Floor(8), "", ""},
	{"minecraft:oak_slab[type=bottom,waterlogged=true]", Floor(8), "", ""},
	{"minecraft:oak_slab[type=top,waterlogged=false]", Floor(16), "", ""},
	{"minecraft:oak_slab[waterlogged=true,type=top]", Floor(16), "", ""},
	{"minecraft:oak_slab[type=double,waterlogged=false]", Full, "", ""},
	{"minecraft:oak_slab", Floor(8), "", ""}, // default: type=bottom
	{"minecraft:snow[layers=1]", Empty, "", ""},
	{"minecraft:snow", Empty, "", ""}, // default: layers=1
	{"minecraft:snow[layers=2]", Floor(2), "", ""},
	{"minecraft:snow[layers=7]", Floor(12), "", ""},
	{"minecraft:snow[layers=8]", Floor(14), "", ""},
	{"minecraft:white_carpet", Floor(1), "", ""},
	{"minecraft:farmland[moisture=7]", Floor(15), "", ""},
	{"minecraft:grass_path", Floor(15), "", "1.17"},
	{"minecraft:dirt_path", Floor(15), "1.17", ""},
	{"minecraft:soul_sand", Floor(14), "", ""},
	{"minecraft:oak_fence[east=false,north=false,south=false,waterlogged=false,west=false]", Partial, "", ""},
	{"minecraft:oak_fence[east=true,north=true,south=true,waterlogged=false,west=true]", Partial, "", ""},
	{"minecraft:cobblestone_wall", Partial, "", ""},
	{"minecraft:chest[facing=north,type=single,waterlogged=false]", Partial, "", ""},
	{"minecraft:oak_stairs[facing=east,half=bottom,shape=straight,waterlogged=false]", Partial, "", ""},
	{"minecraft:honey_block", Partial, "1.15", ""},
	// The state index is mixed radix over several properties.
	{"minecraft:oak_trapdoor[facing=south,half=bottom,open=false,powered=false,waterlogged=false]", Floor(3), "", ""},
	{"minecraft:oak_trapdoor[facing=south,half=top,open=false,powered=false,waterlogged=true]", Floor(16), "", ""},
	{"minecraft:oak_trapdoor[facing=south,half=top,open=true,powered=false,waterlogged=false]", Partial, "", ""},
	{"minecraft:oak_trapdoor", Floor(3), "", ""},
	{"minecraft:end_portal_frame[eye=false,facing=west]", Floor(13), "", ""},
	{"minecraft:end_portal_frame[eye=true,facing=west]", Partial, "", ""},
}

func TestStateFacts(t *testing.T) {
	for _, tb := range Tables() {
		for _, f := range facts {
			if f.from != "" && !atLeast(t, tb, f.from) || f.until != "" && atLeast(t, tb, f.until) {
				// Outside its versions the block (or that name of it) is unknown.
				if s, ok := tb.State(f.state); ok {
					t.Errorf("%s: State(%s) = %v, true; want unknown", tb.Name(), f.state, s)
				}
				continue
			}
			got, ok := tb.State(f.state)
			if !ok || got != f.want {
				t.Errorf("%s: State(%s) = %v, %v; want %v", tb.Name(), f.state, got, ok, f.want)
			}
		}
	}
}

func TestStateRejects(t *testing.T) {
	for _, tb := range []*Table{Tables()[0], table(t, "1.12"), table(t, "1.13"), Newest()} {
		for _, s := range []string{
			"",
			"stone",           // namespace required
			"Minecraft:stone", // namespaces are lower case
			"other:stone",     // only minecraft is known
			"minecraft:",      // no name
			"minecraft:no_such_block",
			"minecraft:standing_sign", // a legacy name is no state
			"minecraft:stone[]",
			"minecraft:oak_slab[type=sideways]",
			"minecraft:oak_slab[colour=red]",
			"minecraft:oak_slab[type=top,type=bottom]",
			"minecraft:oak_slab[type=top",
			"minecraft:oak_slab[type]",
			"minecraft:oak_slab[=top]",
			"minecraft:oak_slab[type=top,]",
			"minecraft:oak_slab[type=top]]",
			"minecraft:oak_slab[type=TOP]",
			"minecraft:stone[legacy_id=1]", // legacy needs both keys
			"minecraft:x[legacy_id=1a,legacy_data=0]",
			"minecraft:x[legacy_id=1,legacy_data=-1]",
			"minecraft:x[legacy_id=1,legacy_data=16]",
			"minecraft:x[legacy_id=1,legacy_data=0,legacy_id=2]",
			"minecraft:x[legacy_id=4095,legacy_data=0]", // unknown id
			"minecraft:x[legacy_id=1,legacy_data=0,]",
			"minecraft:x[legacy_id=1,legacy_data=0,snowy]",
			"minecraft:x[legacy_id=999999,legacy_data=0]",
		} {
			if got, ok := tb.State(s); ok {
				t.Errorf("%s: State(%q) = %v, true; want false", tb.Name(), s, got)
			}
		}
	}
}

func TestStateLegacy(t *testing.T) {
	for _, tb := range Tables() {
		tests := []struct {
			state string
			want  Shape
		}{
			{"minecraft:legacy[legacy_data=0,legacy_id=44]", Floor(8)},
			{"minecraft:legacy[legacy_data=8,legacy_id=44]", Floor(16)},
			{"minecraft:legacy[legacy_data=08,legacy_id=044]", Floor(16)},
			// Whatever the name and the other properties.
			{"minecraft:stone[legacy_data=0,legacy_id=78,snowy=true]", Empty},
			{"minecraft:air[legacy_data=0,legacy_id=1]", Full},
		}
		for _, tt := range tests {
			if got, ok := tb.State(tt.state); !ok || got != tt.want {
				t.Errorf("%s: State(%s) = %v, %v; want %v", tb.Name(), tt.state, got, ok, tt.want)
			}
		}
	}
}

func TestLegacy(t *testing.T) {
	type want struct {
		id, meta int
		shape    Shape
	}
	facts := []want{
		{0, 0, Empty}, {1, 0, Full}, {1, 6, Full}, {2, 0, Full},
		{44, 0, Floor(8)}, {44, 7, Floor(8)}, {44, 8, Floor(16)}, {44, 15, Floor(16)},
		{126, 0, Floor(8)}, {126, 8, Floor(16)},
		{36, 0, Empty}, // piston extension (moving piston)
		{70, 0, Empty}, {72, 0, Empty},
		{78, 0, Empty}, {78, 1, Floor(2)}, {78, 7, Floor(14)},
		{8, 0, Empty}, {9, 0, Empty}, {10, 0, Empty}, {11, 0, Empty},
		{20, 0, Full}, {60, 0, Floor(15)}, {88, 0, Floor(14)}, {171, 0, Floor(1)},
		{85, 0, Partial}, {54, 2, Partial}, {53, 0, Partial}, {139, 0, Partial},
	}
	for m := range 16 {
		facts = append(facts, want{63, m, Empty}, want{68, m, Empty}, want{50, m, Empty}, want{176, m, Empty})
	}
	for _, tb := range Tables() {
		for _, f := range facts {
			if got, ok := tb.Legacy(f.id, f.meta); !ok || got != f.shape {
				t.Errorf("%s: Legacy(%d, %d) = %v, %v; want %v", tb.Name(), f.id, f.meta, got, ok, f.shape)
			}
		}
		if name, ok := tb.LegacyName(44); !ok || name != "stone_slab" {
			t.Errorf("%s: LegacyName(44) = %q, %v", tb.Name(), name, ok)
		}
		if name, ok := tb.LegacyName(0); !ok || name != "air" {
			t.Errorf("%s: LegacyName(0) = %q, %v", tb.Name(), name, ok)
		}
		for _, id := range []int{-1, 4095, 4096, 1 << 40} {
			if _, ok := tb.LegacyName(id); ok {
				t.Errorf("%s: LegacyName(%d) known", tb.Name(), id)
			}
		}
		for _, a := range [][2]int{{-1, 0}, {4095, 0}, {4096, 0}, {1, -1}, {1, 16}} {
			if s, ok := tb.Legacy(a[0], a[1]); ok {
				t.Errorf("%s: Legacy(%d, %d) = %v, true; want false", tb.Name(), a[0], a[1], s)
			}
		}
	}
	// Ids added after 1.8 are known from 1.9 on, and the 1.13+ tables answer
	// from the 1.12 data.
	if _, ok := table(t, "1.8").Legacy(208, 0); ok {
		t.Error("1.8 knows the grass path (id 208), added in 1.9")
	}
	for _, name := range []string{"1.9", "1.12", "1.13", "1.21.11"} {
		if s, ok := table(t, name).Legacy(208, 0); !ok || s != Floor(15) {
			t.Errorf("%s: Legacy(208, 0) = %v, %v; want Floor(15)", name, s, ok)
		}
	}
	if s, ok := Newest().Legacy(251, 0); !ok || s != Full { // concrete, new in 1.12
		t.Errorf("newest: Legacy(251, 0) = %v, %v; want Full", s, ok)
	}
	if _, ok := table(t, "1.11").Legacy(251, 0); ok {
		t.Error("1.11 knows concrete (id 251), added in 1.12")
	}
}

func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for _, tb := range Tables() {
				if s, ok := tb.State("minecraft:oak_slab[type=top,waterlogged=false]"); !ok || s != Floor(16) {
					t.Errorf("goroutine %d: %s: %v, %v", i, tb.Name(), s, ok)
				}
				if s, ok := tb.Legacy(44, 8); !ok || s != Floor(16) {
					t.Errorf("goroutine %d: %s: %v, %v", i, tb.Name(), s, ok)
				}
			}
		})
	}
	wg.Wait()
}
