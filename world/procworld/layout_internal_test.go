package procworld

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/rtpengine/rtp/world"
)

// lastPointer returns the offset just past the last word of t that may
// hold a pointer: how far into an object of type t the garbage collector
// scans. 0 for a type without pointers.
func lastPointer(t reflect.Type) uintptr {
	switch t.Kind() {
	case reflect.Pointer, reflect.UnsafePointer, reflect.Map, reflect.Chan, reflect.Func:
		return t.Size()
	case reflect.String, reflect.Interface, reflect.Slice:
		return t.Size()
	case reflect.Array:
		if t.Len() == 0 {
			return 0
		}
		e := lastPointer(t.Elem())
		if e == 0 {
			return 0
		}
		return uintptr(t.Len()-1)*t.Elem().Size() + e
	case reflect.Struct:
		var end uintptr
		for i := range t.NumField() {
			f := t.Field(i)
			if e := lastPointer(f.Type); e > 0 {
				end = max(end, f.Offset+e)
			}
		}
		return end
	}
	return 0
}

// TestCompactChunk pins what a loaded chunk costs: a profile of 14 bytes
// (it is derived per read, not kept), and a chunk that keeps no column
// summaries or profiles, well under a kilobyte beside its share of the
// tile (every ready place keeps one resident). It also checks the
// helper: a pointer behind an array is found.
func TestCompactChunk(t *testing.T) {
	if got := unsafe.Sizeof(profile{}); got != 14 {
		t.Errorf("a profile is %d bytes, want 14", got)
	}
	if got := unsafe.Sizeof(chunk{}); got > 512 {
		t.Errorf("a loaded chunk is %d bytes, want at most 512", got)
	}
	if end := lastPointer(reflect.TypeFor[world.Chunk]()); end > 128 {
		t.Errorf("world.Chunk has pointers up to byte %d; want all in the first 128", end)
	}
	type tail struct {
		Cols [64]int64
		P    *int
	}
	if got, want := lastPointer(reflect.TypeFor[tail]()), unsafe.Sizeof(tail{}); got != want {
		t.Errorf("lastPointer(tail) = %d, want %d", got, want)
	}
}

// TestPalette checks the palette a profile names its blocks by: air at 0,
// no block twice, every block mapping back to its index, and within a
// byte; and that set and Block round-trip every block of it at every
// layer.
func TestPalette(t *testing.T) {
	if len(palette) < 20 || len(palette) > 256 || palette[0] != world.Air {
		t.Fatalf("palette of %d blocks, first %v; want air first and at most 256", len(palette), palette[0])
	}
	for i, b := range palette {
		if got := paletteIndex(b); int(got) != i {
			t.Errorf("paletteIndex(%v) = %d, want %d", b, got, i)
		}
	}
	for _, b := range []world.BlockID{bedrock, stone, deepslate, dirt, grassBlock, sand, sandstone, gravel,
		clay, mud, snowBlock, powderSnowB, basalt, magma, water, lava, oakLeaves, oakLog, cactus,
		shortGrass, fern, deadBush, blueOrchid, flowers[0], flowers[len(flowers)-1]} {
		if i := paletteIndex(b); i == 0 || palette[i] != b {
			t.Errorf("block %v is not in the palette (index %d)", b, i)
		}
	}
	col := world.Column{Top: 100, Ground: grassBlock}
	for i, want := range palette[1:] {
		var p profile
		other := palette[(i+2)%len(palette)]
		p.set(layer{bottom: 90, block: other}, layer{bottom: 80, block: want}, layer{bottom: 70, block: other}, layer{bottom: 60, block: want})
		for y, w := range map[int]world.BlockID{95: other, 85: want, 75: other, 65: want, 50: stone, -5: deepslate} {
			if got := blockIn(&col, &p, y); got != w {
				t.Fatalf("layers of %v: block at %d is %v, want %v", want, y, got, w)
			}
		}
	}
}
