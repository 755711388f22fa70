package config

import (
	"fmt"

	"github.com/rtpengine/rtp/engine"
	"github.com/rtpengine/rtp/pipeline"
	"github.com/rtpengine/rtp/stores/fleet"
)

// Spec validates c and translates it into the engine's Spec: its Stores
// are fleet.Stores{} (package stores/fleet: the SQLite files, or
// PostgreSQL and Redis where the file names them), every other value is
// the file's, and where the file's meaning of a zero differs from the
// engine's (0 for "none" in allocator.min_residence,
// memory.spatial_resolution and unique_placement.radius) the engine's
// "none" is spelled out. The URLs of the services (Fleet.DatabaseURL,
// Fleet.LeasesURL, Archive.URL) are those in force: the file's, else the
// environment's (see Database.ConnURL); a node without a name is named
// by the engine. It reads the network secret files of the regions whose
// network sink is enabled. The Server and Auth sections are the HTTP
// server's and have no part in it. Errors are the file's problems (see
// Validate) or a secret file's.
func (c *Config) Spec() (engine.Spec, error) {
	if err := c.Validate(); err != nil {
		return engine.Spec{}, err
	}
	dbURL, _ := c.Database.ConnURL()
	archiveURL, _ := c.Archive.ConnURL()
	leasesURL, _ := c.Leases.ConnURL()
	s := engine.Spec{
		Stores:   fleet.Stores{},
		DataDir:  c.DataDir,
		Database: c.Database.Path,
		Fleet: engine.FleetSpec{
			DatabaseURL: dbURL.Reveal(),
			LeasesURL:   leasesURL.Reveal(),
			Node:        c.Node.Name,
			NodeLease:   c.Node.Lease,
		},
		Archive: engine.ArchiveSpec{
			Disabled: c.Archive.Mode() == KindDisabled,
			Path:     c.Archive.Path,
			Limits:   c.Archive.Limits(),
			Schema:   c.Archive.Schema,
			URL:      archiveURL.Reveal(),
			// A written 0 is "no such bound"; the spec's zero is the default.
			MinFreeBytes:   noBoundIfZero(c.Archive.MinFreeBytes),
			MinFreePercent: noBoundIfZero(c.Archive.MinFreePercent),
		},
		TTLPath:         c.TTLFile,
		Worlds:          make(map[string]engine.WorldSpec, len(c.Worlds)),
		Regions:         make(map[string]engine.RegionSpec, len(c.Regions)),
		ScreenWorkers:   c.ScreenWorkers,
		Handouts:        engine.HandoutLimits{PerPlayer: c.Handouts.MaxPerPlayer, Total: c.Handouts.MaxOpen, PerClient: c.Handouts.MaxOpenPerClient},
		HandoutLifespan: c.Handouts.Lifespan,
	}
	for name, w := range c.Worlds {
		ws, err := w.spec()
		if err != nil {
			return engine.Spec{}, fmt.Errorf("config: world %q: %w", name, err)
		}
		s.Worlds[name] = ws
	}
	for name, r := range c.Regions {
		rs, err := r.Spec()
		if err != nil {
			return engine.Spec{}, fmt.Errorf("config: region %q: %w", name, err)
		}
		s.Regions[name] = rs
	}
	for _, v := range c.Verifiers {
		s.Verifiers = append(s.Verifiers, engine.VerifierSpec{
			Name: v.Name, Kind: v.Kind, URL: v.URL, Timeout: v.Timeout, Regions: v.Regions,
		})
	}
	return s, nil
}

// spec translates a valid world.
func (w World) spec() (engine.WorldSpec, error) {
	if w.Kind == KindProcedural {
		return engine.WorldSpec{Procedural: &engine.ProceduralWorld{Params: w.Procedural.Params(), TileCache: w.TileCache}}, nil
	}
	o, err := w.AnvilOptions()
	if err != nil {
		return engine.WorldSpec{}, err
	}
	return engine.WorldSpec{Minecraft: &engine.MinecraftWorld{
		Path: w.Path, Dimension: o.Dimension, RegionDir: o.RegionDir, WatchPeriod: w.WatchPeriod,
	}}, nil
}

// none returns the engine's "none" (negative) for the file's 0.
func none[T ~int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// Spec translates the region into the engine's RegionSpec (see
// Config.Spec). It fails on an invalid shape or distribution, or on an
// unreadable network secret file.
func (r Region) Spec() (engine.RegionSpec, error) {
	if _, err := r.BuildShape(); err != nil {
		return engine.RegionSpec{}, err
	}
	dist, err := r.BuildDistribution()
	if err != nil {
		return engine.RegionSpec{}, err
	}
	var secret []byte
	if r.Sinks.Network.Enabled {
		if secret, err = r.Sinks.Network.Secret(); err != nil {
			return engine.RegionSpec{}, err
		}
	}
	b := r.Budget
	return engine.RegionSpec{
		World:        r.World,
		Shape:        r.Shape,
		Distribution: dist,
		Safety:       r.Safety,
		Sinks: engine.SinksSpec{
			Login:    r.Sinks.Login.Enabled,
			Network:  engine.NetworkSpec{Enabled: r.Sinks.Network.Enabled, Lease: r.Sinks.Network.Lease, Secret: secret},
			Personal: engine.PersonalSpec{Enabled: r.Sinks.Personal.Enabled, Capacity: r.Sinks.Personal.Capacity},
			Group: engine.GroupSpec{
				Enabled: r.Sinks.Group.Enabled, MaxSize: r.Sinks.Group.MaxSize,
				Radius: r.Sinks.Group.Radius, Capacity: r.Sinks.Group.Capacity,
			},
		},
		Queues: engine.QueuesSpec{Backlog: r.Queues.Backlog, Cold: r.Queues.Cold},
		Allocator: engine.AllocatorSpec{
			MinResidence:   none(r.Allocator.MinResidence),
			DemandHalfLife: r.Allocator.DemandHalfLife,
			DemandHorizon:  r.Allocator.DemandHorizon,
		},
		PromotionTimeout: r.PromotionTimeout,
		Memory: engine.MemorySpec{
			SpatialResolution: none(r.Memory.SpatialResolution),
			PendingThreshold:  r.Memory.PendingThreshold,
			RebuildInterval:   r.Memory.RebuildInterval,
			SaveInterval:      r.Memory.SaveInterval,
		},
		Live: engine.RegionLive{
			Pulse: r.Pulse,
			Budget: pipeline.Budget{
				Candidates:         b.Candidates,
				Screens:            b.Screens,
				MaxScreens:         b.MaxScreens,
				PromotionsPerPulse: b.PromotionsPerPulse,
				MaxPromotions:      b.MaxPromotions,
				Transfers:          b.Transfers,
				LoginBurst:         b.LoginBurst,
			},
			GeneralCapacity: r.Sinks.General.Capacity,
			NetworkCapacity: r.Sinks.Network.Capacity,
			PlayerCap:       r.Sinks.Login.PlayerCap,
			UniqueRadius:    none(r.UniquePlacement.Radius),
		},
	}, nil
}

// noBoundIfZero maps a configured 0 ("no bound") to the spec's negative.
func noBoundIfZero[T int64 | float64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
