package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rtpengine/rtp/geom"
	"github.com/rtpengine/rtp/internal/godeps"
	"github.com/rtpengine/rtp/world/worldtest"
)

// TestRun runs the example's logic: ten places, each on the sine world,
// inside the region, standing on the terrain's top.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, t.TempDir(), 10); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 10:\n%s", len(lines), out.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, "-> hills ") || !strings.Contains(l, "(minecraft:plains)") {
			t.Errorf("line %q: want a place on hills, in plains", l)
		}
	}
}

// TestSineWorldContract: the example's world keeps the world.Source
// contract.
func TestSineWorldContract(t *testing.T) {
	worldtest.Run(t, func(t *testing.T) worldtest.Case {
		return worldtest.Case{Source: sineWorld{}, Present: []geom.Chunk{{X: 0, Z: 0}, {X: -3, Z: 7}, {X: 100, Z: -100}}}
	})
}

// TestLinksNoFleetDrivers: the example, an embedder that picks the
// embedded stores, links neither PostgreSQL, Redis nor Chromium.
func TestLinksNoFleetDrivers(t *testing.T) {
	deps := godeps.Of(t, ".")
	if !slices.Contains(deps, "github.com/rtpengine/rtp/engine") {
		t.Fatalf("go list -deps . names no engine: %q", deps)
	}
	if bad := godeps.Matching(deps, "github.com/jackc/pgx", "github.com/redis/go-redis", "github.com/chromedp"); len(bad) > 0 {
		t.Errorf("the embed example links %q", bad)
	}
}
