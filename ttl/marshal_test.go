package ttl

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// checkRoundTrip marshals p, loads the result, and checks it is equal and
// marshals to the same bytes.
func checkRoundTrip(t *testing.T, p *Policy) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatalf("Marshal() = %v", err)
	}
	back, err := Load(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("Load(Marshal()) = %v\n%s", err, b)
	}
	if !back.Equal(p) {
		t.Fatalf("Load(Marshal()) differs from the policy marshalled:\n%s", b)
	}
	again, err := back.Marshal()
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("Marshal is not stable: %v\n%s\nthen\n%s", err, b, again)
	}
	return b
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, text := range validFiles {
		checkRoundTrip(t, mustLoad(t, text))
	}
	checkRoundTrip(t, Default())
	checkRoundTrip(t, nil)
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		text, _, _ := randomPolicyFile(r)
		checkRoundTrip(t, mustLoad(t, text))
	}
}

// Names YAML would read as something else are quoted.
func TestMarshalQuotesNames(t *testing.T) {
	p := mustLoad(t, "verifiers:\n  \"123\": 1h\n  \"true\": 2h\n  \"a:b\": 3h\n  \"x#y\": 4h\n  \"-1\": 5h\n  \"*x\": 6h\n  \"~\": 7h\n  ? "+strings.Repeat("n", 1100)+"\n  : 8h\n")
	b := checkRoundTrip(t, p)
	if len(p.Verifiers()) != 8 {
		t.Fatalf("loaded %d verifiers, want 8:\n%s", len(p.Verifiers()), b)
	}
}

// Golden files: testdata/X.yml marshals to testdata/X.golden.yml.
// Regenerate with go test ./ttl -run TestMarshalGolden -update, then
// review the diff.
func TestMarshalGolden(t *testing.T) {
	for _, name := range []string{"seed", "full"} {
		t.Run(name, func(t *testing.T) {
			p, err := LoadFile(filepath.Join("testdata", name+".yml"))
			if err != nil {
				t.Fatal(err)
			}
			got := checkRoundTrip(t, p)
			golden := filepath.Join("testdata", name+".golden.yml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Marshal(%s) =\n%s\nwant (%s)\n%s", name, got, golden, want)
			}
		})
	}
}

func TestWriteToCount(t *testing.T) {
	p := mustLoad(t, "causes:\n  uniquePlacement: 2d\nverifiers:\n  A: 1h\n")
	var b bytes.Buffer
	n, err := p.WriteTo(&b)
	if err != nil || n != int64(b.Len()) || n == 0 {
		t.Errorf("WriteTo = %d, %v; wrote %d bytes", n, err, b.Len())
	}
	if _, err := p.WriteTo(failingWriter{}); err == nil || !strings.HasPrefix(err.Error(), "ttl: ") {
		t.Errorf("WriteTo(failing writer) error = %v, want a ttl error", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }
