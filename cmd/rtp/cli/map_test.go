package cli

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMapSnapshotUsage(t *testing.T) {
	for _, args := range [][]string{
		{"map", "snapshot"},
		{"map", "snapshot", "--out", t.TempDir(), "--width", "10"},
		{"map", "snapshot", "--out", t.TempDir(), "--addr", "http://"},
	} {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), args, &stdout, &stderr)
		if ExitCode(err) != 2 {
			t.Errorf("%v: exit code %d (%v), want 2", args, ExitCode(err), err)
		}
	}
}

func TestShrinkPNG(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	img := image.NewRGBA(image.Rect(0, 0, 300, 200))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	// Within the limit: re-encoded, same pixels.
	same, err := shrinkPNG(buf.Bytes(), 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	got, err := png.Decode(bytes.NewReader(same))
	if err != nil {
		t.Fatal(err)
	}
	if c := color.RGBAModel.Convert(got.At(7, 9)); c != img.At(7, 9) {
		t.Errorf("pixel (7, 9) %v, want %v kept", c, img.At(7, 9))
	}
	// Over the limit: reduced to a palette, smaller, same size.
	small, err := shrinkPNG(buf.Bytes(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(small) >= len(same) {
		t.Errorf("reduced PNG %d bytes, not smaller than %d", len(small), len(same))
	}
	p, err := png.Decode(bytes.NewReader(small))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*image.Paletted); !ok || p.Bounds() != img.Bounds() {
		t.Errorf("reduced PNG is %T %v, want paletted %v", p, p.Bounds(), img.Bounds())
	}
	if _, err := shrinkPNG([]byte("not a png"), 1000); err == nil {
		t.Error("shrinkPNG accepted bytes that are not a PNG")
	}
}

// stubMapPage stands in for the web map: it implements the window.rtpMap
// calls rtp map snapshot makes and paints the page a colour telling which
// picture it is in.
const stubMapPage = `<!doctype html><html><body style="margin:0;height:100vh"><script>
const p = new URLSearchParams(location.hash.slice(1));
let v3 = null;
const paint = (c) => { document.body.style.background = c; };
window.rtpMap = {
  debug: () => ({ started: true, region: 'default', view: { cx: 600, cz: -20, zoom: 2 }, view3d: v3 }),
  idle: async () => true,
  setView: (x, z) => { if (x !== 5 || z !== 6) paint('#ff00ff'); },
  inspect: async (x, z) => { paint(x === 5 && z === 6 ? '#00ff00' : '#ff00ff'); },
  open3d: async (tx, tz) => { v3 = { quality: 'full' }; paint(tx === 1 && tz === -1 ? '#0000ff' : '#ff00ff'); },
};
paint(p.get('layers') === 'terrain' ? '#ff0000' : '#808080');
</script></body></html>`

func TestMapSnapshotBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	if _, err := findChromium(""); err != nil {
		t.Skipf("snapshot test skipped: %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/map/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(stubMapPage))
	})
	mux.HandleFunc("/v1/map/regions/default/cached", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"locations":[{"x":5,"y":70,"z":6,"stage":"hot","sink":"general"}]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	out := filepath.Join(t.TempDir(), "shots")
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), []string{"map", "snapshot", "--addr", srv.URL, "--out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("snapshot: %v (stderr %s)", err, stderr.String())
	}
	want := map[string]color.RGBA{
		"terrain":           {255, 0, 0, 255},
		"shape-border":      {128, 128, 128, 255},
		"memory":            {128, 128, 128, 255},
		"caches-deliveries": {128, 128, 128, 255},
		"claims":            {128, 128, 128, 255},
		"inspect":           {0, 255, 0, 255},
		"view3d":            {0, 0, 255, 255},
	}
	for name, c := range want {
		b, err := os.ReadFile(filepath.Join(out, name+".png"))
		if err != nil {
			t.Error(err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if img.Bounds().Dx() != 800 || img.Bounds().Dy() != 600 {
			t.Errorf("%s is %v, want 800x600", name, img.Bounds())
		}
		if got := color.RGBAModel.Convert(img.At(400, 300)); got != c {
			t.Errorf("%s centre pixel %v, want %v", name, got, c)
		}
		if !strings.Contains(stdout.String(), name+".png") {
			t.Errorf("output does not name %s.png:\n%s", name, stdout.String())
		}
	}

	// A region the server does not have is an error.
	err := Run(context.Background(), []string{"map", "snapshot", "--addr", srv.URL, "--out", out, "--region", "elsewhere"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `no region "elsewhere"`) {
		t.Errorf("snapshot of a missing region: %v", err)
	}
}
