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

// TestLoadedPointersFirst pins the layout of a loaded chunk: every pointer
// in its first bytes, none behind its columns and profiles, so that the
// garbage collector does not scan 10 KiB and more of each of the
// thousands of chunks a busy server keeps resident.
func TestLoadedPointersFirst(t *testing.T) {
	size := unsafe.Sizeof(loaded{})
	end := lastPointer(reflect.TypeFor[loaded]())
	if end == 0 || end > 128 {
		t.Errorf("a loaded chunk of %d bytes has pointers up to byte %d; want all in the first 128", size, end)
	}
	if end := lastPointer(reflect.TypeFor[world.Chunk]()); end > 128 {
		t.Errorf("world.Chunk has pointers up to byte %d; want all in the first 128", end)
	}
	// The helper itself: a pointer behind an array is found.
	type tail struct {
		Cols [64]int64
		P    *int
	}
	if got, want := lastPointer(reflect.TypeFor[tail]()), unsafe.Sizeof(tail{}); got != want {
		t.Errorf("lastPointer(tail) = %d, want %d", got, want)
	}
}

// TestCompactProfiles pins what a loaded chunk costs: a profile of 14
// bytes, and the whole chunk within a 10 KiB allocation (every ready place
// keeps one resident).
func TestCompactProfiles(t *testing.T) {
	if got := unsafe.Sizeof(profile{}); got != 14 {
		t.Errorf("a profile is %d bytes, want 14", got)
	}
	if got := unsafe.Sizeof(loaded{}); got > 10<<10 {
		t.Errorf("a loaded chunk is %d bytes, want at most 10 KiB", got)
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
	var l loaded
	b := (*blocks)(&l)
	col := l.chunk.Column(3, 5)
	col.Top, col.Ground = 100, grassBlock
	for i, want := range palette[1:] {
		p := &l.cols[5*world.ChunkSize+3]
		other := palette[(i+2)%len(palette)]
		p.set(layer{bottom: 90, block: other}, layer{bottom: 80, block: want}, layer{bottom: 70, block: other}, layer{bottom: 60, block: want})
		for y, w := range map[int]world.BlockID{95: other, 85: want, 75: other, 65: want, 50: stone, -5: deepslate} {
			if got := b.Block(3, y, 5); got != w {
				t.Fatalf("layers of %v: block at %d is %v, want %v", want, y, got, w)
			}
		}
	}
}
