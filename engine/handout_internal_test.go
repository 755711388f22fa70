package engine

import (
	"bytes"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewID: IDs are in [1, MaxID], never repeat over two runs' worth of
// draws, and are spread over the whole range (not a counter): their top
// bits vary and consecutive IDs are far apart.
func TestNewID(t *testing.T) {
	const n = 10_000
	seen := make(map[uint64]bool, 2*n)
	var high, near int
	var prev uint64
	for run := range 2 {
		for range n {
			id := newID()
			if id == 0 || id > MaxID {
				t.Fatalf("ID %d outside [1, 2^53-1]", id)
			}
			if seen[id] {
				t.Fatalf("ID %d drawn twice (run %d)", id, run)
			}
			seen[id] = true
			if bits.Len64(id) == 53 {
				high++
			}
			if d := int64(id - prev); d > -1<<20 && d < 1<<20 {
				near++
			}
			prev = id
		}
	}
	// Half the IDs have the top bit set; a counter would have none.
	if high < 2*n*45/100 || high > 2*n*55/100 {
		t.Errorf("%d of %d IDs use all 53 bits, want about half", high, 2*n)
	}
	if near > 2 {
		t.Errorf("%d consecutive IDs within 2^20 of each other: sequential?", near)
	}
}

// TestNetworkSecretFile: without a configured secret_file the engine
// makes the data folder's network-secret (32 bytes, mode 0600) and reads
// the same one back; a configured secret wins; a short or empty file is an
// error that does not print the secret.
func TestNetworkSecretFile(t *testing.T) {
	spec := Spec{DataDir: t.TempDir()}
	var logs bytes.Buffer
	e := &Engine{spec: spec, log: slog.New(slog.NewTextHandler(&logs, nil))}
	first, err := e.networkSecret(NetworkSpec{Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(spec.DataDir, NetworkSecretFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != networkSecretLen || len(first) != networkSecretLen {
		t.Fatalf("secret file mode %v, %d bytes, secret of %d; want 0600, %d, %d", fi.Mode().Perm(), fi.Size(), len(first), networkSecretLen, networkSecretLen)
	}
	again, err := e.networkSecret(NetworkSpec{Enabled: true})
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("second read = %x, %v; want the first secret", again, err)
	}
	entries, _ := os.ReadDir(spec.DataDir)
	if len(entries) != 1 {
		t.Errorf("data folder holds %d files after making the secret, want 1 (no temporary left)", len(entries))
	}

	got, err := e.networkSecret(NetworkSpec{Enabled: true, Secret: []byte("a secret shared by the network")})
	if err != nil || string(got) != "a secret shared by the network" {
		t.Fatalf("configured secret = %q, %v", got, err)
	}
	if _, err := e.networkSecret(NetworkSpec{Enabled: true, Secret: []byte("tiny-secret")}); err == nil || strings.Contains(err.Error(), "tiny-secret") {
		t.Errorf("a short configured secret: %v, want an error without it", err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.networkSecret(NetworkSpec{Enabled: true}); err != nil || !bytes.Contains(logs.Bytes(), []byte("readable by other users")) {
		t.Errorf("a world-readable secret file: %v, logs %q; want a warning", err, logs.String())
	}

	for name, content := range map[string][]byte{"short": []byte("tiny-secret"), "empty": nil, "zero": make([]byte, 32)} {
		p := filepath.Join(t.TempDir(), NetworkSecretFile)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := loadOrCreateSecret(p); err == nil || (len(content) > 0 && bytes.Contains([]byte(err.Error()), content)) {
			t.Errorf("%s secret file: error %v, want one without the secret", name, err)
		}
	}
	if _, err := loadOrCreateSecret(filepath.Join(t.TempDir(), "missing", NetworkSecretFile)); err == nil {
		t.Error("a secret in a missing folder: no error")
	}
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = newID()
	}
}
