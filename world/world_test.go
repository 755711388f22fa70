package world

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
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

// TestChunkPointersFirst pins the field order of Chunk: the garbage
// collector scans an object up to its last pointer, so every field from
// Columns on must be free of pointers, or each resident chunk costs the
// collector 16 KiB of scanning per cycle.
func TestChunkPointersFirst(t *testing.T) {
	typ := reflect.TypeFor[Chunk]()
	cols, _ := typ.FieldByName("Columns")
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Offset >= cols.Offset && hasPointers(f.Type) {
			t.Errorf("Chunk.%s (offset %d) holds pointers and comes at or after Columns (offset %d)", f.Name, f.Offset, cols.Offset)
		}
	}
	if cols.Offset == 0 {
		t.Errorf("Columns is the first field; the pointer fields must come before it")
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
