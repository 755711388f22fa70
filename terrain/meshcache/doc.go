// Package meshcache retains full-quality terrain meshes after their tiles
// unload, so that revisiting a tile restores full quality at once instead of
// flashing to the low-quality fallback while the mesh is rebuilt. Retention
// is bounded by an entry count and evicts the least recently used entry.
//
// The cache only holds references: it never builds, copies, encodes or
// persists meshes, and its entries last for the process (or until Clear).
//
// # Admission
//
// Store admits an entry when the key is non-empty, the mesh is non-nil, has
// at least one triangle and is not a mesh.Low mesh, and the source is a
// full-quality source (see Admitted). Overlay products are refused: their
// active radius is owned elsewhere (the overlay renderer rebuilds them as
// the player moves), so keeping them here would hold stale overlays and
// fight that owner over their lifetime. A refused Store changes nothing.
//
// # Capacity
//
// Every Store passes the capacity currently in force (normally a Profile's)
// and, after admitting, evicts oldest entries until at most that many
// remain. A capacity of zero or less empties the cache, the new entry
// included, and Store reports false.
//
// # Design
//
// Entries live in an internal/lru Map, the module's one LRU: a map from
// key into an intrusive doubly-linked list (oldest at the front), so Store,
// Restore and eviction are O(1) and allocate nothing once the cache is
// full: when a new key arrives at capacity the oldest entry leaves first
// and its node is reused for the newcomer. An ordered slice (the original
// design, linear per touch) and container/list (one more allocation and an
// interface conversion per entry) are measured against it by
// BenchmarkMeshCacheBaselines. The list inside
// github.com/hashicorp/golang-lru/v2 allocates an element per new key as
// container/list does, so it cannot keep that guarantee.
//
// One mutex guards the cache. It is not sharded because recency is global:
// per-shard lists would evict the oldest entry of one shard rather than the
// oldest overall, changing the documented eviction order, and the critical
// section is a map lookup and a few pointer writes (tens of nanoseconds),
// far from being contended at the rates renderers restore tiles.
// BenchmarkMeshCacheParallel measures the contended case.
package meshcache
