package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// version is one game release the tables cover.
type version struct {
	name        string // "1.16.5"
	dataVersion int32
	blocks      string // data directory of blocks.json ("pc/1.16.2")
	shapes      string // data directory of blockCollisionShapes.json
}

// group is the run of consecutive releases that read the same pair of
// data files; it becomes one table.
type group struct {
	versions []version
}

func (g group) first() version { return g.versions[0] }

// legacy reports whether the group predates the 1.13 flattening (numeric
// ids with metadata).
func (g group) legacy() bool { return less(g.first().name, "1.13") }

// releaseName matches a release version name: numbers and dots only.
var releaseName = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)

// parseVersion splits a release name into its numbers.
func parseVersion(s string) []int {
	var out []int
	for f := range strings.SplitSeq(s, ".") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

// less orders release names numerically ("1.9" < "1.10" < "26.1").
func less(a, b string) bool {
	return slices.Compare(parseVersion(a), parseVersion(b)) < 0
}

// oldest is the first release the tables cover.
const oldest = "1.8"

// selectVersions lists the pc releases from 1.8 on that have both blocks
// and blockCollisionShapes, oldest first (by DataVersion).
func selectVersions(f files) ([]version, error) {
	rawPaths, err := f.dataFile("", "dataPaths.json")
	if err != nil {
		return nil, err
	}
	// dataPaths.json is an object of objects; its key order matters only
	// for error messages, the result is sorted by DataVersion.
	var paths struct {
		PC map[string]map[string]string `json:"pc"`
	}
	if err := json.Unmarshal(rawPaths, &paths); err != nil {
		return nil, fmt.Errorf("gen: dataPaths.json: %w", err)
	}
	rawProto, err := f.dataFile("pc/common", "protocolVersions.json")
	if err != nil {
		return nil, err
	}
	var proto []struct {
		MinecraftVersion string `json:"minecraftVersion"`
		DataVersion      *int32 `json:"dataVersion"`
		ReleaseType      string `json:"releaseType"`
	}
	if err := json.Unmarshal(rawProto, &proto); err != nil {
		return nil, fmt.Errorf("gen: protocolVersions.json: %w", err)
	}
	type info struct {
		dataVersion *int32
		releaseType string
	}
	known := map[string]info{}
	for _, p := range proto {
		if _, dup := known[p.MinecraftVersion]; !dup {
			known[p.MinecraftVersion] = info{p.DataVersion, p.ReleaseType}
		}
	}
	var out []version
	for name, dirs := range paths.PC {
		if !releaseName.MatchString(name) || less(name, oldest) {
			continue
		}
		blocks, shapes := dirs["blocks"], dirs["blockCollisionShapes"]
		if blocks == "" || shapes == "" {
			continue
		}
		in, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("gen: release %s is not in protocolVersions.json", name)
		}
		// Older entries carry no releaseType; the name decides for them.
		if in.releaseType != "" && in.releaseType != "release" {
			continue
		}
		if in.dataVersion == nil {
			return nil, fmt.Errorf("gen: release %s has no dataVersion", name)
		}
		out = append(out, version{name, *in.dataVersion, blocks, shapes})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gen: no release from %s on has blocks and collision shapes", oldest)
	}
	slices.SortFunc(out, func(a, b version) int {
		if c := cmp.Compare(a.dataVersion, b.dataVersion); c != 0 {
			return c
		}
		return slices.Compare(parseVersion(a.name), parseVersion(b.name))
	})
	for i := 1; i < len(out); i++ {
		if out[i].dataVersion == out[i-1].dataVersion {
			return nil, fmt.Errorf("gen: releases %s and %s share dataVersion %d",
				out[i-1].name, out[i].name, out[i].dataVersion)
		}
		if less(out[i].name, out[i-1].name) {
			return nil, fmt.Errorf("gen: release %s has a higher dataVersion than %s", out[i-1].name, out[i].name)
		}
	}
	return out, nil
}

// groupVersions merges consecutive releases that read the same data files.
func groupVersions(vs []version) []group {
	var out []group
	for _, v := range vs {
		if n := len(out); n > 0 {
			last := out[n-1].first()
			if last.blocks == v.blocks && last.shapes == v.shapes {
				out[n-1].versions = append(out[n-1].versions, v)
				continue
			}
		}
		out = append(out, group{versions: []version{v}})
	}
	return out
}

// prop is one block-state property with its values in state-index order.
type prop struct {
	name   string
	values []string
}

// modernBlock is a 1.13+ block: its properties (first most significant in
// the state index), the index of its default state and one shape class
// per state (a single class when every state has it).
type modernBlock struct {
	name    string
	props   []prop
	def     int
	classes []byte
}

// legacyBlock is a pre-1.13 block id with one class per metadata value (a
// single class when every value has it).
type legacyBlock struct {
	id      int
	name    string
	classes []byte
}

// fluids always come out Empty: the landing rules handle them by name.
var fluids = map[string]bool{
	"air": true, "cave_air": true, "void_air": true,
	"water": true, "flowing_water": true, "lava": true, "flowing_lava": true,
}

// shapeFile is blockCollisionShapes.json reduced to classes: per block
// either one class or one class per state.
type shapeFile map[string][]byte

func loadShapes(raw []byte) (shapeFile, error) {
	var f struct {
		Blocks map[string]json.RawMessage `json:"blocks"`
		Shapes map[string][]box           `json:"shapes"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("gen: blockCollisionShapes.json: %w", err)
	}
	classes := make(map[int]byte, len(f.Shapes))
	for k, boxes := range f.Shapes {
		id, err := strconv.Atoi(k)
		if err != nil {
			return nil, fmt.Errorf("gen: blockCollisionShapes.json: shape id %q", k)
		}
		classes[id] = classify(boxes)
	}
	out := shapeFile{}
	for name, m := range f.Blocks {
		var ids []int
		if bytes.HasPrefix(bytes.TrimSpace(m), []byte("[")) {
			if err := json.Unmarshal(m, &ids); err != nil {
				return nil, fmt.Errorf("gen: blockCollisionShapes.json: %s: %w", name, err)
			}
		} else {
			var id int
			if err := json.Unmarshal(m, &id); err != nil {
				return nil, fmt.Errorf("gen: blockCollisionShapes.json: %s: %w", name, err)
			}
			ids = []int{id}
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("gen: blockCollisionShapes.json: %s has no shape", name)
		}
		cs := make([]byte, len(ids))
		for i, id := range ids {
			c, ok := classes[id]
			if !ok {
				return nil, fmt.Errorf("gen: blockCollisionShapes.json: %s: unknown shape %d", name, id)
			}
			cs[i] = c
		}
		out[name] = cs
	}
	return out, nil
}

// compact returns classes as one class when all are equal.
func compact(classes []byte) []byte {
	for _, c := range classes {
		if c != classes[0] {
			return classes
		}
	}
	return classes[:1]
}

// checkName guards the generated encoding, which separates names, keys and
// values with ' ', ',', '=' and '|'.
func checkName(kind, s string) error {
	if s == "" || strings.ContainsAny(s, " ,=|[]:\n") {
		return fmt.Errorf("gen: %s %q cannot be encoded", kind, s)
	}
	return nil
}

// loadModern reads a 1.13+ data set.
func loadModern(blocksRaw, shapesRaw []byte) ([]modernBlock, error) {
	var raw []struct {
		Name   string `json:"name"`
		States []struct {
			Name      string   `json:"name"`
			Type      string   `json:"type"`
			NumValues int      `json:"num_values"`
			Values    []string `json:"values"`
		} `json:"states"`
		MinStateID   *int `json:"minStateId"`
		MaxStateID   *int `json:"maxStateId"`
		DefaultState *int `json:"defaultState"`
	}
	if err := json.Unmarshal(blocksRaw, &raw); err != nil {
		return nil, fmt.Errorf("gen: blocks.json: %w", err)
	}
	shapes, err := loadShapes(shapesRaw)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := make([]modernBlock, 0, len(raw))
	for _, r := range raw {
		if err := checkName("block name", r.Name); err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("gen: blocks.json: %s listed twice", r.Name)
		}
		seen[r.Name] = true
		b := modernBlock{name: r.Name}
		n := 1
		for _, s := range r.States {
			p := prop{name: s.Name}
			if err := checkName("property", s.Name); err != nil {
				return nil, fmt.Errorf("%w (block %s)", err, r.Name)
			}
			switch {
			case s.Type == "bool" && len(s.Values) == 0:
				p.values = []string{"true", "false"}
			case s.Type == "int" && len(s.Values) == 0:
				// Some data sets leave integer values out; they are then
				// 0..num_values-1.
				for i := range s.NumValues {
					p.values = append(p.values, strconv.Itoa(i))
				}
			default:
				p.values = s.Values
			}
			if len(p.values) != s.NumValues || s.NumValues < 1 {
				return nil, fmt.Errorf("gen: blocks.json: %s.%s: %d values, num_values %d",
					r.Name, s.Name, len(p.values), s.NumValues)
			}
			for _, v := range p.values {
				if err := checkName("value", v); err != nil {
					return nil, fmt.Errorf("%w (block %s)", err, r.Name)
				}
			}
			if slices.ContainsFunc(b.props, func(q prop) bool { return q.name == p.name }) {
				return nil, fmt.Errorf("gen: blocks.json: %s.%s listed twice", r.Name, s.Name)
			}
			b.props = append(b.props, p)
			n *= s.NumValues
		}
		if r.MinStateID == nil || r.MaxStateID == nil || r.DefaultState == nil {
			return nil, fmt.Errorf("gen: blocks.json: %s lacks state ids", r.Name)
		}
		if *r.MaxStateID-*r.MinStateID+1 != n {
			return nil, fmt.Errorf("gen: blocks.json: %s: state ids %d..%d for %d states",
				r.Name, *r.MinStateID, *r.MaxStateID, n)
		}
		b.def = *r.DefaultState - *r.MinStateID
		if b.def < 0 || b.def >= n {
			return nil, fmt.Errorf("gen: blocks.json: %s: default state %d out of range", r.Name, *r.DefaultState)
		}
		cs, ok := shapes[r.Name]
		if !ok {
			return nil, fmt.Errorf("gen: %s has no collision shape", r.Name)
		}
		cs = compact(cs)
		if len(cs) != 1 && len(cs) != n {
			return nil, fmt.Errorf("gen: %s: %d shapes for %d states", r.Name, len(cs), n)
		}
		b.classes = cs
		if fluids[r.Name] {
			b.classes = []byte{classEmpty}
		}
		out = append(out, b)
	}
	return out, nil
}

// metas is the number of metadata values of a pre-1.13 block id.
const metas = 16

// maxLegacyID is the highest numeric block id the chunk format can hold.
const maxLegacyID = 4095

// loadLegacy reads a pre-1.13 data set, ordered by id.
func loadLegacy(blocksRaw, shapesRaw []byte) ([]legacyBlock, error) {
	var raw []struct {
		ID   *int   `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(blocksRaw, &raw); err != nil {
		return nil, fmt.Errorf("gen: blocks.json: %w", err)
	}
	shapes, err := loadShapes(shapesRaw)
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	out := make([]legacyBlock, 0, len(raw))
	for _, r := range raw {
		if err := checkName("block name", r.Name); err != nil {
			return nil, err
		}
		if r.ID == nil || *r.ID < 0 || *r.ID > maxLegacyID {
			return nil, fmt.Errorf("gen: blocks.json: %s: missing or bad id", r.Name)
		}
		if seen[*r.ID] {
			return nil, fmt.Errorf("gen: blocks.json: id %d listed twice", *r.ID)
		}
		seen[*r.ID] = true
		cs, ok := shapes[r.Name]
		if !ok {
			return nil, fmt.Errorf("gen: %s has no collision shape", r.Name)
		}
		if len(cs) != 1 && len(cs) != metas {
			return nil, fmt.Errorf("gen: %s: %d shapes, want 1 or %d", r.Name, len(cs), metas)
		}
		b := legacyBlock{id: *r.ID, name: r.Name, classes: compact(cs)}
		if fluids[r.Name] {
			b.classes = []byte{classEmpty}
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b legacyBlock) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}
