package hostname

import "testing"

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		h  string
		ok bool
	}{
		{"*", true},
		{"rtp.example.com", true},
		{"RTP.Example.COM.", true},
		{"::1", true},
		{"[fe80::1]", true},
		{"10.0.0.5", true},
		{"my_host-1", true},
		{"", false},
		{"rtp.example.com:8080", false},
		{"http://rtp.example.com", false},
		{"a/b", false},
		{"a b", false},
		{"*.example.com", false},
	} {
		if err := Check(tc.h); (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v, want ok %v", tc.h, err, tc.ok)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"RTP.example.com.", "rtp.example.com"},
		{"[::1]", "::1"},
		{"[0:0::1]", "::1"},
		{"::ffff:127.0.0.1", "127.0.0.1"},
		{"fe80::1%eth0", "fe80::1"},
	} {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		n  string
		ok bool
	}{
		{"localhost", true}, {"rtp.localhost", true}, {"127.0.0.2", true}, {"::1", true},
		{"localhost.evil.example", false}, {"10.0.0.1", false}, {"evil.example", false}, {"", false},
	} {
		if got := IsLoopback(tc.n); got != tc.ok {
			t.Errorf("IsLoopback(%q) = %v, want %v", tc.n, got, tc.ok)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"*", "a.b", "[::1]", "x:1", "", "http://a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if Check(h) == nil && h != "*" {
			n := Normalize(h)
			if n == "" {
				t.Fatalf("Check(%q) accepted an empty host", h)
			}
		}
	})
}
