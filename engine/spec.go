package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/stores"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
	"github.com/rtpengine/rtp/world/anvil"
	"github.com/rtpengine/rtp/world/procworld"
)

// Defaults of Spec.
const (
	// DefaultDataDir is Spec.DataDir's default, relative to the working
	// directory.
	DefaultDataDir = "rtp-data"
	// DefaultDatabase is Spec.Database's default, in the data folder.
	DefaultDatabase = "rtp.db"
	// DefaultArchive is ArchiveSpec.Path's default, in the data folder.
	DefaultArchive = "archive.db"
	// DefaultArchiveSchema is ArchiveSpec.Schema's default.
	DefaultArchiveSchema = "rtp_archive"
	// DefaultWorldName and DefaultRegionName name the world and region of
	// a Spec that has none.
	DefaultWorldName  = "world"
	DefaultRegionName = "default"
	// DefaultRadius is the default of RegionSpec.Shape's Radius, RadiusX
	// and RadiusZ, in blocks (256 chunks).
	DefaultRadius = 4096
	// DefaultGeneralCapacity is a region's general sink capacity
	// (activeChunkCap): 64 ready places are some 0.6 s of a fresh server's
	// 100 teleports a second, which covers a refill's delay, for about
	// 1 MiB of resident chunks. The pipeline's own default (10) ran dry
	// between refills at that rate, and requests waited.
	DefaultGeneralCapacity = 64
	// DefaultPulse is RegionLive.Pulse's default.
	DefaultPulse = 50 * time.Millisecond
	// DefaultPlayerCap is RegionLive.PlayerCap's default.
	DefaultPlayerCap = 20
	// DefaultUniqueRadius is RegionLive.UniqueRadius's default, in blocks:
	// a spot and its eight neighbours are not handed out again while the
	// mark lasts.
	DefaultUniqueRadius = 2
	// MaxUniqueRadius bounds RegionLive.UniqueRadius, in blocks.
	MaxUniqueRadius = 1024
)

// Spec is everything an Engine runs: its stores and files, worlds, regions
// and verifiers, as plain Go values. Package config translates an rtp.yml into
// one (config.Config.Spec); a Go program embedding the engine writes one
// directly, with worlds of its own (WorldSpec.Source).
//
// The zero value needs only Stores: with them, it runs one procedural
// world DefaultWorldName, one region DefaultRegionName on it with every
// default, files under DefaultDataDir. A Spec is a plain value; New and
// Reload copy what they keep, so the caller may reuse it (but not the
// Sources it names, which the engine uses while it runs).
type Spec struct {
	// Stores opens where the engine keeps its state (see package stores):
	// the locations database, the claims, the terrain archives and the
	// network leases, where Database, Fleet and Archive say. Required:
	// the engine links no store of its own, so a program links only the
	// stores it picks. sqlite.Stores{} (package stores/sqlite) keeps every
	// store in a file of DataDir, linking SQLite and no other database;
	// fleet.Stores{} (package stores/fleet) adds PostgreSQL and Redis
	// wherever Fleet and Archive name their URLs; package config sets the
	// latter. New fails, saying so, without it. Reload compares it as it
	// compares the other fields: an equal value is the same stores.
	Stores stores.Stores
	// DataDir is the folder of the files the engine keeps: the databases,
	// the memory files, the network secret. Default DefaultDataDir.
	DataDir string
	// Database is the locations database file; a relative path is in
	// DataDir. Default DefaultDatabase. Ignored when Fleet.DatabaseURL is
	// set.
	Database string
	// Fleet makes the engine one node of a fleet: several engines sharing
	// one PostgreSQL database (and, for network leases, one Redis), which
	// Stores must open (package stores/fleet). The zero value runs alone
	// on the embedded SQLite files.
	Fleet FleetSpec
	// Archive is the terrain archive of the procedural worlds.
	Archive ArchiveSpec
	// TTLPath names a ttl.yml (see package ttl) that says how long
	// rejected places are remembered; a relative path is in DataDir. A
	// missing file means ttl's defaults. Ignored when TTL is set. Default
	// "": TTL, or ttl's defaults. Reload reads it again.
	TTLPath string
	// TTL is the TTL policy, used instead of TTLPath when set. Default
	// nil. The engine does not change it.
	TTL *ttl.Policy
	// Worlds are the worlds regions draw from, by name. Default: one
	// procedural world named DefaultWorldName.
	Worlds map[string]WorldSpec
	// Regions are the areas places are drawn from, by name. Default: one
	// region named DefaultRegionName with every default.
	Regions map[string]RegionSpec
	// Verifiers may object to a landing place after its safety check.
	// Default none: the claims store checks every region.
	Verifiers []VerifierSpec
	// ScreenWorkers is the number of lanes of the refill's gate across
	// every region (see Options.ScreenWorkers, which wins when set). Default 0:
	// one fewer than GOMAXPROCS, at least 1; negative: no bound but each
	// region's Budget.MaxScreens.
	ScreenWorkers int
	// Handouts bound the locations handed out and not yet closed.
	// Options.Handouts wins when set. Default: see HandoutLimits.
	Handouts HandoutLimits
	// HandoutLifespan is how long a location handed out stays reserved
	// without Complete or Cancel. Options.HandoutLifespan wins when set.
	// Default DefaultHandoutLifespan.
	HandoutLifespan time.Duration
}

// Defaults of FleetSpec.
const (
	// DefaultNodeLease is FleetSpec.NodeLease's default.
	DefaultNodeLease = 15 * time.Second
)

// FleetSpec says where the state shared by the nodes of a fleet lives:
// see stores.FleetSpec, which the Stores of a Spec read.
type FleetSpec = stores.FleetSpec

// ArchiveSpec is the terrain archive of the procedural worlds: see
// stores.ArchiveSpec, which the Stores of a Spec read.
type ArchiveSpec = stores.ArchiveSpec

// WorldSpec is one world. Exactly one of Source, Procedural and Minecraft
// may be set; the zero value is a procedural world with
// procgen.DefaultParams.
type WorldSpec struct {
	// Source is a world of the embedder's: the engine reads it through a
	// resident store and never closes it. It must stay usable until the
	// engine is shut down. Default nil.
	Source world.Source
	// Key names the content of Source for the locations the engine keeps
	// across restarts: they are dropped at a start whose key differs.
	// Change it when the terrain changes. Source only. Default "".
	Key string
	// Procedural is rtp's built-in generator (package procgen).
	Procedural *ProceduralWorld
	// Minecraft reads a Minecraft Java save folder, read-only (package
	// anvil).
	Minecraft *MinecraftWorld
}

// ProceduralWorld is a procedural world.
type ProceduralWorld struct {
	// Params are the generator's parameters. Their zero value is not
	// valid: start from procgen.DefaultParams.
	Params procgen.Params
	// TileCache is how many decoded terrain tiles the world keeps.
	// Default procworld.DefaultCacheTiles.
	TileCache int
}

// MinecraftWorld is a Minecraft Java save folder.
type MinecraftWorld struct {
	// Path is the save folder. Required.
	Path string
	// Dimension selects the dimension read. Default anvil.Overworld.
	Dimension anvil.Dimension
	// RegionDir overrides the region folder, relative to Path (see
	// anvil.Options.RegionDir). Default: the dimension's folder.
	RegionDir string
	// WatchPeriod is how often the region files are polled for chunks the
	// game rewrote. Default 0: Options.WatchPeriod; negative: no watching.
	WatchPeriod time.Duration
}

// shapeWithDefaults fills the fields of s left zero with the defaults: a
// circle, of DefaultRadius (and the rectangle's half-extents likewise). It
// is the only place the engine defaults a shape; geom.ShapeSpec.Build takes
// the spec as it is.
func shapeWithDefaults(s geom.ShapeSpec) geom.ShapeSpec {
	if s.Kind == "" {
		s.Kind = geom.ShapeCircle
	}
	if s.Radius == 0 {
		s.Radius = DefaultRadius
	}
	if s.RadiusX == 0 {
		s.RadiusX = DefaultRadius
	}
	if s.RadiusZ == 0 {
		s.RadiusZ = DefaultRadius
	}
	return s
}

// RegionSpec is one region: the parts fixed while the engine runs, and
// Live, which Reload applies. The zero value is a region with every
// default on the only world of its Spec.
type RegionSpec struct {
	// World names the region's world (a key of Spec.Worlds). Default: the
	// Spec's only world; required when it has several.
	World string
	// Shape is the area, in blocks (see geom.ShapeSpec). Fields left zero
	// take the defaults: a circle (Kind), of DefaultRadius (Radius,
	// RadiusX and RadiusZ); a 0 there is never a radius of 0. Ignored when
	// Geom is set.
	Shape geom.ShapeSpec
	// Geom is the area in chunks, when set: any geom.Shape. Default nil:
	// Shape.
	Geom geom.Shape
	// Distribution says where in the shape places are drawn. Default
	// geom.Flat{}.
	Distribution geom.Distribution
	// Safety are the safety rules. Default: their zero value, the
	// defaults of package safety.
	Safety safety.Rules
	// Sinks are the sinks beyond the general one.
	Sinks SinksSpec
	// Queues bound the stages before the hot sinks.
	Queues QueuesSpec
	// Allocator tunes how hot entries move between sinks.
	Allocator AllocatorSpec
	// PromotionTimeout bounds one promotion. Default
	// pipeline.DefaultPromotionTimeout.
	PromotionTimeout time.Duration
	// Memory tunes the region's spatial memory.
	Memory MemorySpec
	// Live are the settings Reload changes on a running engine.
	Live RegionLive
}

// SinksSpec are a region's optional sinks (see package pipeline). The zero
// value enables none.
type SinksSpec struct {
	// Login adds the reserve for players joining (its size follows
	// RegionLive.PlayerCap). Default false.
	Login bool
	// Network adds the sink of places leased to proxy tokens.
	Network NetworkSpec
	// Personal adds the places queued for single players.
	Personal PersonalSpec
	// Group adds the places cached for group teleports (GroupTeleport).
	Group GroupSpec
}

// GroupSpec is a region's group sink: subspaces of MaxSize places, every
// place within Radius blocks of their centre, cached for group
// teleports (see package pipeline, Group placements).
type GroupSpec struct {
	// Enabled adds the sink. Default false (rtp.yml's default enables
	// it).
	Enabled bool
	// MaxSize is the largest group placed: each cached subspace holds
	// MaxSize places, and serves any smaller group. At most
	// pipeline.MaxGroupSize. Default pipeline.DefaultGroupSize (8).
	MaxSize int
	// Radius, in blocks: the places of a group lie within it of their
	// centre. Half of it around one column must hold MaxSize columns; at
	// most pipeline.MaxGroupRadius. Default pipeline.DefaultGroupRadius
	// (8).
	Radius int
	// Capacity is the number of subspaces kept ready; each holds
	// MaxSize reservations of one chunk. Default
	// pipeline.DefaultGroupCapacity (4).
	Capacity int
}

// profile is g's pipeline profile.
func (g GroupSpec) profile() pipeline.GroupProfile {
	return pipeline.GroupProfile{Profile: pipeline.Profile{Size: g.MaxSize, Radius: g.Radius}, Capacity: g.Capacity}
}

// NetworkSpec is a region's network sink.
type NetworkSpec struct {
	// Enabled adds the sink. Default false.
	Enabled bool
	// Lease is how long a token holds its place. Default
	// pipeline.DefaultLeaseTTL.
	Lease time.Duration
	// Secret keys the tokens: at least lease/token.MinSecretLen bytes, the
	// same on every server of one network. Default nil: the data folder's
	// NetworkSecretFile, made at the first start.
	Secret []byte
}

// PersonalSpec is a region's personal sink.
type PersonalSpec struct {
	// Enabled adds the sink. Default false.
	Enabled bool
	// Capacity is each player's bucket size. Default
	// pipeline.DefaultPerPlayer.
	Capacity int
}

// QueuesSpec bound the stages before the hot sinks. Zero fields select
// the pipeline's defaults.
type QueuesSpec struct {
	// Backlog bounds the candidates waiting to be screened. Default
	// pipeline.DefaultBacklogCapacity.
	Backlog int
	// Cold bounds the screened places waiting for promotion. Default
	// pipeline.DefaultColdCapacity.
	Cold int
}

// AllocatorSpec tunes the allocator of hot entries. Zero fields select
// the pipeline's defaults.
type AllocatorSpec struct {
	// MinResidence is how long an entry stays in its sink before it may
	// be moved or trimmed. Default pipeline.DefaultMinResidence;
	// negative: no minimum.
	MinResidence time.Duration
	// DemandHalfLife is the half-life of each sink's demand average.
	// Default pipeline.DefaultDemandHalfLife.
	DemandHalfLife time.Duration
	// DemandHorizon is how much demand a sink's quota covers above its
	// floor. Default pipeline.DefaultDemandHorizon.
	DemandHorizon time.Duration
}

// MemorySpec tunes a region's spatial memory. Zero fields select the
// defaults.
type MemorySpec struct {
	// SpatialResolution is the widest gap between runs of rejected chunks
	// that a rebuild absorbs. Default memory.DefaultSpatialResolution;
	// negative: none.
	SpatialResolution int64
	// PendingThreshold is the pending rejections that ask for a rebuild.
	// Default memory.DefaultPendingThreshold.
	PendingThreshold int
	// RebuildInterval is how often memory is rebuilt regardless. Default
	// memory.DefaultRebuildInterval.
	RebuildInterval time.Duration
	// SaveInterval is how often the memory file is written. Default 0:
	// Options.SaveInterval.
	SaveInterval time.Duration
}

// RegionLive are the settings of a region that Reload applies to a
// running engine. Zero fields select the defaults.
type RegionLive struct {
	// Pulse is the period of the region's background work. Default
	// DefaultPulse.
	Pulse time.Duration
	// Budget bounds the work of one pulse; zero fields take the
	// pipeline's defaults.
	Budget pipeline.Budget
	// GeneralCapacity is the number of ready places the general sink
	// keeps. Default DefaultGeneralCapacity. A smaller capacity applied by
	// Reload evicts nothing at once.
	GeneralCapacity int
	// NetworkCapacity is the network sink's unleased pool. Default
	// pipeline.DefaultNetworkCapacity.
	NetworkCapacity int
	// PlayerCap is the server's player cap until the game side reports
	// it (the login sink). Default DefaultPlayerCap.
	PlayerCap int
	// UniqueRadius spreads players out, in blocks: the same spot is not
	// handed out twice while its mark lasts, and places closer than it
	// to a recent delivery are skipped (see the package documentation).
	// Default DefaultUniqueRadius; negative: off; at most
	// MaxUniqueRadius.
	UniqueRadius int64
}

// Verifier kinds of VerifierSpec.
const (
	// VerifierClaims is the built-in claims store (Engine.Claims).
	VerifierClaims = "claims"
	// VerifierHTTP calls back the game side over HTTP (package
	// httpverify).
	VerifierHTTP = "http"
)

// VerifierSpec is a verifier that may object to a landing place.
type VerifierSpec struct {
	// Name is the verifier's source name. Required for http verifiers.
	Name string
	// Kind is VerifierClaims or VerifierHTTP. Default VerifierClaims.
	Kind string
	// URL is an http verifier's callback. Required for http.
	URL string
	// Timeout bounds one call of an http verifier. Default
	// verify.DefaultTimeout.
	Timeout time.Duration
	// Regions the verifier checks, by name. Default: all.
	Regions []string
}

// DefaultRegionLive returns RegionLive with every default spelled out.
func DefaultRegionLive() RegionLive { return RegionLive{}.withDefaults() }

// DefaultRegion returns RegionSpec with every default spelled out, but
// World, Geom and Distribution (nil: geom.Flat{}).
func DefaultRegion() RegionSpec {
	var r RegionSpec
	r.withDefaults()
	return r
}

func (l RegionLive) withDefaults() RegionLive {
	if l.Pulse <= 0 {
		l.Pulse = DefaultPulse
	}
	b := &l.Budget
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&b.Candidates, pipeline.DefaultCandidates)
	def(&b.Screens, pipeline.DefaultScreens)
	def(&b.MaxScreens, pipeline.DefaultMaxScreens)
	def(&b.PromotionsPerPulse, pipeline.DefaultPromotionsPerPulse)
	def(&b.MaxPromotions, pipeline.DefaultMaxPromotions)
	def(&b.Transfers, pipeline.DefaultTransfers)
	def(&b.LoginBurst, pipeline.DefaultLoginBurst)
	def(&l.GeneralCapacity, DefaultGeneralCapacity)
	def(&l.NetworkCapacity, pipeline.DefaultNetworkCapacity)
	def(&l.PlayerCap, DefaultPlayerCap)
	switch {
	case l.UniqueRadius == 0:
		l.UniqueRadius = DefaultUniqueRadius
	case l.UniqueRadius < 0:
		l.UniqueRadius = -1
	}
	return l
}

// withDefaults fills r's defaults in place, but World.
func (r *RegionSpec) withDefaults() {
	r.Shape = shapeWithDefaults(r.Shape)
	if r.Distribution == nil {
		r.Distribution = geom.Flat{}
	}
	if r.Sinks.Network.Lease <= 0 {
		r.Sinks.Network.Lease = pipeline.DefaultLeaseTTL
	}
	if r.Sinks.Personal.Capacity <= 0 {
		r.Sinks.Personal.Capacity = pipeline.DefaultPerPlayer
	}
	g := &r.Sinks.Group
	if g.MaxSize == 0 {
		g.MaxSize = pipeline.DefaultGroupSize
	}
	if g.Radius == 0 {
		g.Radius = pipeline.DefaultGroupRadius
	}
	if g.Capacity == 0 {
		g.Capacity = pipeline.DefaultGroupCapacity
	}
	if r.Queues.Backlog <= 0 {
		r.Queues.Backlog = pipeline.DefaultBacklogCapacity
	}
	if r.Queues.Cold <= 0 {
		r.Queues.Cold = pipeline.DefaultColdCapacity
	}
	a := &r.Allocator
	switch {
	case a.MinResidence == 0:
		a.MinResidence = pipeline.DefaultMinResidence
	case a.MinResidence < 0:
		a.MinResidence = -1
	}
	if a.DemandHalfLife <= 0 {
		a.DemandHalfLife = pipeline.DefaultDemandHalfLife
	}
	if a.DemandHorizon <= 0 {
		a.DemandHorizon = pipeline.DefaultDemandHorizon
	}
	if r.PromotionTimeout <= 0 {
		r.PromotionTimeout = pipeline.DefaultPromotionTimeout
	}
	m := &r.Memory
	switch {
	case m.SpatialResolution == 0:
		m.SpatialResolution = memory.DefaultSpatialResolution
	case m.SpatialResolution < 0:
		m.SpatialResolution = -1
	}
	if m.PendingThreshold <= 0 {
		m.PendingThreshold = memory.DefaultPendingThreshold
	}
	if m.RebuildInterval <= 0 {
		m.RebuildInterval = memory.DefaultRebuildInterval
	}
	r.Live = r.Live.withDefaults()
}

// worldKind returns the kind of a world: "source", "procedural" or
// "minecraft".
func (w WorldSpec) kind() string {
	switch {
	case w.Source != nil:
		return "source"
	case w.Minecraft != nil:
		return "minecraft"
	}
	return "procedural"
}

// resolve returns s with every default filled in and checks what New
// needs; it does not change s.
func (s Spec) resolve() (Spec, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("engine: "+format, args...)) }
	if s.DataDir == "" {
		s.DataDir = DefaultDataDir
	}
	if s.Database == "" {
		s.Database = DefaultDatabase
	}
	s.Database = inDir(s.DataDir, s.Database)
	if s.Archive.Path == "" {
		s.Archive.Path = DefaultArchive
	}
	s.Archive.Path = inDir(s.DataDir, s.Archive.Path)
	s.TTLPath = inDir(s.DataDir, s.TTLPath)
	if s.Archive.Schema == "" {
		s.Archive.Schema = DefaultArchiveSchema
	}
	if len(s.Archive.Schema) > 63 {
		bad("Archive.Schema %q is longer than PostgreSQL's 63 bytes", s.Archive.Schema)
	}
	switch {
	case s.Fleet.NodeLease == 0:
		s.Fleet.NodeLease = DefaultNodeLease
	case s.Fleet.NodeLease < time.Second:
		bad("Fleet.NodeLease %v is below 1s", s.Fleet.NodeLease)
	}
	worlds := make(map[string]WorldSpec, max(len(s.Worlds), 1))
	for name, w := range s.Worlds {
		n := 0
		for _, set := range []bool{w.Source != nil, w.Procedural != nil, w.Minecraft != nil} {
			if set {
				n++
			}
		}
		if n > 1 {
			bad("world %q: more than one of Source, Procedural and Minecraft set", name)
		}
		switch w.kind() {
		case "procedural":
			p := ProceduralWorld{Params: procgen.DefaultParams()}
			if w.Procedural != nil {
				p = *w.Procedural
			}
			if p.TileCache <= 0 {
				p.TileCache = procworld.DefaultCacheTiles
			}
			if err := p.Params.Validate(); err != nil {
				bad("world %q: %v", name, err)
			}
			w.Procedural = &p
		case "minecraft":
			m := *w.Minecraft
			if m.Path == "" {
				bad("world %q: no save folder", name)
			}
			if err := (anvil.Options{Dimension: m.Dimension, RegionDir: m.RegionDir}).Validate(); err != nil {
				bad("world %q: %v", name, err)
			}
			w.Minecraft = &m
		}
		worlds[name] = w
	}
	if len(s.Worlds) == 0 {
		p := ProceduralWorld{Params: procgen.DefaultParams(), TileCache: procworld.DefaultCacheTiles}
		worlds[DefaultWorldName] = WorldSpec{Procedural: &p}
	}
	s.Worlds = worlds
	regions := make(map[string]RegionSpec, max(len(s.Regions), 1))
	for name, r := range s.Regions {
		regions[name] = r
	}
	if len(regions) == 0 {
		regions[DefaultRegionName] = RegionSpec{}
	}
	for name, r := range regions {
		if r.World == "" && len(worlds) == 1 {
			for w := range worlds {
				r.World = w
			}
		}
		if _, ok := worlds[r.World]; !ok {
			bad("region %q: unknown world %q", name, r.World)
		}
		for what, n := range r.Live.counts() {
			if n < 0 {
				bad("region %q: %s %d is negative", name, what, n)
			}
		}
		r.withDefaults()
		if r.Live.UniqueRadius > MaxUniqueRadius {
			bad("region %q: unique radius %d past %d", name, r.Live.UniqueRadius, MaxUniqueRadius)
		}
		if err := r.Safety.Validate(); err != nil {
			bad("region %q: %v", name, err)
		}
		if g := r.Sinks.Group; g.Enabled {
			if err := g.profile().Validate(); err != nil {
				bad("region %q: group sink: %v", name, err)
			}
			if g.Capacity < 0 || g.Capacity > stage.MaxCapacity {
				bad("region %q: group sink: capacity %d outside [0, %d]", name, g.Capacity, stage.MaxCapacity)
			}
		}
		if r.Geom == nil {
			if _, err := r.Shape.Build(); err != nil {
				bad("region %q: %v", name, err)
			}
		}
		regions[name] = r
	}
	s.Regions = regions
	vs := slices.Clone(s.Verifiers)
	for i := range vs {
		v := &vs[i]
		if v.Kind == "" {
			v.Kind = VerifierClaims
		}
		if v.Timeout <= 0 {
			v.Timeout = verify.DefaultTimeout
		}
		switch v.Kind {
		case VerifierClaims:
		case VerifierHTTP:
			if v.Name == "" || v.URL == "" {
				bad("verifier %d: an http verifier needs a name and a URL", i)
			}
		default:
			bad("verifier %q: unknown kind %q (want claims or http)", v.Name, v.Kind)
		}
		for _, rn := range v.Regions {
			if _, ok := regions[rn]; !ok {
				bad("verifier %q: unknown region %q", v.Name, rn)
			}
		}
		v.Regions = slices.Clone(v.Regions)
	}
	s.Verifiers = vs
	if err := errors.Join(errs...); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// inDir resolves a path relative to dir: an absolute path or "" is
// returned as is.
func inDir(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// pipelineOptions returns the pipeline options region r (resolved)
// configures: its name and world, queue and sink capacities, budget and
// allocator timings. The caller adds the parts the engine builds.
func (r RegionSpec) pipelineOptions(name string) pipeline.Options {
	return pipeline.Options{
		Region:          name,
		World:           r.World,
		BacklogCapacity: r.Queues.Backlog,
		ColdCapacity:    r.Queues.Cold,
		General:         pipeline.SinkConfig{Capacity: r.Live.GeneralCapacity},
		Login:           pipeline.LoginConfig{Enabled: r.Sinks.Login, PlayerCap: r.Live.PlayerCap},
		Network: pipeline.NetworkConfig{
			Enabled: r.Sinks.Network.Enabled, Capacity: r.Live.NetworkCapacity, LeaseTTL: r.Sinks.Network.Lease,
		},
		Personal: pipeline.PersonalConfig{Enabled: r.Sinks.Personal.Enabled, PerPlayer: r.Sinks.Personal.Capacity},
		Group: pipeline.GroupConfig{
			Enabled: r.Sinks.Group.Enabled, Name: SinkGroup,
			Profiles: []pipeline.GroupProfile{r.Sinks.Group.profile()},
		},
		Budget:           r.Live.Budget,
		MinResidence:     r.Allocator.MinResidence,
		DemandHalfLife:   r.Allocator.DemandHalfLife,
		DemandHorizon:    r.Allocator.DemandHorizon,
		PromotionTimeout: r.PromotionTimeout,
	}
}

// memoryOptions returns the memory options region r (resolved)
// configures. The caller adds Len or Shape, World, TTL and Clock.
func (r RegionSpec) memoryOptions() memory.Options {
	return memory.Options{
		SpatialResolution: r.Memory.SpatialResolution,
		PendingThreshold:  r.Memory.PendingThreshold,
		RebuildInterval:   r.Memory.RebuildInterval,
	}
}

// counts returns the counts of l by name, which may not be negative.
func (l RegionLive) counts() map[string]int {
	b := l.Budget
	return map[string]int{
		"GeneralCapacity": l.GeneralCapacity, "NetworkCapacity": l.NetworkCapacity, "PlayerCap": l.PlayerCap,
		"Budget.Candidates": b.Candidates, "Budget.Screens": b.Screens, "Budget.MaxScreens": b.MaxScreens,
		"Budget.PromotionsPerPulse": b.PromotionsPerPulse, "Budget.MaxPromotions": b.MaxPromotions,
		"Budget.Transfers": b.Transfers, "Budget.LoginBurst": b.LoginBurst,
	}
}

// uniqueRadius is the radius in force: 0 when off.
func (l RegionLive) uniqueRadius() int64 { return max(l.UniqueRadius, 0) }
