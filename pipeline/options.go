package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/lease"
	"github.com/rtpengine/rtp/lease/local"
	"github.com/rtpengine/rtp/lease/token"
	"github.com/rtpengine/rtp/memory"
	"github.com/rtpengine/rtp/pacer"
	"github.com/rtpengine/rtp/stage"
	"github.com/rtpengine/rtp/verify"
	"github.com/rtpengine/rtp/world"
)

// Defaults of Options.
const (
	DefaultBacklogCapacity  = 256
	DefaultColdCapacity     = 4096
	DefaultGeneralCapacity  = 10 // activeChunkCap
	DefaultNetworkCapacity  = 10
	DefaultLeaseTTL         = time.Minute
	DefaultStoreTimeout     = 2 * time.Second
	DefaultStoreCheck       = time.Second
	DefaultPerPlayer        = 1
	DefaultMinResidence     = 60 * time.Second
	DefaultDemandHalfLife   = time.Minute
	DefaultDemandHorizon    = time.Minute
	DefaultPromotionTimeout = 10 * time.Second
	defaultMissHistory      = 128
)

// Defaults of Budget.
const (
	DefaultCandidates         = 64
	DefaultScreens            = 16
	DefaultMaxScreens         = 32
	DefaultPromotionsPerPulse = 8
	DefaultMaxPromotions      = 32
	DefaultTransfers          = 64
	DefaultLoginBurst         = 1024
)

// Reserver opens reservations on chunks: *world.Resident is one.
type Reserver interface {
	ReserveFor(ctx context.Context, pos geom.Chunk, lifespan time.Duration) (*world.Reservation, error)
}

// Screened is the result of screening a chunk from its surface summaries:
// a landing column and y (OK), or the cause of the rejection.
type Screened struct {
	OK     bool
	Block  geom.Block // the column, inside the screened chunk
	Y      int        // the landing y (possibly unverified; promotion decides)
	Cause  memory.Cause
	Detail string
}

// ScreenFunc screens a candidate chunk without reserving it, reading
// terrain summaries (through the terrain archive) off any request path.
// An error means the screening could not be done; it is logged and the
// candidate dropped. (*safety.Checker).Screen over a summary source,
// adapted, is one.
type ScreenFunc func(ctx context.Context, c geom.Chunk) (Screened, error)

// SinkConfig configures an unleased single-target sink.
type SinkConfig struct {
	// Name is the sink's name. Default: "general".
	Name string
	// Capacity is the number of hot entries the sink may hold. Default:
	// DefaultGeneralCapacity (10, activeChunkCap).
	Capacity int
	// Floor is the least quota the allocator keeps regardless of demand.
	// Default (0): the capacity, so the sink is kept full. Negative: no
	// floor; the quota follows demand alone.
	Floor int
	// Criteria narrow the sink beyond the region's checks.
	Criteria Criteria
}

// LoginConfig configures the login sink.
type LoginConfig struct {
	// Enabled adds the login sink.
	Enabled bool
	// Name. Default "login".
	Name string
	// PlayerCap is the server's player cap; the sink's capacity is
	// PlayerCap - online.
	PlayerCap int
	// Criteria narrow the sink (for example World: the default world).
	Criteria Criteria
}

// NetworkConfig configures the network sink.
type NetworkConfig struct {
	// Enabled adds the network sink.
	Enabled bool
	// Name. Default "network".
	Name string
	// Capacity of the unleased pool. Default DefaultNetworkCapacity.
	Capacity int
	// Secret keys the token MACs; servers of one network share it. At
	// least token.MinSecretLen bytes. Default: random per process (tokens
	// then work only on this server, until it restarts).
	Secret []byte
	// LeaseTTL is how long a reserved token holds its location. Default
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Criteria narrow the sink.
	Criteria Criteria

	// Leases is the store of the sink's leases (see NetworkSink). One a
	// fleet shares (package lease/redis) lets a token reserved through
	// any node be redeemed through any other, exactly once, even after
	// the node that granted it died: every node of the fleet must then
	// share Secret, LeaseTTL, StoreTimeout, the region's and the sink's
	// names and the region's shape. One journaled to durable storage
	// (lease/local.Open) keeps a single node's tokens across restarts.
	// Default: a lease/local store in this process's memory, on Clock
	// (leases then live in this process only).
	Leases lease.Store
	// Node names this node in the leases it grants (lease.Lease.Owner).
	// It must be unique among the nodes sharing Leases and at most
	// lease.MaxNameLen bytes. Default: a random name, new on every start.
	Node string
	// StoreTimeout bounds each call to Leases. A lease is kept in the
	// store for 2*StoreTimeout beyond LeaseTTL (see NetworkSink). Default
	// DefaultStoreTimeout.
	StoreTimeout time.Duration
	// StoreCheck is how often the node asks Leases which of its leases
	// were redeemed elsewhere, so that their entries are disposed early.
	// Leases past their end are handled on the next pulse regardless.
	// Default DefaultStoreCheck.
	StoreCheck time.Duration
}

// PersonalConfig configures the personal sink.
type PersonalConfig struct {
	// Enabled adds the personal sink.
	Enabled bool
	// Name. Default "personal".
	Name string
	// PerPlayer is a bucket's default capacity. Default DefaultPerPlayer.
	PerPlayer int
	// Criteria narrow the sink.
	Criteria Criteria
}

// Budget bounds the work of one pulse. Each field's zero value selects its
// default; a negative value is invalid.
type Budget struct {
	// Candidates drawn from memory into the backlog per pulse. Default 64.
	Candidates int
	// Screens started per pulse. Default 16.
	Screens int
	// MaxScreens in flight at once. Default 32.
	MaxScreens int
	// PromotionsPerPulse bounds the promotions a pulse starts (a quota
	// that rose, a reload). It bounds churn; it is not a latency
	// control: a sink that requests drain between pulses is refilled at
	// once, bounded by MaxPromotions alone. Default 8.
	PromotionsPerPulse int
	// MaxPromotions in flight at once. Default 32.
	MaxPromotions int
	// Transfers between sinks per pulse (moves, trims). Default 64.
	Transfers int
	// LoginBurst is how many promotions the login sink may start beyond
	// the per-pulse cap while its burst fill runs (at start and after the
	// player cap grows). Default 1024.
	LoginBurst int
}

// Options configure a Pipeline. World, Shape, Memory, Reserver, Screen and
// Check are required; every other field has a default.
type Options struct {
	// Region names the region in logs. Default "region".
	Region string
	// World is the name of the region's world.
	World string
	// Shape maps memory indices to chunks (geom.ChunkAt).
	Shape geom.Shape
	// Memory is the region's spatial memory: candidates are drawn from it
	// and rejections recorded in it.
	Memory *memory.Table
	// Reserver opens reservations for promotions: the world's resident
	// chunk store.
	Reserver Reserver
	// Screen screens backlog candidates.
	Screen ScreenFunc
	// Check is the full safety check on a reserved chunk.
	Check CheckFunc
	// Verifiers run after Check on every promotion. Optional.
	Verifiers *verify.Registry
	// Persister writes the locations table. Optional: none by default.
	Persister Persister
	// Seed seeds the candidate draws. Default 0: a random seed.
	Seed uint64
	// Distribution says where candidates are drawn: for each candidate a
	// rank k = Distribution.Pick(u, n) among the n selectable indices of
	// Memory (ranks count from the centre of the spiral outwards), and the
	// candidate is the k-th of them (memory.Table.Pick: one snapshot, no
	// lock, no allocation). geom.Weighted and geom.Normal shape the draw.
	//
	// geom.Expand (or *geom.Expand) is the expand mode: ranks stay below
	// the shape's Len, so when Memory's universe is larger than the shape
	// (memory.Options.Len, for example geom.ExpandedUniverse(shape,
	// headroom)), every bad index nearer the centre pushes selection one
	// place further out, past the shape's edge (geom.ChunkAt). The
	// universe is fixed when the table is made: once more indices are bad
	// than the headroom Len - Shape.Len(), fewer than Shape.Len() indices
	// are selectable and the draw covers those left, as without Expand. A
	// table no larger than the shape gives Expand no room at all.
	//
	// Default nil: uniform over the selectable indices (memory.Table.Rand),
	// as geom.Flat{} would draw.
	Distribution geom.Distribution
	// OnPromote, when set, is called with a sink's name each time an entry
	// lands in that sink: by promotion, by a transfer or trim between sinks,
	// or by a network lease returning to its pool. A waiting request can
	// use it to retry on the next promotion rather than the next pulse.
	//
	// It is called outside every lock of the pipeline: on the goroutine of
	// the promotion that delivered the entry, at the end of the Pulse that
	// transferred it (once per sink and pulse), or in NetworkSink.Release.
	// It must return quickly (close or signal a channel, say): a promotion
	// keeps its slot of Budget.MaxPromotions, and Pulse does not return,
	// until it does. A panic in it is logged and recovered. Default nil:
	// no calls.
	OnPromote func(sink string)
	// Gate, when set, admits the refill's processor work (screenings and
	// the load and check of promotions) a few at a time, shared with
	// every other pipeline and persister holding the same gate,
	// promotions first, and paces it while requests come and the sinks
	// hold their quotas (see pacer.Gate). Default nil: Budget.MaxScreens and
	// Budget.MaxPromotions are the only bounds.
	Gate *pacer.Gate
	// DrawEagerly makes every pulse try its full draw budget, twice the
	// candidates it wants, however many draws are skipped (see
	// drawTries). The backoff it turns off spares a serving process the
	// held set's lock and the pulse's processor time in a crowded region;
	// a process that answers no requests (rtp pregen, rtp pick) only
	// waits longer for the region's last free chunks: the load test's
	// pregen took 2 min 21 s with the backoff, 12 s without. Default false.
	DrawEagerly bool

	// BacklogCapacity bounds the backlog. Default 256.
	BacklogCapacity int
	// ColdCapacity bounds the cold stage. Default 4096.
	ColdCapacity int

	General  SinkConfig
	Login    LoginConfig
	Network  NetworkConfig
	Personal PersonalConfig
	Group    GroupConfig

	Budget Budget

	// MinResidence is how long an entry stays in its sink before the
	// allocator may move or trim it. Default 60 s; negative: no minimum.
	MinResidence time.Duration
	// DemandHalfLife is the half-life of the demand average. Default 60 s.
	DemandHalfLife time.Duration
	// DemandHorizon is how many seconds of demand a sink's quota covers
	// (above its floor). Default 60 s.
	DemandHorizon time.Duration
	// PromotionTimeout bounds one promotion (reservation and verifiers).
	// Default 10 s.
	PromotionTimeout time.Duration
	// ReservationLifespan is the lifespan given to the reservations of hot
	// entries (see world.ResidentOptions.Lifespan). Default 0: they never
	// expire, since the stages close them deterministically.
	ReservationLifespan time.Duration
	// MissHistory is how many recent misses Stats keeps. Default 128.
	MissHistory int
	// Clock tells the time. Default time.Now.
	Clock func() time.Time
	// Logger receives transition failures and persistence problems.
	// Default slog.Default().
	Logger *slog.Logger
}

// Validate reports every problem of o at once.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("pipeline: "+format, args...)) }
	if o.World == "" {
		add("World is required")
	}
	if o.Shape == nil {
		add("Shape is required")
	}
	if o.Memory == nil {
		add("Memory is required")
	} else if o.Shape != nil && o.Memory.Len() > o.Shape.Len()+geom.MaxBeyond {
		add("Memory.Len %d exceeds the shape's spiral (%d)", o.Memory.Len(), o.Shape.Len()+geom.MaxBeyond)
	}
	if o.Reserver == nil {
		add("Reserver is required")
	}
	if o.Screen == nil {
		add("Screen is required")
	}
	if o.Check == nil {
		add("Check is required")
	}
	if d := reflect.ValueOf(o.Distribution); d.Kind() == reflect.Pointer && d.IsNil() {
		add("Distribution is a nil %T", o.Distribution)
	} else if v, ok := o.Distribution.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			add("Distribution: %v", err)
		}
	}
	capacity := func(what string, n int) {
		if n < 0 || n > stage.MaxCapacity {
			add("%s %d out of range [0, %d]", what, n, stage.MaxCapacity)
		}
	}
	capacity("BacklogCapacity", o.BacklogCapacity)
	capacity("ColdCapacity", o.ColdCapacity)
	capacity("General.Capacity", o.General.Capacity)
	names := map[string]bool{}
	name := func(n string) {
		if names[n] {
			add("duplicate sink name %q", n)
		}
		names[n] = true
	}
	name(orDefault(o.General.Name, "general"))
	if o.Login.Enabled {
		name(orDefault(o.Login.Name, "login"))
		if o.Login.PlayerCap < 0 || o.Login.PlayerCap > stage.MaxCapacity {
			add("Login.PlayerCap %d out of range [0, %d]", o.Login.PlayerCap, stage.MaxCapacity)
		}
	}
	if o.Network.Enabled {
		name(orDefault(o.Network.Name, "network"))
		capacity("Network.Capacity", o.Network.Capacity)
		if len(o.Network.Secret) > 0 && len(o.Network.Secret) < token.MinSecretLen {
			add("Network.Secret of %d bytes is shorter than %d", len(o.Network.Secret), token.MinSecretLen)
		}
		if o.Network.LeaseTTL < 0 {
			add("Network.LeaseTTL %v is negative", o.Network.LeaseTTL)
		}
		if err := o.Network.validateLeases(o.World); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Personal.Enabled {
		name(orDefault(o.Personal.Name, "personal"))
		if o.Personal.PerPlayer < 0 {
			add("Personal.PerPlayer %d is negative", o.Personal.PerPlayer)
		}
	}
	if o.Group.Enabled {
		g := o.Group.withDefaults()
		seen := map[Profile]bool{}
		for _, gp := range g.Profiles {
			if err := gp.Profile.Validate(); err != nil {
				errs = append(errs, err)
			}
			capacity(fmt.Sprintf("Group capacity of profile %v", gp.Profile), gp.Capacity)
			if seen[gp.Profile] {
				add("duplicate group profile %v", gp.Profile)
			}
			seen[gp.Profile] = true
			name(g.Name + "/" + gp.Profile.String())
		}
	}
	if err := o.validateBudget(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct {
		n string
		v time.Duration
	}{
		{"DemandHalfLife", o.DemandHalfLife}, {"DemandHorizon", o.DemandHorizon},
		{"PromotionTimeout", o.PromotionTimeout}, {"ReservationLifespan", o.ReservationLifespan},
	} {
		if f.v < 0 {
			add("%s %v is negative", f.n, f.v)
		}
	}
	if o.MissHistory < 0 {
		add("MissHistory %d is negative", o.MissHistory)
	}
	return errors.Join(errs...)
}

// validateLeases reports the problems of the lease-store fields of c, in
// a region whose world is named world.
func (c NetworkConfig) validateLeases(world string) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("pipeline: "+format, args...)) }
	if c.StoreTimeout < 0 {
		add("Network.StoreTimeout %v is negative", c.StoreTimeout)
	}
	if c.StoreCheck < 0 {
		add("Network.StoreCheck %v is negative", c.StoreCheck)
	}
	if c.Leases != nil {
		if d := reflect.ValueOf(c.Leases); d.Kind() == reflect.Pointer && d.IsNil() {
			add("Network.Leases is a nil %T", c.Leases)
		}
	}
	if len(c.Node) > lease.MaxNameLen {
		add("Network.Node of %d bytes is longer than %d", len(c.Node), lease.MaxNameLen)
	}
	if len(world) > lease.MaxNameLen {
		add("World of %d bytes is too long for a lease store (%d)", len(world), lease.MaxNameLen)
	}
	ttl := orDefault(c.LeaseTTL, DefaultLeaseTTL) + storeGrace(orDefault(c.StoreTimeout, DefaultStoreTimeout))
	if c.LeaseTTL >= 0 && c.StoreTimeout >= 0 && ttl > lease.MaxTTL {
		add("Network.LeaseTTL and StoreTimeout make store leases of %v, more than %v", ttl, lease.MaxTTL)
	}
	return errors.Join(errs...)
}

// validateBudget reports every negative field of o.Budget at once.
func (o Options) validateBudget() error {
	var errs []error
	b := o.Budget
	for _, f := range []struct {
		n string
		v int
	}{
		{"Candidates", b.Candidates}, {"Screens", b.Screens}, {"MaxScreens", b.MaxScreens},
		{"PromotionsPerPulse", b.PromotionsPerPulse}, {"MaxPromotions", b.MaxPromotions},
		{"Transfers", b.Transfers}, {"LoginBurst", b.LoginBurst},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("pipeline: Budget.%s %d is negative", f.n, f.v))
		}
	}
	return errors.Join(errs...)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (o Options) withDefaults() Options {
	o.Region = orDefault(o.Region, "region")
	o.BacklogCapacity = orDefault(o.BacklogCapacity, DefaultBacklogCapacity)
	o.ColdCapacity = orDefault(o.ColdCapacity, DefaultColdCapacity)
	o.General.Name = orDefault(o.General.Name, "general")
	o.General.Capacity = orDefault(o.General.Capacity, DefaultGeneralCapacity)
	o.Login.Name = orDefault(o.Login.Name, "login")
	o.Network.Name = orDefault(o.Network.Name, "network")
	o.Network.Capacity = orDefault(o.Network.Capacity, DefaultNetworkCapacity)
	o.Network.LeaseTTL = orDefault(o.Network.LeaseTTL, DefaultLeaseTTL)
	o.Network.StoreTimeout = orDefault(o.Network.StoreTimeout, DefaultStoreTimeout)
	o.Network.StoreCheck = orDefault(o.Network.StoreCheck, DefaultStoreCheck)
	o.Personal.Name = orDefault(o.Personal.Name, "personal")
	o.Personal.PerPlayer = orDefault(o.Personal.PerPlayer, DefaultPerPlayer)
	o.Group = o.Group.withDefaults()
	b := &o.Budget
	b.Candidates = orDefault(b.Candidates, DefaultCandidates)
	b.Screens = orDefault(b.Screens, DefaultScreens)
	b.MaxScreens = orDefault(b.MaxScreens, DefaultMaxScreens)
	b.PromotionsPerPulse = orDefault(b.PromotionsPerPulse, DefaultPromotionsPerPulse)
	b.MaxPromotions = orDefault(b.MaxPromotions, DefaultMaxPromotions)
	b.Transfers = orDefault(b.Transfers, DefaultTransfers)
	b.LoginBurst = orDefault(b.LoginBurst, DefaultLoginBurst)
	switch {
	case o.MinResidence == 0:
		o.MinResidence = DefaultMinResidence
	case o.MinResidence < 0:
		o.MinResidence = 0
	}
	o.DemandHalfLife = orDefault(o.DemandHalfLife, DefaultDemandHalfLife)
	o.DemandHorizon = orDefault(o.DemandHorizon, DefaultDemandHorizon)
	o.PromotionTimeout = orDefault(o.PromotionTimeout, DefaultPromotionTimeout)
	if o.ReservationLifespan == 0 {
		o.ReservationLifespan = -1 // world: never expires
	}
	o.MissHistory = orDefault(o.MissHistory, defaultMissHistory)
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Network.Enabled {
		if o.Network.Leases == nil {
			o.Network.Leases = local.New(local.Options{Clock: o.Clock})
		}
		if o.Network.Node == "" {
			var b [8]byte
			_, _ = rand.Read(b[:]) // never fails (crypto/rand)
			o.Network.Node = "node-" + hex.EncodeToString(b[:])
		}
	}
	return o
}

// withDefaults returns c with its defaults filled in: the name, one
// default profile when none is given, and the zero fields of each. The
// profiles are sorted by Size, then Radius (the order requests look at
// them).
func (c GroupConfig) withDefaults() GroupConfig {
	c.Name = orDefault(c.Name, KindGroup.String())
	if len(c.Profiles) == 0 {
		c.Profiles = []GroupProfile{{}}
	}
	ps := slices.Clone(c.Profiles)
	for i := range ps {
		ps[i].Size = orDefault(ps[i].Size, DefaultGroupSize)
		ps[i].Radius = orDefault(ps[i].Radius, DefaultGroupRadius)
		ps[i].Capacity = orDefault(ps[i].Capacity, DefaultGroupCapacity)
	}
	slices.SortStableFunc(ps, func(a, b GroupProfile) int {
		if a.Size != b.Size {
			return a.Size - b.Size
		}
		return a.Radius - b.Radius
	})
	c.Profiles = ps
	return c
}
