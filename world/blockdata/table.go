package blockdata

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Table is the collision data of one run of game versions that share a
// data set. Tables come from Tables, Newest and ForDataVersion; the zero
// value is not usable. A Table is immutable and safe for concurrent use;
// its data is decoded on first use.
type Table struct {
	index    int
	name     string
	versions []string
	lo, hi   int32
	modern   *modernSet
	legacy   *legacySet
}

// Tables returns every table, oldest first. The slice is the caller's; the
// tables are shared.
func Tables() []*Table {
	out := make([]*Table, len(tables))
	for i := range tables {
		out[i] = &tables[i]
	}
	return out
}

// Newest returns the table of the newest game version in the data.
func Newest() *Table { return &tables[len(tables)-1] }

// ForDataVersion returns the table for chunks saved with DataVersion v.
// Chunks saved before 1.9 have no DataVersion: v <= 0, and any v below the
// oldest table's range, give the 1.8 table; v above the newest table's
// start gives Newest.
func ForDataVersion(v int32) *Table {
	if v <= 0 {
		return &tables[0]
	}
	// The first table whose range starts above v; v belongs to the one before.
	i := sort.Search(len(tables), func(i int) bool { return tables[i].lo > v })
	return &tables[max(i-1, 0)]
}

// Index returns the table's position in Tables(), for callers that keep
// per-table caches in a slice.
func (t *Table) Index() int { return t.index }

// Name returns the version that names the table's data set: the oldest
// game version it covers ("1.21.11", "1.16.2").
func (t *Table) Name() string { return t.name }

// Versions returns the game releases the table covers, oldest first. The
// slice is the caller's.
func (t *Table) Versions() []string { return slices.Clone(t.versions) }

// DataVersions returns the DataVersion range the table covers: from lo
// (its oldest release's DataVersion) up to hi exclusive (the next table's
// lo; math.MaxInt32 for the newest). ForDataVersion also gives the oldest
// table for DataVersions below its lo.
func (t *Table) DataVersions() (lo, hi int32) { return t.lo, t.hi }

// maxProps bounds the properties of one block (a bit set tracks which a
// state names); the data's largest block has 7.
const maxProps = 64

// State returns the shape of a block state in the canonical form
// "minecraft:oak_slab[type=bottom,waterlogged=false]": the namespace is
// required and only minecraft is known; properties are comma separated
// key=value pairs (in any order, each key at most once) and the brackets
// are left out when there are none. Properties not named take the
// block's default state. ok is false for an unknown namespace, block,
// property key or value and for malformed input: callers should treat
// such blocks as unsafe.
//
// A pre-1.13 block read from an old chunk can be passed as a state whose
// properties include legacy_id=<id> and legacy_data=<meta> (decimal): the
// answer is then Legacy(id, meta), whatever the name and the other
// properties.
func (t *Table) State(state string) (shape Shape, ok bool) {
	rest, found := strings.CutPrefix(state, "minecraft:")
	if !found {
		return Empty, false
	}
	name, props := rest, ""
	if i := strings.IndexByte(rest, '['); i >= 0 {
		if !strings.HasSuffix(rest, "]") || len(rest) < i+3 {
			return Empty, false
		}
		name, props = rest[:i], rest[i+1:len(rest)-1]
	}
	if props != "" {
		if id, meta, valid, legacy := legacyProps(props); legacy {
			if !valid {
				return Empty, false
			}
			return t.Legacy(id, meta)
		}
	}
	b := t.modern.block(name)
	if b == nil {
		return Empty, false
	}
	idx := b.def
	var seen uint64
	for more := props != ""; more; {
		var pair string
		pair, props, more = strings.Cut(props, ",")
		key, value, found := strings.Cut(pair, "=")
		if !found {
			return Empty, false
		}
		i := slices.IndexFunc(b.props, func(p property) bool { return p.name == key })
		if i < 0 || i >= maxProps || seen&(1<<i) != 0 {
			return Empty, false
		}
		seen |= 1 << i
		p := &b.props[i]
		j := slices.Index(p.values, value)
		if j < 0 {
			return Empty, false
		}
		cur := b.def / p.stride % len(p.values)
		idx += (j - cur) * p.stride
	}
	return b.shape(idx)
}

// legacyProps looks for legacy_id and legacy_data among a state's
// properties. legacy reports whether both keys are there; valid, whether
// each appears once with a decimal value.
func legacyProps(props string) (id, meta int, valid, legacy bool) {
	var haveID, haveMeta, dup, bad bool
	for more := true; more; {
		var pair string
		pair, props, more = strings.Cut(props, ",")
		key, value, found := strings.Cut(pair, "=")
		bad = bad || !found
		switch key {
		case "legacy_id":
			dup = dup || haveID
			haveID = true
			id, bad = decimal(value, id, bad)
		case "legacy_data":
			dup = dup || haveMeta
			haveMeta = true
			meta, bad = decimal(value, meta, bad)
		}
	}
	if !haveID || !haveMeta {
		return 0, 0, false, false
	}
	return id, meta, !dup && !bad, true
}

// decimal parses a small unsigned decimal (at most 5 digits); on failure
// it returns prev and sets bad.
func decimal(s string, prev int, bad bool) (int, bool) {
	if s == "" || len(s) > 5 {
		return prev, true
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return prev, true
		}
		n = n*10 + int(c-'0')
	}
	return n, bad
}

// Legacy returns the shape of a pre-1.13 block: a numeric id (0..4095)
// with its metadata (0..15). ok is false for ids the data does not know
// and for out-of-range arguments. An id whose states all have one shape
// answers it for every metadata value.
func (t *Table) Legacy(id, meta int) (shape Shape, ok bool) {
	if meta < 0 || meta >= metas {
		return Empty, false
	}
	b := t.legacy.block(id)
	if b == nil {
		return Empty, false
	}
	if len(b.shapes) == 1 {
		return shapeOf(b.shapes[0])
	}
	return shapeOf(b.shapes[meta])
}

// LegacyName returns the data's name of a pre-1.13 numeric id, such as
// "stone_slab" for 44 (no namespace). ok is false for unknown ids.
func (t *Table) LegacyName(id int) (name string, ok bool) {
	b := t.legacy.block(id)
	if b == nil {
		return "", false
	}
	return b.name, true
}

// Decoding of the generated data.
//
// Numbers are written least significant first in 5-bit digits, one
// character each from alphabet; a digit with more to follow is offset by
// 32. A shape is the single character alphabet[shape].

const (
	metas       = 16   // metadata values of a pre-1.13 id
	maxLegacyID = 4095 // highest numeric id a chunk can hold
)

var errCorrupt = errors.New("blockdata: corrupt generated data")

// digit returns the value of an encoding character, or -1.
func digit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 36
	case c == '-':
		return 62
	case c == '_':
		return 63
	}
	return -1
}

// shapeOf decodes one shape character.
func shapeOf(c byte) (Shape, bool) {
	d := digit(c)
	if d < 0 || d > int(Partial) {
		return Empty, false
	}
	return Shape(d), true
}

// reader decodes numbers from a generated string; err sticks.
type reader struct {
	s   string
	err error
}

func (r *reader) num() int {
	n, shift := 0, 0
	for {
		if r.err != nil {
			return 0
		}
		if r.s == "" || shift > 25 {
			r.err = errCorrupt
			return 0
		}
		d := digit(r.s[0])
		r.s = r.s[1:]
		if d < 0 {
			r.err = errCorrupt
			return 0
		}
		n |= (d & 31) << shift
		if d < 32 {
			return n
		}
		shift += 5
	}
}

// shapes returns the pool run at the next offset and count.
func (r *reader) shapes() string {
	off, n := r.num(), r.num()
	if r.err == nil && (n < 1 || off > len(shapePool)-n) {
		r.err = errCorrupt
	}
	if r.err != nil {
		return ""
	}
	return shapePool[off : off+n]
}

// property is one block-state property; stride is the weight of its value
// index in the state index (the product of the later properties' value
// counts).
type property struct {
	name   string
	values []string
	stride int
}

// block is a 1.13+ block: its properties, its default state index and one
// shape character per state (or one for all).
type block struct {
	props  []property
	def    int
	shapes string
}

func (b *block) shape(idx int) (Shape, bool) {
	if len(b.shapes) == 1 {
		return shapeOf(b.shapes[0])
	}
	if idx < 0 || idx >= len(b.shapes) {
		return Empty, false
	}
	return shapeOf(b.shapes[idx])
}

// shared is the decoded form of the pools every table points into.
var shared struct {
	once   sync.Once
	err    error
	names  []string // block names, by index
	blocks []block  // records, by index
	recs   []string // name of each record
}

func decodeShared() {
	shared.names = strings.Split(blockNames, " ")
	defs := [][]property{nil}
	for def := range strings.SplitSeq(propDefs, " ") {
		var ps []property
		for p := range strings.SplitSeq(def, ",") {
			key, values, _ := strings.Cut(p, "=")
			ps = append(ps, property{name: key, values: strings.Split(values, "|")})
		}
		stride := 1
		for i := len(ps) - 1; i >= 0; i-- {
			ps[i].stride = stride
			stride *= len(ps[i].values)
		}
		defs = append(defs, ps)
	}
	r := reader{s: records}
	for r.s != "" && r.err == nil {
		name, props, def := r.num(), r.num(), r.num()
		shapes := r.shapes()
		if r.err != nil {
			break
		}
		if name >= len(shared.names) || props >= len(defs) {
			r.err = errCorrupt
			break
		}
		states := 1
		for _, p := range defs[props] {
			states *= len(p.values)
		}
		if def >= states || (len(shapes) != 1 && len(shapes) != states) {
			r.err = errCorrupt
			break
		}
		shared.blocks = append(shared.blocks, block{props: defs[props], def: def, shapes: shapes})
		shared.recs = append(shared.recs, shared.names[name])
	}
	shared.err = r.err
}

// modernSet is one 1.13+ data set: src lists record indices.
type modernSet struct {
	src    string
	once   sync.Once
	err    error
	blocks map[string]*block
}

func (m *modernSet) decode() {
	shared.once.Do(decodeShared)
	if shared.err != nil {
		m.err = shared.err
		return
	}
	r := reader{s: m.src}
	m.blocks = make(map[string]*block)
	for r.s != "" && r.err == nil {
		i := r.num()
		if r.err == nil && i >= len(shared.blocks) {
			r.err = errCorrupt
		}
		if r.err == nil {
			m.blocks[shared.recs[i]] = &shared.blocks[i]
		}
	}
	if r.err != nil {
		m.err, m.blocks = r.err, nil
	}
}

// block returns the named block (no namespace), or nil.
func (m *modernSet) block(name string) *block {
	m.once.Do(m.decode)
	return m.blocks[name]
}

// legacyBlock is a pre-1.13 id: its name and one shape character per
// metadata value (or one for all).
type legacyBlock struct {
	name   string
	shapes string
}

// legacySet is one pre-1.13 data set: src lists id, name, shape offset
// and count per block.
type legacySet struct {
	src  string
	once sync.Once
	err  error
	ids  []legacyBlock // indexed by id; shapes == "" for unknown ids
}

func (l *legacySet) decode() {
	shared.once.Do(decodeShared)
	if shared.err != nil {
		l.err = shared.err
		return
	}
	r := reader{s: l.src}
	for r.s != "" && r.err == nil {
		id, name := r.num(), r.num()
		shapes := r.shapes()
		if r.err != nil {
			break
		}
		if id > maxLegacyID || name >= len(shared.names) || (len(shapes) != 1 && len(shapes) != metas) {
			r.err = errCorrupt
			break
		}
		if id >= len(l.ids) {
			l.ids = append(l.ids, make([]legacyBlock, id+1-len(l.ids))...)
		}
		l.ids[id] = legacyBlock{name: shared.names[name], shapes: shapes}
	}
	if r.err != nil {
		l.err, l.ids = r.err, nil
	}
}

// block returns the block with a numeric id, or nil.
func (l *legacySet) block(id int) *legacyBlock {
	l.once.Do(l.decode)
	if id < 0 || id >= len(l.ids) || l.ids[id].shapes == "" {
		return nil
	}
	return &l.ids[id]
}
