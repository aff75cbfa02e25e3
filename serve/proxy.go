package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ProxyPolicy is how the proxy picks a backend for each request.
type ProxyPolicy string

const (
	// ProxyRoundRobin cycles through the backends in order.
	ProxyRoundRobin ProxyPolicy = "rr"
	// ProxyLeastLoaded picks the backend with the fewest requests in
	// flight through this proxy (the first one on a tie).
	ProxyLeastLoaded ProxyPolicy = "least-loaded"
)

// maxProxyBodyBytes bounds a request body the proxy buffers.
const maxProxyBodyBytes = 64 << 20

// BackendHeader names the backend that served (or failed) a response.
const BackendHeader = "X-Servebench-Backend"

// Proxy is a router in front of a co-located fleet of OpenAI-compatible
// servers: each request goes whole to one backend and its response, SSE
// included, streams back chunk by chunk as the backend writes it.
//
// A backend that refuses the connection has seen no byte of the request,
// so the request goes at once to another backend (each is tried once);
// only when every backend refuses does the client get a 502. A backend
// that fails after the request reached it fails that request with a 502
// naming it: the request may have run there, so it is not sent twice.
// Either way the backend leaves the rotation (passive health checking,
// like Envoy's outlier ejection; without it least-loaded sends nearly
// everything to a dead backend, whose requests fail fastest: measured,
// 272 of 300 failed with one of three backends down) and comes back once
// an active health check (GET /health, or /v1/models where a server has
// no /health) succeeds. When every backend is out, all are tried.
type Proxy struct {
	policy    ProxyPolicy
	backends  []*proxyBackend
	transport *http.Transport
	// HealthInterval is how often a backend out of the rotation is
	// checked. Set before serving.
	HealthInterval time.Duration
	// probe is the health check; tests replace it.
	probe func(ctx context.Context, base *url.URL) bool

	stop     context.CancelFunc
	stopping context.Context
	checkers sync.WaitGroup

	mu   sync.Mutex
	next int
}

type proxyBackend struct {
	index    int
	url      *url.URL
	rp       *httputil.ReverseProxy
	inFlight int  // guarded by Proxy.mu
	down     bool // guarded by Proxy.mu
	checking bool // a health checker runs for it; guarded by Proxy.mu
}

// DefaultProxyHealthInterval is Proxy.HealthInterval's default.
const DefaultProxyHealthInterval = time.Second

// refusal carries, through a request's context, the connection error of a
// backend that refused it, so ServeHTTP can try the next one.
type refusal struct{ err error }

type refusalKey struct{}

// NewProxy checks the backend URLs (absolute http or https) and the policy.
func NewProxy(backends []string, policy ProxyPolicy) (*Proxy, error) {
	if policy != ProxyRoundRobin && policy != ProxyLeastLoaded {
		return nil, fmt.Errorf("proxy policy %q: use %q or %q", policy, ProxyRoundRobin, ProxyLeastLoaded)
	}
	if len(backends) == 0 {
		return nil, errors.New("proxy: no backends; give at least one URL such as http://127.0.0.1:8001")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Responses stream through as they are; compressing would buffer them.
	tr.DisableCompression = true
	stopping, stop := context.WithCancel(context.Background())
	p := &Proxy{policy: policy, transport: tr, HealthInterval: DefaultProxyHealthInterval, stopping: stopping, stop: stop}
	p.probe = p.httpProbe
	for i, raw := range backends {
		u, err := url.Parse(strings.TrimRight(raw, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			stop()
			return nil, fmt.Errorf("proxy backend %q: give an absolute http(s) URL such as http://127.0.0.1:8001", raw)
		}
		b := &proxyBackend{index: i, url: u}
		b.rp = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = u.Host
			},
			Transport: tr,
			// Flush every write: SSE tokens must not wait in a buffer.
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if perr := prefillFailure(r.Context()); perr != nil {
					writeProxyError(w, http.StatusBadGateway, perr.Error())
					return
				}
				if r.Context().Err() != nil { // the client left, not the backend
					writeProxyError(w, http.StatusBadGateway, fmt.Sprintf("backend %s failed: %v", u, err))
					return
				}
				p.eject(b)
				if ref, ok := r.Context().Value(refusalKey{}).(*refusal); ok && connectionRefused(err) {
					ref.err = err // nothing was written: ServeHTTP tries another backend
					return
				}
				writeProxyError(w, http.StatusBadGateway, fmt.Sprintf("backend %s failed: %v", u, err))
			},
			ModifyResponse: func(*http.Response) error {
				p.markUp(b)
				return nil
			},
		}
		p.backends = append(p.backends, b)
	}
	return p, nil
}

// connectionRefused reports an error from dialing the backend: the request
// never left the proxy, so sending it elsewhere cannot run it twice.
func connectionRefused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// ServeHTTP routes one request. /health answers for the proxy itself.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		w.WriteHeader(http.StatusOK)
		return
	}
	// The body is read whole before it is forwarded. Streamed instead, a
	// backend that answers before the transport has sent the last body
	// bytes races the flush of its response headers to the client, after
	// which net/http may refuse further reads of the inbound body; the
	// failed body copy then makes the transport close the backend
	// connection mid-response and the client sees a truncated body
	// (measured: bench's /tokenize calls through the proxy failed with
	// "unexpected EOF" in 3 of 3 runs of 300 prompts, none after). Held
	// whole, it can also be sent again when a backend refuses it.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProxyBodyBytes))
	if err != nil {
		writeProxyError(w, http.StatusBadRequest, fmt.Sprintf("reading the request body: %v (the proxy takes at most %d MiB)", err, maxProxyBodyBytes>>20))
		return
	}
	tried := make([]bool, len(p.backends))
	var refusals []string
	for {
		b := p.acquire(tried)
		if b == nil {
			writeProxyError(w, http.StatusBadGateway, "every backend refused the connection: "+strings.Join(refusals, "; "))
			return
		}
		tried[b.index] = true
		ref := &refusal{}
		attempt := r.Clone(context.WithValue(r.Context(), refusalKey{}, ref))
		attempt.Body = io.NopCloser(bytes.NewReader(body))
		attempt.ContentLength = int64(len(body))
		// A kept-alive connection the backend closed is redialled by the
		// transport when it can send the body again.
		attempt.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		w.Header().Set(BackendHeader, b.url.String())
		b.rp.ServeHTTP(w, attempt)
		p.release(b)
		if ref.err == nil {
			return
		}
		refusals = append(refusals, fmt.Sprintf("%s: %v", b.url, ref.err))
	}
}

// acquire picks a backend not yet tried for this request (nil for every
// backend), preferring those in the rotation, and counts it in flight.
func (p *Proxy) acquire(tried []bool) *proxyBackend {
	p.mu.Lock()
	defer p.mu.Unlock()
	candidate := func(b *proxyBackend) bool { return !b.down && (tried == nil || !tried[b.index]) }
	if !slices.ContainsFunc(p.backends, candidate) {
		candidate = func(b *proxyBackend) bool { return tried == nil || !tried[b.index] }
		if !slices.ContainsFunc(p.backends, candidate) {
			return nil
		}
	}
	var b *proxyBackend
	switch p.policy {
	case ProxyLeastLoaded:
		for _, c := range p.backends {
			if candidate(c) && (b == nil || c.inFlight < b.inFlight) {
				b = c
			}
		}
	default:
		for b == nil || !candidate(b) {
			b = p.backends[p.next%len(p.backends)]
			p.next++
		}
	}
	b.inFlight++
	return b
}

// eject takes b out of the rotation until a health check succeeds.
func (p *Proxy) eject(b *proxyBackend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.down = true
	if b.checking || p.stopping.Err() != nil {
		return
	}
	b.checking = true
	p.checkers.Add(1)
	go p.checkUntilUp(b)
}

// markUp returns b to the rotation: it answered a request or a check.
func (p *Proxy) markUp(b *proxyBackend) {
	p.mu.Lock()
	b.down = false
	p.mu.Unlock()
}

func (p *Proxy) checkUntilUp(b *proxyBackend) {
	defer p.checkers.Done()
	defer func() {
		p.mu.Lock()
		b.checking = false
		p.mu.Unlock()
	}()
	timer := time.NewTimer(p.HealthInterval)
	defer timer.Stop()
	for {
		select {
		case <-p.stopping.Done():
			return
		case <-timer.C:
		}
		p.mu.Lock()
		down := b.down
		p.mu.Unlock()
		if !down {
			return // a request got through meanwhile
		}
		if p.probe(p.stopping, b.url) {
			p.markUp(b)
			return
		}
		timer.Reset(p.HealthInterval)
	}
}

// httpProbe is one health check: /health answering 2xx, or /v1/models for
// an OpenAI-compatible server that has no /health.
func (p *Proxy) httpProbe(ctx context.Context, base *url.URL) bool {
	ctx, cancel := context.WithTimeout(ctx, max(p.HealthInterval, 2*time.Second))
	defer cancel()
	client := &http.Client{Transport: p.transport}
	for _, path := range []string{"/health", "/v1/models"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+path, nil)
		if err != nil {
			return false
		}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return true
		case resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed:
			return false
		}
	}
	return false
}

func (p *Proxy) release(b *proxyBackend) {
	p.mu.Lock()
	b.inFlight--
	p.mu.Unlock()
}

// Close stops the health checks and drops idle backend connections.
func (p *Proxy) Close() {
	p.stop()
	p.checkers.Wait()
	p.transport.CloseIdleConnections()
}

// InFlight is the number of requests in flight per backend, in order.
func (p *Proxy) InFlight() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]int, len(p.backends))
	for i, b := range p.backends {
		out[i] = b.inFlight
	}
	return out
}

func writeProxyError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "BadGatewayError", "param": nil, "code": status,
	}})
}
