package procworld

import (
	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/world"
)

// Block states the world emits. The procedural world has no block
// properties, so every state is a bare name. Each is made by paletteBlock,
// so every block a profile can hold has its byte in the palette.
var (
	bedrock     = paletteBlock("minecraft:bedrock")
	stone       = paletteBlock("minecraft:stone")
	deepslate   = paletteBlock("minecraft:deepslate")
	dirt        = paletteBlock("minecraft:dirt")
	grassBlock  = paletteBlock("minecraft:grass_block")
	sand        = paletteBlock("minecraft:sand")
	sandstone   = paletteBlock("minecraft:sandstone")
	gravel      = paletteBlock("minecraft:gravel")
	clay        = paletteBlock("minecraft:clay")
	mud         = paletteBlock("minecraft:mud")
	snowBlock   = paletteBlock("minecraft:snow_block")
	powderSnowB = paletteBlock("minecraft:powder_snow")
	basalt      = paletteBlock("minecraft:basalt")
	magma       = paletteBlock("minecraft:magma_block")
	water       = paletteBlock("minecraft:water")
	lava        = paletteBlock("minecraft:lava")
	oakLeaves   = paletteBlock("minecraft:oak_leaves")
	oakLog      = paletteBlock("minecraft:oak_log")
	cactus      = paletteBlock("minecraft:cactus")
	shortGrass  = paletteBlock("minecraft:short_grass")
	fern        = paletteBlock("minecraft:fern")
	deadBush    = paletteBlock("minecraft:dead_bush")
	blueOrchid  = paletteBlock("minecraft:blue_orchid")
	flowers     = [...]world.BlockID{
		paletteBlock("minecraft:dandelion"),
		paletteBlock("minecraft:poppy"),
		paletteBlock("minecraft:cornflower"),
		paletteBlock("minecraft:oxeye_daisy"),
		paletteBlock("minecraft:azure_bluet"),
	}
)

// Biomes the world emits. Lakes and volcanic land have no Minecraft
// biome, so they get names of their own (a volcanic province is not the
// nether's basalt_deltas, which a rule denying #nether would catch).
var (
	biomeOcean       = world.Biome("minecraft:ocean")
	biomeDeepOcean   = world.Biome("minecraft:deep_ocean")
	biomeRiver       = world.Biome("minecraft:river")
	biomeLake        = world.Biome("rtp:lake")
	biomeBeach       = world.Biome("minecraft:beach")
	biomePlains      = world.Biome("minecraft:plains")
	biomeForest      = world.Biome("minecraft:forest")
	biomeDesert      = world.Biome("minecraft:desert")
	biomeStonyPeaks  = world.Biome("minecraft:stony_peaks")
	biomeSnowyPlains = world.Biome("minecraft:snowy_plains")
	biomeSnowySlopes = world.Biome("minecraft:snowy_slopes")
	biomeSwamp       = world.Biome("minecraft:swamp")
	biomeVolcanic    = world.Biome("rtp:volcanic")
)

// Column rules.
const (
	// steepSlope is the height difference (in whole blocks, to any of the
	// four neighbours) from which grass, sand, snow and stone give way to
	// bare stone with gravel scree. (The generator already covers slopes
	// above 0.7 with mountains, so this mostly shapes their cliffs.)
	steepSlope = 3
	// deepOcean is the water depth from which an ocean is deep_ocean.
	deepOcean = 30
	// assumedDepth is the water depth of a wet column whose tile gives no
	// water surface (a generator without SeabedClamp reports the surface
	// as the elevation and hides the bed).
	assumedDepth = 3
	// snowySlopesY is the y from which snow cover is snowy_slopes rather
	// than snowy_plains.
	snowySlopesY = 128
)

// Plant chances, in 65536ths.
const (
	plainsFlowers = 1966  // 3%
	plainsGrass   = 13107 // 20%
	forestFern    = 3277  // 5%
	forestGrass   = 9830  // 15%
	swampOrchid   = 1311  // 2%
	swampGrass    = 9830  // 15%
	desertBush    = 983   // 1.5%
	desertCactus  = 524   // 0.8%
)

// site is what a tile says about one block column.
type site struct {
	x, z     int64 // block position
	floor    int   // floorY of the elevation
	water    int16 // floorY of the water surface, or noWater
	cover    terrain.Cover
	slope    int  // largest |floor(e) - floor(e')| over the four neighbours
	nearLava bool // a neighbour in the same chunk is lava
}

// floorY returns floor(e) clamped to the build height (MinY for NaN).
// It floors by truncation, not math.Floor: a tile's grid floors some
// 8,000 samples, and without SSE4.1 (the default GOAMD64=v1) math.Floor is
// a function call a dozen times slower.
func floorY(e float32) int {
	switch {
	case !(e >= MinY):
		return MinY
	case e >= MaxY-1:
		return MaxY - 1
	}
	i := int(e) // toward zero: one too high for a negative fraction
	if float32(i) > e {
		i--
	}
	return i
}

// lavaAround reports whether any of the eight neighbours of sample (i, j),
// chunk-local column (x, z), that lie in the same chunk is lava. Looking
// only inside the chunk keeps a chunk independent of the tile grid.
func lavaAround(t *grid, i, j, x, z int) bool {
	res := t.res
	for dz := -1; dz <= 1; dz++ {
		for dx := -1; dx <= 1; dx++ {
			if dx == 0 && dz == 0 ||
				uint(x+dx) >= world.ChunkSize || uint(z+dz) >= world.ChunkSize {
				continue
			}
			if t.cover[(j+dz)*res+i+dx] == terrain.CoverLava {
				return true
			}
		}
	}
	return false
}

// column turns s, a column with decorations dec (see packDecor), into col
// and, when p is not nil, the block profile below the top.
func (w *World) column(s *site, dec uint8, col *world.Column, p *profile) {
	g := s.floor
	col.Above = [2]world.BlockID{world.Air, world.Air}
	wet := s.water != noWater
	switch s.cover {
	case terrain.CoverOcean, terrain.CoverRiver, terrain.CoverLake:
		wet = true
	}
	if wet {
		w.wetColumn(s, g, col, p)
		return
	}

	col.Top = int16(g)
	steep := s.slope >= steepSlope
	// Ground cover: the top block and how deep it goes, then a second
	// layer under it (to depth 0: none), then stone.
	var top, under world.BlockID
	var topDepth, underDepth int
	plants := false
	switch s.cover {
	case terrain.CoverLava:
		col.Biome = biomeVolcanic
		top, topDepth, under, underDepth = lava, 3, basalt, 3
	case terrain.CoverVolcanic:
		col.Biome = biomeVolcanic
		top, topDepth, under, underDepth = basalt, 4, world.Air, 0
		if s.nearLava {
			top, topDepth, under, underDepth = magma, 1, basalt, 3
		}
	case terrain.CoverBeach:
		col.Biome = biomeBeach
		top, topDepth, under, underDepth = sand, 3, sandstone, 3
	case terrain.CoverDesert:
		col.Biome = biomeDesert
		top, topDepth, under, underDepth = sand, 3, sandstone, 3
		plants = true
	case terrain.CoverPlains:
		col.Biome = biomePlains
		top, topDepth, under, underDepth = grassBlock, 1, dirt, 3
		plants = true
	case terrain.CoverForest:
		col.Biome = biomeForest
		top, topDepth, under, underDepth = grassBlock, 1, dirt, 3
		plants = true
	case terrain.CoverSwamp:
		col.Biome = biomeSwamp
		top, topDepth, under, underDepth = grassBlock, 1, dirt, 3
		plants = true
	case terrain.CoverSnow:
		col.Biome = biomeSnowyPlains
		if g >= snowySlopesY {
			col.Biome = biomeSnowySlopes
		}
		top, topDepth, under, underDepth = snowBlock, 1, dirt, 2
	default: // terrain.CoverMountains; validated tiles hold no other cover
		col.Biome = biomeStonyPeaks
		top, topDepth, under, underDepth = stone, 1, world.Air, 0
	}

	switch {
	case steep && (top == grassBlock || top == sand || top == snowBlock || top == stone):
		// Cliffs: bare rock with gravel scree.
		top, topDepth, under, underDepth = stone, 1, world.Air, 0
		if h := hash3(w.seed, saltRock, s.x, s.z); h%3 == 0 {
			top, topDepth = gravel, 2
		}
		plants = false
	case s.cover == terrain.CoverSwamp && dec&decorSwamp != 0:
		// A pool one block deep in the grass.
		top, topDepth, under, underDepth = water, 1, mud, 2
		plants = false
	case s.cover == terrain.CoverSnow && dec&decorPowder != 0:
		top, topDepth, under, underDepth = powderSnowB, 3, world.Air, 0
	case s.cover == terrain.CoverForest:
		if h := int(dec & decorHeight); h > 0 && g+h <= MaxY-1 {
			w.treeColumn(g, h, dec&decorTrunk != 0, col, p)
			return
		}
	case s.cover == terrain.CoverDesert:
		if ok, v := chance(w.seed, saltCactus, s.x, s.z, desertCactus); ok {
			if h := 1 + int(v%3); g+h <= MaxY-1 {
				col.Top, col.Ground = int16(g+h), cactus
				p.set(
					layer{bottom: int16(g + 1), block: cactus},
					layer{bottom: int16(g - 2), block: sand},
					layer{bottom: int16(g - 5), block: sandstone},
				)
				return
			}
		}
	}
	col.Ground = top
	if plants && g+1 < MaxY {
		col.Above[0] = w.plant(s)
	}
	if p != nil {
		if underDepth == 0 {
			p.set(layer{bottom: int16(g - topDepth + 1), block: top})
		} else {
			p.set(
				layer{bottom: int16(g - topDepth + 1), block: top},
				layer{bottom: int16(g - topDepth - underDepth + 1), block: under},
			)
		}
	}
}

// wetColumn fills an ocean, river or lake column: its top is the water
// surface.
func (w *World) wetColumn(s *site, g int, col *world.Column, p *profile) {
	var wTop, bed int
	known := s.water != noWater
	if known {
		wTop = max(int(s.water), MinY+1)
		bed = min(g, wTop-1) // at least one block of water
	} else {
		wTop = max(g, MinY+1)
		bed = max(wTop-assumedDepth, MinY)
	}
	col.Top, col.Ground = int16(wTop), water
	var bedBlock world.BlockID
	switch s.cover {
	case terrain.CoverOcean:
		col.Biome, bedBlock = biomeOcean, sand
		if known && wTop-bed >= deepOcean {
			col.Biome, bedBlock = biomeDeepOcean, gravel
		}
	case terrain.CoverLake:
		col.Biome, bedBlock = biomeLake, clay
	default: // rivers, and water the tile reports over another cover
		col.Biome, bedBlock = biomeRiver, gravel
	}
	p.set(
		layer{bottom: int16(bed + 1), block: water},
		layer{bottom: int16(bed - 2), block: bedBlock},
	)
}

// treeColumn fills a forest column under a canopy h blocks above ground g:
// two layers of leaves on top, a trunk or air under them, then the grass.
func (w *World) treeColumn(g, h int, trunk bool, col *world.Column, p *profile) {
	col.Top, col.Ground = int16(g+h), oakLeaves
	stem := world.Air
	if trunk {
		stem = oakLog
	}
	p.set(
		layer{bottom: int16(g + h - 1), block: oakLeaves},
		layer{bottom: int16(g + 1), block: stem},
		layer{bottom: int16(g), block: grassBlock},
		layer{bottom: int16(g - 3), block: dirt},
	)
}

// plant returns the block standing on a plains, forest, swamp or desert
// column: a plant, or air.
func (w *World) plant(s *site) world.BlockID {
	h := hash3(w.seed, saltPlant, s.x, s.z)
	v, variant := h&0xffff, h>>16
	switch s.cover {
	case terrain.CoverPlains:
		switch {
		case v < plainsFlowers:
			return flowers[variant%uint64(len(flowers))]
		case v < plainsFlowers+plainsGrass:
			return shortGrass
		}
	case terrain.CoverForest:
		switch {
		case v < forestFern:
			return fern
		case v < forestFern+forestGrass:
			return shortGrass
		}
	case terrain.CoverSwamp:
		switch {
		case v < swampOrchid:
			return blueOrchid
		case v < swampOrchid+swampGrass:
			return shortGrass
		}
	case terrain.CoverDesert:
		if v < desertBush {
			return deadBush
		}
	}
	return world.Air
}
