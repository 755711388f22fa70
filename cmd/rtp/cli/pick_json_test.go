package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/rtpengine/rtp/api"
	"github.com/rtpengine/rtp/engine"
)

// TestPickJSON pins what rtp pick --json prints: an array of the HTTP
// API's teleport shape, the wait in float milliseconds under waitedMs
// (never nanoseconds under waited).
func TestPickJSON(t *testing.T) {
	locs := []engine.Location{{ID: 3, Region: "default", World: "world", X: -12, Y: 70, Z: 40, StandY: 69.5,
		Biome: "minecraft:plains", Sink: "general", Waited: 1350985803 * time.Nanosecond}}
	var buf bytes.Buffer
	if err := printPicks(&buf, locs, true); err != nil {
		t.Fatal(err)
	}
	const want = `[
  {
    "id": 3,
    "region": "default",
    "world": "world",
    "x": -12,
    "y": 70,
    "z": 40,
    "standY": 69.5,
    "biome": "minecraft:plains",
    "sink": "general",
    "waitedMs": 1350.985803
  }
]
`
	if buf.String() != want {
		t.Fatalf("pick --json printed\n%s\nwant\n%s", buf.String(), want)
	}
	var back []api.Teleport
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil || len(back) != 1 || back[0].Waited() != locs[0].Waited {
		t.Fatalf("pick --json does not read back as api.Teleport: %+v, %v", back, err)
	}

	buf.Reset()
	if err := printPicks(&buf, nil, true); err != nil || buf.String() != "[]\n" {
		t.Errorf("pick --json of no location = %q, %v; want []", buf.String(), err)
	}
	buf.Reset()
	if err := printPicks(&buf, locs, false); err != nil || buf.String() != "world -12 70 40\n" {
		t.Errorf("pick text = %q, %v", buf.String(), err)
	}
}
