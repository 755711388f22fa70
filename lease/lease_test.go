package lease

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCheckGrant(t *testing.T) {
	long := strings.Repeat("x", MaxNameLen+1)
	for _, c := range []struct {
		name  string
		token string
		l     Lease
		ttl   time.Duration
	}{
		{"empty token", "", Lease{}, time.Second},
		{"long token", strings.Repeat("t", MaxTokenLen+1), Lease{}, time.Second},
		{"long world", "t", Lease{World: long}, time.Second},
		{"long owner", "t", Lease{Owner: long}, time.Second},
		{"zero ttl", "t", Lease{}, 0},
		{"negative ttl", "t", Lease{}, -time.Second},
		{"sub-millisecond ttl", "t", Lease{}, time.Millisecond - 1},
		{"ttl past max", "t", Lease{}, MaxTTL + time.Millisecond},
	} {
		if _, err := CheckGrant(c.token, c.l, c.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: CheckGrant = %v, want ErrInvalid", c.name, err)
		}
	}
	ttl, err := CheckGrant(strings.Repeat("t", MaxTokenLen), Lease{World: long[1:], Owner: long[1:]}, 1500*time.Microsecond)
	if err != nil || ttl != time.Millisecond {
		t.Errorf("CheckGrant at the bounds = %v, %v; want 1ms, nil", ttl, err)
	}
	if ttl, err := CheckGrant("t", Lease{}, MaxTTL); err != nil || ttl != MaxTTL {
		t.Errorf("CheckGrant(MaxTTL) = %v, %v; want %v, nil", ttl, err, MaxTTL)
	}
}

func TestCheckOwner(t *testing.T) {
	if err := CheckOwner(""); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckOwner(\"\") = %v, want ErrInvalid", err)
	}
	if err := CheckOwner(strings.Repeat("o", MaxNameLen+1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("CheckOwner(long) = %v, want ErrInvalid", err)
	}
	if err := CheckOwner("node"); err != nil {
		t.Errorf("CheckOwner(node) = %v", err)
	}
}
