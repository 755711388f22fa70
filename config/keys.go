package config

// Keys are the keys a config file sets, so that a caller can tell a value
// the file gives from a default (rtp serve --world derives a region's
// shape from the save unless the file gives one). The zero value sets no
// key. Keys is immutable and safe for concurrent use.
type Keys struct {
	set map[string]bool
}

// Has reports whether the file sets the key at path, one segment per
// level, map entries by name: Has("regions", "default", "shape") is true
// when the file writes a shape for the region "default" (even an empty
// one). A key set only through its parent's default is not set.
func (k Keys) Has(path ...string) bool {
	if len(path) == 0 {
		return false
	}
	var p keyPath
	for _, s := range path {
		p = p.name(s)
	}
	return k.set[p.String()]
}

// LoadFileKeys is LoadFile that also returns the keys the file sets.
func LoadFileKeys(path string) (*Config, Keys, error) {
	c, d, err := loadFile(path)
	if err != nil {
		return nil, Keys{}, err
	}
	set := make(map[string]bool, len(d.lines))
	for key := range d.lines {
		set[key] = true
	}
	return c, Keys{set: set}, nil
}
