package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// PDHandoff is when the P/D proxy sends a request to its decode instance.
type PDHandoff string

const (
	// PDSequential is vLLM V0's disagg proxy and the NIXL toy proxy: the
	// prefill request (max_tokens=1) is drained first.
	PDSequential PDHandoff = "sequential"
	// PDConcurrent is P2pNcclConnector's proxy: both leave at once and
	// the decode instance waits for the KV.
	PDConcurrent PDHandoff = "concurrent"
)

// PrefillBackendHeader names the prefill instance that computed a response's
// prompt (BackendHeader names the decode instance).
const PrefillBackendHeader = "X-Servebench-Prefill-Backend"

// PDProxy fronts prefill/decode disaggregated servers (serve with
// KVTransfer): each completion request goes to one prefill instance as a
// copy with max_tokens=1 and stream=false, and whole to one decode
// instance, both picked by the policy. The proxy names the KV with a fresh
// id in KVRequestHeader on both requests, tells the prefill instance the
// decode instance's KV address (KVPeerHeader, learnt once from the decode
// instance's GET /kv_transfer) and tells the decode instance which prefill
// instance holds the KV (KVSourceHeader). The decode response streams back.
// Other paths (/v1/models, /tokenize, ...) go to a decode instance.
type PDProxy struct {
	prefill, decode *Proxy
	handoff         PDHandoff
	client          *http.Client
	nonce           string
	seq             atomic.Uint64

	mu     sync.Mutex
	kvAddr map[*proxyBackend]string
}

// NewPDProxy checks the URLs, the policy and the handoff.
func NewPDProxy(prefill, decode []string, policy ProxyPolicy, handoff PDHandoff) (*PDProxy, error) {
	if handoff != PDSequential && handoff != PDConcurrent {
		return nil, fmt.Errorf("proxy handoff %q: use %q or %q", handoff, PDSequential, PDConcurrent)
	}
	pp, err := NewProxy(prefill, policy)
	if err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	dp, err := NewProxy(decode, policy)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	var n [6]byte
	_, _ = rand.Read(n[:]) // ids only need to differ between proxies
	return &PDProxy{prefill: pp, decode: dp, handoff: handoff, client: &http.Client{Transport: pp.transport},
		nonce: "pd-" + hex.EncodeToString(n[:]), kvAddr: map[*proxyBackend]string{}}, nil
}

// Close drops idle backend connections.
func (p *PDProxy) Close() { p.prefill.Close(); p.decode.Close() }

// InFlight is the requests in flight per prefill and per decode backend.
func (p *PDProxy) InFlight() (prefill, decode []int) {
	return p.prefill.InFlight(), p.decode.InFlight()
}

func (p *PDProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/completions" && r.URL.Path != "/v1/chat/completions") {
		p.decode.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProxyBodyBytes))
	if err != nil {
		writeProxyError(w, http.StatusBadRequest, fmt.Sprintf("reading the request body: %v (the proxy takes at most %d MiB)", err, maxProxyBodyBytes>>20))
		return
	}
	prefillBody, err := prefillRequestBody(body)
	if err != nil {
		writeProxyError(w, http.StatusBadRequest, fmt.Sprintf("the request body is not a JSON object: %v", err))
		return
	}
	d := p.decode.acquire(nil)
	defer p.decode.release(d)
	w.Header().Set(BackendHeader, d.url.String())
	peer, err := p.consumerAddress(r.Context(), d)
	if err != nil {
		if r.Context().Err() == nil {
			p.decode.eject(d)
		}
		writeProxyError(w, http.StatusBadGateway, fmt.Sprintf("decode backend %s: %v", d.url, err))
		return
	}
	pb := p.prefill.acquire(nil)
	defer p.prefill.release(pb)
	w.Header().Set(PrefillBackendHeader, pb.url.String())
	id := fmt.Sprintf("%s-%d", p.nonce, p.seq.Add(1))

	prefill := func(ctx context.Context) error {
		return p.runPrefill(ctx, r, pb, prefillBody, id, peer)
	}
	r.Header.Set(KVRequestHeader, id)
	r.Header.Set(KVSourceHeader, pb.url.String())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if p.handoff == PDSequential {
		if err := prefill(r.Context()); err != nil {
			writeProxyError(w, http.StatusBadGateway, err.Error())
			return
		}
		d.rp.ServeHTTP(w, r)
		return
	}
	// Concurrent: a failed prefill cancels the decode request, which is
	// still waiting for KV, and its error is the one reported.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	failure := new(atomic.Pointer[error])
	ctx = context.WithValue(ctx, prefillFailureKey{}, failure)
	go func() {
		if err := prefill(ctx); err != nil && ctx.Err() == nil {
			failure.Store(&err)
			cancel()
		}
	}()
	d.rp.ServeHTTP(w, r.WithContext(ctx))
}

type prefillFailureKey struct{}

// prefillFailure is the error of a concurrent handoff's prefill request
// that cancelled the decode request, or nil.
func prefillFailure(ctx context.Context) error {
	if f, ok := ctx.Value(prefillFailureKey{}).(*atomic.Pointer[error]); ok {
		if e := f.Load(); e != nil {
			return *e
		}
	}
	return nil
}

// runPrefill sends the max_tokens=1 copy and drains the answer.
func (p *PDProxy) runPrefill(ctx context.Context, in *http.Request, pb *proxyBackend, body []byte, id, peer string) error {
	u := pb.url.JoinPath(in.URL.Path)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("prefill backend %s: %w", pb.url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if a := in.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set(KVRequestHeader, id)
	req.Header.Set(KVPeerHeader, peer)
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			p.prefill.eject(pb)
		}
		return fmt.Errorf("prefill backend %s failed: %w", pb.url, err)
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(io.LimitReader(resp.Body, maxProxyBodyBytes))
	if err != nil {
		return fmt.Errorf("prefill backend %s failed mid-response: %w", pb.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("prefill backend %s answered %s: %s", pb.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// consumerAddress is where a decode backend takes KV, asked once.
func (p *PDProxy) consumerAddress(ctx context.Context, d *proxyBackend) (string, error) {
	p.mu.Lock()
	addr, ok := p.kvAddr[d]
	p.mu.Unlock()
	if ok {
		return addr, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url.JoinPath("/kv_transfer").String(), nil)
	if err != nil {
		return "", err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking for its KV address: %w", err)
	}
	defer resp.Body.Close()
	var info kvInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&info); err != nil || resp.StatusCode != http.StatusOK ||
		info.Role != KVConsumer || info.Address == "" {
		return "", fmt.Errorf("GET /kv_transfer answered %s, role %q, address %q: start it with serve --kv-role consumer", resp.Status, info.Role, info.Address)
	}
	addr = reachableKVAddress(info.Address, d.url)
	p.mu.Lock()
	p.kvAddr[d] = addr
	p.mu.Unlock()
	return addr, nil
}

// reachableKVAddress replaces a wildcard listen host with the host the
// decode backend's URL names.
func reachableKVAddress(addr string, backend *url.URL) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort(backend.Hostname(), port)
	}
	return addr
}

// prefillRequestBody is the request as the prefill instance gets it: one
// token, not streamed (vLLM's disagg proxies do the same).
func prefillRequestBody(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	one := json.RawMessage("1")
	m["max_tokens"] = one
	if _, ok := m["max_completion_tokens"]; ok {
		m["max_completion_tokens"] = one
	}
	m["stream"] = json.RawMessage("false")
	delete(m, "stream_options")
	delete(m, "min_tokens")
	return json.Marshal(m)
}
