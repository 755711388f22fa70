// Package hostname checks and normalises the host names and IP addresses
// an operator lists as the Host headers a server answers. The server's
// guard and the configuration's validation share it, so a list that
// `rtp config check` accepts is one the server accepts at start.
package hostname

import (
	"fmt"
	"net/netip"
	"strings"
)

// Normalize returns h (a host without a port) in the form requests are
// compared in: lower case, no brackets round an IPv6 address, no trailing
// dot, an IP address in its canonical form without a zone.
func Normalize(h string) string {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return h
}

// Check reports whether h can be listed: "*" (any host), an IP address,
// or a name of letters, digits, hyphens, underscores and dots, without a
// port, scheme or path. The error quotes h and says what is wanted.
func Check(h string) error {
	if h == "*" {
		return nil
	}
	n := Normalize(h)
	if _, err := netip.ParseAddr(n); err == nil {
		return nil
	}
	if n == "" || strings.IndexFunc(n, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.')
	}) >= 0 {
		return fmt.Errorf("%q is not a host name or an IP address (give it without a scheme, port or path)", h)
	}
	return nil
}

// IsLoopback reports whether the normalised host n names this machine:
// localhost, a name under .localhost, or a loopback IP address.
func IsLoopback(n string) bool {
	if n == "localhost" || strings.HasSuffix(n, ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(n)
	return err == nil && a.IsLoopback()
}
