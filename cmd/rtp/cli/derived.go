package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rtpengine/rtp/config"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil"
)

// DerivedRegionsFile is the file of the data directory that keeps the
// regions --world laid over a save, so that a region does not move as
// players explore: serve and pregen derive a region once and use the
// kept one from then on, until the configuration file gives the region a
// shape. Removing an entry (or the file) derives that region again.
const DerivedRegionsFile = "derived-regions.json"

// derivedVersion is the version of DerivedRegionsFile written.
const derivedVersion = 1

// maxDerivedBytes bounds the size of DerivedRegionsFile read.
const maxDerivedBytes = 4 << 20

// maxDerivedCentre bounds a kept centre: the Minecraft world spans
// ±30,000,000 blocks.
const maxDerivedCentre = 30_000_000

// derivedKey names one kept region: the save's absolute path, the
// dimension's id and the region's name.
type derivedKey struct {
	Save      string `json:"save"`
	Dimension string `json:"dimension"`
	Region    string `json:"region"`
}

// derivedEntry is one kept region: a circle, in blocks, and when and
// how it was derived.
type derivedEntry struct {
	derivedKey
	CenterX   int64     `json:"center_x"`
	CenterZ   int64     `json:"center_z"`
	Radius    int64     `json:"radius"`
	DerivedAt time.Time `json:"derived_at"`
	From      string    `json:"from"`
}

// shape returns the kept circle as a configuration shape.
func (e derivedEntry) shape() geom.ShapeSpec {
	sh := config.DefaultRegion().Shape
	sh.Kind = geom.ShapeCircle
	sh.CenterX, sh.CenterZ, sh.Radius = e.CenterX, e.CenterZ, e.Radius
	sh.Inner = 0
	return sh
}

// derivedFile is the content of DerivedRegionsFile.
type derivedFile struct {
	Version int            `json:"version"`
	Regions []derivedEntry `json:"regions"`
}

// parseDerived decodes DerivedRegionsFile and checks every entry. It
// never panics; any flaw is an error naming the entry.
func parseDerived(b []byte) (map[derivedKey]derivedEntry, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var f derivedFile
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a file of derived regions: %w", err)
	}
	if d.More() {
		return nil, errors.New("not a file of derived regions: more after the object")
	}
	if f.Version != derivedVersion {
		return nil, fmt.Errorf("version %d, want %d", f.Version, derivedVersion)
	}
	out := make(map[derivedKey]derivedEntry, len(f.Regions))
	for i, e := range f.Regions {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("region %d: %w", i+1, err)
		}
		if _, dup := out[e.derivedKey]; dup {
			return nil, fmt.Errorf("region %d: region %q of %s in %s given twice", i+1, e.Region, e.Dimension, e.Save)
		}
		out[e.derivedKey] = e
	}
	return out, nil
}

func (e derivedEntry) check() error {
	switch {
	case e.Save == "" || !filepath.IsAbs(e.Save):
		return fmt.Errorf("save %q is not an absolute path", e.Save)
	case e.Region == "":
		return errors.New("no region name")
	case e.Radius < 1 || e.Radius > geom.MaxRadius<<geom.ChunkShift:
		return fmt.Errorf("radius %d outside 1..%d", e.Radius, int64(geom.MaxRadius)<<geom.ChunkShift)
	case e.CenterX < -maxDerivedCentre || e.CenterX > maxDerivedCentre || e.CenterZ < -maxDerivedCentre || e.CenterZ > maxDerivedCentre:
		return fmt.Errorf("centre (%d, %d) outside the world", e.CenterX, e.CenterZ)
	case e.DerivedAt.IsZero():
		return errors.New("no derived_at")
	}
	if d, err := anvil.ParseDimension(e.Dimension); err != nil || d.ID() != e.Dimension {
		return fmt.Errorf("dimension %q is not a dimension's id", e.Dimension)
	}
	return nil
}

// encodeDerived encodes entries as DerivedRegionsFile, in a fixed order.
func encodeDerived(entries map[derivedKey]derivedEntry) ([]byte, error) {
	f := derivedFile{Version: derivedVersion, Regions: make([]derivedEntry, 0, len(entries))}
	for _, e := range entries {
		f.Regions = append(f.Regions, e)
	}
	slices.SortFunc(f.Regions, func(a, b derivedEntry) int {
		return strings.Compare(a.Save+"\x00"+a.Dimension+"\x00"+a.Region, b.Save+"\x00"+b.Dimension+"\x00"+b.Region)
	})
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// derivedStore is DerivedRegionsFile of one data directory, read once.
// It is not safe for concurrent use (saveOptions.apply serialises it).
type derivedStore struct {
	path    string
	entries map[derivedKey]derivedEntry
}

// openDerived reads DerivedRegionsFile of dataDir; a missing file is an
// empty store. A file that cannot be read or decoded is an error that
// names it: the regions it keeps are not silently derived again.
func openDerived(dataDir string) (*derivedStore, error) {
	s := &derivedStore{path: filepath.Join(dataDir, DerivedRegionsFile), entries: map[derivedKey]derivedEntry{}}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--world: the derived regions: %w", err)
	}
	defer f.Close()
	b, err := readCapped(f, maxDerivedBytes)
	if err == nil {
		s.entries, err = parseDerived(b)
	}
	if err != nil {
		return nil, fmt.Errorf("--world: %s: %w; fix the file or remove it to derive the regions again", s.path, err)
	}
	return s, nil
}

// readCapped reads all of f, failing when it holds more than limit bytes.
func readCapped(f io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// put keeps e and writes the file (through a temporary file, renamed
// over it), creating the data directory when missing.
func (s *derivedStore) put(e derivedEntry) error {
	next := make(map[derivedKey]derivedEntry, len(s.entries)+1)
	for k, v := range s.entries {
		next[k] = v
	}
	next[e.derivedKey] = e
	b, err := encodeDerived(next)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("--world: keeping the derived region: %w", err)
	}
	if err := writeFileAtomic(s.path, b); err != nil {
		return fmt.Errorf("--world: keeping the derived region: %w", err)
	}
	s.entries = next
	return nil
}
