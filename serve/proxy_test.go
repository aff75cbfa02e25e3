package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// sseBackend streams three data chunks and [DONE], each flushed.
func sseBackend(name string) *httptest.Server { return httptest.NewServer(sseHandler(name)) }

func sseHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"backend\":%q,\"chunk\":%d}\n\n", name, i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}

func newTestProxy(t *testing.T, policy ProxyPolicy, backends ...string) *httptest.Server {
	t.Helper()
	p, err := NewProxy(backends, policy)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(func() { front.Close(); p.Close() })
	return front
}

func post(t *testing.T, client *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func newTestProxyWith(t *testing.T, p *Proxy) *httptest.Server {
	t.Helper()
	front := httptest.NewServer(p)
	t.Cleanup(func() { front.Close(); p.Close() })
	return front
}

// deadAddress is a loopback address nothing listens on: connecting to it
// is refused at once, as to a backend whose process died.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A backend that refuses connections (its process died) costs no request:
// each one it would have taken goes at once to another backend. It leaves
// the rotation, and comes back only after a health check succeeds.
func TestProxyRetriesARefusedConnectionAndChecksHealth(t *testing.T) {
	for _, policy := range []ProxyPolicy{ProxyRoundRobin, ProxyLeastLoaded} {
		t.Run(string(policy), func(t *testing.T) {
			live := []*httptest.Server{sseBackend("b0"), sseBackend("b2")}
			for _, b := range live {
				defer b.Close()
			}
			dead := deadAddress(t)
			// Least-loaded picks the first of idle backends, so the dead one
			// goes first there; round-robin reaches it second.
			deadAt := 1
			if policy == ProxyLeastLoaded {
				deadAt = 0
			}
			urls := []string{live[0].URL, live[1].URL}
			urls = slices.Insert(urls, deadAt, "http://"+dead)
			p, err := NewProxy(urls, policy)
			if err != nil {
				t.Fatal(err)
			}
			p.HealthInterval = 20 * time.Millisecond
			var probes atomic.Int32
			healthy := make(chan struct{})
			p.probe = func(ctx context.Context, base *url.URL) bool {
				probes.Add(1)
				select {
				case <-healthy:
					return p.httpProbe(ctx, base)
				default:
					return false
				}
			}
			front := newTestProxyWith(t, p)
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			for i := range 12 {
				resp, body := post(t, client, front.URL)
				if from := resp.Header.Get(BackendHeader); resp.StatusCode != http.StatusOK || from == urls[deadAt] || !strings.HasSuffix(body, "data: [DONE]\n\n") {
					t.Fatalf("request %d: %d from %s: %q", i, resp.StatusCode, from, body)
				}
			}
			// Failing checks keep it out however long it has been out.
			for probes.Load() < 3 {
				time.Sleep(5 * time.Millisecond)
			}
			if !isDown(p, deadAt) {
				t.Fatal("the dead backend came back without a successful health check")
			}
			// The backend restarts on its address; the next check brings it back.
			revived := &httptest.Server{Listener: listenOn(t, dead), Config: &http.Server{Handler: sseHandler("b1")}}
			revived.Start()
			defer revived.Close()
			close(healthy)
			deadline := time.Now().Add(10 * time.Second) // a guard against hanging, not a timing assertion
			for isDown(p, deadAt) {
				if time.Now().After(deadline) {
					t.Fatal("the revived backend did not come back after its health check succeeded")
				}
				time.Sleep(5 * time.Millisecond)
			}
			served := map[string]int{}
			for range 6 {
				resp, _ := post(t, client, front.URL)
				served[resp.Header.Get(BackendHeader)]++
			}
			if want := map[ProxyPolicy]int{ProxyRoundRobin: 2, ProxyLeastLoaded: 6}[policy]; served[urls[deadAt]] != want {
				t.Errorf("after it came back the revived backend served %d of 6 requests, want %d (%v)", served[urls[deadAt]], want, served)
			}
		})
	}
}

func isDown(p *Proxy, i int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.backends[i].down
}

func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("reopening %s: %v", addr, err)
	}
	return ln
}

// When every backend refuses, the client gets one 502 naming each.
func TestProxyAllBackendsRefuse(t *testing.T) {
	dead := []string{"http://" + deadAddress(t), "http://" + deadAddress(t)}
	front := newTestProxy(t, ProxyRoundRobin, dead...)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, body := post(t, client, front.URL)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, dead[0]) || !strings.Contains(body, dead[1]) || !strings.Contains(body, "every backend refused") {
		t.Errorf("%d %s: want a 502 naming both backends", resp.StatusCode, body)
	}
}

// A backend that fails after the request reached it may have run it, so
// the request is not sent again: the client gets a 502 naming the backend,
// which leaves the rotation while the others serve.
func TestProxyDoesNotResendAfterTheBackendGotTheRequest(t *testing.T) {
	var hits atomic.Int32
	dropping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the connection dies with the request read
		}
	}))
	defer dropping.Close()
	good := sseBackend("good")
	defer good.Close()
	p, err := NewProxy([]string{dropping.URL, good.URL}, ProxyRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	p.probe = func(context.Context, *url.URL) bool { return false }
	front := newTestProxyWith(t, p)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, body := post(t, client, front.URL)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, dropping.URL) || hits.Load() != 1 {
		t.Fatalf("%d %s after %d hits: want one 502 naming %s", resp.StatusCode, body, hits.Load(), dropping.URL)
	}
	for i := range 4 {
		if resp, _ := post(t, client, front.URL); resp.Header.Get(BackendHeader) != good.URL {
			t.Errorf("request %d went to %s while %s is out", i, resp.Header.Get(BackendHeader), dropping.URL)
		}
	}
}

// The health checker waits HealthInterval between checks and stops once
// one succeeds (or when the proxy closes): no timer alone returns a backend.
func TestProxyHealthCheckCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := NewProxy([]string{"http://127.0.0.1:1"}, ProxyRoundRobin)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.HealthInterval = time.Second
		var at []time.Duration
		start := time.Now()
		p.probe = func(context.Context, *url.URL) bool {
			at = append(at, time.Since(start))
			return len(at) == 4
		}
		p.eject(p.backends[0])
		time.Sleep(time.Hour)
		synctest.Wait()
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 4 * time.Second}; !slices.Equal(at, want) || isDown(p, 0) {
			t.Errorf("checks at %v, down %v: want checks at %v and the backend back", at, isDown(p, 0), want)
		}
	})
}

// The first chunk reaches the client while the backend still holds the
// second: the proxy passes the stream through instead of buffering it.
func TestProxyStreamsChunksAsWritten(t *testing.T) {
	release := make(chan struct{})
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
		fmt.Fprint(w, "data: second\n\n")
	}))
	defer backend.Close()
	defer close(release)
	front := newTestProxy(t, ProxyRoundRobin, backend.URL)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(front.URL+"/v1/completions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(resp.Body).ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if l != "data: first\n" {
			t.Fatalf("first line %q", l)
		}
	case <-time.After(10 * time.Second): // a guard against hanging, not a timing assertion
		t.Fatal("the first chunk did not arrive while the backend held the second: the proxy buffers")
	}
}

// least-loaded sends the next request away from a backend that is busy.
func TestProxyLeastLoaded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	}))
	defer busy.Close()
	idle := sseBackend("idle")
	defer idle.Close()
	front := newTestProxy(t, ProxyLeastLoaded, busy.URL, idle.URL)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	first := make(chan string, 1)
	go func() {
		resp, err := client.Post(front.URL+"/v1/completions", "application/json", strings.NewReader(`{}`))
		if err != nil {
			first <- err.Error()
			return
		}
		resp.Body.Close()
		first <- resp.Header.Get(BackendHeader)
	}()
	<-entered
	for range 3 {
		resp, _ := post(t, client, front.URL)
		if got := resp.Header.Get(BackendHeader); got != idle.URL {
			t.Errorf("with %s busy, request went to %s", busy.URL, got)
		}
	}
	close(release)
	if got := <-first; got != busy.URL {
		t.Errorf("first request went to %s, want %s", got, busy.URL)
	}
}

func TestNewProxyErrors(t *testing.T) {
	for _, tt := range []struct {
		backends []string
		policy   ProxyPolicy
	}{
		{nil, ProxyRoundRobin},
		{[]string{"127.0.0.1:8001"}, ProxyRoundRobin},
		{[]string{"ftp://127.0.0.1:8001"}, ProxyRoundRobin},
		{[]string{"http://127.0.0.1:8001"}, "fastest"},
	} {
		if _, err := NewProxy(tt.backends, tt.policy); err == nil {
			t.Errorf("%v %s: accepted", tt.backends, tt.policy)
		}
	}
}

// Many /tokenize and /detokenize calls through the proxy to a real serve
// backend all come back whole, as bench's tokenizer makes them.
func TestProxyTokenizeRoundTrips(t *testing.T) {
	backend := startServer(t, testConfig(t))
	front := newTestProxy(t, ProxyLeastLoaded, backend.URL())
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = fmt.Sprint(1000 + i)
	}
	body := `{"tokens":[` + strings.Join(ids, ",") + `]}`
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for i := range 25 {
				resp, err := client.Post(front.URL+"/detokenize", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(got), `{"prompt":`) {
					t.Errorf("client %d request %d: %d %v %.80s", c, i, resp.StatusCode, err, got)
					return
				}
			}
		})
	}
	wg.Wait()
}
