package world

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/geom"
)

func TestInterner(t *testing.T) {
	in := NewInterner("a", "b")
	if in.ID("a") != 0 || in.ID("b") != 1 || in.ID("c") != 2 || in.ID("a") != 0 {
		t.Fatal("IDs are not dense and stable")
	}
	if in.Name(2) != "c" || in.Name(99) != "" || in.Len() != 3 {
		t.Fatalf("Name(2) = %q, Name(99) = %q, Len() = %d", in.Name(2), in.Name(99), in.Len())
	}
	if _, ok := in.Lookup("zzz"); ok || in.Len() != 3 {
		t.Fatal("Lookup added a name")
	}
	// Concurrent interning of the same names yields one ID per name.
	var wg sync.WaitGroup
	ids := make([][]uint32, 8)
	for g := range ids {
		wg.Go(func() {
			for i := range 200 {
				ids[g] = append(ids[g], in.ID(string(rune('A'+i%50))))
			}
		})
	}
	wg.Wait()
	for g := 1; g < len(ids); g++ {
		for i := range ids[g] {
			if ids[g][i] != ids[0][i] {
				t.Fatalf("goroutine %d got ID %d for a name goroutine 0 got as %d", g, ids[g][i], ids[0][i])
			}
		}
	}
}

func TestWellKnownBlocks(t *testing.T) {
	if Block("minecraft:air") != Air || Block("minecraft:cave_air") != CaveAir || Block("minecraft:void_air") != VoidAir {
		t.Fatal("air blocks do not have their fixed IDs")
	}
	if !Air.IsAir() || Block("minecraft:stone").IsAir() {
		t.Fatal("IsAir is wrong")
	}
	unknown := Block("somemod:glowing_thing[lit=true]")
	if unknown.String() != "somemod:glowing_thing[lit=true]" {
		t.Fatalf("unknown block name round trip = %q", unknown.String())
	}
	if Biome("minecraft:plains").String() != "minecraft:plains" {
		t.Fatal("biome name round trip")
	}
}

func TestIsFluid(t *testing.T) {
	for name, want := range map[string]bool{
		"minecraft:water[level=0]":                               true,
		"minecraft:lava[level=0]":                                true,
		"minecraft:kelp_plant":                                   true,
		"minecraft:oak_stairs[waterlogged=true]":                 true,
		"minecraft:oak_stairs[waterlogged=false]":                false,
		"minecraft:stone":                                        false,
		"minecraft:grass_block[snowy=false]":                     false,
		"somemod:acid":                                           false,
		"minecraft:oak_leaves[persistent=true,waterlogged=true]": true,
	} {
		if got := IsFluid(Block(name)); got != want {
			t.Errorf("IsFluid(%q) = %v, want %v", name, got, want)
		}
		if got := IsFluid(Block(name)); got != want { // cached answer
			t.Errorf("IsFluid(%q) second call = %v, want %v", name, got, want)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				b := Block("test:block_" + string(rune('a'+g)) + string(rune('a'+i%26)) + "[waterlogged=true]")
				if !IsFluid(b) {
					t.Errorf("IsFluid(%v) = false", b)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestIsFluidConcurrent: IsFluid caches answers for IDs met for the first
// time while other goroutines read the cache; under -race this fails if
// a published table is ever written in place. Each answer stays right.
func TestIsFluidConcurrent(t *testing.T) {
	const goroutines, perG = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				name := fmt.Sprintf("rtp:fluid_test_%d_%d", g, i)
				if i%2 == 1 {
					name += "[waterlogged=true]"
				}
				b := Block(name)
				if got, want := IsFluid(b), i%2 == 1; got != want {
					t.Errorf("IsFluid(%s) = %v, want %v", name, got, want)
					return
				}
				// Read back IDs another goroutine may be adding.
				_ = IsFluid(b - 1)
				_ = IsFluid(Block("minecraft:water"))
			}
		})
	}
	wg.Wait()
}

// TestStoredPointersFirst pins the layout of a chunk NewChunk makes: the
// garbage collector scans an object up to its last pointer, so the 5 KiB
// of column summaries must come after every pointer of the chunk's head
// and hold none, or each stored chunk costs the collector that much
// scanning per cycle.
func TestStoredPointersFirst(t *testing.T) {
	typ := reflect.TypeFor[stored]()
	cols, _ := typ.FieldByName("cols")
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Offset >= cols.Offset && hasPointers(f.Type) {
			t.Errorf("stored.%s (offset %d) holds pointers and comes at or after the columns (offset %d)", f.Name, f.Offset, cols.Offset)
		}
	}
	if cols.Offset == 0 {
		t.Errorf("the columns are the first field; the chunk's head must come before them")
	}
	c := NewChunk(geom.Chunk{X: 3, Z: -4}, -64, 320)
	if c.Columns == nil || c.Pos != (geom.Chunk{X: 3, Z: -4}) || c.MinY != -64 || c.MaxY != 320 {
		t.Fatalf("NewChunk = %+v", c)
	}
	c.Columns[5*ChunkSize+2].Top = 70
	if got := c.Column(2, 5).Top; got != 70 {
		t.Errorf("Column(2, 5).Top = %d after storing 70", got)
	}
	if got := c.AllColumns()[5*ChunkSize+2].Top; got != 70 {
		t.Errorf("AllColumns()[82].Top = %d after storing 70", got)
	}
}

// derivedColumns is a ColumnReader whose top is x + 16*z.
type derivedColumns struct{}

func (derivedColumns) Column(x, z int) Column { return Column{Top: int16(x + ChunkSize*z)} }

// TestDerivedColumns checks that Column and AllColumns read a chunk's
// Summaries when it stores no columns, and give zero summaries for a chunk
// with neither.
func TestDerivedColumns(t *testing.T) {
	c := &Chunk{Summaries: derivedColumns{}}
	all := c.AllColumns()
	for z := range ChunkSize {
		for x := range ChunkSize {
			want := int16(x + ChunkSize*z)
			if got := c.Column(x, z).Top; got != want {
				t.Fatalf("Column(%d, %d).Top = %d, want %d", x, z, got, want)
			}
			if got := all[z*ChunkSize+x].Top; got != want {
				t.Fatalf("AllColumns()[%d].Top = %d, want %d", z*ChunkSize+x, got, want)
			}
		}
	}
	if got := (&Chunk{}).Column(3, 3); got != (Column{}) {
		t.Errorf("a chunk without columns: Column = %+v, want zero", got)
	}
}

// hasPointers reports whether a value of type t holds any pointer the
// collector must scan.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Chan, reflect.Func,
		reflect.Slice, reflect.String, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
