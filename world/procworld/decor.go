package procworld

import "github.com/rtpengine/rtp/world"

// Decorations (trees, cacti, plants, patches of powder snow and swamp
// water) are pure functions of the world seed and block position, built
// from integer hashing only: no floating point, so every platform places
// them identically, and no dependence on which tile or chunk asks.

// mix is the splitmix64 finaliser: a bijection of uint64 with good
// avalanche.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}

// hash3 hashes (seed, salt, x, z). Distinct salts give independent streams.
func hash3(seed, salt uint64, x, z int64) uint64 {
	h := mix(seed ^ salt*0x9e3779b97f4a7c15)
	h = mix(h ^ uint64(x)*0xd1b54a32d192ed03)
	return mix(h ^ uint64(z)*0x8cb92ba72f3d8dd7)
}

// Salts of the decoration streams.
const (
	saltPlant uint64 = iota + 1
	saltTree
	saltCactus
	saltSwamp
	saltPowder
	saltRock
)

// floorDiv returns floor(a / b) for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// blob describes the patches of one stream: each cell of cell x cell
// blocks holds, with probability per/1024, one disc centred on a hashed
// block of the cell, with a hashed radius in [rMin, rMax] (rMax < cell, so
// only the 3x3 cells around a column can reach it).
type blob struct {
	salt       uint64
	cell       int64
	per        uint64 // chance in 1024 that a cell has a disc
	rMin, rMax int64
}

// Patch streams.
var (
	swampWater = blob{salt: saltSwamp, cell: 8, per: 560, rMin: 2, rMax: 4}
	powderSnow = blob{salt: saltPowder, cell: 12, per: 300, rMin: 1, rMax: 4}
)

// disc returns the disc of cell (cx, cz), if it has one: its centre and
// radius.
func (b blob) disc(seed uint64, cx, cz int64) (x, z, r int64, ok bool) {
	h := hash3(seed, b.salt, cx, cz)
	if h&1023 >= b.per {
		return 0, 0, 0, false
	}
	h >>= 10
	x = cx*b.cell + int64(h%uint64(b.cell))
	h /= uint64(b.cell)
	z = cz*b.cell + int64(h%uint64(b.cell))
	h /= uint64(b.cell)
	r = b.rMin + int64(h%uint64(b.rMax-b.rMin+1))
	return x, z, r, true
}

// stamp marks in m the columns of the chunk with block origin (ox, oz)
// that lie in a disc of b (m is indexed z*16 + x, chunk-local).
func (b blob) stamp(seed uint64, ox, oz int64, m *[chunkColumns]bool) {
	for cz := floorDiv(oz-b.rMax, b.cell); cz <= floorDiv(oz+world.ChunkSize-1+b.rMax, b.cell); cz++ {
		for cx := floorDiv(ox-b.rMax, b.cell); cx <= floorDiv(ox+world.ChunkSize-1+b.rMax, b.cell); cx++ {
			x0, z0, r, ok := b.disc(seed, cx, cz)
			if !ok {
				continue
			}
			for z := max(z0-r, oz); z <= min(z0+r, oz+world.ChunkSize-1); z++ {
				for x := max(x0-r, ox); x <= min(x0+r, ox+world.ChunkSize-1); x++ {
					if ex, ez := x-x0, z-z0; ex*ex+ez*ez <= r*r {
						m[(z-oz)*world.ChunkSize+x-ox] = true
					}
				}
			}
		}
	}
}

// Trees: one candidate trunk per treeCell x treeCell cell, present with
// probability treePer/1024, at a hashed block of the cell, with a hashed
// height; its canopy covers the columns within squared distance
// canopyR2 of the trunk, reaching canopyReach < treeCell blocks along an
// axis (so only the 3x3 cells around a column can reach it).
const (
	treeCell  = 5
	treePer   = 800
	canopyR2  = 5 // the 21 columns of a radius-2 disc with its corners cut
	minHeight = 4 // canopy top above the ground at the trunk ring
	maxHeight = 6
)

// trunk returns the tree of cell (cx, cz), if it has one: its trunk's
// column and its height.
func trunk(seed uint64, cx, cz int64) (x, z int64, height int, ok bool) {
	h := hash3(seed, saltTree, cx, cz)
	if h&1023 >= treePer {
		return 0, 0, 0, false
	}
	h >>= 10
	x = cx*treeCell + int64(h%treeCell)
	h /= treeCell
	z = cz*treeCell + int64(h%treeCell)
	h /= treeCell
	return x, z, minHeight + int(h%(maxHeight-minHeight+1)), true
}

// canopyReach is how far a canopy reaches from its trunk along an axis.
const canopyReach = 2

// Canopy cells: how far above the ground the canopy over a column tops out
// (0: no canopy), and whether the column holds the trunk. The inner columns
// (squared distance <= 2 from the trunk) rise one block higher than the
// rim; overlapping canopies take the highest.
type canopyCell struct {
	height uint8
	trunk  bool
}

// stampCanopies fills m with the canopies over the chunk with block origin
// (ox, oz) (m is indexed z*16 + x, chunk-local).
func stampCanopies(seed uint64, ox, oz int64, m *[chunkColumns]canopyCell) {
	for cz := floorDiv(oz-canopyReach, treeCell); cz <= floorDiv(oz+world.ChunkSize-1+canopyReach, treeCell); cz++ {
		for cx := floorDiv(ox-canopyReach, treeCell); cx <= floorDiv(ox+world.ChunkSize-1+canopyReach, treeCell); cx++ {
			tx, tz, ht, ok := trunk(seed, cx, cz)
			if !ok {
				continue
			}
			for z := max(tz-canopyReach, oz); z <= min(tz+canopyReach, oz+world.ChunkSize-1); z++ {
				for x := max(tx-canopyReach, ox); x <= min(tx+canopyReach, ox+world.ChunkSize-1); x++ {
					ex, ez := x-tx, z-tz
					d2 := ex*ex + ez*ez
					if d2 > canopyR2 {
						continue
					}
					h := ht
					if d2 > 2 {
						h--
					}
					c := &m[(z-oz)*world.ChunkSize+x-ox]
					c.height = max(c.height, uint8(h))
					c.trunk = c.trunk || d2 == 0
				}
			}
		}
	}
}

// chunkDecor holds the decorations of one chunk, each stream stamped the
// first time a column asks for it.
type chunkDecor struct {
	seed                   uint64
	ox, oz                 int64 // the chunk's block origin
	haveTrees, haveSwamp   bool
	havePowder             bool
	canopy                 [chunkColumns]canopyCell
	swampWater, powderSnow [chunkColumns]bool
}

// chunkColumns is the number of columns of a chunk.
const chunkColumns = world.ChunkSize * world.ChunkSize

// tree returns the canopy over chunk-local column i.
func (d *chunkDecor) tree(i int) canopyCell {
	if !d.haveTrees {
		stampCanopies(d.seed, d.ox, d.oz, &d.canopy)
		d.haveTrees = true
	}
	return d.canopy[i]
}

// swamp reports whether chunk-local column i is swamp water.
func (d *chunkDecor) swamp(i int) bool {
	if !d.haveSwamp {
		swampWater.stamp(d.seed, d.ox, d.oz, &d.swampWater)
		d.haveSwamp = true
	}
	return d.swampWater[i]
}

// powder reports whether chunk-local column i is powder snow.
func (d *chunkDecor) powder(i int) bool {
	if !d.havePowder {
		powderSnow.stamp(d.seed, d.ox, d.oz, &d.powderSnow)
		d.havePowder = true
	}
	return d.powderSnow[i]
}

// chance reports whether the stream salt fires at (x, z) with probability
// per/65536, and returns further hash bits for a choice among variants.
func chance(seed, salt uint64, x, z int64, per uint64) (bool, uint64) {
	h := hash3(seed, salt, x, z)
	return h&0xffff < per, h >> 16
}
