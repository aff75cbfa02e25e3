package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// included, streams back chunk by chunk as the backend writes it. A
// backend that cannot be reached fails that request with 502 and an
// OpenAI-style error naming the backend; the others keep serving.
type Proxy struct {
	policy    ProxyPolicy
	backends  []*proxyBackend
	transport *http.Transport
	// Ejection is how long a backend that failed a request is left out of
	// the rotation (passive health checking, like Envoy's outlier
	// ejection); without it least-loaded sends nearly everything to a dead
	// backend, whose requests fail fastest (measured: 272 of 300 failed
	// with one of three backends down). When every backend is ejected, all
	// are tried. Set before serving.
	Ejection time.Duration
	now      func() time.Time

	mu   sync.Mutex
	next int
}

type proxyBackend struct {
	url       *url.URL
	rp        *httputil.ReverseProxy
	inFlight  int       // guarded by Proxy.mu
	downUntil time.Time // guarded by Proxy.mu
}

// DefaultProxyEjection is Proxy.Ejection's default.
const DefaultProxyEjection = 5 * time.Second

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
	p := &Proxy{policy: policy, transport: tr, Ejection: DefaultProxyEjection, now: time.Now}
	for _, raw := range backends {
		u, err := url.Parse(strings.TrimRight(raw, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy backend %q: give an absolute http(s) URL such as http://127.0.0.1:8001", raw)
		}
		b := &proxyBackend{url: u}
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
				if r.Context().Err() == nil { // the backend failed, not the client
					p.eject(b)
				}
				writeProxyError(w, http.StatusBadGateway, fmt.Sprintf("backend %s failed: %v", u, err))
			},
		}
		p.backends = append(p.backends, b)
	}
	return p, nil
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
	// "unexpected EOF" in 3 of 3 runs of 300 prompts, none after).
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProxyBodyBytes))
	if err != nil {
		writeProxyError(w, http.StatusBadRequest, fmt.Sprintf("reading the request body: %v (the proxy takes at most %d MiB)", err, maxProxyBodyBytes>>20))
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	b := p.acquire()
	defer p.release(b)
	w.Header().Set(BackendHeader, b.url.String())
	b.rp.ServeHTTP(w, r)
}

func (p *Proxy) acquire() *proxyBackend {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	up := func(b *proxyBackend) bool { return !now.Before(b.downUntil) }
	if !slices.ContainsFunc(p.backends, up) {
		up = func(*proxyBackend) bool { return true }
	}
	var b *proxyBackend
	switch p.policy {
	case ProxyLeastLoaded:
		for _, c := range p.backends {
			if up(c) && (b == nil || c.inFlight < b.inFlight) {
				b = c
			}
		}
	default:
		for b == nil || !up(b) {
			b = p.backends[p.next%len(p.backends)]
			p.next++
		}
	}
	b.inFlight++
	return b
}

func (p *Proxy) eject(b *proxyBackend) {
	p.mu.Lock()
	b.downUntil = p.now().Add(p.Ejection)
	p.mu.Unlock()
}

func (p *Proxy) release(b *proxyBackend) {
	p.mu.Lock()
	b.inFlight--
	p.mu.Unlock()
}

// Close drops the proxy's idle backend connections.
func (p *Proxy) Close() { p.transport.CloseIdleConnections() }

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
