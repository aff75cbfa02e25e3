package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseBackend streams three data chunks and [DONE], each flushed.
func sseBackend(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"backend\":%q,\"chunk\":%d}\n\n", name, i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
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

// A killed backend fails the request routed to it with a 502 naming it,
// then stays out of the rotation for Proxy.Ejection while the rest route;
// after that it is tried again. Under least-loaded, a dead backend (always
// idle) would otherwise draw nearly every request.
func TestProxyRoutesAroundAKilledBackend(t *testing.T) {
	for _, policy := range []ProxyPolicy{ProxyRoundRobin, ProxyLeastLoaded} {
		t.Run(string(policy), func(t *testing.T) {
			var backends []*httptest.Server
			var urls []string
			for i := range 3 {
				b := sseBackend(fmt.Sprint("b", i))
				defer b.Close()
				backends = append(backends, b)
				urls = append(urls, b.URL)
			}
			// Backend 0 is the one least-loaded picks first among idle ones.
			dead := 0
			if policy == ProxyRoundRobin {
				dead = 1
			}
			backends[dead].Close()
			p, err := NewProxy(urls, policy)
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Unix(1000, 0)
			p.now = func() time.Time { return clock }
			front := newTestProxyWith(t, p)
			client := &http.Client{Transport: &http.Transport{}}
			defer client.CloseIdleConnections()
			var failedAt []int
			for i := range 12 {
				if i == 8 {
					clock = clock.Add(p.Ejection) // the ejection ends
				}
				resp, body := post(t, client, front.URL)
				from := resp.Header.Get(BackendHeader)
				if resp.StatusCode == http.StatusBadGateway {
					var e struct{ Error struct{ Message string } }
					if from != urls[dead] || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error.Message, urls[dead]) {
						t.Errorf("request %d: 502 from %s: %s", i, from, body)
					}
					failedAt = append(failedAt, i)
					continue
				}
				n := slices.Index(urls, from)
				want := fmt.Sprintf(`"backend":"b%d"`, n)
				if resp.StatusCode != http.StatusOK || n == dead || strings.Count(body, want) != 3 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
					t.Errorf("request %d from %s: %d %q", i, from, resp.StatusCode, body)
				}
			}
			if len(failedAt) != 2 || failedAt[0] > 1 || failedAt[1] < 8 {
				t.Errorf("failed requests %v: want one before the ejection and one after it ends", failedAt)
			}
		})
	}
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
