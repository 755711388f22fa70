package meshcache

import "strings"

// Mesh sources. A source names what produced a mesh; the cache admits only
// full-quality ones.
const (
	// SourceBakedFull is a full-quality mesh built from a terrain tile
	// (mesh.Build with mesh.Full), whether generated or read from the
	// archive. It is the source the cache exists for.
	SourceBakedFull = "baked_full"
	// SourceBakedLow is the decimated fallback (mesh.Low). Refused: it is
	// what a revisit should not have to show.
	SourceBakedLow = "baked_low"

	// Overlay and control products, all refused. The first three are the
	// names the original client used for its control/splat layers; the last
	// two are their rtp counterparts.
	SourceControlSplatCache = "control_splat_cache"
	SourceSplatCache        = "splat_cache"
	SourceSplat             = "splat"
	SourceMemoryOverlay     = "memory_overlay" // spatial-memory overlay on the map
	SourceBiomeTint         = "biome_tint"     // biome colour overlay on the map
)

// Admitted reports whether the cache admits meshes from source. The rule:
// a source is admitted unless it is empty, one of the overlay sources
// (SourceControlSplatCache, SourceSplatCache, SourceSplat,
// SourceMemoryOverlay, SourceBiomeTint), or a low-quality source: "low" or
// any name ending in "_low" (SourceBakedLow). Names are case-sensitive.
func Admitted(source string) bool {
	switch source {
	case SourceBakedFull:
		return true // the common case, decided by one comparison
	case "", SourceControlSplatCache, SourceSplatCache, SourceSplat, SourceMemoryOverlay, SourceBiomeTint, "low":
		return false
	}
	return !strings.HasSuffix(source, "_low")
}
