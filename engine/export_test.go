package engine

// SetHandoutLimits sets e's handout limits (Options has no field for
// them yet): call it before e is shared.
func SetHandoutLimits(e *Engine, l HandoutLimits) { e.out.setLimits(l) }

// HandoutCounts returns the region's counts of handouts replaced under
// HandoutLimits.PerPlayer and of teleports refused under
// HandoutLimits.Total.
func HandoutCounts(e *Engine, region string) (replaced, refused uint64) {
	r := e.regions[region]
	return e.out.replacedCount(r), e.out.refusedCount(r)
}

// OpenHandouts is the number of open handouts across e's regions.
func OpenHandouts(e *Engine) int64 { return e.out.open.Load() }

// HandoutLimitsWithDefaults returns l with its defaults applied.
func HandoutLimitsWithDefaults(l HandoutLimits) HandoutLimits { return l.withDefaults() }

// DrainageCells returns how many drainage cells the generator of the
// procedural world named world keeps.
func DrainageCells(e *Engine, world string) int { return e.drainageCells(world) }

// TileSize returns the terrain tile edge the procedural world named world
// reads.
func TileSize(e *Engine, world string) int { return e.tileSize(world) }

// RegionKey returns the persisted identity (JSON) of the region named
// region of s, as New computes it for a region whose verifiers are
// sources.
func RegionKey(s Spec, region string, sources []string) (string, error) {
	s, err := s.resolve()
	if err != nil {
		return "", err
	}
	rs := s.Regions[region]
	b, err := regionKeyJSON(keyOf(s.Worlds[rs.World]), rs, sources)
	return string(b), err
}

// DrawsEagerly reports whether the pipeline of region draws its full
// budget every pulse (pipeline.Options.DrawEagerly).
func DrawsEagerly(e *Engine, region string) bool { return e.regions[region].pipe.DrawsEagerly() }
