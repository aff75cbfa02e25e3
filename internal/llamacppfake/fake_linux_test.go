package llamacppfake

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestNagleStallsKeptAliveConnections is the fake's proof: with Nagle on
// and headers and body written apart, a plain Go client on a kept-alive
// connection waits for Linux's delayed ACK (never less than 40 ms) on
// every call after the first, and a fresh connection per call does not;
// with Nagle off neither waits. Only the lower bound is asserted for the
// stall, so a busy machine cannot make it pass or fail by chance.
func TestNagleStallsKeptAliveConnections(t *testing.T) {
	const delayedACK = 40 * time.Millisecond
	for _, tc := range []struct {
		name      string
		nagle     bool
		keepAlive bool
		wantStall bool
	}{
		{"Nagle, kept alive", true, true, true},
		{"Nagle, fresh connections", true, false, false},
		{"no Nagle, kept alive", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start(Options{Nagle: tc.nagle})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: !tc.keepAlive}}
			const calls = 10
			fast := 0
			for i := range calls {
				start := time.Now()
				resp, err := client.Post(srv.URL+"/tokenize", "application/json", strings.NewReader(`{"content":"Hello"}`))
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if tc.wantStall && i > 0 && took < delayedACK {
					t.Fatalf("call %d took %v on a kept-alive connection with Nagle on: no delayed-ACK stall", i, took)
				}
				if took < delayedACK/4 {
					fast++
				}
			}
			if !tc.wantStall && fast < calls/2 {
				t.Errorf("only %d of %d calls took under %v: the fake stalls where it should not", fast, calls, delayedACK/4)
			}
			if want := map[bool]int{true: 1, false: calls}[tc.keepAlive]; srv.Connections() != want {
				t.Errorf("%d connections, want %d", srv.Connections(), want)
			}
		})
	}
}
