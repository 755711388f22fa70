package anvil

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
)

// DimensionType is what a dimension's type says about its space: its
// build height, its logical height and whether it has a roof. It is a
// plain value.
type DimensionType struct {
	// ID is the type's resource id ("minecraft:the_nether"); "" for a
	// type written inline in a dimension's file, or when none was found.
	ID string
	// MinY and Height bound the build height: MinY <= y < MinY+Height.
	MinY, Height int
	// LogicalHeight is how high above MinY the game moves players
	// (portals, chorus fruit); with HasCeiling, the roof's top layer is
	// MinY + LogicalHeight - 1.
	LogicalHeight int
	// HasCeiling reports a roof over the dimension (the Nether's bedrock).
	HasCeiling bool
	// Source says where the values come from: "vanilla" (the game's own
	// types), the datapack file that defines them, or "assumed" when the
	// save defines no type for the dimension (no roof assumed).
	Source string
}

// Ceiling returns the y of the top layer of the dimension's roof, and
// false when it has none. Every landing lies wholly below it.
func (t DimensionType) Ceiling() (int, bool) {
	if !t.HasCeiling {
		return 0, false
	}
	return t.MinY + t.LogicalHeight - 1, true
}

// Limits the game sets on dimension types.
const (
	dimMinYLow   = -2032
	dimMaxYHigh  = 2032 // MinY + Height at most
	dimHeightMax = 4064
)

// VanillaDimensionType returns the game's own dimension type typeID for a
// world saved at dataVersion (0: unknown, taken as the newest): the
// overworld (and overworld_caves) from y -64 to 319 since 1.18, 0 to 255
// before; the nether 0 to 255 with a roof and a logical height of 128;
// the end 0 to 255.
func VanillaDimensionType(typeID string, dataVersion int32) (DimensionType, bool) {
	t := DimensionType{ID: typeID, Height: 256, LogicalHeight: 256, Source: "vanilla"}
	modern := dataVersion == 0 || dataVersion >= DataVersionTopLevel
	switch typeID {
	case "minecraft:overworld", "minecraft:overworld_caves":
		if modern {
			t.MinY, t.Height, t.LogicalHeight = -64, 384, 384
		}
		t.HasCeiling = typeID == "minecraft:overworld_caves"
	case "minecraft:the_nether":
		t.LogicalHeight, t.HasCeiling = 128, true
	case "minecraft:the_end":
	default:
		return DimensionType{}, false
	}
	return t, true
}

// maxDatapackJSON caps the size of a dimension or dimension type file
// read from a datapack; maxDatapacks the packs looked at; maxDatapackZip
// the size of a zipped pack opened.
const (
	maxDatapackJSON = 1 << 20
	maxDatapacks    = 1024
	maxDatapackZip  = 1 << 30
)

// ParseDimensionType decodes a dimension type file (data/<ns>/
// dimension_type/<path>.json). Fields it lacks take the values of types
// written before 1.17: min_y 0, height 256, logical_height the height,
// no ceiling. It fails on malformed JSON and on heights the game refuses.
func ParseDimensionType(data []byte) (DimensionType, error) {
	var raw struct {
		MinY          *int  `json:"min_y"`
		Height        *int  `json:"height"`
		LogicalHeight *int  `json:"logical_height"`
		HasCeiling    *bool `json:"has_ceiling"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return DimensionType{}, fmt.Errorf("dimension type: %w", err)
	}
	t := DimensionType{Height: 256}
	if raw.MinY != nil {
		t.MinY = *raw.MinY
	}
	if raw.Height != nil {
		t.Height = *raw.Height
	}
	t.LogicalHeight = t.Height
	if raw.LogicalHeight != nil {
		t.LogicalHeight = *raw.LogicalHeight
	}
	if raw.HasCeiling != nil {
		t.HasCeiling = *raw.HasCeiling
	}
	var errs []error
	if t.MinY < dimMinYLow || t.MinY%16 != 0 {
		errs = append(errs, fmt.Errorf("min_y %d: want a multiple of 16 from %d", t.MinY, dimMinYLow))
	}
	if t.Height < 16 || t.Height > dimHeightMax || t.Height%16 != 0 {
		errs = append(errs, fmt.Errorf("height %d: want a multiple of 16 from 16 to %d", t.Height, dimHeightMax))
	} else if t.MinY+t.Height > dimMaxYHigh {
		errs = append(errs, fmt.Errorf("min_y %d + height %d: want at most %d", t.MinY, t.Height, dimMaxYHigh))
	}
	if t.LogicalHeight < 0 || t.LogicalHeight > t.Height {
		errs = append(errs, fmt.Errorf("logical_height %d: want 0 to the height %d", t.LogicalHeight, t.Height))
	}
	if err := errors.Join(errs...); err != nil {
		return DimensionType{}, fmt.Errorf("dimension type: %w", err)
	}
	return t, nil
}

// parseDimensionFile decodes a dimension file (data/<ns>/dimension/
// <path>.json): the id of its type, or the type itself when written
// inline.
func parseDimensionFile(data []byte) (typeID string, inline *DimensionType, err error) {
	var raw struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return "", nil, fmt.Errorf("dimension: %w", err)
	}
	tr := bytes.TrimSpace(raw.Type)
	switch {
	case len(tr) == 0:
		return "", nil, errors.New("dimension: no type")
	case tr[0] == '"':
		var id string
		if err := json.Unmarshal(tr, &id); err != nil {
			return "", nil, fmt.Errorf("dimension: type: %w", err)
		}
		full, err := parseID(id)
		if err != nil {
			return "", nil, fmt.Errorf("dimension: type %q: %w", id, err)
		}
		return full, nil, nil
	case tr[0] == '{':
		t, err := ParseDimensionType(tr)
		if err != nil {
			return "", nil, err
		}
		return "", &t, nil
	}
	return "", nil, errors.New("dimension: type is neither an id nor an object")
}

// datapack is one pack of a save's datapacks folder, a folder or a zip.
type datapack struct {
	name string // "datapacks/<name>", for messages
	read func(name string) ([]byte, error)
}

// datapacks lists the save's datapacks, lowest priority first: a later
// pack's files override an earlier one's. The order is level.dat's list
// of enabled packs ("file/<name>"), then the packs it does not name in
// name order (the game enables a pack it finds new); a pack it names
// disabled is left out. Without that list, every pack in name order. A
// zip that does not open is an error (what it defines cannot be known).
// close releases the zips.
func datapacks(save fs.FS, lv packList) (packs []datapack, close func(), err error) {
	entries, err := fs.ReadDir(save, "datapacks")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, func() {}, nil
	}
	if err != nil {
		return nil, func() {}, err
	}
	rank := map[string]int{}
	for i, n := range lv.enabled {
		if name, ok := strings.CutPrefix(n, "file/"); ok {
			rank[name] = i - len(lv.enabled) // before the unnamed ones
		}
	}
	for _, n := range lv.disabled {
		if name, ok := strings.CutPrefix(n, "file/"); ok {
			if _, on := rank[name]; !on {
				rank[name] = math.MaxInt // left out
			}
		}
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return rank[e.Name()] == math.MaxInt })
	slices.SortStableFunc(entries, func(a, b fs.DirEntry) int { return cmpInt(rank[a.Name()], rank[b.Name()]) })
	if len(entries) > maxDatapacks {
		entries = entries[:maxDatapacks]
	}
	var closers []io.Closer
	close = func() {
		for _, c := range closers {
			c.Close()
		}
	}
	for _, e := range entries {
		name := path.Join("datapacks", e.Name())
		switch {
		case e.IsDir():
			sub, err := fs.Sub(save, name)
			if err != nil {
				continue
			}
			packs = append(packs, datapack{name: name, read: func(p string) ([]byte, error) { return readLimited(sub, p) }})
		case strings.HasSuffix(strings.ToLower(e.Name()), ".zip"):
			zr, c, err := openZip(save, name)
			if err != nil {
				close()
				return nil, func() {}, fmt.Errorf("%s: %w", name, err)
			}
			closers = append(closers, c)
			packs = append(packs, datapack{name: name, read: func(p string) ([]byte, error) { return readLimited(zr, p) }})
		}
	}
	return packs, close, nil
}

func openZip(save fs.FS, name string) (*zip.Reader, io.Closer, error) {
	f, err := save.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	ra, ok := f.(io.ReaderAt)
	switch {
	case !ok:
		f.Close()
		return nil, nil, errors.New("cannot be read at random")
	case st.Size() > maxDatapackZip:
		f.Close()
		return nil, nil, fmt.Errorf("%d bytes, over the limit of %d", st.Size(), maxDatapackZip)
	}
	zr, err := zip.NewReader(ra, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return zr, f, nil
}

// readLimited reads a file of fsys, failing past maxDatapackJSON bytes.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	return readLimitedN(fsys, name, maxDatapackJSON)
}

// readLimitedN reads a file of fsys, failing past limit bytes.
func readLimitedN(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over the limit of %d bytes", name, limit)
	}
	return b, nil
}

// findDatapackFile returns the last pack's copy of file name, its pack's
// name, and false when no pack has it.
func findDatapackFile(packs []datapack, name string) ([]byte, string, bool, error) {
	for _, p := range slices.Backward(packs) {
		b, err := p.read(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, "", false, fmt.Errorf("%s/%s: %w", p.name, name, err)
		}
		return b, p.name + "/" + name, true, nil
	}
	return nil, "", false, nil
}

// ResolveDimensionType returns the type of dimension d of the save folder
// save: the type its datapacks give it (datapacks/<pack>/data/<ns>/
// dimension/<path>.json naming a type, or holding one inline; the type
// from data/<ns>/dimension_type/<path>.json of the packs, else the game's
// own), else the vanilla type of the same id. Packs are folders or zips,
// a later one overriding an earlier one: in the order of level.dat's
// enabled packs, then those it does not name in name order; those it
// names disabled do not count. level.dat's DataVersion sets the vanilla
// overworld's height. A dimension no pack nor the game defines has an
// assumed type: the overworld's height, no roof (Source "assumed"). It
// fails on a level.dat, pack or file that cannot be read or does not
// decode.
func ResolveDimensionType(save fs.FS, d Dimension) (DimensionType, error) {
	d = d.canonical()
	if !d.Valid() {
		return DimensionType{}, fmt.Errorf("anvil: dimension %q is not a resource id", string(d))
	}
	var lv Level
	var pl packList
	if data, err := readLimitedN(save, "level.dat", maxLevelBytes); err == nil {
		if lv, err = parseLevel(data, &pl); err != nil {
			return DimensionType{}, fmt.Errorf("anvil: level.dat: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return DimensionType{}, fmt.Errorf("anvil: level.dat: %w", err)
	}
	dataVersion := lv.DataVersion
	packs, closePacks, err := datapacks(save, pl)
	if err != nil {
		return DimensionType{}, fmt.Errorf("anvil: datapacks: %w", err)
	}
	defer closePacks()
	typeID := d.ID()
	data, from, ok, err := findDatapackFile(packs, path.Join("data", d.Namespace(), "dimension", d.Path()+".json"))
	if err != nil {
		return DimensionType{}, fmt.Errorf("anvil: %w", err)
	}
	if ok {
		id, inline, err := parseDimensionFile(data)
		if err != nil {
			return DimensionType{}, fmt.Errorf("anvil: %s: %w", from, err)
		}
		if inline != nil {
			inline.Source = from
			return *inline, nil
		}
		typeID = id
	}
	tns, tpath, _ := strings.Cut(typeID, ":")
	data, from, ok, err = findDatapackFile(packs, path.Join("data", tns, "dimension_type", tpath+".json"))
	if err != nil {
		return DimensionType{}, fmt.Errorf("anvil: %w", err)
	}
	if ok {
		t, err := ParseDimensionType(data)
		if err != nil {
			return DimensionType{}, fmt.Errorf("anvil: %s: %w", from, err)
		}
		t.ID, t.Source = typeID, from
		return t, nil
	}
	if t, ok := VanillaDimensionType(typeID, dataVersion); ok {
		return t, nil
	}
	t, _ := VanillaDimensionType("minecraft:overworld", dataVersion)
	t.ID, t.Source = "", "assumed"
	return t, nil
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
