package anvil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world"
)

// Region file layout: an 8 KiB header (1024 locations, then 1024
// timestamps), then 4 KiB sectors. A location is sector offset << 8 |
// sector count; a chunk's sectors start with its length (counting the
// scheme byte), its compression scheme, then the payload.
const (
	SectorSize = 4096
	HeaderSize = 2 * SectorSize
	// ChunksPerRegion is the number of chunk slots in a region file.
	ChunksPerRegion = geom.RegionSize * geom.RegionSize
)

// Slot returns the header slot of chunk c in its region file.
func Slot(c geom.Chunk) int {
	x, z := c.Local()
	return x + z*geom.RegionSize
}

// SlotChunk returns the chunk at slot i of region r.
func SlotChunk(r geom.Region, i int) geom.Chunk {
	o := r.Origin()
	return geom.Chunk{X: o.X + int64(i%geom.RegionSize), Z: o.Z + int64(i/geom.RegionSize)}
}

// RegionName returns the file name of region r ("r.<x>.<z>.mca").
func RegionName(r geom.Region) string { return fmt.Sprintf("r.%d.%d.mca", r.X, r.Z) }

// ExternalName returns the file name holding chunk c's oversized payload
// ("c.<x>.<z>.mcc").
func ExternalName(c geom.Chunk) string { return fmt.Sprintf("c.%d.%d.mcc", c.X, c.Z) }

// Header is a region file's header, a plain value. The zero value is an
// empty region.
type Header struct {
	// Locations hold sector offset << 8 | sector count per slot; 0 means
	// the chunk was never saved.
	Locations [ChunksPerRegion]uint32
	// Timestamps hold each chunk's last save, in seconds since the Unix
	// epoch.
	Timestamps [ChunksPerRegion]uint32
}

// ParseHeader decodes the first HeaderSize bytes of b.
func ParseHeader(b []byte) (*Header, error) {
	if len(b) < HeaderSize {
		return nil, corrupt("region header of %d bytes, want %d", len(b), HeaderSize)
	}
	h := new(Header)
	for i := range ChunksPerRegion {
		h.Locations[i] = binary.BigEndian.Uint32(b[4*i:])
		h.Timestamps[i] = binary.BigEndian.Uint32(b[SectorSize+4*i:])
	}
	return h, nil
}

// Present reports whether slot i holds a chunk.
func (h *Header) Present(i int) bool { return h.Locations[i] != 0 }

// Modified returns when the chunk in slot i was last saved.
func (h *Header) Modified(i int) time.Time { return time.Unix(int64(h.Timestamps[i]), 0) }

// ChangedSince returns the chunks of region r saved at or after t, in slot
// order.
func (h *Header) ChangedSince(r geom.Region, t time.Time) []geom.Chunk {
	var out []geom.Chunk
	s := t.Unix()
	for i := range ChunksPerRegion {
		if h.Present(i) && int64(h.Timestamps[i]) >= s {
			out = append(out, SlotChunk(r, i))
		}
	}
	return out
}

// Chunks returns the chunks present in region r, in slot order.
func (h *Header) Chunks(r geom.Region) []geom.Chunk {
	var out []geom.Chunk
	for i := range ChunksPerRegion {
		if h.Present(i) {
			out = append(out, SlotChunk(r, i))
		}
	}
	return out
}

// RegionFile reads chunks out of one region file. It is safe for
// concurrent use when its io.ReaderAt is (an *os.File is); it reads the
// slot's location on every call, so chunks the game moves are found. Create
// one with NewRegionFile; the zero value is not usable.
type RegionFile struct {
	pos   geom.Region
	r     io.ReaderAt
	size  int64
	ext   fs.FS
	limit int
}

// NewRegionFile reads region pos from r, which holds size bytes (-1 when
// unknown or growing: reads then stop at the end of the data). ext, when
// not nil, holds the region's external c.<x>.<z>.mcc files; limit caps a
// chunk's size, compressed or not (<= 0: DefaultMaxChunkBytes).
func NewRegionFile(pos geom.Region, r io.ReaderAt, size int64, ext fs.FS, limit int) *RegionFile {
	if limit <= 0 {
		limit = DefaultMaxChunkBytes
	}
	return &RegionFile{pos: pos, r: r, size: size, ext: ext, limit: limit}
}

// Pos returns the region's position.
func (f *RegionFile) Pos() geom.Region { return f.pos }

// Header reads the file's header. A file shorter than a header (the game
// creates them empty) reads as an empty region.
func (f *RegionFile) Header() (*Header, error) {
	b := make([]byte, HeaderSize)
	m, err := f.r.ReadAt(b, 0)
	if m < HeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			return new(Header), nil
		}
		return nil, fmt.Errorf("anvil: %s header: %w", RegionName(f.pos), err)
	}
	return ParseHeader(b)
}

// Raw reads chunk c's stored payload into buf (grown as needed) and
// returns its compression scheme and payload. It returns an error wrapping
// world.ErrUngenerated when the slot is empty, ErrCorrupt when the header
// or the chunk's framing is malformed.
func (f *RegionFile) Raw(c geom.Chunk, buf []byte) (scheme byte, payload, newBuf []byte, err error) {
	if c.Region() != f.pos {
		return 0, nil, buf, fmt.Errorf("anvil: %v is not in %s", c, RegionName(f.pos))
	}
	slot := Slot(c)
	if cap(buf) < SectorSize {
		buf = make([]byte, SectorSize)
	}
	loc := buf[:4] // not a local array: it would escape through ReadAt
	if m, err := f.r.ReadAt(loc, int64(4*slot)); m < len(loc) {
		if err == nil || errors.Is(err, io.EOF) {
			return 0, nil, buf, world.ErrUngenerated // shorter than a header: empty
		}
		return 0, nil, buf, fmt.Errorf("anvil: %s: %w", RegionName(f.pos), err)
	}
	v := binary.BigEndian.Uint32(loc)
	if v == 0 {
		return 0, nil, buf, world.ErrUngenerated
	}
	sector, count := int64(v>>8), int64(v&0xff)
	if sector < HeaderSize/SectorSize || count == 0 {
		return 0, nil, buf, corrupt("slot %d: location %d+%d overlaps the header", slot, sector, count)
	}
	off := sector * SectorSize
	n := count * SectorSize
	if f.size >= 0 {
		n = min(n, f.size-off)
	}
	if n < 5 {
		return 0, nil, buf, corrupt("slot %d: sectors %d+%d past the end of the file", slot, sector, count)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, err := f.r.ReadAt(buf, off)
	if m < int(n) && (err == nil || !errors.Is(err, io.EOF)) {
		return 0, nil, buf, fmt.Errorf("anvil: %s slot %d: %w", RegionName(f.pos), slot, err)
	}
	if n = int64(m); n < 5 {
		return 0, nil, buf, corrupt("slot %d: sectors %d+%d past the end of the file", slot, sector, count)
	}
	length := int64(binary.BigEndian.Uint32(buf))
	if length == 0 || length > n-4 {
		return 0, nil, buf, corrupt("slot %d: chunk length %d in %d bytes of sectors", slot, length, n-4)
	}
	scheme = buf[4]
	payload = buf[5 : 4+length]
	if scheme&externalFlag != 0 {
		payload, buf, err = f.external(c, buf)
		if err != nil {
			return 0, nil, buf, err
		}
		scheme &^= externalFlag
	}
	return scheme, payload, buf, nil
}

// external reads chunk c's .mcc file.
func (f *RegionFile) external(c geom.Chunk, buf []byte) ([]byte, []byte, error) {
	name := ExternalName(c)
	if f.ext == nil {
		return nil, buf, corrupt("%v is stored in %s, which this reader cannot open", c, name)
	}
	file, err := f.ext.Open(name)
	if err != nil {
		return nil, buf, fmt.Errorf("anvil: %v is stored in %s: %w", c, name, err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, buf, fmt.Errorf("anvil: %s: %w", name, err)
	}
	if st.Size() > int64(f.limit) {
		return nil, buf, corrupt("%s holds %d bytes, over the limit of %d", name, st.Size(), f.limit)
	}
	n := int(st.Size())
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(file, buf); err != nil {
		return nil, buf, fmt.Errorf("anvil: %s: %w", name, err)
	}
	return buf, buf, nil
}

// ReadChunk reads and decompresses chunk c's NBT into dst (grown as
// needed). Errors are those of Raw and Decompress.
func (f *RegionFile) ReadChunk(c geom.Chunk, raw, dst []byte) (nbt, newRaw []byte, err error) {
	scheme, payload, raw, err := f.Raw(c, raw)
	if err != nil {
		return nil, raw, err
	}
	nbt, err = Decompress(scheme, payload, dst, f.limit)
	return nbt, raw, err
}
