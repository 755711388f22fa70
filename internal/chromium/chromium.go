// Package chromium finds the headless browser the web map's tests and
// `rtp map snapshot` drive, and gives the flags they launch it with.
package chromium

import (
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Find returns the path of a Chromium or Chrome binary: $RTP_CHROMIUM when
// set, else the first of the usual names on $PATH, else "".
func Find() string {
	if p := os.Getenv("RTP_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Flags are the launch flags of the headless browser: no sandbox (tests run
// as root in containers), no GPU (WebGL falls back to SwiftShader), no
// traffic beyond the page's own, a fresh profile in userDataDir and a
// window of width x height pixels.
func Flags(userDataDir string, width, height int) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(userDataDir),
		chromedp.WindowSize(width, height),
	}
}
