package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestDialInMemory: a client in the same process streams completions over
// in-memory connections, several at once and kept alive between requests,
// exactly as over TCP; once the server is closed a dial fails instead of
// waiting, and Close waits for the in-memory serving to end.
func TestDialInMemory(t *testing.T) {
	cfg := testConfig(t)
	r, err := Start(context.Background(), cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dials := 0
	var mu sync.Mutex
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return r.DialInMemory(ctx)
	}}}
	const requests = 12
	var wg sync.WaitGroup
	bodies := make([]string, requests)
	errs := make([]error, requests)
	for i := range requests {
		wg.Go(func() {
			resp, err := client.Post(r.URL()+"/v1/completions", "application/json",
				strings.NewReader(`{"prompt":[1,2,3,4],"max_tokens":5,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true}}`))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			bodies[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	for i := range requests {
		// Tokens of steps shorter than a handler's turn merge into one
		// chunk, over TCP too; usage counts them all.
		if errs[i] != nil || !strings.Contains(bodies[i], `"text"`) || !strings.HasSuffix(bodies[i], "data: [DONE]\n\n") || !strings.Contains(bodies[i], `"completion_tokens":5`) {
			t.Fatalf("request %d: %v\n%s", i, errs[i], bodies[i])
		}
	}
	// A second round reuses the kept-alive in-memory connections.
	resp, err := client.Get(r.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	if dials > requests {
		t.Errorf("%d dials for %d concurrent requests and one more: kept-alive connections were not reused", dials, requests)
	}
	mu.Unlock()
	client.CloseIdleConnections()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DialInMemory(context.Background()); !errors.Is(err, errServerClosed) {
		t.Errorf("DialInMemory after Close = %v, want the server-closed error", err)
	}
}
