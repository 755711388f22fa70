package flyingsquid_test

import (
	"os/exec"
	"testing"
)

// TestPluginUnit runs the plugin's own unit tests (test/unit, node --test):
// its configuration, its client's errors, retries and timeouts, and the
// batching of changed chunks. They need Node.js only, not node_modules.
func TestPluginUnit(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the plugin's unit tests need Node.js 18+ (.ci/run installs it)")
	}
	out, err := exec.Command(node, "--test", "test/unit").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/unit: %v\n%s", err, out)
	}
}
