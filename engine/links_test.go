package engine_test

import (
	"slices"
	"testing"

	"github.com/rtpengine/rtp/internal/godeps"
)

// TestLinksNoDriver: the engine links no database driver (nor Chromium):
// its stores are the program's pick (Spec.Stores), so a program links
// only the drivers of the stores it picks.
func TestLinksNoDriver(t *testing.T) {
	deps := godeps.Of(t, "github.com/rtpengine/rtp/engine")
	if !slices.Contains(deps, "github.com/rtpengine/rtp/stores") {
		t.Fatalf("go list -deps names no stores package: %q", deps)
	}
	if bad := godeps.Matching(deps, "github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/ncruces/go-sqlite3", "github.com/chromedp"); len(bad) > 0 {
		t.Errorf("the engine links %q", bad)
	}
}
