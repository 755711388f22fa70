package anvil

import (
	"encoding/binary"

	"github.com/rtpengine/rtp/world"
)

// blocks is the world.BlockReader of a decoded chunk: every section's
// palette and packed indices, copied out of the decompressed buffer (about
// 2 KiB per section at 4 bits).
type blocks struct {
	minY, maxY int
	secs       []blockSection // indexed by (y-minY)>>4
}

type blockSection struct {
	palette  []world.BlockID // nil: all air
	data     []uint64
	bits     int
	straddle bool
	legacy   []uint16 // numeric sections: id<<4 | meta per block
}

// Block implements world.BlockReader.
func (b *blocks) Block(x, y, z int) world.BlockID {
	if y < b.minY || y >= b.maxY || uint(x) >= world.ChunkSize || uint(z) >= world.ChunkSize {
		return world.Air
	}
	s := &b.secs[(y-b.minY)>>4]
	idx := (y&15)<<8 | z<<4 | x
	if s.legacy != nil {
		k := s.legacy[idx]
		return legacyState(int(k>>4), int(k&15)).id
	}
	if s.palette == nil {
		return world.Air
	}
	if s.bits == 0 {
		return s.palette[0]
	}
	return s.palette[unpack(s.data, idx, s.bits, s.straddle)]
}

// unpack reads value i of width bits from native longs.
func unpack(data []uint64, i, width int, straddle bool) uint64 {
	mask := uint64(1)<<width - 1
	if straddle {
		bit := i * width
		li, sh := bit>>6, bit&63
		x := data[li] >> sh
		if sh+width > 64 {
			x |= data[li+1] << (64 - sh)
		}
		return x & mask
	}
	li, k := divPer(i, width)
	return data[li] >> (k * width) & mask
}

// blockReader copies every section into a blocks reader, checking every
// palette index so Block never fails.
func (d *decoder) blockReader() (*blocks, error) {
	br := &blocks{minY: d.minY, maxY: d.maxY, secs: make([]blockSection, (d.maxY-d.minY)/16)}
	for i := range d.sections {
		s := &d.sections[i]
		if s.y*16 < d.minY || s.y*16 >= d.maxY || d.byY[s.y+128] != int16(i) {
			continue
		}
		out := &br.secs[(s.y*16-d.minY)>>4]
		switch {
		case s.hasPal:
			if s.resolved < 0 {
				if err := d.prepare(s); err != nil {
					return nil, err
				}
			}
			out.palette = make([]world.BlockID, s.palN)
			for k := range out.palette {
				out.palette[k] = d.infos[s.resolved+k].id
			}
			if s.palN == 1 {
				continue
			}
			out.bits, out.straddle = s.bits, d.straddle
			out.data = make([]uint64, s.data.n)
			for k := range out.data {
				out.data[k] = binary.BigEndian.Uint64(d.b[s.data.off+8*k:])
			}
			for idx := range 4096 {
				if pi := unpack(out.data, idx, out.bits, out.straddle); pi >= uint64(s.palN) {
					return nil, corrupt("section %d: palette index %d of %d", s.y, pi, s.palN)
				}
			}
		case s.hasBlocks:
			out.legacy = make([]uint16, 4096)
			for idx := range out.legacy {
				id, meta, err := d.legacyAt(s, idx)
				if err != nil {
					return nil, err
				}
				out.legacy[idx] = uint16(id<<4 | meta)
			}
		}
	}
	return br, nil
}
