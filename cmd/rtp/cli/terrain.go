package cli

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/spf13/cobra"

	"github.com/rtpengine/rtp/terrain"
	"github.com/rtpengine/rtp/terrain/procgen"
)

func newTerrainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "terrain",
		Short: "Inspect the built-in procedural terrain",
	}
	cmd.AddCommand(newTerrainRenderCmd())
	return cmd
}

type renderOptions struct {
	seed       int64
	x, z       int64
	size       int32
	resolution int32
	out        string
}

func newTerrainRenderCmd() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Render a shaded relief map of the procedural world to a PNG",
		Long: `Render draws the square area of --size blocks centred on (--x, --z) of the
default procedural world with the given --seed: hillshaded land coloured by
cover, water shaded by depth, lava glowing. The image is --resolution pixels
on a side (default: one pixel per block, at most 1024) and is written
atomically to --out.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return usageError{errors.New("terrain render: --out is required")}
			}
			if !cmd.Flags().Changed("resolution") {
				o.resolution = min(o.size, 1024)
			}
			return renderTerrain(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.seed, "seed", 0, "world seed")
	f.Int64Var(&o.x, "x", 0, "block x of the map centre")
	f.Int64Var(&o.z, "z", 0, "block z of the map centre")
	f.Int32Var(&o.size, "size", 4096, "edge of the mapped area in blocks")
	f.Int32Var(&o.resolution, "resolution", 1024, "image edge in pixels (default min(size, 1024))")
	f.StringVar(&o.out, "out", "", "PNG file to write (required)")
	return cmd
}

func renderTerrain(ctx context.Context, o renderOptions, stdout io.Writer) error {
	p := procgen.DefaultParams()
	p.Seed = o.seed
	gen, err := procgen.New(p)
	if err != nil {
		return err
	}
	req := terrain.Request{
		OriginX:    o.x - int64(o.size)/2,
		OriginZ:    o.z - int64(o.size)/2,
		Size:       o.size,
		Resolution: o.resolution,
		Border:     1,
	}
	if err := req.Validate(); err != nil {
		return usageError{err}
	}
	tile, err := renderTile(ctx, gen, req)
	if err != nil {
		return err
	}
	img := shadeTile(tile, p.SeaLevel)
	if err := writePNGAtomic(o.out, img); err != nil {
		return err
	}
	var counts [terrain.NumCovers]int
	for _, c := range tile.Cover {
		counts[c]++
	}
	fmt.Fprintf(stdout, "wrote %s: %dx%d pixels, blocks x %d..%d z %d..%d, elevation %.1f..%.1f\n",
		o.out, o.resolution, o.resolution, req.OriginX, req.OriginX+int64(req.Size), req.OriginZ, req.OriginZ+int64(req.Size), tile.Min, tile.Max)
	for c, n := range counts {
		if n > 0 {
			fmt.Fprintf(stdout, "  %-10s %5.1f%%\n", terrain.Cover(c), 100*float64(n)/float64(len(tile.Cover)))
		}
	}
	return nil
}

// renderTile generates req, splitting it into equal sub-tiles generated in
// parallel when the sizes divide evenly. The generator is seamless, so the
// sub-tiles' samples are exactly those of the whole request.
func renderTile(ctx context.Context, gen *procgen.Generator, req terrain.Request) (*terrain.Tile, error) {
	k := int32(1)
	for _, c := range []int32{8, 4, 2} {
		if req.Size%c == 0 && req.Resolution%c == 0 && req.Resolution/c >= 32 {
			k = c
			break
		}
	}
	if k == 1 || runtime.GOMAXPROCS(0) == 1 {
		return gen.Tile(ctx, req)
	}
	sub := terrain.Request{Size: req.Size / k, Resolution: req.Resolution / k, Border: req.Border}
	whole := &terrain.Tile{
		Request:    req,
		Elevations: make([]float32, req.Side()*req.Side()),
		Water:      make([]float32, int(req.Resolution)*int(req.Resolution)),
		Cover:      make([]terrain.Cover, int(req.Resolution)*int(req.Resolution)),
		Min:        float32(math.Inf(1)),
		Max:        float32(math.Inf(-1)),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan [2]int32)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for ij := range jobs {
				r := sub
				r.OriginX = req.OriginX + int64(ij[0]*sub.Size)
				r.OriginZ = req.OriginZ + int64(ij[1]*sub.Size)
				t, err := gen.Tile(ctx, r)
				mu.Lock()
				if err != nil {
					if first == nil {
						first = err
						cancel()
					}
				} else {
					paste(whole, t, int(ij[0]*sub.Resolution), int(ij[1]*sub.Resolution))
				}
				mu.Unlock()
			}
		})
	}
feed:
	for j := range k {
		for i := range k {
			select {
			case jobs <- [2]int32{i, j}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return whole, nil
}

// paste copies sub-tile t into whole at interior offset (ox, oz), border
// samples included (neighbouring sub-tiles write identical values there).
func paste(whole, t *terrain.Tile, ox, oz int) {
	ws, ts := whole.Request.Side(), t.Request.Side()
	wr, tr := int(whole.Request.Resolution), int(t.Request.Resolution)
	for j := range ts {
		copy(whole.Elevations[(oz+j)*ws+ox:], t.Elevations[j*ts:(j+1)*ts])
	}
	for j := range tr {
		copy(whole.Water[(oz+j)*wr+ox:], t.Water[j*tr:(j+1)*tr])
		copy(whole.Cover[(oz+j)*wr+ox:], t.Cover[j*tr:(j+1)*tr])
	}
	whole.Min = min(whole.Min, t.Min)
	whole.Max = max(whole.Max, t.Max)
}

var coverColors = [terrain.NumCovers]color.NRGBA{
	terrain.CoverOcean:     {18, 60, 130, 255},
	terrain.CoverBeach:     {226, 212, 158, 255},
	terrain.CoverPlains:    {138, 178, 88, 255},
	terrain.CoverForest:    {52, 112, 52, 255},
	terrain.CoverDesert:    {224, 196, 128, 255},
	terrain.CoverMountains: {128, 118, 108, 255},
	terrain.CoverSnow:      {242, 245, 250, 255},
	terrain.CoverSwamp:     {78, 98, 62, 255},
	terrain.CoverVolcanic:  {66, 56, 56, 255},
	terrain.CoverLava:      {255, 96, 12, 255},
	terrain.CoverRiver:     {56, 126, 206, 255},
	terrain.CoverLake:      {44, 104, 184, 255},
}

// shadeTile draws a hillshaded relief map of t: light from the north-west
// at 45 degrees over the elevation gradients (from the border-1 samples),
// land coloured by cover, water by depth, lava unshaded.
func shadeTile(t *terrain.Tile, seaLevel int) *image.NRGBA {
	req := t.Request
	res, side, b := int(req.Resolution), req.Side(), int(req.Border)
	spacing := float64(req.Size) / float64(req.Resolution)
	img := image.NewNRGBA(image.Rect(0, 0, res, res))
	// Unit light vector: azimuth 315 degrees (north-west), altitude 45.
	lx, ly, lz := -0.5, 0.7071067811865476, -0.5
	elev := func(i, j int) float64 { return float64(t.Elevations[j*side+i]) }
	for j := range res {
		for i := range res {
			k := j*res + i
			ci, cj := i+b, j+b
			x0, x1 := max(ci-1, 0), min(ci+1, side-1)
			z0, z1 := max(cj-1, 0), min(cj+1, side-1)
			dx := (elev(x1, cj) - elev(x0, cj)) / (float64(x1-x0) * spacing)
			dz := (elev(ci, z1) - elev(ci, z0)) / (float64(z1-z0) * spacing)
			// Surface normal of y = e(x, z) is (-dx, 1, -dz), normalised.
			nl := math.Sqrt(dx*dx + 1 + dz*dz)
			shade := (-dx*lx + ly - dz*lz) / nl / ly
			shade = min(max(shade, 0.25), 1.45)

			c := coverColors[t.Cover[k]]
			var r, g, bl float64
			switch cv := t.Cover[k]; {
			case cv == terrain.CoverLava:
				r, g, bl = float64(c.R), float64(c.G), float64(c.B)
			case cv == terrain.CoverOcean || cv == terrain.CoverRiver || cv == terrain.CoverLake:
				surface := float64(t.Water[k])
				if math.IsNaN(surface) {
					surface = float64(seaLevel)
				}
				depth := max(surface-elev(ci, cj), 0)
				// Shallow water is light and greenish, deep water dark.
				d := 1 - math.Exp(-depth/12)
				shallow := [3]float64{90, 170, 200}
				r = shallow[0] + (float64(c.R)-shallow[0])*d
				g = shallow[1] + (float64(c.G)-shallow[1])*d
				bl = shallow[2] + (float64(c.B)-shallow[2])*d
				// A hint of the relief under shallow water.
				ws := 1 + (shade-1)*0.25*(1-d)
				r, g, bl = r*ws, g*ws, bl*ws
			default:
				// Land: cover colour, brightened with height, hillshaded.
				lift := 1 + 0.25*min(max((elev(ci, cj)-float64(seaLevel))/200, 0), 1)
				r = float64(c.R) * lift * shade
				g = float64(c.G) * lift * shade
				bl = float64(c.B) * lift * shade
			}
			img.SetNRGBA(i, j, color.NRGBA{R: clampByte(r), G: clampByte(g), B: clampByte(bl), A: 255})
		}
	}
	return img
}

func clampByte(v float64) uint8 { return uint8(math.Round(min(max(v, 0), 255))) }

// writePNGAtomic encodes img to a temporary file beside path and renames it
// into place, so readers never see a partial image.
func writePNGAtomic(path string, img image.Image) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("terrain render: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = png.Encode(tmp, img); err != nil {
		return fmt.Errorf("terrain render: encode: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("terrain render: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("terrain render: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("terrain render: %w", err)
	}
	return nil
}
