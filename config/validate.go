package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/hostname"
	"github.com/rtpengine/rtp/internal/lineerr"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world/anvil"
)

// LineError is one problem of a configuration. Load, LoadFile, Validate
// and Check return every problem at once, joined with errors.Join; each
// is a *LineError. Its fields are:
//
//   - File: the name given to Load or the path given to LoadFile; "" for
//     a configuration built in code (Validate, Check);
//   - Line: 1-based, the line of the key, or of its closest enclosing key
//     the file sets; 0 when no line applies (a default value);
//   - Key: the key path, like "regions.default.shape.inner" or
//     "verifiers[0].url"; "" for the whole file;
//   - Msg: what is wrong.
//
// Error formats it as "file:line: key: message", leaving out the parts
// that are unknown; without a file it starts with "config: ". It is the
// type of ttl.LineError too: a problem of the ttl.yml that Check reads
// names that file.
type LineError = lineerr.Error

// keyPath is the path of a key, one segment per level: a key, a name
// (quoted when it is not a plain name) or an index "[i]".
type keyPath []string

func (p keyPath) key(k ...string) keyPath { return append(p[:len(p):len(p)], k...) }

// name appends a map key, quoted unless it is a plain name.
func (p keyPath) name(n string) keyPath {
	if validName(n) != nil {
		n = strconv.Quote(n)
	}
	return p.key(n)
}

func (p keyPath) index(i int) keyPath { return p.key("[" + strconv.Itoa(i) + "]") }

func (p keyPath) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// hasPrefix reports whether q is p or inside it.
func (p keyPath) hasPrefix(q keyPath) bool {
	return len(q) <= len(p) && slices.Equal(p[:len(q)], q)
}

// problem is one problem of a Config, at key. related are the other keys
// it depends on: when the file's value at one of them (or at key) could
// not be read, the problem is a consequence and is not reported.
type problem struct {
	key     keyPath
	related []keyPath
	msg     string
}

func joinProblems(ps []problem) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = &LineError{Key: p.key.String(), Msg: p.msg}
	}
	return errors.Join(errs...)
}

// Validate reports every problem of c at once (errors.Join of
// *LineError values, with no file and no line): unknown kinds, values out
// of range, invalid names, a region naming a missing world, invalid safety
// rules (safety.Rules.Validate), invalid procedural parameters
// (procgen.Params.Validate), duplicate verifier names, bad verifier URLs.
// A minecraft world's path must name a directory: Validate looks at the
// file system for that, and for nothing else.
//
// Fields that a kind does not use (a circle's radius_x, a procedural
// world's path) are not checked; Load rejects them when a file sets them.
func (c *Config) Validate() error { return joinProblems(c.problems()) }

// validator collects problems.
type validator struct{ ps []problem }

func (v *validator) add(key keyPath, related []keyPath, format string, args ...any) {
	v.ps = append(v.ps, problem{key: key, related: related, msg: fmt.Sprintf(format, args...)})
}

func (c *Config) problems() []problem {
	var v validator
	v.server(keyPath{"server"}, c.Server)
	v.path(keyPath{"data_dir"}, c.DataDir, true)
	v.services(c)
	v.path(keyPath{"ttl_file"}, c.TTLFile, false)
	v.auth(keyPath{"auth"}, c.Auth)
	if c.Handouts.Lifespan < 0 {
		v.add(keyPath{"handouts", "lifespan"}, nil, "%v: want a positive duration (or 0: the default, 5m)", c.Handouts.Lifespan)
	}
	if c.ScreenWorkers < 0 || c.ScreenWorkers > MaxScreenWorkers {
		v.add(keyPath{"screen_workers"}, nil, "%d: want 0 (one fewer than the processors) to %d", c.ScreenWorkers, MaxScreenWorkers)
	}

	if len(c.Worlds) == 0 {
		v.add(keyPath{"worlds"}, nil, "no world: want at least one")
	}
	for _, name := range sortedKeys(c.Worlds) {
		p := keyPath{"worlds"}.name(name)
		if err := validName(name); err != nil {
			v.add(p, nil, "invalid world name: %v", err)
		}
		v.world(p, c.Worlds[name])
	}
	if len(c.Regions) == 0 {
		v.add(keyPath{"regions"}, nil, "no region: want at least one")
	}
	for _, name := range sortedKeys(c.Regions) {
		p := keyPath{"regions"}.name(name)
		if err := validName(name); err != nil {
			v.add(p, nil, "invalid region name: %v", err)
		}
		v.region(p, c.Regions[name], c.Worlds)
	}
	v.verifiers(c.Verifiers, c.Regions)
	return v.ps
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MaxNameLen is the longest world or region name.
const MaxNameLen = 64

// validName reports whether name can name a world or region: 1 to 64
// ASCII letters, digits, '_' and '-', starting with a letter or digit. The
// names appear in URLs, metrics and file names, so nothing else is
// allowed.
func validName(name string) error {
	switch {
	case name == "":
		return errors.New("empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("longer than %d bytes", MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '-') {
			return fmt.Errorf("%q: want letters, digits, '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

func (v *validator) server(p keyPath, s Server) {
	if host, port, err := net.SplitHostPort(s.Listen); err != nil {
		v.add(p.key("listen"), nil, "%q: want host:port, like %s", s.Listen, DefaultListen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add(p.key("listen"), nil, "port %q: want a number from 0 to 65535", port)
	} else if strings.ContainsRune(host, 0) {
		v.add(p.key("listen"), nil, "host holds a NUL byte")
	}
	for i, h := range s.AllowedHosts {
		if err := hostname.Check(h); err != nil {
			v.add(p.key("allowed_hosts").index(i), nil, "%v", err)
		}
	}
	v.positive(p.key("max_body_bytes"), s.MaxBodyBytes)
	v.duration(p.key("read_header_timeout"), s.ReadHeaderTimeout, 1)
	v.duration(p.key("read_timeout"), s.ReadTimeout, 1)
	v.duration(p.key("write_timeout"), s.WriteTimeout, 1)
	v.duration(p.key("idle_timeout"), s.IdleTimeout, 1)
	v.duration(p.key("shutdown_timeout"), s.ShutdownTimeout, 1)
}

// path checks a file name: no NUL byte, and not empty when required.
func (v *validator) path(p keyPath, s string, required bool) {
	switch {
	case s == "" && required:
		v.add(p, nil, "empty: want a path")
	case strings.ContainsRune(s, 0):
		v.add(p, nil, "path holds a NUL byte")
	}
}

func (v *validator) positive(p keyPath, n int64) {
	if n < 1 {
		v.add(p, nil, "%d: want at least 1", n)
	}
}

// count checks a count or capacity in [lo, stage.MaxCapacity].
func (v *validator) count(p keyPath, n, lo int) {
	if n < lo || n > stage.MaxCapacity {
		v.add(p, nil, "%d: want %d to %d", n, lo, stage.MaxCapacity)
	}
}

// group checks a group sink: its size, radius and capacity each in range,
// and, those being right, a radius whose half holds the size (see
// pipeline.Profile.Validate).
func (v *validator) group(p keyPath, g GroupSink) {
	before := len(v.ps)
	if g.MaxSize < 1 || g.MaxSize > MaxGroupSize {
		v.add(p.key("max_size"), nil, "%d: want 1 to %d", g.MaxSize, MaxGroupSize)
	}
	if g.Radius < 1 || g.Radius > MaxGroupRadius {
		v.add(p.key("radius"), nil, "%d: want 1 to %d", g.Radius, MaxGroupRadius)
	}
	v.count(p.key("capacity"), g.Capacity, 1)
	if len(v.ps) > before {
		return
	}
	pr := pipeline.Profile{Size: g.MaxSize, Radius: g.Radius}
	if err := pr.Validate(); err != nil {
		v.add(p.key("radius"), []keyPath{p.key("max_size")}, "%d: %s", g.Radius, strings.TrimPrefix(err.Error(), "pipeline: "))
	}
}

// duration checks a duration of at least lo.
func (v *validator) duration(p keyPath, d, lo time.Duration) {
	if d < lo {
		if lo == 1 {
			v.add(p, nil, "%v: want a positive duration", d)
		} else {
			v.add(p, nil, "%v: want at least %v", d, lo)
		}
	}
}

func (v *validator) auth(p keyPath, a Auth) {
	if a.Token != "" && a.TokenFile != "" {
		v.add(p.key("token_file"), []keyPath{p.key("token")}, "token and token_file are both set; keep one")
	}
	if a.Token != "" {
		if err := checkSecret(a.Token.Reveal(), MinTokenLen); err != nil {
			v.add(p.key("token"), nil, "%v", err)
		}
	}
	v.path(p.key("token_file"), a.TokenFile, false)
}

func (v *validator) world(p keyPath, w World) {
	switch w.Kind {
	case KindProcedural:
		v.procedural(p.key("procedural"), w.Procedural)
		if w.TileCache < 1 || w.TileCache > MaxTileCache {
			v.add(p.key("tile_cache"), nil, "%d tiles: want 1 to %d", w.TileCache, MaxTileCache)
		}
	case KindMinecraft:
		v.path(p.key("path"), w.Path, true)
		if w.Path != "" && !strings.ContainsRune(w.Path, 0) {
			switch st, err := os.Stat(w.Path); {
			case errors.Is(err, os.ErrNotExist):
				v.add(p.key("path"), nil, "no such directory %q", w.Path)
			case err != nil:
				v.add(p.key("path"), nil, "%v", err)
			case !st.IsDir():
				v.add(p.key("path"), nil, "%q is not a directory: want a Minecraft save folder", w.Path)
			}
		}
		if w.WatchPeriod > time.Hour {
			v.add(p.key("watch_period"), nil, "%v: want at most 1h (or negative: off)", w.WatchPeriod)
		}
		if _, err := anvil.ParseDimension(w.Dimension); err != nil {
			v.add(p.key("dimension"), nil, "%s", strings.TrimPrefix(err.Error(), "anvil: "))
		}
		switch {
		case strings.ContainsRune(w.RegionDir, 0):
			v.add(p.key("region_dir"), nil, "path holds a NUL byte")
		case w.RegionDir != "" && !filepath.IsLocal(w.RegionDir):
			v.add(p.key("region_dir"), nil, "%q leaves the save folder: want a relative path inside it", w.RegionDir)
		}
	default:
		v.add(p.key("kind"), nil, "unknown world kind %q: want procedural or minecraft", w.Kind)
	}
}

// procedural checks each parameter with procgen.Params.Validate, one at a
// time over the defaults, so each problem lands on its key.
func (v *validator) procedural(p keyPath, pp Procedural) {
	q := pp.Params()
	before := len(v.ps)
	for _, f := range []struct {
		key []string
		set func(*procgen.Params)
	}{
		{[]string{"relief"}, func(x *procgen.Params) { x.Relief = q.Relief }},
		{[]string{"sea_level"}, func(x *procgen.Params) { x.SeaLevel = q.SeaLevel }},
		{[]string{"biome", "temperature_scale"}, func(x *procgen.Params) { x.Biome.TemperatureScale = q.Biome.TemperatureScale }},
		{[]string{"biome", "temperature_offset"}, func(x *procgen.Params) { x.Biome.TemperatureOffset = q.Biome.TemperatureOffset }},
		{[]string{"biome", "moisture_scale"}, func(x *procgen.Params) { x.Biome.MoistureScale = q.Biome.MoistureScale }},
		{[]string{"biome", "moisture_offset"}, func(x *procgen.Params) { x.Biome.MoistureOffset = q.Biome.MoistureOffset }},
		{[]string{"biome", "volcanic_frequency"}, func(x *procgen.Params) { x.Biome.VolcanicFrequency = q.Biome.VolcanicFrequency }},
		{[]string{"biome", "snow_line"}, func(x *procgen.Params) { x.Biome.SnowLine = q.Biome.SnowLine }},
	} {
		x := procgen.DefaultParams()
		f.set(&x)
		if err := x.Validate(); err != nil {
			v.add(p.key(f.key...), nil, "%s", strings.TrimPrefix(err.Error(), "procgen: "))
		}
	}
	// Whatever the single-field checks miss (none today) still counts.
	if err := q.Validate(); err != nil && len(v.ps) == before {
		v.add(p, nil, "%s", strings.TrimPrefix(err.Error(), "procgen: "))
	}
}

func (v *validator) region(p keyPath, r Region, worlds map[string]World) {
	_, ok := worlds[r.World]
	if !ok {
		v.add(p.key("world"), []keyPath{{"worlds"}}, "no world named %q (worlds: %s)", r.World, strings.Join(sortedKeys(worlds), ", "))
	}
	v.ps = append(v.ps, shapeProblems(r.Shape, p.key("shape"))...)
	v.ps = append(v.ps, r.Distribution.problems(p.key("distribution"))...)
	v.safety(p.key("safety"), r.Safety)
	s := p.key("sinks")
	v.count(s.key("general", "capacity"), r.Sinks.General.Capacity, 1)
	v.count(s.key("login", "player_cap"), r.Sinks.Login.PlayerCap, 0)
	v.count(s.key("network", "capacity"), r.Sinks.Network.Capacity, 1)
	v.duration(s.key("network", "lease"), r.Sinks.Network.Lease, 1)
	v.path(s.key("network", "secret_file"), r.Sinks.Network.SecretFile, false)
	v.count(s.key("personal", "capacity"), r.Sinks.Personal.Capacity, 1)
	v.group(s.key("group"), r.Sinks.Group)
	v.duration(p.key("pulse"), r.Pulse, time.Millisecond)
	b := p.key("budget")
	v.count(b.key("candidates"), r.Budget.Candidates, 1)
	v.count(b.key("screens"), r.Budget.Screens, 1)
	v.count(b.key("max_screens"), r.Budget.MaxScreens, 1)
	v.count(b.key("promotions_per_pulse"), r.Budget.PromotionsPerPulse, 1)
	v.count(b.key("max_promotions"), r.Budget.MaxPromotions, 1)
	v.count(b.key("transfers"), r.Budget.Transfers, 1)
	v.count(b.key("login_burst"), r.Budget.LoginBurst, 0)
	v.count(p.key("queues", "backlog"), r.Queues.Backlog, 1)
	v.count(p.key("queues", "cold"), r.Queues.Cold, 1)
	a := p.key("allocator")
	v.duration(a.key("min_residence"), r.Allocator.MinResidence, 0)
	v.duration(a.key("demand_half_life"), r.Allocator.DemandHalfLife, 1)
	v.duration(a.key("demand_horizon"), r.Allocator.DemandHorizon, 1)
	v.duration(p.key("promotion_timeout"), r.PromotionTimeout, 1)
	m := p.key("memory")
	if r.Memory.SpatialResolution < 0 {
		v.add(m.key("spatial_resolution"), nil, "%d: want 0 or more", r.Memory.SpatialResolution)
	}
	v.count(m.key("pending_threshold"), r.Memory.PendingThreshold, 1)
	v.duration(m.key("rebuild_interval"), r.Memory.RebuildInterval, 1)
	if r.Memory.SaveInterval != 0 {
		v.duration(m.key("save_interval"), r.Memory.SaveInterval, time.Second)
	}
	if n := r.UniquePlacement.Radius; n < 0 || n > MaxUniqueRadius {
		v.add(p.key("unique_placement", "radius"), nil, "%d blocks: want 0 (off) to %d", n, MaxUniqueRadius)
	}
}

// Bounds of shapes in blocks: geom's bounds in chunks, times 16.
const (
	maxBlockRadius = geom.MaxRadius << geom.ChunkShift
	maxBlockCenter = geom.MaxCenter << geom.ChunkShift
)

// shapeProblems checks shape s in blocks, and that each hole is smaller
// than its shape once converted to chunks.
func shapeProblems(s geom.ShapeSpec, p keyPath) []problem {
	var v validator
	for _, c := range []struct {
		key string
		val int64
	}{{"center_x", s.CenterX}, {"center_z", s.CenterZ}} {
		if c.val < -maxBlockCenter || c.val > maxBlockCenter {
			v.add(p.key(c.key), nil, "%d blocks: want -%d to %d", c.val, maxBlockCenter, maxBlockCenter)
		}
	}
	// hole checks an outer and an inner radius: each in range, and the
	// hole smaller than the shape in chunks.
	hole := func(innerKey string, inner int64, radiusKey string, r int64) {
		ok := true
		for _, c := range []struct {
			key string
			val int64
		}{{radiusKey, r}, {innerKey, inner}} {
			if c.val < 0 || c.val > maxBlockRadius {
				v.add(p.key(c.key), nil, "%d blocks: want 0 to %d", c.val, maxBlockRadius)
				ok = false
			}
		}
		if ok && inner > 0 && geom.InnerChunks(inner) >= geom.OuterChunks(r) {
			v.add(p.key(innerKey), []keyPath{p.key(radiusKey)},
				"%d blocks (%d chunks) is not less than %s %d blocks (%d chunks): the hole must be smaller than the shape",
				inner, geom.InnerChunks(inner), radiusKey, r, geom.OuterChunks(r))
		}
	}
	switch s.Kind {
	case geom.ShapeCircle, geom.ShapeSquare:
		hole("inner", s.Inner, "radius", s.Radius)
	case geom.ShapeRectangle:
		hole("inner_x", s.InnerX, "radius_x", s.RadiusX)
		hole("inner_z", s.InnerZ, "radius_z", s.RadiusZ)
		if (s.InnerX == 0) != (s.InnerZ == 0) {
			v.add(p.key("inner_x"), []keyPath{p.key("inner_z")},
				"inner_x %d and inner_z %d: a rectangle's hole needs both (or neither)", s.InnerX, s.InnerZ)
		}
		if math.IsNaN(s.Rotation) || math.IsInf(s.Rotation, 0) {
			v.add(p.key("rotation"), nil, "%v: want a finite number of degrees", s.Rotation)
		}
	default:
		v.add(p.key("kind"), nil, "unknown shape kind %q: want circle, square or rectangle", s.Kind)
	}
	return v.ps
}

// problems checks the distribution's parameters with geom's Validate.
func (d Distribution) problems(p keyPath) []problem {
	var v validator
	msg := func(err error) string { return strings.TrimPrefix(err.Error(), "geom: ") }
	switch d.Kind {
	case Flat:
	case Weighted:
		if err := (geom.Weighted{Exponent: d.Exponent}).Validate(); err != nil {
			v.add(p.key("exponent"), nil, "%s", msg(err))
		}
	case Normal:
		if err := (geom.Normal{Mean: d.Mean, Deviation: 1}).Validate(); err != nil {
			v.add(p.key("mean"), nil, "%s", msg(err))
		}
		if err := (geom.Normal{Mean: 0.5, Deviation: d.Deviation}).Validate(); err != nil {
			v.add(p.key("deviation"), nil, "%s", msg(err))
		}
	default:
		v.add(p.key("kind"), nil, "unknown distribution kind %q: want flat, weighted or normal", d.Kind)
	}
	return v.ps
}

// safety reports the problems of safety.Rules.Validate, each at the key it
// names (a bad rule at its list element), else at the safety section.
func (v *validator) safety(p keyPath, r safety.Rules) {
	err := r.Validate()
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var re *safety.RuleError
		if errors.As(e, &re) && re.Err != nil {
			key := p.key(strings.Split(re.Field, ".")...)
			v.add(key.index(re.Index), nil, "%q: offset %d: %s", re.Err.Rule, re.Err.Offset, re.Err.Msg)
			continue
		}
		msg := strings.TrimPrefix(e.Error(), "safety: ")
		v.add(safetyKey(p, msg), nil, "%s", msg)
	}
}

// safetyKeys are the key paths of safety.Rules, like "vertical.step".
var safetyKeys = func() map[string]bool {
	m := map[string]bool{}
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for _, f := range fieldsOf(t) {
			m[prefix+f.name] = true
			walk(t.Field(f.index).Type, prefix+f.name+".")
		}
	}
	walk(reflect.TypeFor[safety.Rules](), "")
	return m
}()

// safetyKey finds the key a safety message starts with ("headroom 20:
// ...", "vertical.step is only used ...", "known_namespaces[1] ..."); it
// falls back to the section.
func safetyKey(p keyPath, msg string) keyPath {
	end := strings.IndexAny(msg, " :")
	if end < 0 {
		return p
	}
	word := msg[:end]
	base, idx, hasIdx := strings.Cut(word, "[")
	if !safetyKeys[base] {
		return p
	}
	key := p.key(strings.Split(base, ".")...)
	if hasIdx {
		if i, err := strconv.Atoi(strings.TrimSuffix(idx, "]")); err == nil {
			key = key.index(i)
		}
	}
	return key
}

func (v *validator) verifiers(vs []Verifier, regions map[string]Region) {
	first := map[string]int{}
	for i, vf := range vs {
		p := keyPath{"verifiers"}.index(i)
		var reg verify.Registry
		if err := reg.Register(vf.Name, func(verify.Location) bool { return true }); err != nil {
			msg := strings.TrimPrefix(err.Error(), "verify: ")
			if vf.Name == "" {
				msg = "missing: every verifier needs a name"
			}
			v.add(p.key("name"), nil, "%s", msg)
		} else if j, dup := first[vf.Name]; dup {
			v.add(p.key("name"), nil, "duplicate verifier name %q (first at verifiers[%d])", vf.Name, j)
		} else {
			first[vf.Name] = i
		}
		switch vf.Kind {
		case KindClaims:
		case KindHTTP:
			if msg := checkURL(vf.URL); msg != "" {
				v.add(p.key("url"), nil, "%s", msg)
			}
			v.duration(p.key("timeout"), vf.Timeout, 1)
		default:
			v.add(p.key("kind"), nil, "unknown verifier kind %q: want claims or http", vf.Kind)
		}
		seen := map[string]bool{}
		for j, r := range vf.Regions {
			switch {
			case seen[r]:
				v.add(p.key("regions").index(j), nil, "region %q listed twice", r)
			case !hasKey(regions, r):
				v.add(p.key("regions").index(j), []keyPath{{"regions"}}, "no region named %q (regions: %s)", r, strings.Join(sortedKeys(regions), ", "))
			}
			seen[r] = true
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// checkURL returns what is wrong with an http verifier's URL, or "".
// Credentials are refused because URLs end up in logs.
func checkURL(s string) string {
	if s == "" {
		return "missing: an http verifier needs a url"
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the URL, credentials and all: keep the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Sprintf("invalid URL: %v", err)
	}
	switch {
	case u.User != nil:
		return "the URL holds credentials, which would be logged: pass them another way"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q: want an http or https URL", s)
	case u.Hostname() == "":
		return fmt.Sprintf("%q: no host", s)
	case u.Fragment != "":
		return fmt.Sprintf("%q: a fragment is never sent", s)
	}
	return ""
}
