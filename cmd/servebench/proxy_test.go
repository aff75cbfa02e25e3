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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr syncBuffer
	root := newRootCmd()
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	root.SetArgs([]string{"proxy", "--port", "0", "--backend", urls[0] + "," + urls[1]})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	base := waitForListening(t, &stderr, regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`), done)
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
	stopCommand(t, "proxy", cancel, done)
}

// waitForListening waits until a command started in a goroutine prints
// the URL it listens on (re's first group) and returns it.
func waitForListening(t *testing.T, stderr *syncBuffer, re *regexp.Regexp, done <-chan error) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("command exited: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line on stderr:\n%s", stderr.String())
		}
	}
}

// stopCommand cancels a command's context, as SIGINT does, and checks
// that it returns cleanly.
func stopCommand(t *testing.T, name string, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s returned %v after cancellation", name, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not stop after cancellation", name)
	}
}
