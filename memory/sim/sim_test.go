package sim

import (
	"context"
	"testing"
)

// TestLearning is the learning target at 75% unsafe: after the memory has
// seen the world, a delivery costs at most 1.1 checks, while blind
// rerolling costs about 1/(1-0.75) = 4.
func TestLearning(t *testing.T) {
	res, err := Run(context.Background(), Config{Radius: 80, Unsafe: 0.75, Claims: 0.05, Days: 24, PerHour: 60, Seed: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Days[0]
	if first.MemoryChecks < 1.5 {
		t.Errorf("day 1 memory checks = %.2f, want > 1.5 (nothing learned yet)", first.MemoryChecks)
	}
	if res.SteadyMemory > 1.1 {
		t.Errorf("steady-state memory checks per delivery = %.3f, want <= 1.1", res.SteadyMemory)
	}
	if res.SteadyBlind < 3.5 || res.SteadyBlind > 4.5 {
		t.Errorf("steady-state blind checks per delivery = %.3f, want about 4", res.SteadyBlind)
	}
	for _, d := range res.Days {
		if d.TrueUnsafe < 0.72 || d.TrueUnsafe > 0.78 {
			t.Errorf("day %d: true unsafe fraction %.3f, want about 0.75", d.Day, d.TrueUnsafe)
		}
		if d.Failures != 0 {
			t.Errorf("day %d: %d deliveries failed", d.Day, d.Failures)
		}
	}
}

// TestClaimsComeBack checks that places rejected for claims return: with
// claims living about a day and a one-day TTL, expired runs go on probation
// and some are restored by repeat rejections.
func TestClaimsComeBack(t *testing.T) {
	res, err := Run(context.Background(), Config{Radius: 48, Unsafe: 0.5, Claims: 0.3, ClaimLife: 24 * 3600e9, Days: 12, PerHour: 60, Seed: 5,
		TTL: func(c memoryCause, s string) durationT { return oneDay(c) }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var probation, restored int64
	for _, d := range res.Days {
		probation += int64(d.ProbationRuns)
		restored += d.Restored
	}
	if probation == 0 || restored == 0 {
		t.Fatalf("probation runs seen %d, restorations %d; want both > 0", probation, restored)
	}
}

func TestValidate(t *testing.T) {
	bad := Config{Radius: -1, Unsafe: 1.5, Days: -2}
	if err := bad.Validate(); err == nil {
		t.Fatal("Validate() = nil for a bad config")
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("Validate() of the defaults = %v", err)
	}
}
