package verify_test

import (
	"bytes"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/rtpengine/rtp/ttl"
	"github.com/rtpengine/rtp/verify"
)

// A source name is accepted by Register exactly when ttl.yml accepts it
// as a verifier name, so every verifier can be configured.
func TestSourceNamesMatchTTL(t *testing.T) {
	names := []string{
		"GriefPreventionChecker", "com.example.claims.ClaimChecker", "http:callback", "ünïcødé", "😀",
		"", "Grief Prevention", "a\tb", "a\u00a0b", "a\u2003b", "a\x01", "a\u200bb", "a\u00ad", "\ufeffA",
		"123", "true", "~", "-1", "#x", "*alias",
	}
	for _, name := range names {
		var r verify.Registry
		regErr := r.Register(name, func(verify.Location) bool { return true })

		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		if err := enc.Encode(map[string]map[string]string{"verifiers": {name: "1d"}}); err != nil {
			t.Fatalf("encoding %q: %v", name, err)
		}
		p, loadErr := ttl.Load(&buf)
		if (regErr == nil) != (loadErr == nil) {
			t.Errorf("name %q: Register error %v, ttl.Load error %v; want both or neither", name, regErr, loadErr)
			continue
		}
		if loadErr == nil {
			if d, ok := p.Verifier(name); !ok || d != ttl.Duration(24*60*60*1e9) {
				t.Errorf("name %q: ttl Verifier = %v, %v, want 1d", name, d, ok)
			}
		}
	}
}
