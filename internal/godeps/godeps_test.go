package godeps

import (
	"slices"
	"testing"
)

func TestMatching(t *testing.T) {
	deps := []string{"fmt", "github.com/jackc/pgx/v5", "github.com/jackc/pgxpool", "github.com/redis/go-redis/v9/internal", "github.com/redis/go-redisx"}
	got := Matching(deps, "github.com/jackc/pgx", "github.com/redis/go-redis")
	want := []string{"github.com/jackc/pgx/v5", "github.com/redis/go-redis/v9/internal"}
	if !slices.Equal(got, want) {
		t.Errorf("Matching(%q) = %q, want %q (a path under a root, not one sharing its prefix)", deps, got, want)
	}
}

// TestOf lists this package's own dependencies.
func TestOf(t *testing.T) {
	deps := Of(t, ".")
	for _, want := range []string{"github.com/rtpengine/rtp/internal/godeps", "os/exec", "testing"} {
		if !slices.Contains(deps, want) {
			t.Errorf("Of(.) = %q, lacks %s", deps, want)
		}
	}
}
