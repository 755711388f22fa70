package anviltest

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/Tnze/go-mc/nbt"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/world/anvil"
)

// maxSectors is the most sectors one chunk may take in a region file (the
// count is one byte).
const maxSectors = 255

// WriteRegions writes chunks into region files (r.<x>.<z>.mca) in folder
// dir, created when missing, one file per region the chunks touch; an
// existing file of the same name is replaced. Payloads are
// zlib-compressed (gzip under the zlib byte with Chunk.GzipAsZlib), each starts on a 4 KiB sector and the file is padded
// to whole sectors. Two chunks at the same position are an error, as is a
// chunk too large for a region file (1 MiB).
func WriteRegions(dir string, chunks []*Chunk) error {
	byRegion := map[geom.Region][]*Chunk{}
	seen := map[geom.Chunk]bool{}
	for _, c := range chunks {
		pos := geom.Chunk{X: int64(c.X), Z: int64(c.Z)}
		if seen[pos] {
			return fmt.Errorf("anviltest: chunk %d, %d given twice", c.X, c.Z)
		}
		seen[pos] = true
		byRegion[pos.Region()] = append(byRegion[pos.Region()], c)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("anviltest: %w", err)
	}
	regions := make([]geom.Region, 0, len(byRegion))
	for r := range byRegion {
		regions = append(regions, r)
	}
	slices.SortFunc(regions, func(a, b geom.Region) int {
		if a.X != b.X {
			return int(a.X - b.X)
		}
		return int(a.Z - b.Z)
	})
	for _, r := range regions {
		file, err := EncodeRegion(byRegion[r])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, anvil.RegionName(r)), file, 0o644); err != nil {
			return fmt.Errorf("anviltest: %w", err)
		}
	}
	return nil
}

// EncodeRegion returns the bytes of a region file holding chunks, which
// must all lie in one region.
func EncodeRegion(chunks []*Chunk) ([]byte, error) {
	file := make([]byte, anvil.HeaderSize)
	var region geom.Region
	for i, c := range chunks {
		pos := geom.Chunk{X: int64(c.X), Z: int64(c.Z)}
		if i == 0 {
			region = pos.Region()
		} else if pos.Region() != region {
			return nil, fmt.Errorf("anviltest: chunk %d, %d is not in region %d, %d", c.X, c.Z, region.X, region.Z)
		}
		raw, err := c.Encode()
		if err != nil {
			return nil, err
		}
		var z bytes.Buffer
		var zw io.WriteCloser = zlib.NewWriter(&z)
		if c.GzipAsZlib {
			zw = gzip.NewWriter(&z)
		}
		if _, err := zw.Write(raw); err != nil {
			return nil, fmt.Errorf("anviltest: %w", err)
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("anviltest: %w", err)
		}
		body := binary.BigEndian.AppendUint32(nil, uint32(z.Len()+1))
		body = append(body, anvil.CompressionZlib)
		body = append(body, z.Bytes()...)
		n := (len(body) + anvil.SectorSize - 1) / anvil.SectorSize
		if n > maxSectors {
			return nil, fmt.Errorf("anviltest: chunk %d, %d takes %d sectors, over %d", c.X, c.Z, n, maxSectors)
		}
		sector := len(file) / anvil.SectorSize
		body = append(body, make([]byte, n*anvil.SectorSize-len(body))...)
		file = append(file, body...)
		slot := anvil.Slot(pos)
		if binary.BigEndian.Uint32(file[4*slot:]) != 0 {
			return nil, fmt.Errorf("anviltest: chunk %d, %d given twice", c.X, c.Z)
		}
		stamp := c.Modified
		if stamp.IsZero() {
			stamp = time.Now()
		}
		binary.BigEndian.PutUint32(file[4*slot:], uint32(sector)<<8|uint32(n))
		binary.BigEndian.PutUint32(file[anvil.SectorSize+4*slot:], uint32(stamp.Unix()))
	}
	return file, nil
}

// Level is what WriteLevel puts in level.dat. The zero value is a world
// spawning at 0, 0, 0 with no border fields written.
type Level struct {
	// Name is Data.LevelName. Default "".
	Name string
	// DataVersion is Data.DataVersion. Default 0: DefaultDataVersion.
	DataVersion int32
	// SpawnX, SpawnY, SpawnZ are the world spawn. Default 0.
	SpawnX, SpawnY, SpawnZ int32
	// NoSpawn leaves SpawnX, SpawnY and SpawnZ out, as level.dat files
	// written by some tools do. Default false.
	NoSpawn bool
	// BorderSize is the world border's edge in blocks; 0 writes no
	// border fields (the game's default border). Default 0.
	BorderSize float64
	// BorderCenterX and BorderCenterZ are the border's centre. Default 0.
	BorderCenterX, BorderCenterZ float64
	// EnabledPacks and DisabledPacks are Data.DataPacks.Enabled and
	// .Disabled ("vanilla", "file/mypack.zip"); written when either is
	// not nil. Default nil: no DataPacks.
	EnabledPacks, DisabledPacks []string
}

// WriteLevel writes dir/level.dat (gzip-compressed NBT) holding lv, in
// the classic layout: Data.SpawnX/Y/Z, Data.BorderSize, BorderCenterX/Z,
// Data.DataVersion and Data.Version.Id.
func WriteLevel(dir string, lv Level) error {
	dv := lv.DataVersion
	if dv == 0 {
		dv = DefaultDataVersion
	}
	data := map[string]any{
		"DataVersion": dv,
		"LevelName":   lv.Name,
		"SpawnX":      lv.SpawnX,
		"SpawnY":      lv.SpawnY,
		"SpawnZ":      lv.SpawnZ,
		"version":     int32(19133),
		"Version":     map[string]any{"Id": dv},
	}
	if lv.NoSpawn {
		delete(data, "SpawnX")
		delete(data, "SpawnY")
		delete(data, "SpawnZ")
	}
	if lv.EnabledPacks != nil || lv.DisabledPacks != nil {
		data["DataPacks"] = map[string]any{"Enabled": nonNil(lv.EnabledPacks), "Disabled": nonNil(lv.DisabledPacks)}
	}
	if lv.BorderSize > 0 {
		data["BorderSize"] = lv.BorderSize
		data["BorderCenterX"] = lv.BorderCenterX
		data["BorderCenterZ"] = lv.BorderCenterZ
	}
	raw, err := nbt.Marshal(map[string]any{"Data": data})
	if err != nil {
		return fmt.Errorf("anviltest: level.dat: %w", err)
	}
	var buf bytes.Buffer
	gw := gzip.NewWriter(&buf)
	if _, err := gw.Write(raw); err != nil {
		return fmt.Errorf("anviltest: level.dat: %w", err)
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("anviltest: level.dat: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("anviltest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "level.dat"), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("anviltest: %w", err)
	}
	return nil
}

// Save is a whole save folder: level.dat and the chunks of every
// dimension.
type Save struct {
	// Level, when not nil, is written as level.dat. Default nil: none.
	Level *Level
	// Chunks go to the region folder of their own dimension: in the
	// older layout region/, DIM-1/region/, DIM1/region/ for the vanilla
	// dimensions and dimensions/<namespace>/<path>/region/ for any
	// other; with Layout26 dimensions/<namespace>/<path>/region/ for all.
	Chunks []*Chunk
	// Layout26 writes the layout of Minecraft 26.1 and later. Default
	// false: the older one.
	Layout26 bool
	// Files are more files of the save (datapacks, ...), by path relative
	// to the save folder, slash-separated; a path must stay inside it.
	// Default none.
	Files map[string][]byte
}

// WriteSave writes s into the save folder dir, created when missing.
func WriteSave(dir string, s Save) error {
	byDim := map[anvil.Dimension][]*Chunk{}
	var dims []anvil.Dimension
	for _, c := range s.Chunks {
		d, err := anvil.ParseDimension(c.Dim.ID())
		if err != nil {
			return fmt.Errorf("anviltest: chunk %d, %d: %w", c.X, c.Z, err)
		}
		if byDim[d] == nil {
			dims = append(dims, d)
		}
		byDim[d] = append(byDim[d], c)
	}
	for _, d := range dims {
		folder := d.RegionDir()
		if s.Layout26 {
			folder = d.ModernRegionDir()
		}
		if err := WriteRegions(filepath.Join(dir, filepath.FromSlash(folder)), byDim[d]); err != nil {
			return err
		}
	}
	for name, data := range s.Files {
		p := filepath.FromSlash(name)
		if !filepath.IsLocal(p) {
			return fmt.Errorf("anviltest: file %q leaves the save folder", name)
		}
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("anviltest: %w", err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("anviltest: %w", err)
		}
	}
	if s.Level != nil {
		return WriteLevel(dir, *s.Level)
	}
	return os.MkdirAll(dir, 0o755)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
