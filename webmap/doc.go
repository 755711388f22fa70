// Package webmap serves the web map of an rtp engine: a page (embedded,
// no network beyond the service), 512x512 PNG terrain tiles in a zoom
// pyramid, terrain meshes, and JSON overlays of each region's spatial
// memory, cached places, deliveries (with a server-sent event stream) and
// a column inspector. It reads everything through a Backend
// (webmap/enginemap adapts an *engine.Engine), read-only; every route is
// GET or HEAD. The package does not import the engine.
//
// # Routes
//
//	GET /map/                                        the page (static/index.html)
//	GET /map/static/...                              its assets
//	GET /v1/map/worlds                               worlds, with their change epoch
//	GET /v1/map/regions                              regions: shape, chunk box, border
//	GET /v1/worlds/{world}/tiles/{zoom}/{tx}/{tz}.png  a tile
//	GET /v1/worlds/{world}/meshes/{tx}/{tz}?quality=full|low  a mesh
//	GET /v1/map/regions/{region}/memory?minX=&minZ=&maxX=&maxZ=
//	GET /v1/map/regions/{region}/cached
//	GET /v1/map/regions/{region}/deliveries[/stream]
//	GET /v1/map/regions/{region}/inspect?x=&z=
//
// Errors are JSON, {"error":{"code":"...","message":"..."}}: 400
// bad_request for a malformed parameter (zoom outside 0..8, a coordinate
// that is not an integer or lies beyond ±MaxBlock, a memory rectangle of
// more than MaxMemoryChunks chunks), 404 not_found for an unknown world,
// region or route, 503 unavailable when a render ran out of time, 500
// internal otherwise.
//
// # Tiles
//
// Zoom 0 draws one block per pixel: tile (tx, tz) covers blocks
// [512tx, 512tx+512) x [512tz, 512tz+512), read as the 1,024 column
// summaries of its chunks (Backend.Summary). A procedural world is drawn
// as a shaded relief (RenderRelief), a Minecraft world by top-block
// colours with height shading (RenderBlocks, colours by block family:
// BlockColor); ungenerated chunks are transparent. Zoom k (1..MaxZoom)
// draws 2^k blocks per pixel, read directly at that spacing rather than
// built from finer tiles: a procedural world's heightfield sampled at the
// pixel centres (Backend.Heightfield through DrainageZoom, with rivers and
// lakes; Backend.Relief above, the generator's surface without its
// drainage: a river there is at most about a pixel wide, and lakes are
// left out too), drawn by RenderRelief with slopes divided by the
// spacing, so a procedural tile costs about a zoom-0 tile at every zoom;
// a Minecraft world's summaries, one column per pixel (the column at the
// pixel's centre block), each chunk holding a sample read once (up to one
// chunk per pixel: a save has no coarser index).
//
// The map draws the chunks of the bounding box of the world's regions
// (the union of Region.Chunks) and leaves everything beyond transparent
// without reading it: the procedural world is unbounded and a zoom-8 tile
// spans 131,072 blocks, so an unclipped tile would read terrain nobody
// teleports to. A world without regions draws nothing.
//
// Encoded tiles live in a bounded LRU (Options.TileEntries and TileBytes)
// keyed by world, producer (terrain.Producer), RendererVersion, zoom and
// tile; each entry carries its PNG's length and CRC-32C, checked on every
// read (a damaged entry is dropped and rendered again), and the epoch
// digest of its chunks. Concurrent misses for one tile and digest share
// one render under the internal/flight policy: it goes on while any
// requester still waits for it (the one that started it may have left),
// is cancelled once they have all left, and is bounded by
// Options.RenderTimeout; a render that panics is logged and answered as a
// failed render (500) without taking the process down. At most
// Options.RenderWorkers tiles render at once.
//
// # Rendering ahead
//
// Map.Prerender renders, one tile at a time, the tiles a page fitting a
// region draws first (PrerenderPlan: every region's tiles from zoom
// MaxZoom down to the finest zoom where at most PrerenderOptions.ViewTiles
// cover it, at most MaxTiles in all) into the tile cache. Before each it
// waits while the caller's Busy predicate holds (rtp serve: a region is
// promoting, or has a short sink and cold locations to fill it with) or a
// tile request is being served, so it takes nothing from teleports nor
// from a page. Its caller owns it and stops it with its context.
//
// The page asks for the tiles two zooms above its view first, and for its
// own only once those have settled, drawing the coarse ones scaled while
// its own load: terrain shows at once and refines.
//
// # Invalidation and ETags
//
// A tile's digest hashes the change counts (Backend.ChunkEpoch, the
// engine's world.Epochs.Of, lock-free) of every chunk it draws; a zoom-k
// digest hashes its children's. So a change to a chunk changes the digest
// of exactly the tiles above it, at every zoom, and of no other: a cached
// tile of an old digest is rendered again, the others stay. Digests are
// memoised per world epoch (Backend.WorldEpoch, which changes with every
// change batch), so an unchanged world costs one memo lookup per request
// and a never-changing one (epoch 0, the procedural world) none.
//
// Tiles and meshes carry a strong ETag derived from that identity and
// digest, and Cache-Control "public, max-age=30"; an If-None-Match naming
// the current ETag is answered 304 before any cache lookup or render. The
// query parameter v (cache busting) is ignored.
//
// # Meshes
//
// The mesh of zoom-0 tile (tx, tz) is built (terrain/mesh.Build) from the
// heightfield of MeshRequest(tx, tz) (Backend.Heightfield: the procedural
// generator's tile through the archive, or SurfaceTile over a Minecraft
// world's column tops): MeshResolution (256) samples per side, one every
// 2 blocks, with a one-sample border so neighbouring meshes share their
// seam normals. Full-quality meshes are kept in a terrain/meshcache.Cache
// (Options.Meshes, capacity Options.MeshProfile), keyed with the tile's
// digest so a changed tile is not restored; low quality (every
// mesh.LowStep-th sample) is built on each request, as the cache admits
// full quality only. X-RTP-Mesh-Quality says which was served.
//
// The body is terrain/mesh's encoding (version 1, little-endian; the
// terrain/mesh package documentation is normative): a 56-byte header
// (magic "RTPM", version, quality 1 full / 2 low, flags bit 0 for 32-bit
// indices, OriginX and OriginZ as int64, bounds min and max as three
// float32 each, vertex count V and index count I as uint32), then V
// positions as three uint16 quantised between the bounds, V octahedral
// normals as two int8, I indices (uint16 when V <= 65536, which every
// MeshResolution mesh satisfies, else uint32), and a CRC-32C of everything
// before it. Positions are relative to (OriginX, OriginZ), y is the
// height; triangles wind counter-clockwise seen from above.
//
// # Overlays
//
// The memory route lists the chunks of a rectangle whose memory holds a
// rejection, with cause, tier, state (active or probation) and the
// seconds left in that state (-1 for static). The cached route lists up to
// MaxCached places waiting in the pipeline (cold or hot, with their sink);
// since listing sweeps the pipeline's stages, an answer is reused for
// Options.CachedTTL. The deliveries route gives the last FeedSize places
// handed out, and its stream sends each later one as an "event: delivery"
// with the same JSON, flushed at once, with a comment every 15 s; the
// stream ends when the client goes. Inspect runs the region's safety
// checker on the column's summary (on the full chunk when the rules need
// blocks) and reports its reason.
package webmap
