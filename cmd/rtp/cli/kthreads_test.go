package cli

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseKernelThread(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		want   threadTime
		kernel bool
		err    string
	}{
		{"kdamond", "83 (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 5 812 0 0 20 0 1 0 45 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
			threadTime{"kdamond.0", 8170 * time.Millisecond}, true, ""},
		{"user process", "18915 (rtp) S 1 18915 1 0 -1 4194560 49493 0 0 0 400 185 0 0 20 0 9 0 100 0 0\n",
			threadTime{}, false, ""},
		{"name with spaces and parens", "9531 (kworker/1:1-(a) b) I 2 0 0 0 -1 69238880 0 0 0 0 7 3 0 0 20\n",
			threadTime{"kworker/1:1-(a) b", 100 * time.Millisecond}, true, ""},
		{"no name", "83 kdamond S 2\n", threadTime{}, false, "no (name)"},
		{"short", "83 (k) S 2 0 0 0 -1 2129984 0\n", threadTime{}, false, "fields after the name"},
		{"bad flags", "83 (k) S 2 0 0 0 -1 x 0 0 0 0 5 8 0\n", threadTime{}, false, "flags"},
		{"bad time", "83 (k) S 2 0 0 0 -1 2129984 0 0 0 0 5 -8 0\n", threadTime{}, false, "time"},
		{"huge time", "83 (k) S 2 0 0 0 -1 2129984 0 0 0 0 5 9223372036854775807 0\n", threadTime{}, false, "out of range"},
	} {
		got, kernel, err := parseKernelThread([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: parseKernelThread = %v, %v, %v; want an error with %q", tc.name, got, kernel, err, tc.err)
			}
			continue
		}
		if err != nil || kernel != tc.kernel || got != tc.want {
			t.Errorf("%s: parseKernelThread = %v, %v, %v; want %v, %v", tc.name, got, kernel, err, tc.want, tc.kernel)
		}
	}
}

func FuzzParseKernelThread(f *testing.F) {
	f.Add([]byte("83 (kdamond.0) S 2 0 0 0 -1 2129984 0 0 0 0 5 812 0 0\n"))
	f.Add([]byte("1 ((sd-pam)) S 0 0 0 0 -1 4194560 0 0 0 0 1 2 3\n"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, kernel, err := parseKernelThread(data)
		if err != nil && kernel {
			t.Fatalf("parseKernelThread(%q) reported a kernel thread with an error", data)
		}
		if got.cpu < 0 {
			t.Fatalf("parseKernelThread(%q) = %v, negative time", data, got.cpu)
		}
	})
}

func TestKernelDelta(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	before := map[int]threadTime{
		83:  {"kdamond.0", ms(1000)},
		60:  {"kworker/1:1H", ms(50)},
		70:  {"ksoftirqd/0", ms(300)},
		200: {"kworker/u8:2-events", ms(900)},
	}
	after := map[int]threadTime{
		83:  {"kdamond.0", ms(1120)},             // +120
		60:  {"kworker/1:1H", ms(50)},            // idle
		200: {"kworker/u8:2-writeback", ms(930)}, // renamed, +30
		90:  {"kworker/0:3", ms(40)},             // new: from zero
		// 70 ended: left out
	}
	u := kernelDelta(before, after)
	if u.total != ms(190) || u.busiest != "kdamond.0" || u.busiestTime != ms(120) {
		t.Errorf("kernelDelta = %+v, want 190ms in all, kdamond.0 busiest with 120ms", u)
	}
	// An id reused by a thread with less time counts from zero.
	u = kernelDelta(map[int]threadTime{5: {"old", ms(500)}}, map[int]threadTime{5: {"new", ms(20)}})
	if u.total != ms(20) || u.busiest != "new" {
		t.Errorf("kernelDelta over a reused id = %+v, want 20ms by new", u)
	}
	if u := kernelDelta(before, before); u.total != 0 || u.busiest != "" {
		t.Errorf("kernelDelta of a reading with itself = %+v, want nothing", u)
	}
}

// TestKernelMeter: on Linux the meter reads /proc and never goes
// backwards; elsewhere it says it does not know.
func TestKernelMeter(t *testing.T) {
	u, ok := kernelMeter()()
	if runtime.GOOS != "linux" {
		if ok {
			t.Errorf("kernelMeter on %s = %+v, true; want unknown", runtime.GOOS, u)
		}
		return
	}
	if _, err := readKernelThreads(); err != nil {
		t.Skipf("this Linux has no readable /proc: %v", err)
	}
	if !ok || u.total < 0 || u.busiestTime > u.total {
		t.Errorf("kernelMeter = %+v, %v; want a known, consistent reading", u, ok)
	}
}

func TestPrintBenchKernel(t *testing.T) {
	var b bytes.Buffer
	if err := printBench(&b, benchReport{Rate: &benchRate{ElapsedMs: 10000, KernelMs: new(130.0), KernelBusiest: "kdamond.0", KernelBusiestMs: new(120.0)}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "kernel threads:") || !strings.Contains(b.String(), "130ms of processor time during the run (busiest: kdamond.0, 120ms)") {
		t.Errorf("printBench = %q, want the kernel threads' line", b.String())
	}
	b.Reset()
	if err := printBench(&b, benchReport{Rate: &benchRate{ElapsedMs: 10000}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "kernel threads") {
		t.Errorf("printBench without a reading = %q, want no kernel threads' line", b.String())
	}
}
