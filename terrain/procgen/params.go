package procgen

import (
	"errors"
	"fmt"
	"math"
)

// World limits: elevations are block y and always lie in [MinY, MaxY].
const (
	MinY = -64
	MaxY = 320
)

// Params are all the inputs that change the generator's output. Every field
// is a plain value, so an archive can derive tile identity from the struct
// by reflection; a new field changes identity automatically.
//
// The zero value is not valid (Relief and the scales are zero); start from
// DefaultParams. Params is a value type and safe to copy.
type Params struct {
	// Seed selects the world. Default 0.
	Seed int64
	// Relief scales every elevation's distance from sea level: 1 gives
	// Minecraft-like hills and mountains topping out around y 260, 0.5
	// halves them. Range (0, 4]. Default 1.
	Relief float64
	// SeaLevel is the block y of the ocean surface. Range [MinY, MaxY).
	// Default 63.
	SeaLevel int
	// SeabedClamp controls how water is sampled. When true (the default)
	// elevations are the ground under water (seabed, river bed, lake bed)
	// and Tile.Water reports the water surface over them. When false,
	// elevations are clamped up to the water surface and Water is NaN
	// everywhere; covers still say ocean, river or lake.
	SeabedClamp bool
	// Biome shapes climate and volcanism.
	Biome BiomeParams
}

// BiomeParams shape the climate fields that choose covers.
//
// The zero value is not valid; see DefaultParams.
type BiomeParams struct {
	// TemperatureScale is the typical width in blocks of a warm or cold
	// region. Range [64, 1<<20]. Default 2400.
	TemperatureScale float64
	// TemperatureOffset shifts temperature everywhere: positive is warmer
	// (more desert, less snow). Range [-2, 2]. Default 0.
	TemperatureOffset float64
	// MoistureScale is the typical width in blocks of a wet or dry region.
	// Range [64, 1<<20]. Default 1800.
	MoistureScale float64
	// MoistureOffset shifts moisture everywhere: positive is wetter (more
	// forest, swamp and river flow). Range [-2, 2]. Default 0.
	MoistureOffset float64
	// VolcanicFrequency sets how common volcanic provinces are: 0 disables
	// them, 1 makes them cover a large share of the land. Range [0, 1].
	// Default 0.35.
	VolcanicFrequency float64
	// SnowLine is the block y above sea level at which snow lies at
	// neutral temperature; colder regions bring it down, warmer ones up.
	// Range (0, MaxY-MinY]. Default 105.
	SnowLine float64
}

// DefaultParams returns the parameters of the default world.
func DefaultParams() Params {
	return Params{
		Seed:        0,
		Relief:      1,
		SeaLevel:    63,
		SeabedClamp: true,
		Biome: BiomeParams{
			TemperatureScale:  2400,
			TemperatureOffset: 0,
			MoistureScale:     1800,
			MoistureOffset:    0,
			VolcanicFrequency: 0.35,
			SnowLine:          105,
		},
	}
}

// Validate reports every problem with p at once.
func (p Params) Validate() error {
	var errs []error
	check := func(name string, v, lo, hi float64, loOpen bool) {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			errs = append(errs, fmt.Errorf("procgen: %s is %v, want a finite number", name, v))
		case v < lo || (loOpen && v == lo) || v > hi:
			open := "["
			if loOpen {
				open = "("
			}
			errs = append(errs, fmt.Errorf("procgen: %s %v outside %s%v, %v]", name, v, open, lo, hi))
		}
	}
	check("relief", p.Relief, 0, 4, true)
	if p.SeaLevel < MinY || p.SeaLevel >= MaxY {
		errs = append(errs, fmt.Errorf("procgen: sea level %d outside [%d, %d)", p.SeaLevel, MinY, MaxY))
	}
	b := p.Biome
	check("temperature scale", b.TemperatureScale, 64, 1<<20, false)
	check("temperature offset", b.TemperatureOffset, -2, 2, false)
	check("moisture scale", b.MoistureScale, 64, 1<<20, false)
	check("moisture offset", b.MoistureOffset, -2, 2, false)
	check("volcanic frequency", b.VolcanicFrequency, 0, 1, false)
	check("snow line", b.SnowLine, 0, MaxY-MinY, true)
	return errors.Join(errs...)
}
