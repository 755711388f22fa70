package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rtpengine/rtp/internal/chromium"
	"github.com/spf13/cobra"
)

func newMapCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "map",
		Short: "Work with the web map of a running server",
	}
	cmd.AddCommand(newMapSnapshotCmd())
	return cmd
}

type snapshotOptions struct {
	addr     string
	out      string
	region   string
	chromium string
	width    int
	height   int
	maxBytes int
	timeout  time.Duration
}

// snapshotShot is one picture of the web map: the layers shown and what to
// do before taking it.
type snapshotShot struct {
	name   string
	layers string
	setup  string // JavaScript run (and awaited) before the picture
}

// snapshotShots are the pictures rtp map snapshot takes, in order.
var snapshotShots = []snapshotShot{
	{name: "terrain", layers: "terrain"},
	{name: "shape-border", layers: "terrain,shape,border"},
	{name: "memory", layers: "terrain,shape,memory"},
	{name: "caches-deliveries", layers: "terrain,shape,cached,deliveries"},
	{name: "claims", layers: "terrain,shape,claims"},
	{name: "inspect", layers: "terrain,shape,border,memory,cached,deliveries,claims", setup: `(async () => {
		const d = window.rtpMap.debug();
		const r = await fetch('/v1/map/regions/' + encodeURIComponent(d.region) + '/cached').then(r => r.json()).catch(() => null);
		const l = r && r.locations && r.locations.length ? r.locations[0] : {x: Math.round(d.view.cx), z: Math.round(d.view.cz)};
		window.rtpMap.setView(l.x, l.z, Math.min(d.view.zoom, 1));
		await window.rtpMap.inspect(l.x, l.z);
	})()`},
	{name: "view3d", layers: "terrain,shape", setup: `(async () => {
		const d = window.rtpMap.debug();
		await window.rtpMap.open3d(Math.floor(d.view.cx / 512), Math.floor(d.view.cz / 512));
		for (let i = 0; i < 200 && !(window.rtpMap.debug().view3d && window.rtpMap.debug().view3d.quality === 'full'); i++) {
			await new Promise(r => setTimeout(r, 50));
		}
	})()`},
}

func newMapSnapshotCmd() *cobra.Command {
	var o snapshotOptions
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save PNG pictures of the web map of a running server",
		Long: `Snapshot opens the web map of the server at --addr (rtp serve) in headless
Chromium and saves one PNG per layer into --out: terrain, shape-border,
memory, caches-deliveries, claims, inspect (the panel showing a cached
location, or the region's centre) and view3d (the 3-D view of the tile at
the centre). It shows --region (default: the server's first region) fitted
to the window.

Chromium comes from --chromium, $RTP_CHROMIUM or the PATH (chromium,
chromium-browser, google-chrome). A picture larger than --max-bytes is
reduced to 256 colours.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return usageError{errors.New("map snapshot: --out is required")}
			}
			if o.width < 200 || o.height < 200 || o.width > 4096 || o.height > 4096 {
				return usageError{fmt.Errorf("map snapshot: window %dx%d outside 200..4096", o.width, o.height)}
			}
			if o.addr == "" {
				o.addr = os.Getenv(envAddr)
			}
			if o.addr == "" {
				o.addr = defaultAddr
			}
			if !strings.Contains(o.addr, "://") {
				o.addr = "http://" + o.addr
			}
			if u, err := url.Parse(o.addr); err != nil || u.Host == "" {
				return usageError{fmt.Errorf("map snapshot: --addr %q is not a server URL", o.addr)}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			return mapSnapshot(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "", "server URL or host:port (default $"+envAddr+", or "+defaultAddr+")")
	f.StringVar(&o.out, "out", "", "directory to write the PNGs into (required; created if missing)")
	f.StringVar(&o.region, "region", "", "region to show (default: the server's first)")
	f.StringVar(&o.chromium, "chromium", "", "Chromium binary (default $RTP_CHROMIUM, or chromium on the PATH)")
	f.IntVar(&o.width, "width", 800, "window width in pixels")
	f.IntVar(&o.height, "height", 600, "window height in pixels")
	f.IntVar(&o.maxBytes, "max-bytes", 200<<10, "largest PNG kept as is; larger ones are reduced to 256 colours")
	f.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	return cmd
}

// findChromium returns the browser to drive.
func findChromium(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if p := chromium.Find(); p != "" {
		return p, nil
	}
	return "", errors.New("map snapshot: no chromium binary found (install chromium, or pass --chromium)")
}

func mapSnapshot(ctx context.Context, o snapshotOptions, stdout io.Writer) error {
	bin, err := findChromium(o.chromium)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("map snapshot: %w", err)
	}
	profile, err := os.MkdirTemp("", "rtp-map-snapshot-")
	if err != nil {
		return fmt.Errorf("map snapshot: %w", err)
	}
	defer os.RemoveAll(profile)

	actx, acancel := chromedp.NewExecAllocator(ctx,
		append(chromium.Flags(profile, o.width, o.height), chromedp.ExecPath(bin))...)
	defer acancel()
	tctx, tcancel := chromedp.NewContext(actx)
	defer tcancel()
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(int64(o.width), int64(o.height))); err != nil {
		return fmt.Errorf("map snapshot: start chromium: %w", err)
	}

	for _, s := range snapshotShots {
		hash := url.Values{"layers": {s.layers}}
		if o.region != "" {
			hash.Set("region", o.region)
		}
		page := strings.TrimSuffix(o.addr, "/") + "/map/#" + hash.Encode()
		// A fresh document per picture: the page fits the region on load.
		if err := chromedp.Do(tctx, chromedp.Navigate("about:blank"), chromedp.Navigate(page)); err != nil {
			return fmt.Errorf("map snapshot: open %s: %w", page, err)
		}
		if err := snapshotIdle(tctx); err != nil {
			return err
		}
		if o.region != "" {
			got, err := chromedp.Run(tctx, chromedp.Evaluate[string](`window.rtpMap.debug().region || ''`))
			if err != nil {
				return fmt.Errorf("map snapshot: %w", err)
			}
			if got != o.region {
				return fmt.Errorf("map snapshot: the server has no region %q", o.region)
			}
		}
		if s.setup != "" {
			if err := chromedp.Do(tctx, chromedp.Evaluate[chromedp.Void](s.setup, chromedp.EvalAwaitPromise)); err != nil {
				return fmt.Errorf("map snapshot: %s: %w", s.name, err)
			}
			if err := snapshotIdle(tctx); err != nil {
				return err
			}
		}
		shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
		if err != nil {
			return fmt.Errorf("map snapshot: %s: %w", s.name, err)
		}
		shot, err = shrinkPNG(shot, o.maxBytes)
		if err != nil {
			return fmt.Errorf("map snapshot: %s: %w", s.name, err)
		}
		path := filepath.Join(o.out, s.name+".png")
		if err := writeFileAtomic(path, shot); err != nil {
			return fmt.Errorf("map snapshot: %w", err)
		}
		fmt.Fprintf(stdout, "%s (%d bytes)\n", path, len(shot))
	}
	return nil
}

// snapshotIdle waits until the page has started and settled. A check that
// lands while the document is still being replaced is tried again.
func snapshotIdle(ctx context.Context) error {
	var err error
	for range 50 {
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.rtpMap === 'object' && window.rtpMap.debug().started`))
		if err == nil && ok {
			if _, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.rtpMap.idle(60000)`, chromedp.EvalAwaitPromise)); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("map snapshot: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err == nil {
		err = errors.New("window.rtpMap never started")
	}
	return fmt.Errorf("map snapshot: the web map did not start (does the server serve /map/?): %w", err)
}

// shrinkPNG re-encodes a PNG with the best compression and, when it is
// still larger than maxBytes, reduces it to a 256-colour palette.
func shrinkPNG(b []byte, maxBytes int) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	var buf bytes.Buffer
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	if buf.Len() <= maxBytes {
		return buf.Bytes(), nil
	}
	pal := image.NewPaletted(img.Bounds(), imagePalette(img))
	draw.Draw(pal, pal.Rect, img, img.Bounds().Min, draw.Src)
	buf.Reset()
	if err := enc.Encode(&buf, pal); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imagePalette returns up to 256 colours for img: the mean colours of its
// most used cells of a 16x16x16 RGB grid.
func imagePalette(img image.Image) color.Palette {
	type cell struct{ r, g, b, n int }
	var cells [4096]cell
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			k := int(c.R>>4)<<8 | int(c.G>>4)<<4 | int(c.B>>4)
			cells[k].r += int(c.R)
			cells[k].g += int(c.G)
			cells[k].b += int(c.B)
			cells[k].n++
		}
	}
	order := make([]int, 0, len(cells))
	for k := range cells {
		if cells[k].n > 0 {
			order = append(order, k)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cells[b].n - cells[a].n })
	pal := make(color.Palette, 0, 256)
	for _, k := range order[:min(len(order), 256)] {
		c := cells[k]
		pal = append(pal, color.RGBA{uint8(c.r / c.n), uint8(c.g / c.n), uint8(c.b / c.n), 255})
	}
	if len(pal) == 0 {
		pal = append(pal, color.RGBA{A: 255})
	}
	return pal
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
