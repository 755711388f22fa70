package anvil

import (
	"bytes"

	"github.com/rtpengine/rtp/geom"
)

// DefaultBorderSize is the world border's edge when level.dat sets none.
const DefaultBorderSize = 59_999_968

// maxLevelBytes caps level.dat's decompressed size.
const maxLevelBytes = 16 << 20

// Level is what rtp reads from level.dat. The zero value is not meaningful;
// DefaultLevel gives the values used when a folder has no level.dat.
type Level struct {
	// Found reports whether the values came from a level.dat.
	Found bool
	// Name is the world's name ("" when unknown).
	Name string
	// DataVersion is the version that last saved the world (0 unknown).
	DataVersion int32
	// Version is the game version's name ("1.21.1"), "" when unknown.
	Version string
	// Spawn is the world spawn's column and SpawnY its height: block 0,
	// 64, 0 unless HasSpawn.
	Spawn  geom.Block
	SpawnY int32
	// HasSpawn reports whether level.dat gives the spawn's column (SpawnX
	// and SpawnZ, or the spawn compound's pos).
	HasSpawn bool
	// Border is the world border.
	Border Border
}

// packList is what level.dat's DataPacks names: the enabled packs, lowest
// priority first ("vanilla", "file/mypack.zip", ...), and the disabled
// ones; both nil when it names none (before 1.13, or no level.dat). At
// most maxLevelPacks of each are kept.
type packList struct{ enabled, disabled []string }

// maxLevelPacks bounds the datapack names kept from level.dat.
const maxLevelPacks = 1024

// Border is a square world border, a plain value; the zero value has no
// area.
type Border struct {
	CenterX, CenterZ float64
	// Size is the edge length in blocks.
	Size float64
}

// Contains reports whether block b lies inside the border.
func (br Border) Contains(b geom.Block) bool {
	h := br.Size / 2
	x, z := float64(b.X)+0.5, float64(b.Z)+0.5
	return x >= br.CenterX-h && x <= br.CenterX+h && z >= br.CenterZ-h && z <= br.CenterZ+h
}

// DefaultLevel returns the values of a world without level.dat: spawn at
// 0, 64, 0 and the game's default border.
func DefaultLevel() Level {
	return Level{SpawnY: 64, Border: Border{Size: DefaultBorderSize}}
}

// ParseLevel decodes level.dat: gzip-compressed NBT (uncompressed NBT is
// accepted too). Fields it lacks keep DefaultLevel's values. Both the
// classic SpawnX/SpawnY/SpawnZ and the newer spawn compound are read.
func ParseLevel(data []byte) (Level, error) { return parseLevel(data, nil) }

// parseLevel is ParseLevel that also fills packs, when not nil.
func parseLevel(data []byte, packs *packList) (Level, error) {
	lv := DefaultLevel()
	raw := data
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		var err error
		if raw, err = Decompress(CompressionGzip, data, nil, maxLevelBytes); err != nil {
			return lv, err
		}
	}
	c := cursor{b: raw}
	if err := c.root(); err != nil {
		return lv, err
	}
	for {
		t, name, err := c.header()
		if err != nil {
			return lv, err
		}
		if t == tagEnd {
			break
		}
		if t == tagCompound && string(name) == "Data" {
			if err := lv.data(&c, packs); err != nil {
				return lv, err
			}
			continue
		}
		if err := c.skip(t, 1); err != nil {
			return lv, err
		}
	}
	lv.Found = true
	return lv, nil
}

func (lv *Level) data(c *cursor, packs *packList) error {
	const depth = 2
	var spawnX, spawnZ bool
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			lv.HasSpawn = lv.HasSpawn || spawnX && spawnZ
			return nil
		}
		var v int64
		var f float64
		var ok bool
		switch string(name) {
		case "DataVersion":
			v, ok, err = c.intValue(t, depth)
			if ok {
				lv.DataVersion = int32(v)
			}
		case "LevelName":
			if t == tagString {
				var s []byte
				s, err = c.str()
				lv.Name = string(s)
			} else {
				err = c.skip(t, depth)
			}
		case "Version":
			if t == tagCompound {
				err = lv.version(c)
			} else {
				err = c.skip(t, depth)
			}
		case "SpawnX":
			v, ok, err = c.intValue(t, depth)
			if ok {
				lv.Spawn.X, spawnX = v, true
			}
		case "SpawnY":
			v, ok, err = c.intValue(t, depth)
			if ok {
				lv.SpawnY = int32(v)
			}
		case "SpawnZ":
			v, ok, err = c.intValue(t, depth)
			if ok {
				lv.Spawn.Z, spawnZ = v, true
			}
		case "spawn":
			if t == tagCompound {
				err = lv.spawn(c)
			} else {
				err = c.skip(t, depth)
			}
		case "DataPacks":
			if t == tagCompound && packs != nil {
				err = packs.read(c)
			} else {
				err = c.skip(t, depth)
			}
		case "BorderCenterX":
			f, ok, err = c.floatValue(t, depth)
			if ok {
				lv.Border.CenterX = f
			}
		case "BorderCenterZ":
			f, ok, err = c.floatValue(t, depth)
			if ok {
				lv.Border.CenterZ = f
			}
		case "BorderSize":
			f, ok, err = c.floatValue(t, depth)
			if ok && f > 0 {
				lv.Border.Size = f
			}
		default:
			err = c.skip(t, depth)
		}
		if err != nil {
			return err
		}
	}
}

func (lv *Level) version(c *cursor) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		if t == tagString && string(name) == "Name" {
			s, err := c.str()
			if err != nil {
				return err
			}
			lv.Version = string(s)
			continue
		}
		if err := c.skip(t, 3); err != nil {
			return err
		}
	}
}

// read reads the DataPacks compound: {Enabled: [names], Disabled:
// [names]}.
func (p *packList) read(c *cursor) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		var dst *[]string
		switch string(name) {
		case "Enabled":
			dst = &p.enabled
		case "Disabled":
			dst = &p.disabled
		}
		if dst == nil || t != tagList {
			if err := c.skip(t, 3); err != nil {
				return err
			}
			continue
		}
		et, n, err := c.list()
		if err != nil {
			return err
		}
		*dst = []string{}
		for range n {
			if et != tagString {
				if err := c.skip(et, 4); err != nil {
					return err
				}
				continue
			}
			s, err := c.str()
			if err != nil {
				return err
			}
			if len(*dst) < maxLevelPacks {
				*dst = append(*dst, string(s))
			}
		}
	}
}

// spawn reads the spawn compound of newer versions: {pos: [I; x, y, z], ...}.
func (lv *Level) spawn(c *cursor) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		if t == tagIntArray && bytes.Equal(name, []byte("pos")) {
			v, err := c.array(4)
			if err != nil {
				return err
			}
			if v.n == 3 {
				at := func(i int) int64 {
					o := v.off + 4*i
					return int64(int32(uint32(c.b[o])<<24 | uint32(c.b[o+1])<<16 | uint32(c.b[o+2])<<8 | uint32(c.b[o+3])))
				}
				lv.Spawn = geom.Block{X: at(0), Z: at(2)}
				lv.SpawnY = int32(at(1))
				lv.HasSpawn = true
			}
			continue
		}
		if err := c.skip(t, 3); err != nil {
			return err
		}
	}
}
