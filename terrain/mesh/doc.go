// Package mesh turns terrain tiles into triangle meshes for renderers and map
// clients, and defines a compact, checksummed binary encoding to serve them.
//
// # Geometry
//
// Build makes one vertex per interior sample of a terrain.Tile. Positions
// are in block units relative to the tile's minimum corner (Mesh.OriginX,
// Mesh.OriginZ): x and z run along the tile, y is the elevation. The world
// position of a vertex is (OriginX+x, y, OriginZ+z); keeping positions local
// keeps float32 exact to a fraction of a block even 30 million blocks from
// the world origin, where a float32 world coordinate would be off by two.
//
// Vertex (i, j) sits at ((i+0.5)*h, elevation, (j+0.5)*h) with
// h = Size/Resolution, exactly where terrain.Request places sample (i, j).
// Triangles wind counter-clockwise seen from above (+y), so their geometric
// normals point up in a right-handed frame. Per-vertex normals come from
// central differences of the elevation field; on the tile edge they use the
// tile's border samples when it has any, so two neighbouring tiles compute
// identical normals along their shared seam.
//
// A Low mesh keeps every k-th sample in each direction plus the last row and
// column, so it spans exactly the same area as the Full mesh; its normals
// are the Full normals of the samples it keeps.
//
// # Encoding
//
// Encode writes a mesh in the format below (little-endian, version 1):
//
//	offset  size  field
//	0       4     magic "RTPM"
//	4       1     version (1)
//	5       1     quality (1 full, 2 low)
//	6       1     flags: bit 0 set = 32-bit indices, other bits zero
//	7       1     reserved, zero
//	8       8     OriginX, int64
//	16      8     OriginZ, int64
//	24      12    bounds minimum x, y, z, float32
//	36      12    bounds maximum x, y, z, float32
//	48      4     vertex count V, uint32
//	52      4     index count I, uint32, a multiple of 3
//	56      6V    positions: x, y, z as uint16, q/65535 of the way from
//	              bounds minimum to maximum on that axis
//	.       2V    normals: octahedral encoding, two int8 (snorm, /127)
//	.       2I    indices as uint16 when V <= 65536 (flag bit 0 clear),
//	 or     4I    as uint32 otherwise (flag bit 0 set)
//	.       4     CRC-32C (Castagnoli) of every byte before it
//
// The index width is canonical: a file whose flag disagrees with its vertex
// count is rejected. Positions decode to within half a quantum,
// (max-min)/131070 per axis, plus float32 rounding; normals to within 0.7
// degrees (0.64 measured worst case).
//
// Decode checks the length implied by the counts against the input before
// it allocates anything, so hostile counts cannot make it allocate more than
// a small multiple of the input's size.
package mesh
