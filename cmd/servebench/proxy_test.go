package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestProxyFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--port", "0"}, "--backend"},
		{[]string{"proxy", "--port", "0", "--backend", "127.0.0.1:8001"}, "--backend"},
		{[]string{"proxy", "--port", "0", "--backend", "http://127.0.0.1:8001", "--policy", "fastest"}, "--policy"},
		{[]string{"proxy", "--port", "70000", "--backend", "http://127.0.0.1:8001"}, "--port"},
	} {
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one naming %s", tt.args, err, tt.want)
		}
	}
}

// The command listens, routes round-robin with the backend named in a
// header, and stops on cancellation (as on SIGINT).
func TestProxyCommand(t *testing.T) {
	var urls []string
	for i := range 2 {
		b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "backend %d", i) }))
		defer b.Close()
		urls = append(urls, b.URL)
	}
	base, _, stop := startCommand(t, `on (http://127\.0\.0\.1:\d+)`, "proxy", "--port", "0", "--backend", urls[0]+","+urls[1])
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for i := range 4 {
		resp, err := c.Post(base+"/v1/completions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != fmt.Sprintf("backend %d", i%2) || resp.Header.Get("X-Servebench-Backend") != urls[i%2] {
			t.Errorf("request %d: %s from %s", i, body, resp.Header.Get("X-Servebench-Backend"))
		}
	}
	stop()
}

// startCommand runs a listening command (serve, proxy) in a goroutine,
// waits until it prints the URL it listens on (listenRE's first group),
// and returns the URL, its stderr, and stop, which cancels it as SIGINT
// does and checks that it returns cleanly.
func startCommand(t *testing.T, listenRE string, args ...string) (string, *syncBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stderr := &syncBuffer{}
	root := newRootCmd()
	root.SetOut(io.Discard)
	root.SetErr(stderr)
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	re := regexp.MustCompile(listenRE)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("%s exited: %v\n%s", args[0], err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line on stderr:\n%s", stderr.String())
		}
	}
	stop := func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s returned %v after cancellation", args[0], err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not stop after cancellation", args[0])
		}
	}
	return base, stderr, stop
}
