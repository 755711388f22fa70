package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/lease/token"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world/anvil"
)

// Secret is a string that does not print: fmt (%v, %+v, %#v, %s, %q),
// slog and text, JSON and YAML marshalling all show "[redacted]" (or ""
// when it is empty). Reveal returns the value itself. The zero value is
// the empty secret.
type Secret string

const redacted = "[redacted]"

// String returns "[redacted]", or "" for the empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer without the value.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.String()) }

// LogValue implements slog.LogValuer without the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText implements encoding.TextMarshaler without the value, so
// that a Config marshalled to JSON or YAML does not leak it.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret.
func (s Secret) Reveal() string { return string(s) }

// MinTokenLen is the shortest admin token accepted, in bytes.
const MinTokenLen = 16

// maxSecretFile bounds the size of a token or secret file.
const maxSecretFile = 64 << 10

// Resolve returns the admin token: Token, or the content of TokenFile
// with surrounding whitespace trimmed. It returns "" and no error when
// neither is set (mutating and admin endpoints are then open). Errors never hold the
// token.
func (a Auth) Resolve() (Secret, error) {
	switch {
	case a.Token != "" && a.TokenFile != "":
		return "", errors.New("config: auth: token and token_file are both set")
	case a.Token != "":
		if err := checkSecret(a.Token.Reveal(), MinTokenLen); err != nil {
			return "", fmt.Errorf("config: auth.token: %w", err)
		}
		return a.Token, nil
	case a.TokenFile != "":
		b, err := readSecret(a.TokenFile, MinTokenLen)
		if err != nil {
			return "", fmt.Errorf("config: auth.token_file: %w", err)
		}
		return Secret(b), nil
	}
	return "", nil
}

// Secret returns the network token secret read from SecretFile, with
// surrounding whitespace trimmed; nil and no error when SecretFile is ""
// (the pipeline then makes a random one). Errors never hold the secret.
func (n NetworkSink) Secret() ([]byte, error) {
	if n.SecretFile == "" {
		return nil, nil
	}
	b, err := readSecret(n.SecretFile, token.MinSecretLen)
	if err != nil {
		return nil, fmt.Errorf("config: network secret_file: %w", err)
	}
	return b, nil
}

// readSecret reads a small file holding a secret of at least min bytes.
func readSecret(path string, min int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxSecretFile)
	}
	b = bytes.TrimSpace(b)
	if err := checkSecret(string(b), min); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// checkSecret reports a secret that is too short or holds control
// characters, without quoting it.
func checkSecret(s string, min int) error {
	if len(s) < min {
		return fmt.Errorf("shorter than %d bytes", min)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return errors.New("holds a control character")
		}
	}
	return nil
}

// ProceduralFrom returns the YAML form of p.
func ProceduralFrom(p procgen.Params) Procedural {
	return Procedural{
		Seed:        p.Seed,
		Relief:      p.Relief,
		SeaLevel:    p.SeaLevel,
		SeabedClamp: p.SeabedClamp,
		Biome: ProceduralBiome{
			TemperatureScale:  p.Biome.TemperatureScale,
			TemperatureOffset: p.Biome.TemperatureOffset,
			MoistureScale:     p.Biome.MoistureScale,
			MoistureOffset:    p.Biome.MoistureOffset,
			VolcanicFrequency: p.Biome.VolcanicFrequency,
			SnowLine:          p.Biome.SnowLine,
		},
	}
}

// Params returns the generator parameters p describes.
func (p Procedural) Params() procgen.Params {
	return procgen.Params{
		Seed:        p.Seed,
		Relief:      p.Relief,
		SeaLevel:    p.SeaLevel,
		SeabedClamp: p.SeabedClamp,
		Biome: procgen.BiomeParams{
			TemperatureScale:  p.Biome.TemperatureScale,
			TemperatureOffset: p.Biome.TemperatureOffset,
			MoistureScale:     p.Biome.MoistureScale,
			MoistureOffset:    p.Biome.MoistureOffset,
			VolcanicFrequency: p.Biome.VolcanicFrequency,
			SnowLine:          p.Biome.SnowLine,
		},
	}
}

// AnvilOptions returns the options to open a minecraft world with
// anvil.Open(w.Path, opts). It fails on a dimension that is not an alias
// nor a resource id (anvil.ParseDimension) or a region folder outside the
// save folder.
func (w World) AnvilOptions() (anvil.Options, error) {
	var o anvil.Options
	if w.Dimension != "" {
		d, err := anvil.ParseDimension(w.Dimension)
		if err != nil {
			return o, fmt.Errorf("config: %w", err)
		}
		o.Dimension = d
	}
	o.RegionDir = w.RegionDir
	if err := o.Validate(); err != nil {
		return anvil.Options{}, fmt.Errorf("config: %w", err)
	}
	return o, nil
}

// BuildShape returns the region's shape in chunks: its problems (see
// Validate), every one of them, or what geom.ShapeSpec.Build makes of it.
// A circle of radius 4096 blocks is one of 256 chunks, radius 100 blocks
// is 6 chunks, and an inner radius of 100 blocks is 7 chunks.
func (r Region) BuildShape() (geom.Shape, error) {
	if ps := shapeProblems(r.Shape, keyPath{"shape"}); len(ps) > 0 {
		return nil, joinProblems(ps)
	}
	return r.Shape.Build()
}

// BuildDistribution returns the region's distribution: geom.Flat,
// geom.Weighted or geom.Normal, wrapped in geom.Expand when Expand is set.
// It reports every invalid parameter.
func (r Region) BuildDistribution() (geom.Distribution, error) {
	if ps := r.Distribution.problems(keyPath{"distribution"}); len(ps) > 0 {
		return nil, joinProblems(ps)
	}
	d := r.Distribution
	var out geom.Distribution
	switch d.Kind {
	case Flat:
		out = geom.Flat{}
	case Weighted:
		out = geom.Weighted{Exponent: d.Exponent}
	default: // Normal: problems checked the kind
		out = geom.Normal{Mean: d.Mean, Deviation: d.Deviation}
	}
	if d.Expand {
		out = geom.Expand{Ranks: out}
	}
	return out, nil
}

// Limits returns the archive's limits.
func (a Archive) Limits() archive.Limits {
	return archive.Limits{MaxEntries: a.MaxEntries, MaxBytes: a.MaxBytes}
}

// InDataDir resolves a path relative to DataDir: an absolute path or ""
// is returned as is.
func (c *Config) InDataDir(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.DataDir, p)
}

// DatabasePath returns the database file's path.
func (c *Config) DatabasePath() string { return c.InDataDir(c.Database.Path) }

// ArchivePath returns the archive database's path.
func (c *Config) ArchivePath() string { return c.InDataDir(c.Archive.Path) }

// TTLPath returns the ttl.yml's path, "" when TTLFile is "".
func (c *Config) TTLPath() string { return c.InDataDir(c.TTLFile) }
