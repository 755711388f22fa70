package anvil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// NBT tag types.
const (
	tagEnd byte = iota
	tagByte
	tagShort
	tagInt
	tagLong
	tagFloat
	tagDouble
	tagByteArray
	tagString
	tagList
	tagCompound
	tagIntArray
	tagLongArray
)

// maxDepth bounds compound and list nesting, as the game does.
const maxDepth = 512

// ErrCorrupt is wrapped by every error about malformed data: a bad region
// header, a payload that does not decompress, NBT that does not parse, or a
// chunk whose parts contradict each other.
var ErrCorrupt = errors.New("anvil: corrupt data")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

var errTruncated = corrupt("nbt: truncated")

// cursor reads NBT in place. It never allocates from a length it has read:
// every length is checked against the bytes that remain before it is used,
// and skipping an array is a bounds check and an addition.
type cursor struct {
	b   []byte
	off int
}

// need reports whether n more bytes remain.
func (c *cursor) need(n int) error {
	if n < 0 || n > len(c.b)-c.off {
		return errTruncated
	}
	return nil
}

func (c *cursor) u8() (byte, error) {
	if c.off >= len(c.b) {
		return 0, errTruncated
	}
	v := c.b[c.off]
	c.off++
	return v, nil
}

func (c *cursor) u16() (uint16, error) {
	if len(c.b)-c.off < 2 {
		return 0, errTruncated
	}
	v := binary.BigEndian.Uint16(c.b[c.off:])
	c.off += 2
	return v, nil
}

func (c *cursor) u32() (uint32, error) {
	if len(c.b)-c.off < 4 {
		return 0, errTruncated
	}
	v := binary.BigEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v, nil
}

// str reads a string payload and returns it as a view into the input.
func (c *cursor) str() ([]byte, error) {
	n, err := c.u16()
	if err != nil {
		return nil, err
	}
	if err := c.need(int(n)); err != nil {
		return nil, err
	}
	s := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return s, nil
}

// header reads a named tag's type and name; the name is a view into the
// input. After tagEnd there is no name.
func (c *cursor) header() (byte, []byte, error) {
	t, err := c.u8()
	if err != nil || t == tagEnd {
		return t, nil, err
	}
	if t > tagLongArray {
		return 0, nil, corrupt("nbt: unknown tag type %d at offset %d", t, c.off-1)
	}
	name, err := c.str()
	return t, name, err
}

// arrayLen reads an array or list length and checks that count elements of
// at least size bytes each fit in what remains.
func (c *cursor) arrayLen(size int) (int, error) {
	v, err := c.u32()
	if err != nil {
		return 0, err
	}
	n := int(int32(v))
	if n < 0 {
		return 0, corrupt("nbt: negative length %d at offset %d", n, c.off-4)
	}
	if size > 0 && n > (len(c.b)-c.off)/size {
		return 0, errTruncated
	}
	return n, nil
}

// array reads an array payload of elements of size bytes and returns the
// offset of its first element and its length; the cursor moves past it.
func (c *cursor) array(size int) (view, error) {
	n, err := c.arrayLen(size)
	if err != nil {
		return view{}, err
	}
	v := view{off: c.off, n: n}
	c.off += n * size
	return v, nil
}

// fixedSize is the payload size of the fixed-size tags, 0 for the others.
var fixedSize = [...]int{tagByte: 1, tagShort: 2, tagInt: 4, tagLong: 8, tagFloat: 4, tagDouble: 8}

// minSize is the smallest payload of each tag type (for list bounds).
var minSize = [...]int{tagEnd: 0, tagByte: 1, tagShort: 2, tagInt: 4, tagLong: 8, tagFloat: 4, tagDouble: 8,
	tagByteArray: 4, tagString: 2, tagList: 5, tagCompound: 1, tagIntArray: 4, tagLongArray: 4}

// skip moves past a payload of type t.
func (c *cursor) skip(t byte, depth int) error {
	switch t {
	case tagByte, tagShort, tagInt, tagLong, tagFloat, tagDouble:
		n := fixedSize[t]
		if err := c.need(n); err != nil {
			return err
		}
		c.off += n
		return nil
	case tagByteArray:
		_, err := c.array(1)
		return err
	case tagIntArray:
		_, err := c.array(4)
		return err
	case tagLongArray:
		_, err := c.array(8)
		return err
	case tagString:
		_, err := c.str()
		return err
	case tagList:
		return c.skipList(depth)
	case tagCompound:
		return c.skipCompound(depth)
	}
	return corrupt("nbt: unknown tag type %d", t)
}

// list reads a list header: element type and count (bounded by the input).
func (c *cursor) list() (byte, int, error) {
	et, err := c.u8()
	if err != nil {
		return 0, 0, err
	}
	if et > tagLongArray {
		return 0, 0, corrupt("nbt: unknown list element type %d at offset %d", et, c.off-1)
	}
	n, err := c.arrayLen(minSize[et])
	if err != nil {
		return 0, 0, err
	}
	if et == tagEnd && n > 0 {
		return 0, 0, corrupt("nbt: list of %d elements without a type", n)
	}
	return et, n, nil
}

func (c *cursor) skipList(depth int) error {
	if depth >= maxDepth {
		return corrupt("nbt: nested deeper than %d", maxDepth)
	}
	et, n, err := c.list()
	if err != nil {
		return err
	}
	if et >= tagByte && et <= tagDouble {
		c.off += n * fixedSize[et] // list checked the bound
		return nil
	}
	for range n {
		if err := c.skip(et, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c *cursor) skipCompound(depth int) error {
	if depth >= maxDepth {
		return corrupt("nbt: nested deeper than %d", maxDepth)
	}
	for {
		t, _, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		if err := c.skip(t, depth+1); err != nil {
			return err
		}
	}
}

// root reads the root tag header, which must open a compound.
func (c *cursor) root() error {
	t, _, err := c.header()
	if err != nil {
		return err
	}
	if t != tagCompound {
		return corrupt("nbt: root tag is type %d, want a compound", t)
	}
	return nil
}

// intValue reads a payload of an integer tag type as int64; ok is false for
// other types (which are skipped).
func (c *cursor) intValue(t byte, depth int) (int64, bool, error) {
	switch t {
	case tagByte:
		v, err := c.u8()
		return int64(int8(v)), err == nil, err
	case tagShort:
		v, err := c.u16()
		return int64(int16(v)), err == nil, err
	case tagInt:
		v, err := c.u32()
		return int64(int32(v)), err == nil, err
	case tagLong:
		if err := c.need(8); err != nil {
			return 0, false, err
		}
		v := binary.BigEndian.Uint64(c.b[c.off:])
		c.off += 8
		return int64(v), true, nil
	}
	return 0, false, c.skip(t, depth)
}

// floatValue reads a float or double payload; other types are skipped.
func (c *cursor) floatValue(t byte, depth int) (float64, bool, error) {
	switch t {
	case tagFloat:
		v, err := c.u32()
		return float64(math.Float32frombits(v)), err == nil, err
	case tagDouble:
		if err := c.need(8); err != nil {
			return 0, false, err
		}
		v := binary.BigEndian.Uint64(c.b[c.off:])
		c.off += 8
		return math.Float64frombits(v), true, nil
	}
	v, ok, err := c.intValue(t, depth)
	return float64(v), ok, err
}

// view locates an array inside the decompressed chunk: the offset of its
// first element and its element count.
type view struct {
	off, n int
}
