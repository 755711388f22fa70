package anvil

// The chunk walk: one pass over the decompressed NBT that records where the
// few tags screening needs sit (as views into the buffer) and skips the rest
// without building it. Nothing here allocates except the reusable slices of
// a pooled parse state.

// span is a byte range of the decompressed chunk.
type span struct{ start, end int }

// section records where one chunk section's data sits.
type section struct {
	y int

	// Palette block states (1.13 and later): entries
	// spans[pal : pal+palN], packed indices in data.
	hasPal  bool
	pal     int
	palN    int
	hasData bool
	data    view
	bits    int // set by prepare

	// Biomes (1.18 and later): palette names spans[bpal : bpal+bpalN],
	// packed indices in bdata.
	hasBiomes bool
	bpal      int
	bpalN     int
	hasBData  bool
	bdata     view
	bbits     int // set by prepareBiomes

	// Numeric blocks (before 1.13): ids, optional high nibbles, metadata.
	hasBlocks bool
	blocks    view
	hasAdd    bool
	add       view
	hasMeta   bool
	meta      view

	// resolved is the offset of this section's resolved block palette in
	// parsed.infos, or -1; bresolved likewise in parsed.biomeIDs.
	resolved  int
	bresolved int
}

// noSection marks an empty slot of parsed.byY.
const noSection = -1

// parsed is what the walk found in one chunk.
type parsed struct {
	b []byte

	dataVersion    int32
	hasDataVersion bool
	status         []byte
	hasStatus      bool
	x, z, yPos     int32
	hasX, hasZ     bool
	hasYPos        bool
	terrainPop     int64
	hasTerrainPop  bool

	motion          view // MOTION_BLOCKING, longs
	hasMotion       bool
	legacyHeight    view // HeightMap, ints (before 1.13 and upgraded 1.13 chunks)
	hasLegacyHeight bool
	biomes          view // Biomes, bytes or ints (before 1.18)
	biomesTag       byte // tagByteArray, tagIntArray or tagEnd when absent

	sections []section
	spans    []span
	infos    []stateInfo
	biomeIDs []biomeRef
	// byY maps a section Y (offset by 128) to its index in sections.
	byY [256]int16
}

func (p *parsed) reset(b []byte) {
	sections, spans, infos, biomeIDs := p.sections[:0], p.spans[:0], p.infos[:0], p.biomeIDs[:0]
	*p = parsed{b: b, sections: sections, spans: spans, infos: infos, biomeIDs: biomeIDs}
	for i := range p.byY {
		p.byY[i] = noSection
	}
}

// parse walks the chunk NBT in b.
func (p *parsed) parse(b []byte) error {
	p.reset(b)
	c := cursor{b: b}
	if err := c.root(); err != nil {
		return err
	}
	if err := p.chunkFields(&c, 1, true); err != nil {
		return err
	}
	for i := range p.sections {
		s := &p.sections[i]
		if s.hasPal || s.hasBlocks || s.hasBiomes {
			p.byY[s.y+128] = int16(i)
		}
	}
	return nil
}

// chunkFields walks the root compound (top) or the Level compound.
func (p *parsed) chunkFields(c *cursor, depth int, top bool) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		switch string(name) {
		case "DataVersion":
			v, ok, err := c.intValue(t, depth)
			if err != nil {
				return err
			}
			p.dataVersion, p.hasDataVersion = int32(v), ok
		case "Level":
			if t != tagCompound || !top || depth >= maxDepth {
				err = c.skip(t, depth)
			} else {
				err = p.chunkFields(c, depth+1, false)
			}
		case "Status":
			if t == tagString {
				p.status, err = c.str()
				p.hasStatus = err == nil
			} else {
				err = c.skip(t, depth)
			}
		case "xPos":
			var v int64
			v, p.hasX, err = c.intValue(t, depth)
			p.x = int32(v)
		case "zPos":
			var v int64
			v, p.hasZ, err = c.intValue(t, depth)
			p.z = int32(v)
		case "yPos":
			var v int64
			v, p.hasYPos, err = c.intValue(t, depth)
			p.yPos = int32(v)
		case "TerrainPopulated":
			p.terrainPop, p.hasTerrainPop, err = c.intValue(t, depth)
		case "Heightmaps":
			if t == tagCompound {
				err = p.heightmaps(c, depth+1)
			} else {
				err = c.skip(t, depth)
			}
		case "HeightMap":
			if t == tagIntArray {
				p.legacyHeight, err = c.array(4)
				p.hasLegacyHeight = err == nil
			} else {
				err = c.skip(t, depth)
			}
		case "Biomes":
			switch t {
			case tagByteArray:
				p.biomes, err = c.array(1)
				p.biomesTag = t
			case tagIntArray:
				p.biomes, err = c.array(4)
				p.biomesTag = t
			default:
				err = c.skip(t, depth)
			}
		case "sections", "Sections":
			if t == tagList {
				err = p.sectionList(c, depth+1)
			} else {
				err = c.skip(t, depth)
			}
		default:
			err = c.skip(t, depth)
		}
		if err != nil {
			return err
		}
	}
}

func (p *parsed) heightmaps(c *cursor, depth int) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		if t == tagLongArray && string(name) == "MOTION_BLOCKING" {
			p.motion, err = c.array(8)
			p.hasMotion = err == nil
		} else {
			err = c.skip(t, depth)
		}
		if err != nil {
			return err
		}
	}
}

func (p *parsed) sectionList(c *cursor, depth int) error {
	et, n, err := c.list()
	if err != nil {
		return err
	}
	if et != tagCompound {
		for range n {
			if err := c.skip(et, depth); err != nil {
				return err
			}
		}
		return nil
	}
	if depth >= maxDepth {
		return corrupt("nbt: nested deeper than %d", maxDepth)
	}
	for range n {
		s := section{y: 1 << 10, resolved: -1, bresolved: -1}
		if err := p.sectionFields(c, &s, depth+1); err != nil {
			return err
		}
		if s.y >= -128 && s.y <= 127 {
			p.sections = append(p.sections, s)
		}
	}
	return nil
}

func (p *parsed) sectionFields(c *cursor, s *section, depth int) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		switch string(name) {
		case "Y":
			var v int64
			var ok bool
			v, ok, err = c.intValue(t, depth)
			if ok && v >= -128 && v <= 127 {
				s.y = int(v)
			}
		case "block_states":
			if t == tagCompound && depth < maxDepth {
				err = p.container(c, s, depth+1, false)
			} else {
				err = c.skip(t, depth)
			}
		case "biomes":
			if t == tagCompound && depth < maxDepth {
				err = p.container(c, s, depth+1, true)
			} else {
				err = c.skip(t, depth)
			}
		case "Palette":
			err = p.palette(c, s, t, depth, false)
		case "BlockStates":
			if t == tagLongArray {
				s.data, err = c.array(8)
				s.hasData = err == nil
			} else {
				err = c.skip(t, depth)
			}
		case "Blocks":
			if t == tagByteArray {
				s.blocks, err = c.array(1)
				s.hasBlocks = err == nil
			} else {
				err = c.skip(t, depth)
			}
		case "Add":
			if t == tagByteArray {
				s.add, err = c.array(1)
				s.hasAdd = err == nil
			} else {
				err = c.skip(t, depth)
			}
		case "Data":
			if t == tagByteArray {
				s.meta, err = c.array(1)
				s.hasMeta = err == nil
			} else {
				err = c.skip(t, depth)
			}
		default:
			err = c.skip(t, depth)
		}
		if err != nil {
			return err
		}
	}
}

// container walks a 1.18 paletted container: {palette: [...], data: [L; ...]}.
func (p *parsed) container(c *cursor, s *section, depth int, biomes bool) error {
	for {
		t, name, err := c.header()
		if err != nil {
			return err
		}
		if t == tagEnd {
			return nil
		}
		switch string(name) {
		case "palette":
			err = p.palette(c, s, t, depth, biomes)
		case "data":
			if t != tagLongArray {
				err = c.skip(t, depth)
				break
			}
			if biomes {
				s.bdata, err = c.array(8)
				s.hasBData = err == nil
			} else {
				s.data, err = c.array(8)
				s.hasData = err == nil
			}
		default:
			err = c.skip(t, depth)
		}
		if err != nil {
			return err
		}
	}
}

// palette records the spans of a palette list: compounds for block states,
// strings for biomes. A list of another element type is skipped.
func (p *parsed) palette(c *cursor, s *section, t byte, depth int, biomes bool) error {
	if t != tagList {
		return c.skip(t, depth)
	}
	if depth >= maxDepth {
		return corrupt("nbt: nested deeper than %d", maxDepth)
	}
	et, n, err := c.list()
	if err != nil {
		return err
	}
	want := byte(tagCompound)
	if biomes {
		want = tagString
	}
	if et != want {
		for range n {
			if err := c.skip(et, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	first := len(p.spans)
	for range n {
		start := c.off
		if biomes {
			if _, err := c.str(); err != nil {
				return err
			}
			start += 2
		} else if err := c.skipCompound(depth + 1); err != nil {
			return err
		}
		p.spans = append(p.spans, span{start, c.off})
	}
	if biomes {
		s.hasBiomes, s.bpal, s.bpalN = true, first, n
	} else {
		s.hasPal, s.pal, s.palN = true, first, n
	}
	return nil
}
