package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rtpengine/rtp/verify/claims"
)

// memClaims is a ClaimStore in memory, without Len.
type memClaims struct {
	mu   sync.Mutex
	list []claims.Claim
}

func (m *memClaims) List(_ context.Context, world string) ([]claims.Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []claims.Claim
	for _, c := range m.list {
		if c.World == world {
			out = append(out, c)
		}
	}
	return out, nil
}

func (m *memClaims) Add(_ context.Context, c claims.Claim) (claims.Claim, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.Owner == "refused" {
		return claims.Claim{}, fmt.Errorf("mem claims: owner %q: %w", c.Owner, claims.ErrInvalidClaim)
	}
	c.ID = int64(len(m.list) + 1)
	m.list = append(m.list, c)
	return c, nil
}

func (m *memClaims) Remove(_ context.Context, id int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.list {
		if c.ID == id {
			m.list = append(m.list[:i], m.list[i+1:]...)
			return true, nil
		}
	}
	return false, nil
}

// noClaimsEngine is an engine without a claims store of its own.
type noClaimsEngine struct{ Engine }

// TestClaimStoreOption checks that the claims routes use Options.Claims
// over the engine's store, and that New refuses an engine without one
// when none is given.
func TestClaimStoreOption(t *testing.T) {
	f := newFake(t)
	if _, err := New(noClaimsEngine{f}, Options{Logger: quietLogger()}); err == nil || !strings.HasPrefix(err.Error(), "server: ") {
		t.Fatalf("New without a claims store = %v, want a server: error", err)
	}
	mem := &memClaims{}
	s, err := New(noClaimsEngine{f}, Options{Logger: quietLogger(), Claims: mem})
	if err != nil {
		t.Fatal(err)
	}
	h := specChecked(t, s.Handler())
	a := do(t, h, "POST", "/v1/worlds/w/claims", `{"owner":"o","minX":0,"minZ":0,"maxX":1,"maxZ":1}`)
	if a.status != 201 || len(mem.list) != 1 {
		t.Fatalf("add claim = %d %s; store %v", a.status, a.body, mem.list)
	}
	if a := do(t, h, "POST", "/v1/worlds/w/claims", `{"owner":"refused","minX":0,"minZ":0,"maxX":1,"maxZ":1}`); a.status != 400 || a.errCode() != "invalid" {
		t.Errorf("invalid claim = %d %s, want 400 invalid", a.status, a.body)
	}
	if a := do(t, h, "GET", "/v1/worlds/w/claims", ""); a.status != 200 || !strings.Contains(string(a.body), `"owner":"o"`) {
		t.Errorf("list claims = %d %s", a.status, a.body)
	}
	if a := do(t, h, "DELETE", "/v1/worlds/w/claims/1", ""); a.status != 204 || len(mem.list) != 0 {
		t.Errorf("remove claim = %d %s; store %v", a.status, a.body, mem.list)
	}
	// The fake's own store is untouched.
	if n := f.claims.Len(); n != 0 {
		t.Errorf("the engine's store holds %d claims, want 0", n)
	}
}
