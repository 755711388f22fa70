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
// garbage collector does not scan 16 KiB and more of each of the
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
