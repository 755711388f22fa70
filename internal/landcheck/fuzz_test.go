package landcheck

import (
	"encoding/binary"
	"testing"
)

// FuzzSection feeds build and the block lookup sections of any palette
// size, packing and data length: they must reject what does not fit and
// never index out of range.
func FuzzSection(f *testing.F) {
	f.Add(uint8(2), uint16(3955), int8(4), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint8(17), uint16(1631), int8(-4), make([]byte, 8*320))
	f.Add(uint8(0), uint16(169), int8(0), make([]byte, 4096))
	f.Fuzz(func(t *testing.T, palN uint8, dv uint16, y int8, data []byte) {
		var longs []int64
		for i := 0; i+8 <= len(data); i += 8 {
			longs = append(longs, int64(binary.LittleEndian.Uint64(data[i:])))
		}
		pal := make([]stateNBT, palN)
		for i := range pal {
			pal[i] = stateNBT{Name: "minecraft:stone"}
		}
		var s sectionNBT
		s.Y = y
		switch {
		case palN == 0:
			s.Blocks, s.Add, s.Data = data, data, data
		case dv >= dataVersionTopLevel:
			s.States = containerNBT{Palette: pal, Data: longs}
		default:
			s.Palette, s.BlockStates = pal, longs
		}
		c := &chunkNBT{DataVersion: int32(dv), Sections: []sectionNBT{s}, Level: levelNBT{Sections: []sectionNBT{s}}}
		ch, err := build(c, 0, 0)
		if err != nil {
			return
		}
		for i := range 4096 {
			if _, err := ch.at(int64(i&15), int64(y)*16+int64(i>>8), int64(i>>4&15)); err != nil {
				return
			}
		}
	})
}
