package config

import (
	"time"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/safety"
	"github.com/rtpengine/rtp/terrain/archive"
	"github.com/rtpengine/rtp/terrain/archive/sqlitestore"
	"github.com/rtpengine/rtp/terrain/procgen"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world/procworld"
)

// Config is the whole configuration of an rtp service: what rtp.yml holds.
// Every field has a default (see Default and the example file
// rtp.example.yml); the YAML key of each field is in its tag.
//
// The zero value is not a usable configuration: start from Default, or
// load a file with Load or LoadFile. Config is a plain value with no
// internal state; it is not safe for concurrent mutation, but any number
// of goroutines may read one that nobody changes.
type Config struct {
	// Server configures the HTTP listener.
	Server Server `yaml:"server"`
	// DataDir is the folder for the files rtp keeps: the database, the
	// terrain archive, ttl.yml, spatial memory files. Relative to the
	// working directory. Default "rtp-data".
	DataDir string `yaml:"data_dir"`
	// Database is the database of locations: an embedded SQLite file, or
	// a PostgreSQL database the nodes of a fleet share.
	Database Database `yaml:"database"`
	// Archive is the terrain archive (a disposable cache of terrain
	// tiles): a SQLite file, a PostgreSQL database, or none.
	Archive Archive `yaml:"archive"`
	// Leases is the store of network leases: the node's own (its SQLite
	// locations database, or its memory), or a Redis server the nodes of
	// a fleet share.
	Leases Leases `yaml:"leases"`
	// Node names this process among the nodes of a fleet (a PostgreSQL
	// database), and sets how long its claims outlive it.
	Node Node `yaml:"node"`
	// TTLFile names the ttl.yml (see package ttl) that says how long
	// rejected places are remembered. Relative to DataDir. A missing file
	// means ttl's built-in defaults; "" means the defaults without
	// looking for a file. Default "ttl.yml".
	TTLFile string `yaml:"ttl_file"`
	// Auth protects the admin endpoints.
	Auth Auth `yaml:"auth"`
	// Worlds are the worlds regions draw from, by name. Default: one
	// procedural world named "world" (DefaultWorld).
	Worlds map[string]World `yaml:"worlds"`
	// Regions are the areas places are drawn from, by name. Default: one
	// region named "default" on the world "world" (DefaultRegion).
	Regions map[string]Region `yaml:"regions"`
	// Verifiers may object to a landing place after its safety check.
	// Default: none.
	Verifiers []Verifier `yaml:"verifiers"`
	// ScreenWorkers bounds the refill's processor work (screenings: a
	// chunk's summary, read or generated, for each candidate drawn; the
	// chunk loads and checks of promotions; the location writer's
	// transactions) running at once across every region while rtp
	// serves, which is also paced while requests come (see
	// pacer.Gate), in
	// [0, MaxScreenWorkers]. 0: one fewer than the processors Go uses
	// (GOMAXPROCS), at least 1, so that one is always free to answer
	// requests. rtp pregen and rtp pick answer none and use them all.
	// Default 0.
	ScreenWorkers int `yaml:"screen_workers"`
	// Handouts bound the locations handed out and not yet completed.
	Handouts Handouts `yaml:"handouts"`
}

// Handouts bound the locations handed out (teleports not yet completed
// or cancelled), so that clients that never complete cannot hold chunks
// resident without end. The zero value selects every default.
type Handouts struct {
	// Lifespan is how long a location handed out keeps its chunk
	// reserved when neither complete nor cancel comes. Default 0: 5m.
	Lifespan time.Duration `yaml:"lifespan"`
	// MaxPerPlayer is how many open handouts one player may hold: a new
	// teleport beyond it replaces the player's oldest one (which is
	// cancelled: its place goes back to the caches). Default 0: 1;
	// negative: no limit.
	MaxPerPlayer int `yaml:"max_per_player"`
	// MaxOpen bounds the open handouts of the whole server: a teleport
	// past it is refused (503 too-many-open) until one closes. Default
	// 0: 4096; negative: no limit.
	MaxOpen int `yaml:"max_open"`
	// MaxOpenPerClient bounds the open handouts asked for from one
	// client address, so that one caller cannot hold every slot of
	// MaxOpen with made-up player names: past it a teleport is refused
	// (503 too-many-open, Retry-After until its oldest one ends). A game
	// server or proxy that holds many handouts itself should raise it.
	// Default 0: a quarter of max_open; negative: no limit.
	MaxOpenPerClient int `yaml:"max_open_per_client"`
}

// MaxScreenWorkers bounds Config.ScreenWorkers.
const MaxScreenWorkers = 4096

// Server configures the HTTP listener.
type Server struct {
	// Listen is the address to listen on, host:port. An empty host
	// listens on every interface. Default "127.0.0.1:8080".
	Listen string `yaml:"listen"`
	// MaxBodyBytes bounds the size of a request body; a larger body is
	// refused. Default 1 MiB.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// ReadHeaderTimeout bounds reading a request's headers. Default 5s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request. Default 10s.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a response. Default 30s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout is how long an idle keep-alive connection stays open.
	// Default 2m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ShutdownTimeout is how long a stopping server waits for requests in
	// flight. Default 10s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// AllowedHosts lists the host names (or IP addresses) requests may
	// name in their Host header; others get 421, which defeats DNS
	// rebinding. "*" allows any. Default: none listed, which on a
	// loopback listener allows only localhost and loopback addresses,
	// and elsewhere any host. A list widens that: localhost and loopback
	// addresses stay allowed beside the names listed. Each entry is "*",
	// a host name or an IP address, without a scheme, port or path.
	// Needs a restart.
	AllowedHosts []string `yaml:"allowed_hosts"`
}

// Database is the database of locations, of the memory journal, of the
// placement spots and of the claims.
type Database struct {
	// Kind is sqlite (a file under DataDir, one process alone) or
	// postgres (a database every node of a fleet shares). Default
	// sqlite.
	Kind string `yaml:"kind"`
	// Path of the database file, relative to DataDir (kind sqlite).
	// Default "rtp.db".
	Path string `yaml:"path"`
	// URL is the PostgreSQL connection URL, postgres:// or postgresql://
	// (kind postgres). When it is empty the URL is read from the
	// environment variable RTP_DATABASE_URL: the file wins over the
	// environment. Default "".
	URL ServiceURL `yaml:"url"`
}

// Archive is the terrain archive: its store and limits (see package
// archive, its sqlitestore and pgstore).
type Archive struct {
	// Kind is sqlite (a file under DataDir), postgres (a database the
	// nodes of a fleet share) or disabled (no archive: terrain is
	// generated or read every time it is needed). Default sqlite.
	Kind string `yaml:"kind"`
	// Disabled true is kind disabled, kept for files written before
	// kind; with kind postgres it is an error. Default false.
	Disabled bool `yaml:"disabled"`
	// Path of the archive database, relative to DataDir (kind sqlite).
	// Default "archive.db".
	Path string `yaml:"path"`
	// URL is the PostgreSQL connection URL (kind postgres); when empty,
	// the environment variable RTP_ARCHIVE_URL. Default "".
	URL ServiceURL `yaml:"url"`
	// Schema is the PostgreSQL schema of the archive (kind postgres);
	// further procedural worlds use "<schema>_<world>". Fleets sharing
	// one database keep their archives apart by it. Default
	// "rtp_archive".
	Schema string `yaml:"schema"`
	// MaxEntries bounds the tiles kept. Default 65536
	// (archive.DefaultMaxEntries).
	MaxEntries int64 `yaml:"max_entries"`
	// MaxBytes bounds the bytes of tile payloads kept. Default 4 GiB
	// (archive.DefaultMaxBytes).
	MaxBytes int64 `yaml:"max_bytes"`
	// MinFreeBytes and MinFreePercent make the free space floor of the
	// archive's disk (kind sqlite): the smaller of the two. Under it the
	// archive stores nothing new and gives back space, so the locations
	// database beside it can still commit. 0 drops that bound. Defaults
	// 268435456 (256 MiB) and 5.
	MinFreeBytes   int64   `yaml:"min_free_bytes"`
	MinFreePercent float64 `yaml:"min_free_percent"`
}

// Leases is the store of network leases: the holds network tokens take
// on locations while players move between servers.
type Leases struct {
	// Kind is local (the node's own: a token is redeemed on the node that
	// granted it; kept in the SQLite locations database, across restarts
	// and crashes, or with database.kind postgres in the process's
	// memory) or redis (a Redis server: a token granted
	// through one node is redeemed through any). Default local.
	Kind string `yaml:"kind"`
	// URL is the Redis URL, redis:// or rediss:// (kind redis); when
	// empty, the environment variable RTP_LEASES_URL. Default "".
	URL ServiceURL `yaml:"url"`
}

// Node is this process as one node of a fleet: several rtp serve
// processes sharing one PostgreSQL database (database kind postgres).
// Without such a database it has no effect.
type Node struct {
	// Name names the node among the fleet's; two processes running at
	// once must not share one. Up to MaxNodeNameLen letters, digits,
	// '.', '_' and '-'. Default "": the engine picks the host name, a
	// dash and a random suffix.
	Name string `yaml:"name"`
	// Lease is how long the node's claims on shared locations outlive
	// its last heartbeat: a node that dies or loses the database has
	// them returned to the pool this long after. In [1s, 1h]. Default
	// 15s (engine.DefaultNodeLease).
	Lease time.Duration `yaml:"lease"`
}

// Auth holds the admin token. When one is set, every mutating and admin
// endpoint requires it as a bearer token; with neither Token nor TokenFile
// set they are open (the default listen address is loopback, and rtp serve
// warns when it listens elsewhere without a token).
type Auth struct {
	// Token is the admin token, at least MinTokenLen characters. Prefer
	// TokenFile, which keeps it out of the config file. Default "".
	Token Secret `yaml:"token"`
	// TokenFile names a file holding the admin token (surrounding
	// whitespace is trimmed). Relative to the working directory. At most
	// one of Token and TokenFile may be set. Default "".
	TokenFile string `yaml:"token_file"`
}

// World kinds.
const (
	// KindProcedural is rtp's built-in deterministic terrain generator
	// (package procgen).
	KindProcedural = "procedural"
	// KindMinecraft reads a Minecraft Java save folder's region files,
	// read-only (package anvil).
	KindMinecraft = "minecraft"
)

// Dimensions of a Minecraft world.
const (
	Overworld = "overworld"
	Nether    = "nether"
	End       = "end"
)

// World is one world regions draw from. Its zero value is not valid
// (no kind): start from DefaultWorld. Like every type of this package it
// is a plain value, safe to copy and to read concurrently.
type World struct {
	// Kind is procedural or minecraft. Default procedural.
	Kind string `yaml:"kind"`
	// Procedural holds the generator's parameters (kind procedural).
	// Default: procgen.DefaultParams.
	Procedural Procedural `yaml:"procedural"`
	// Path is the Minecraft save folder (kind minecraft): a directory,
	// relative to the working directory. Required for minecraft.
	Path string `yaml:"path"`
	// Dimension is the Minecraft dimension to read (kind minecraft):
	// overworld, nether, end or a dimension's id (minecraft:the_nether,
	// a datapack's mymod:mining). Default overworld.
	Dimension string `yaml:"dimension"`
	// RegionDir overrides the region folder, relative to Path (kind
	// minecraft). It must stay inside Path. Default "": the dimension's
	// folder, in the save's layout (see anvil.Options.RegionDir).
	RegionDir string `yaml:"region_dir"`
	// TileCache is how many terrain tiles (64 x 64 blocks, about 21 KiB
	// each, 13 KiB where no water lies) a procedural world keeps decoded
	// in memory, least recently used out first, so that a chunk of a tile
	// read lately costs no archive read. Kind procedural only, in [1,
	// MaxTileCache]. Default DefaultTileCache (64, at most 1.3 MiB); 4096
	// (about 60 MiB in an ordinary region) holds a region of radius 2048
	// whole. A ready place's chunk derives its columns from its tile, so
	// it keeps that tile in memory while it is ready, cached here or not.
	// It is not part of what the world
	// holds, so it stays out of the world's JSON form, from which the
	// engine derives the key of the locations it keeps across restarts.
	TileCache int `yaml:"tile_cache" json:"-"`
	// WatchPeriod is how often the region files are checked for chunks
	// the game rewrote (kind minecraft): cached places of a changed chunk
	// are dropped and its memory forgotten, so none is handed out from
	// data older than the file. 0 selects DefaultWatchPeriod (1 s); a
	// negative period turns watching off. Like TileCache it is not part
	// of what the world holds.
	WatchPeriod time.Duration `yaml:"watch_period" json:"-"`
}

// DefaultWatchPeriod is World.WatchPeriod's default.
const DefaultWatchPeriod = engine.DefaultWatchPeriod

// Bounds of World.TileCache.
const (
	DefaultTileCache = procworld.DefaultCacheTiles
	MaxTileCache     = 1 << 20
)

// Procedural mirrors procgen.Params with YAML keys; Params converts it.
// Ranges are procgen's (see procgen.Params).
type Procedural struct {
	// Seed selects the world. Default 0.
	Seed int64 `yaml:"seed"`
	// Relief scales elevations around sea level, in (0, 4]. Default 1.
	Relief float64 `yaml:"relief"`
	// SeaLevel is the block y of the ocean surface. Default 63.
	SeaLevel int `yaml:"sea_level"`
	// SeabedClamp samples the ground under water (true) or the water
	// surface (false). Default true.
	SeabedClamp bool `yaml:"seabed_clamp"`
	// Biome shapes climate and volcanism.
	Biome ProceduralBiome `yaml:"biome"`
}

// ProceduralBiome mirrors procgen.BiomeParams with YAML keys.
type ProceduralBiome struct {
	// TemperatureScale is the width in blocks of a warm or cold area.
	// Default 2400.
	TemperatureScale float64 `yaml:"temperature_scale"`
	// TemperatureOffset shifts temperature, in [-2, 2]. Default 0.
	TemperatureOffset float64 `yaml:"temperature_offset"`
	// MoistureScale is the width in blocks of a wet or dry area.
	// Default 1800.
	MoistureScale float64 `yaml:"moisture_scale"`
	// MoistureOffset shifts moisture, in [-2, 2]. Default 0.
	MoistureOffset float64 `yaml:"moisture_offset"`
	// VolcanicFrequency sets how common volcanic provinces are, in
	// [0, 1]. Default 0.35.
	VolcanicFrequency float64 `yaml:"volcanic_frequency"`
	// SnowLine is the height above sea level of the snow line. Default
	// 105.
	SnowLine float64 `yaml:"snow_line"`
}

// Distribution kinds.
const (
	Flat     = "flat"
	Weighted = "weighted"
	Normal   = "normal"
)

// Region is one area places are drawn from, with its caches. Its zero
// value is not valid: start from DefaultRegion.
type Region struct {
	// World names the region's world (a key of Config.Worlds). Default
	// "world".
	World string `yaml:"world"`
	// Shape is the area, in blocks (see geom.ShapeSpec; BuildShape
	// converts it to chunks). Its keys: kind (circle, square or
	// rectangle; default circle); center_x and center_z, the centre block
	// (default 0, 0); for a circle or a square, radius (the circle's
	// radius or the square's half-width; default DefaultRadius) and inner
	// (the hole's radius: 0 for none, else less than radius; default 0);
	// for a rectangle, radius_x and radius_z (its half-extents along its
	// own axes; default DefaultRadius each), inner_x and inner_z (its
	// hole: both 0 for none, else each less than its radius; default 0)
	// and rotation (turns its x axis towards +z, in degrees; default 0).
	// Default: a circle of radius 4096 blocks around block 0, 0.
	Shape geom.ShapeSpec `yaml:"shape"`
	// Distribution says where in the shape places are drawn. Default
	// flat.
	Distribution Distribution `yaml:"distribution"`
	// Safety are the safety rules (package safety). Default:
	// safety.Default().
	Safety safety.Rules `yaml:"safety"`
	// Sinks size the hot caches by access method.
	Sinks Sinks `yaml:"sinks"`
	// Pulse is the period of the region's background work (screening,
	// promotion, allocation). Default 50ms.
	Pulse time.Duration `yaml:"pulse"`
	// Budget bounds the work of one pulse.
	Budget Budget `yaml:"budget"`
	// Queues bound the stages before the hot sinks.
	Queues Queues `yaml:"queues"`
	// Allocator tunes how hot entries move between sinks.
	Allocator Allocator `yaml:"allocator"`
	// PromotionTimeout bounds one promotion (reservation and
	// verifiers). Default 10s.
	PromotionTimeout time.Duration `yaml:"promotion_timeout"`
	// Memory tunes the region's spatial memory (package memory).
	Memory Memory `yaml:"memory"`
	// UniquePlacement spreads players out: each place handed out is
	// marked (cause uniquePlacement, TTL causes.uniquePlacement of
	// ttl.yml, 30 days by default), so the same exact spot is never handed
	// out twice while its mark lasts, and places closer than the radius
	// to a recent delivery are skipped. Default: a radius of
	// DefaultUniqueRadius (2 blocks).
	UniquePlacement UniquePlacement `yaml:"unique_placement"`
}

// MaxUniqueRadius bounds UniquePlacement.Radius, in blocks: past 64
// blocks each place handed out marks about pi*(radius/16)^2 chunks (some
// 13,000 at this bound).
const MaxUniqueRadius = engine.MaxUniqueRadius

// DefaultUniqueRadius is UniquePlacement.Radius's default, in blocks: a
// spot and its eight neighbours are not handed out again while the mark
// lasts. It keeps players from landing on one another without thinning
// small regions (each delivery takes about pi*radius^2 columns).
const DefaultUniqueRadius = engine.DefaultUniqueRadius

// UniquePlacement keeps the places handed out apart. The zero value is
// off; DefaultRegion holds the default.
type UniquePlacement struct {
	// Radius, in blocks: the same exact spot is never handed out twice
	// while its mark lasts; places closer than Radius blocks to a recent
	// delivery are skipped (1: the exact spot only). Up to 64 blocks the
	// spacing is kept column by column; past it, chunk by chunk (every
	// chunk whose centre lies within the radius is marked in memory). 0
	// turns unique placement off; at most MaxUniqueRadius. Default
	// DefaultUniqueRadius (2).
	Radius int64 `yaml:"radius"`
}

// Distribution says which ranks along the shape's spiral (from its centre
// outwards) are drawn; see geom.Distribution. The zero value is not valid
// (no kind); DefaultRegion holds the default distribution.
type Distribution struct {
	// Kind is flat (every chunk alike), weighted or normal. Default flat.
	Kind string `yaml:"kind"`
	// Exponent of the weighted distribution: above 1 favours the centre,
	// below 1 the edge. Finite and positive. Default 2.
	Exponent float64 `yaml:"exponent"`
	// Mean of the normal distribution, as a fraction of the spiral in
	// [0, 1]: 0 the centre, 1 the edge. Default 0.5.
	Mean float64 `yaml:"mean"`
	// Deviation of the normal distribution, as a fraction of the spiral;
	// finite and positive. Default 0.2.
	Deviation float64 `yaml:"deviation"`
	// Expand lets rejected chunks push selection past the shape's edge
	// instead of shrinking the choice (see geom.Expand). Default false.
	Expand bool `yaml:"expand"`
}

// Sinks size a region's hot caches (see package pipeline).
type Sinks struct {
	General  GeneralSink  `yaml:"general"`
	Login    LoginSink    `yaml:"login"`
	Network  NetworkSink  `yaml:"network"`
	Personal PersonalSink `yaml:"personal"`
	Group    GroupSink    `yaml:"group"`
}

// GeneralSink is the hot cache behind plain teleports.
type GeneralSink struct {
	// Capacity is the number of ready places kept (activeChunkCap).
	// Default 10.
	Capacity int `yaml:"capacity"`
}

// LoginSink is the reserve for players joining the server.
type LoginSink struct {
	// Enabled adds the login sink. Default false.
	Enabled bool `yaml:"enabled"`
	// PlayerCap is the server's player cap until the game side reports
	// it; the reserve holds PlayerCap minus the players online. Default
	// 20.
	PlayerCap int `yaml:"player_cap"`
}

// NetworkSink holds places leased to proxy tokens for a server hop.
type NetworkSink struct {
	// Enabled adds the network sink. Default false.
	Enabled bool `yaml:"enabled"`
	// Capacity of the unleased pool. Default 10.
	Capacity int `yaml:"capacity"`
	// Lease is how long a token holds its place. Default 1m.
	Lease time.Duration `yaml:"lease"`
	// SecretFile names a file holding the secret that keys the tokens (at
	// least lease/token.MinSecretLen bytes; surrounding whitespace is
	// trimmed). Servers of one network share it. Relative to the working
	// directory. Default "": the data directory's network-secret file,
	// made with 32 random bytes (mode 0600) at the first start, so tokens
	// stay valid across restarts of this server.
	SecretFile string `yaml:"secret_file"`
}

// PersonalSink keeps places queued for individual players.
type PersonalSink struct {
	// Enabled adds the personal sink. Default false.
	Enabled bool `yaml:"enabled"`
	// Capacity is each player's bucket size. Default 1.
	Capacity int `yaml:"capacity"`
}

// GroupSink keeps places ready for group teleports (POST
// /v1/regions/{region}/group-teleports): subspaces of MaxSize places,
// every place within Radius blocks of their centre, each serving any
// group of up to MaxSize players.
type GroupSink struct {
	// Enabled adds the group sink. Default true.
	Enabled bool `yaml:"enabled"`
	// MaxSize is the largest group placed. 1 to MaxGroupSize; a disk of
	// half the radius must hold that many columns. Default
	// DefaultGroupSize (8).
	MaxSize int `yaml:"max_size"`
	// Radius, in blocks: a group's places lie within it of their centre.
	// 1 to MaxGroupRadius. Default DefaultGroupRadius (8).
	Radius int `yaml:"radius"`
	// Capacity is the number of subspaces kept ready; each holds MaxSize
	// places of one chunk, reserved. Default DefaultGroupCapacity (4).
	Capacity int `yaml:"capacity"`
}

// Bounds and defaults of GroupSink (the pipeline's).
const (
	MaxGroupSize         = pipeline.MaxGroupSize
	MaxGroupRadius       = pipeline.MaxGroupRadius
	DefaultGroupSize     = pipeline.DefaultGroupSize
	DefaultGroupRadius   = pipeline.DefaultGroupRadius
	DefaultGroupCapacity = pipeline.DefaultGroupCapacity
)

// Budget bounds the work of one pulse (pipeline.Budget).
type Budget struct {
	// Candidates drawn from memory into the backlog. Default 64.
	Candidates int `yaml:"candidates"`
	// Screens started. Default 16.
	Screens int `yaml:"screens"`
	// MaxScreens in flight at once. Default 32.
	MaxScreens int `yaml:"max_screens"`
	// PromotionsPerPulse started (the refill rate). Default 8.
	PromotionsPerPulse int `yaml:"promotions_per_pulse"`
	// MaxPromotions in flight at once. Default 32.
	MaxPromotions int `yaml:"max_promotions"`
	// Transfers between sinks. Default 64.
	Transfers int `yaml:"transfers"`
	// LoginBurst is the promotions the login sink may start beyond the
	// per-pulse cap while it fills. Default 1024.
	LoginBurst int `yaml:"login_burst"`
}

// Queues bound the stages before the hot sinks.
type Queues struct {
	// Backlog bounds the candidates waiting to be screened. Default 256.
	Backlog int `yaml:"backlog"`
	// Cold bounds the screened places waiting for promotion. Default
	// 4096.
	Cold int `yaml:"cold"`
}

// Allocator tunes the pulse-driven allocator of hot entries.
type Allocator struct {
	// MinResidence is how long an entry stays in its sink before it may
	// be moved or trimmed; 0 for no minimum. Default 1m.
	MinResidence time.Duration `yaml:"min_residence"`
	// DemandHalfLife is the half-life of each sink's demand average.
	// Default 1m.
	DemandHalfLife time.Duration `yaml:"demand_half_life"`
	// DemandHorizon is how much demand a sink's quota covers above its
	// floor. Default 1m.
	DemandHorizon time.Duration `yaml:"demand_horizon"`
}

// Memory tunes a region's spatial memory (memory.Options).
type Memory struct {
	// SpatialResolution is the widest gap between two runs of rejected
	// chunks that a rebuild absorbs into one; 0 absorbs none. Default 3.
	SpatialResolution int64 `yaml:"spatial_resolution"`
	// PendingThreshold is the number of pending rejections that asks for
	// a rebuild. Default 4096.
	PendingThreshold int `yaml:"pending_threshold"`
	// RebuildInterval is how often memory is rebuilt regardless, so
	// expired runs move to probation. Default 10s.
	RebuildInterval time.Duration `yaml:"rebuild_interval"`
	// SaveInterval is how often the memory file (the snapshot) is
	// written. Rejections and placement marks also reach the database's
	// journal with every batch of location writes (100 ms), so a crash
	// loses at most that; the interval only bounds how long the journal
	// grows and how much a start replays. 0 selects the engine's
	// default (1 min).
	SaveInterval time.Duration `yaml:"save_interval"`
}

// Verifier kinds.
const (
	// KindClaims is the built-in claims store: claims are added and
	// removed over the API.
	KindClaims = "claims"
	// KindHTTP calls back the game side over HTTP.
	KindHTTP = "http"
)

// Verifier is a verifier that may object to a landing place. Its zero
// value is not valid (no name, no kind): start from DefaultVerifier.
type Verifier struct {
	// Name is the verifier's source name: in stats, logs and the
	// verifiers section of ttl.yml. Required, unique, printable, without
	// whitespace.
	Name string `yaml:"name"`
	// Kind is claims or http. Default claims.
	Kind string `yaml:"kind"`
	// URL is the callback of an http verifier: http or https, with a
	// host and without credentials. Required for http.
	URL string `yaml:"url"`
	// Timeout bounds one call of an http verifier. Default 2s.
	Timeout time.Duration `yaml:"timeout"`
	// Regions the verifier checks, by name. Default: all.
	Regions []string `yaml:"regions"`
}

// Defaults of the server section. The limits and timeouts are the HTTP
// server's own defaults (package server's constants of the same names,
// which this package does not import: the server takes plain options and
// the command maps the section onto them; a test of the command holds the
// two equal).
const (
	DefaultListen            = "127.0.0.1:8080"
	DefaultMaxBodyBytes      = 1 << 20
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultShutdownTimeout   = 10 * time.Second
)

// Defaults that have no constant in the package that uses them.
const (
	DefaultDataDir       = "rtp-data"
	DefaultDatabasePath  = "rtp.db"
	DefaultArchivePath   = "archive.db"
	DefaultArchiveSchema = engine.DefaultArchiveSchema
	DefaultTTLFile       = "ttl.yml"
	DefaultWorldName     = "world"
	DefaultRegionName    = "default"
	// DefaultRadius is the default shape radius in blocks (256 chunks):
	// the engine's.
	DefaultRadius    = engine.DefaultRadius
	DefaultExponent  = 2.0
	DefaultMean      = 0.5
	DefaultDeviation = 0.2
	DefaultPulse     = engine.DefaultPulse
	DefaultPlayerCap = engine.DefaultPlayerCap
)

// Default returns the configuration of rtp run without a config file: one
// procedural world "world" with procgen.DefaultParams, one region
// "default" on it (DefaultRegion: a circle of 4096 blocks around 0, 0,
// flat, default safety and sinks, a 50ms pulse), the database and archive
// under ./rtp-data, and the HTTP server on 127.0.0.1:8080. Each call
// returns a new Config.
func Default() *Config {
	return &Config{
		Server: Server{
			Listen:            DefaultListen,
			MaxBodyBytes:      DefaultMaxBodyBytes,
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			ReadTimeout:       DefaultReadTimeout,
			WriteTimeout:      DefaultWriteTimeout,
			IdleTimeout:       DefaultIdleTimeout,
			ShutdownTimeout:   DefaultShutdownTimeout,
		},
		DataDir:  DefaultDataDir,
		Database: Database{Kind: KindSQLite, Path: DefaultDatabasePath},
		Archive: Archive{
			Kind:       KindSQLite,
			Path:       DefaultArchivePath,
			Schema:     DefaultArchiveSchema,
			MaxEntries: archive.DefaultMaxEntries,
			MaxBytes:   archive.DefaultMaxBytes,
			// The archive store's own defaults.
			MinFreeBytes:   sqlitestore.DefaultMinFreeBytes,
			MinFreePercent: sqlitestore.DefaultMinFreePercent,
		},
		Leases:  Leases{Kind: KindLocal},
		Node:    Node{Lease: engine.DefaultNodeLease},
		TTLFile: DefaultTTLFile,
		Worlds:  map[string]World{DefaultWorldName: DefaultWorld()},
		Regions: map[string]Region{DefaultRegionName: DefaultRegion()},
	}
}

// DefaultWorld returns the default world: procedural, with
// procgen.DefaultParams. Every world of a config file starts from it.
func DefaultWorld() World {
	return World{
		Kind:       KindProcedural,
		Procedural: ProceduralFrom(procgen.DefaultParams()),
		Dimension:  Overworld,
		TileCache:  DefaultTileCache,
	}
}

// DefaultRegion returns the default region, from which every region of a
// config file starts: on the world "world", a circle of radius 4096 blocks
// around block 0, 0, the flat distribution, safety.Default(), the
// pipeline's default sink capacities and budget, a 50ms pulse, unique
// placement with DefaultUniqueRadius. The values are the engine's defaults
// (engine.DefaultRegion).
func DefaultRegion() Region {
	d := engine.DefaultRegion()
	b := d.Live.Budget
	return Region{
		World: DefaultWorldName,
		Shape: d.Shape,
		Distribution: Distribution{
			Kind:      Flat,
			Exponent:  DefaultExponent,
			Mean:      DefaultMean,
			Deviation: DefaultDeviation,
		},
		Safety: safety.Default(),
		Sinks: Sinks{
			General:  GeneralSink{Capacity: d.Live.GeneralCapacity},
			Login:    LoginSink{PlayerCap: d.Live.PlayerCap},
			Network:  NetworkSink{Capacity: d.Live.NetworkCapacity, Lease: d.Sinks.Network.Lease},
			Personal: PersonalSink{Capacity: d.Sinks.Personal.Capacity},
			Group: GroupSink{
				Enabled: true, MaxSize: d.Sinks.Group.MaxSize,
				Radius: d.Sinks.Group.Radius, Capacity: d.Sinks.Group.Capacity,
			},
		},
		Pulse: d.Live.Pulse,
		Budget: Budget{
			Candidates:         b.Candidates,
			Screens:            b.Screens,
			MaxScreens:         b.MaxScreens,
			PromotionsPerPulse: b.PromotionsPerPulse,
			MaxPromotions:      b.MaxPromotions,
			Transfers:          b.Transfers,
			LoginBurst:         b.LoginBurst,
		},
		Queues: Queues{
			Backlog: d.Queues.Backlog,
			Cold:    d.Queues.Cold,
		},
		Allocator: Allocator{
			MinResidence:   d.Allocator.MinResidence,
			DemandHalfLife: d.Allocator.DemandHalfLife,
			DemandHorizon:  d.Allocator.DemandHorizon,
		},
		PromotionTimeout: d.PromotionTimeout,
		UniquePlacement:  UniquePlacement{Radius: d.Live.UniqueRadius},
		Memory: Memory{
			SpatialResolution: d.Memory.SpatialResolution,
			PendingThreshold:  d.Memory.PendingThreshold,
			RebuildInterval:   d.Memory.RebuildInterval,
		},
	}
}

// DefaultVerifier returns the fields every verifier of a config file
// starts from: kind claims, a 2s timeout, all regions.
func DefaultVerifier() Verifier {
	return Verifier{Kind: KindClaims, Timeout: verify.DefaultTimeout}
}
