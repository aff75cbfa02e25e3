package serve

import (
	"net"
	"strings"
	"testing"
)

func TestExposureWarning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   net.Addr
		apiKey string
		warn   bool
	}{
		{"loopback", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000}, "", false},
		{"all interfaces", &net.TCPAddr{IP: net.IPv4zero, Port: 8000}, "", true},
		{"all interfaces v6", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8000}, "", true},
		{"a LAN address", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8000}, "", true},
		{"all interfaces with a key", &net.TCPAddr{IP: net.IPv4zero, Port: 8000}, "k", false},
	} {
		got := ExposureWarning(tc.addr, tc.apiKey)
		if (got != "") != tc.warn {
			t.Errorf("%s: warning %q, want one: %v", tc.name, got, tc.warn)
		}
		if tc.warn && (!strings.Contains(got, "--api-key") || !strings.Contains(got, tc.addr.String())) {
			t.Errorf("%s: warning %q should name the address and --api-key", tc.name, got)
		}
	}
}
