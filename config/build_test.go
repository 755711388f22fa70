package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/world/anvil"
)

// Property: a shape that passes validation builds, and its chunks stay
// within the radii written, measured between chunk positions in blocks;
// one that fails validation does not build.
func TestBuildShapeStaysWithinWrittenRadii(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	built := 0
	for range 400 {
		s := geom.ShapeSpec{
			Kind:     []string{geom.ShapeCircle, geom.ShapeSquare, geom.ShapeRectangle}[rng.IntN(3)],
			CenterX:  rng.Int64N(2001) - 1000,
			CenterZ:  rng.Int64N(2001) - 1000,
			Radius:   rng.Int64N(200) - 5,
			Inner:    rng.Int64N(120) * rng.Int64N(2),
			RadiusX:  rng.Int64N(200),
			RadiusZ:  rng.Int64N(200),
			Rotation: float64(rng.IntN(8)) * 15,
		}
		if rng.IntN(2) == 0 {
			s.InnerX, s.InnerZ = rng.Int64N(100), rng.Int64N(100)
		}
		r := DefaultRegion()
		r.Shape = s
		valid := len(shapeProblems(s, keyPath{"shape"})) == 0
		shape, err := r.BuildShape()
		if valid != (err == nil) {
			t.Fatalf("shape %+v: valid %v, BuildShape error %v", s, valid, err)
		}
		if err != nil {
			continue
		}
		built++
		c := s.Center()
		for i := range shape.Len() {
			ch := shape.Chunk(i)
			dx, dz := float64(ch.X-c.X)*16, float64(ch.Z-c.Z)*16
			switch s.Kind {
			case geom.ShapeCircle:
				if d := math.Hypot(dx, dz); d > float64(s.Radius) || d < float64(s.Inner) {
					t.Fatalf("circle %+v holds %v at %.1f blocks from the centre", s, ch, d)
				}
			case geom.ShapeSquare:
				if d := max(math.Abs(dx), math.Abs(dz)); d > float64(s.Radius) || d < float64(s.Inner) {
					t.Fatalf("square %+v holds %v at %.1f blocks from the centre", s, ch, d)
				}
			}
		}
	}
	if built < 100 {
		t.Errorf("only %d of 400 random shapes were valid; the generator is off", built)
	}
}

func TestBuildDistribution(t *testing.T) {
	for _, tc := range []struct {
		d    Distribution
		want geom.Distribution
	}{
		{Distribution{Kind: Flat}, geom.Flat{}},
		{Distribution{Kind: Weighted, Exponent: 3}, geom.Weighted{Exponent: 3}},
		{Distribution{Kind: Normal, Mean: 0.3, Deviation: 0.1}, geom.Normal{Mean: 0.3, Deviation: 0.1}},
		{Distribution{Kind: Normal, Mean: 0.3, Deviation: 0.1, Expand: true}, geom.Expand{Ranks: geom.Normal{Mean: 0.3, Deviation: 0.1}}},
		{Distribution{Kind: Flat, Expand: true}, geom.Expand{Ranks: geom.Flat{}}},
	} {
		r := DefaultRegion()
		r.Distribution = tc.d
		got, err := r.BuildDistribution()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("BuildDistribution(%+v) = %#v, %v; want %#v", tc.d, got, err, tc.want)
		}
	}
	for _, d := range []Distribution{{Kind: "x"}, {Kind: Weighted, Exponent: math.Inf(1)}, {Kind: Normal, Mean: -1, Deviation: 1}} {
		r := DefaultRegion()
		r.Distribution = d
		if got, err := r.BuildDistribution(); err == nil {
			t.Errorf("BuildDistribution(%+v) = %#v, nil; want an error", d, got)
		}
	}
	r := DefaultRegion()
	r.Shape.Kind = "blob"
	if _, err := r.BuildShape(); err == nil || !strings.Contains(err.Error(), "shape.kind") {
		t.Errorf("BuildShape(kind blob) = %v, want an error naming shape.kind", err)
	}
}

// TestRegionSpec: the default region translates to the engine's own
// defaults, and the file's zeros for "none" to the engine's negatives.
func TestRegionSpec(t *testing.T) {
	r := DefaultRegion()
	got, err := r.Spec()
	if err != nil {
		t.Fatal(err)
	}
	want := engine.DefaultRegion()
	want.World = DefaultWorldName
	want.Safety = safety.Default()
	// The file enables the group sink by default; an embedder's Spec
	// enables it itself, as every other optional sink.
	want.Sinks.Group.Enabled = true
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultRegion().Spec() = %+v\nwant %+v", got, want)
	}
	r.Allocator.MinResidence = 0
	r.Memory.SpatialResolution = 0
	r.UniquePlacement.Radius = 0
	r.Sinks.Login.Enabled, r.Sinks.Network.Enabled, r.Sinks.Personal.Enabled = true, true, true
	r.Distribution = Distribution{Kind: Weighted, Exponent: 3, Expand: true}
	got, err = r.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if got.Allocator.MinResidence >= 0 || got.Memory.SpatialResolution >= 0 || got.Live.UniqueRadius >= 0 {
		t.Errorf("zeros for none gave min residence %v, spatial resolution %d, unique radius %d; want all negative",
			got.Allocator.MinResidence, got.Memory.SpatialResolution, got.Live.UniqueRadius)
	}
	if !got.Sinks.Login || !got.Sinks.Network.Enabled || !got.Sinks.Personal.Enabled {
		t.Errorf("sinks enabled gave %+v", got.Sinks)
	}
	if d, ok := got.Distribution.(geom.Expand); !ok || d.Ranks != (geom.Weighted{Exponent: 3}) {
		t.Errorf("distribution %#v, want an expanding weighted one", got.Distribution)
	}
	r.Sinks.Network.SecretFile = filepath.Join(t.TempDir(), "missing")
	if _, err := r.Spec(); err == nil {
		t.Error("Spec with a missing network secret file: no error")
	}
}

// TestConfigSpec: Spec carries the file's values, and refuses an invalid
// configuration.
func TestConfigSpec(t *testing.T) {
	c := Default()
	c.Handouts = Handouts{Lifespan: time.Minute, MaxPerPlayer: 2, MaxOpen: 9}
	c.Verifiers = []Verifier{{Name: "gp", Kind: KindHTTP, URL: "http://127.0.0.1:1/v", Timeout: time.Second}}
	mc := DefaultWorld()
	save := t.TempDir()
	mc.Kind, mc.Path, mc.Dimension, mc.WatchPeriod = KindMinecraft, save, Nether, -1
	c.Worlds["mc"] = mc
	s, err := c.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.DataDir != c.DataDir || s.Database != c.Database.Path || s.Archive.Path != c.Archive.Path || s.TTLPath != c.TTLFile {
		t.Errorf("files %q %q %q %q, want the config's", s.DataDir, s.Database, s.Archive.Path, s.TTLPath)
	}
	if s.Handouts != (engine.HandoutLimits{PerPlayer: 2, Total: 9}) || s.HandoutLifespan != time.Minute {
		t.Errorf("handouts %+v, %v", s.Handouts, s.HandoutLifespan)
	}
	if len(s.Verifiers) != 1 || s.Verifiers[0].Kind != engine.VerifierHTTP || s.Verifiers[0].URL != "http://127.0.0.1:1/v" {
		t.Errorf("verifiers %+v", s.Verifiers)
	}
	if w := s.Worlds[DefaultWorldName]; w.Procedural == nil || w.Procedural.Params != procgen.DefaultParams() || w.Procedural.TileCache != DefaultTileCache {
		t.Errorf("procedural world %+v", w)
	}
	if m := s.Worlds["mc"].Minecraft; m == nil || m.Path != save || m.Dimension != anvil.Nether || m.WatchPeriod != -1 {
		t.Errorf("minecraft world %+v", m)
	}
	if s.Archive.MinFreeBytes != 256<<20 || s.Archive.MinFreePercent != 5 {
		t.Errorf("archive floor %d bytes, %v%%; want the defaults 256 MiB, 5%%", s.Archive.MinFreeBytes, s.Archive.MinFreePercent)
	}
	c.Archive.MinFreeBytes, c.Archive.MinFreePercent = 0, 0
	if s, err := c.Spec(); err != nil || s.Archive.MinFreeBytes >= 0 || s.Archive.MinFreePercent >= 0 {
		t.Errorf("archive floor written 0, 0: spec %d, %v, %v; want negative (no bound)", s.Archive.MinFreeBytes, s.Archive.MinFreePercent, err)
	}
	c.Regions[DefaultRegionName] = Region{}
	if _, err := c.Spec(); err == nil {
		t.Error("Spec of an invalid configuration: no error")
	}
}

func TestAnvilOptions(t *testing.T) {
	for _, tc := range []struct {
		dim  string
		want anvil.Dimension
	}{{"", ""}, {Overworld, anvil.Overworld}, {Nether, anvil.Nether}, {End, anvil.End},
		{"minecraft:the_nether", anvil.Nether}, {"mymod:mining", "mymod:mining"}} {
		o, err := World{Kind: KindMinecraft, Dimension: tc.dim, RegionDir: "dimensions/x/y/region"}.AnvilOptions()
		if err != nil || o.Dimension != tc.want || o.RegionDir != "dimensions/x/y/region" {
			t.Errorf("AnvilOptions(%q) = %+v, %v; want dimension %v", tc.dim, o, err, tc.want)
		}
	}
	for _, w := range []World{{Dimension: "moon"}, {Dimension: "x:../y"}, {Dimension: "x:a\\b"}, {RegionDir: "../x"}} {
		if _, err := w.AnvilOptions(); err == nil {
			t.Errorf("AnvilOptions(%+v) = nil error, want one", w)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	c := Default()
	c.Auth.Token = "hunter2-hunter2-hunter2"
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "auth", c.Auth, "token", c.Auth.Token)
	js, err := json.Marshal(c.Auth)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yaml.Marshal(c.Auth)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c), fmt.Sprintf("<%s>", c.Auth.Token),
		fmt.Sprintf("%q", c.Auth.Token), fmt.Sprintf("%x", c.Auth.Token), fmt.Sprint(c.Auth),
		logged.String(), string(js), string(ys),
	} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, fmt.Sprintf("%x", "hunter2")) {
			t.Errorf("the token leaks: %s", s)
		}
		if !strings.Contains(s, redacted) && s != fmt.Sprintf("%x", redacted) {
			t.Errorf("%q does not say [redacted]", s)
		}
	}
	if c.Auth.Token.Reveal() != "hunter2-hunter2-hunter2" {
		t.Error("Reveal lost the token")
	}
	if Secret("").String() != "" {
		t.Error("the empty secret prints as non-empty")
	}
}

func TestAuthResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a       Auth
		want    string
		wantErr string
	}{
		{Auth{}, "", ""},
		{Auth{Token: "0123456789abcdef"}, "0123456789abcdef", ""},
		{Auth{TokenFile: file}, "0123456789abcdef0123", ""},
		{Auth{Token: "hunter2"}, "", "shorter than 16"},
		{Auth{TokenFile: short}, "", "shorter than 16"},
		{Auth{TokenFile: filepath.Join(dir, "missing")}, "", "no such file"},
		{Auth{Token: "0123456789abcdef", TokenFile: file}, "", "both set"},
	} {
		got, err := tc.a.Resolve()
		if got.Reveal() != tc.want || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%+v.Resolve() = %q, %v; want %q, %q", tc.a, got.Reveal(), err, tc.want, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%+v.Resolve() error %q shows the token", tc.a, err)
		}
	}
}

func TestNetworkSecret(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "secret")
	if err := os.WriteFile(good, []byte("a-shared-network-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := (NetworkSink{}).Secret(); b != nil || err != nil {
		t.Errorf("Secret() without a file = %q, %v; want nil, nil", b, err)
	}
	if b, err := (NetworkSink{SecretFile: good}).Secret(); string(b) != "a-shared-network-secret" || err != nil {
		t.Errorf("Secret() = %q, %v", b, err)
	}
	if _, err := (NetworkSink{SecretFile: short}).Secret(); err == nil || strings.Contains(err.Error(), "tiny") {
		t.Errorf("Secret() of a short secret = %v, want an error without the secret", err)
	}
}

func TestInDataDir(t *testing.T) {
	c := Default()
	c.DataDir = "/var/lib/rtp"
	c.Archive.Path = "/mnt/cache/archive.db"
	c.TTLFile = ""
	if got := c.DatabasePath(); got != "/var/lib/rtp/rtp.db" {
		t.Errorf("DatabasePath() = %q", got)
	}
	if got := c.ArchivePath(); got != "/mnt/cache/archive.db" {
		t.Errorf("ArchivePath() = %q, want the absolute path unchanged", got)
	}
	if got := c.TTLPath(); got != "" {
		t.Errorf("TTLPath() = %q, want \"\" for no ttl file", got)
	}
	if got := c.Archive.Limits(); got.MaxEntries != 65536 || got.MaxBytes != 4<<30 {
		t.Errorf("Limits() = %+v", got)
	}
}
