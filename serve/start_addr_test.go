package serve

import (
	"net"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 1, 2, 3), Port: 8000}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8000}, true},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8000}, false},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8000}, false},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 5), Port: 8000}, false},
		{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, false},
	} {
		if got := IsLoopback(tc.addr); got != tc.want {
			t.Errorf("IsLoopback(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	r := startServer(t, testConfig(t))
	if !IsLoopback(r.Addr()) {
		t.Errorf("a server started on 127.0.0.1 listens on %v, which is not loopback", r.Addr())
	}
}
