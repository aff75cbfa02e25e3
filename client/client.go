// Package client sends one OpenAI-compatible completion or chat request,
// streams its server-sent events and turns them into a metrics.Record with
// per-chunk timestamps, exactly as vLLM's benchmark client measures them
// (TTFT at the first chunk with choices, E2EL at the last one, one ITL gap
// per chunk) with two corrections: reasoning text counts as output, and a
// chunk that carries k tokens (known from continuous usage stats) adds k
// equal ITL gaps instead of one.
//
// The hot path (SSE framing, JSON field extraction, timestamping) does not
// allocate per chunk, so one process can drive tens of thousands of streams
// without the client becoming the bottleneck it is in Python tools.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// Config describes the target and the shape of every request.
type Config struct {
	// BaseURL is the server's scheme://host:port, e.g. "http://127.0.0.1:8000".
	BaseURL string
	// Endpoint is "/v1/completions" (the default) or "/v1/chat/completions";
	// a path ending in "chat/completions" selects the chat body.
	Endpoint string
	// Model is sent as "model"; empty omits the key (llama.cpp needs none).
	Model string
	// Header holds extra headers, e.g. Authorization. It is sent, never
	// logged or copied into results.
	Header http.Header
	// NoStream sends "stream":false: TTFT equals Latency, no ITL, and the
	// output length comes from usage.
	NoStream bool
	// IgnoreEOS adds "ignore_eos":true so outputs run to max_tokens.
	IgnoreEOS bool
	// ExtraBody is merged into the JSON body last (sampling parameters,
	// --extra-body); a key the client also writes is replaced, not repeated.
	ExtraBody map[string]any
	// Timeout limits a whole request including a stalled stream; 0 = none.
	Timeout time.Duration
	// FirstByteTimeout limits the wait from sending a request to the first
	// byte of its response body; 0 = none.
	FirstByteTimeout time.Duration
	// ChunkTimeout limits the silence between two reads of a response body
	// once it has started; 0 = none.
	ChunkTimeout time.Duration
	// DisableConnectionReuse opens a new connection for every request, as
	// vLLM's and SGLang's aiohttp clients do, so TTFT includes the connect
	// for every request alike; ignored when Transport is set.
	DisableConnectionReuse bool
	// ContinuousUsage also asks for stream_options.continuous_usage_stats,
	// whose per-chunk usage gives the tokens in each chunk.
	ContinuousUsage bool
	// InsecureSkipVerify disables TLS certificate checks of the default
	// transport (--insecure); ignored when Transport is set.
	InsecureSkipVerify bool
	// Transport replaces the default tuned *http.Transport.
	Transport http.RoundTripper
	// DialContext, when set, opens the default transport's connections
	// instead of a TCP dial, e.g. to a server in the same process reached
	// in memory; ignored when Transport is set.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Client sends requests to one endpoint. It is safe for concurrent use.
type Client struct {
	endpoint  *url.URL
	modelsURL string
	body      *bodyTemplate
	header    http.Header
	noStream  bool
	timeout   time.Duration
	firstByte time.Duration
	chunkGap  time.Duration
	http      *http.Client
	streams   sync.Pool // *streamState, so buffers outlive one request
}

// New validates cfg and builds a client. Errors are one line naming the
// flag at fault and how to fix it.
func New(cfg Config) (*Client, error) {
	base, prefix, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "/v1/completions"
	}
	if !strings.HasPrefix(endpoint, "/") {
		return nil, option.Errorf("{endpoint} %q must be a path starting with '/', e.g. /v1/completions or /v1/chat/completions", cfg.Endpoint)
	}
	full, err := url.Parse(base.Scheme + "://" + base.Host + prefix + endpoint)
	if err != nil {
		return nil, option.Errorf("{endpoint} %q does not form a valid URL with {base_url} (%w): use e.g. /v1/completions", cfg.Endpoint, err)
	}
	full.User = base.User
	for _, limit := range []struct {
		name string
		d    time.Duration
	}{{"request timeout", cfg.Timeout}, {"first-byte timeout", cfg.FirstByteTimeout}, {"chunk timeout", cfg.ChunkTimeout}} {
		if limit.d < 0 {
			return nil, fmt.Errorf("%s %v is negative: use 0 for no limit or a positive duration such as 10m", limit.name, limit.d)
		}
	}
	header, err := requestHeader(cfg.Header)
	if err != nil {
		return nil, err
	}
	chat := strings.HasSuffix(strings.TrimRight(endpoint, "/"), "chat/completions")
	body, err := newBodyTemplate(&cfg, chat)
	if err != nil {
		return nil, err
	}
	transport := cfg.Transport
	if transport == nil {
		t := newTransport(cfg.InsecureSkipVerify)
		t.DisableKeepAlives = cfg.DisableConnectionReuse
		if cfg.DialContext != nil {
			t.DialContext = cfg.DialContext
		}
		transport = t
	}
	modelsPath := prefix + "/v1/models"
	if i := strings.LastIndex(endpoint, "/v1/"); i >= 0 {
		modelsPath = prefix + endpoint[:i] + "/v1/models"
	}
	c := &Client{
		endpoint:  full,
		modelsURL: base.Scheme + "://" + base.Host + modelsPath,
		body:      body,
		header:    header,
		noStream:  cfg.NoStream,
		timeout:   cfg.Timeout,
		firstByte: cfg.FirstByteTimeout,
		chunkGap:  cfg.ChunkTimeout,
		http:      &http.Client{Transport: transport},
	}
	c.streams.New = func() any { return newStreamState() }
	return c, nil
}

// parseBaseURL checks --base-url: scheme://host[:port] with at most a path
// prefix in front of the API's, and returns it with that prefix (no
// trailing slash).
func parseBaseURL(raw string) (base *url.URL, prefix string, err error) {
	if strings.TrimSpace(raw) == "" {
		return nil, "", option.New("{base_url} is empty: give the server's address, e.g. {base_url} http://127.0.0.1:8000")
	}
	if lower := strings.ToLower(raw); !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return nil, "", option.Errorf("{base_url} %q must start with http:// or https://, e.g. http://127.0.0.1:8000", raw)
	}
	base, err = url.Parse(raw)
	if err != nil {
		return nil, "", option.Errorf("{base_url} %q is not a valid URL (%w): use e.g. http://127.0.0.1:8000", raw, err)
	}
	if base.Scheme != "http" && base.Scheme != "https" {
		return nil, "", option.Errorf("{base_url} %q must start with http:// or https://, e.g. http://127.0.0.1:8000", raw)
	}
	if base.Host == "" {
		return nil, "", option.Errorf("{base_url} %q has no host: use e.g. http://127.0.0.1:8000", raw)
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, "", option.Errorf("{base_url} %q has a query or fragment: give only scheme://host:port", raw)
	}
	prefix = strings.TrimRight(base.Path, "/")
	if strings.HasSuffix(prefix, "/v1") || strings.Contains(prefix, "completions") {
		return nil, "", option.Errorf("{base_url} %q includes the API path %q: give only scheme://host:port and put the path in {endpoint} (e.g. /v1/completions)", raw, base.Path)
	}
	return base, prefix, nil
}

// requestHeader is every request's header: JSON, servebench's user agent
// and the user's --header values under their canonical names (the
// canonical spelling wins where both are given).
func requestHeader(user http.Header) (http.Header, error) {
	header := make(http.Header, len(user)+3)
	header["Content-Type"] = []string{"application/json"}
	header["User-Agent"] = []string{"servebench"}
	for k, vs := range user {
		if !validHeaderName(k) {
			return nil, option.Errorf("{header} name %q is not a valid HTTP header name: use name=value with letters, digits and '-'", k)
		}
		ck := http.CanonicalHeaderKey(k)
		if _, set := user[ck]; set && ck != k {
			continue // both spellings given; the canonical one wins
		}
		header[ck] = append([]string(nil), vs...)
	}
	return header, nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// newTransport is tuned for many long-lived streams to one host: the
// standard library keeps only 2 idle connections per host, which would make
// every request past the second dial anew; compression would hide chunk
// arrival behind a decoder.
//
// Connections are not wrapped to skip the read that returns EAGAIN after a
// drained socket (about 0.4 of the ~1.4 reads per chunk): every Read
// through a RawConn first clears the fd's readiness token, so a chunk that
// arrives while the previous one is parsed would leave the stream parked
// until the next chunk, or forever after the last. Nor are ACKs delayed
// (TCP_QUICKACK off): a server without TCP_NODELAY would hold its next
// chunk for the delayed ACK and inflate ITL by up to 40 ms.
func newTransport(insecure bool) *http.Transport {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1 << 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
	}
	if insecure {
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user asked for --insecure
	}
	return t
}

// CloseIdleConnections closes kept-alive connections, e.g. between runs.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// StatusError is a non-200 answer from the server.
type StatusError struct {
	Code int
	// Body is the start of the response body on one line.
	Body string
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d %s", e.Code, http.StatusText(e.Code))
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// errorBodyBytes is how much of an error body is kept: enough for the
// server's message, short enough for a one-line error.
const errorBodyBytes = 300

func readStatusError(resp *http.Response) *StatusError {
	buf := make([]byte, errorBodyBytes)
	n, _ := io.ReadFull(resp.Body, buf)
	// Drain a little more so the connection can be reused.
	_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
	return &StatusError{Code: resp.StatusCode, Body: textline.OneLine(string(buf[:n]), 0)}
}

// Model is one entry of /v1/models.
type Model struct {
	ID string
	// VocabSize is llama.cpp's meta.n_vocab; 0 when the server does not
	// say (vLLM and SGLang do not).
	VocabSize int
}

// Models lists the model ids at /v1/models, for a default --model.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	models, err := c.ModelList(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return ids, nil
}

// ModelList returns the entries of /v1/models with what they say about
// their vocabulary.
func (c *Client) ModelList(ctx context.Context) ([]Model, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.modelsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	for k, vs := range c.header {
		if k != "Content-Type" {
			req.Header[k] = vs
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list models at %s: %w", c.modelsURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list models at %s: %w", c.modelsURL, readStatusError(resp))
	}
	var list struct {
		Data []struct {
			ID   string `json:"id"`
			Meta struct {
				NVocab int `json:"n_vocab"`
			} `json:"meta"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, option.Errorf("list models at %s: response is not a model list (%w): pass {model} explicitly", c.modelsURL, err)
	}
	models := make([]Model, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			models = append(models, Model{ID: m.ID, VocabSize: max(m.Meta.NVocab, 0)})
		}
	}
	if len(models) == 0 {
		return nil, option.Errorf("list models at %s: the server lists no models: pass {model} explicitly", c.modelsURL)
	}
	return models, nil
}

// VocabSize is the vocabulary size the server reports for model, or 0 when
// it reports none. A server that lists one model (llama.cpp names it after
// its file, whatever --model says) answers for it.
//
// vLLM is not probed through /detokenize: its Hugging Face tokenizers skip
// unknown IDs instead of failing, so an ID past the vocabulary decodes like
// a special token (to ""), and a search for the boundary would be wrong.
func (c *Client) VocabSize(ctx context.Context, model string) (int, error) {
	models, err := c.ModelList(ctx)
	if err != nil {
		return 0, err
	}
	for _, m := range models {
		if m.ID == model {
			return m.VocabSize, nil
		}
	}
	if len(models) == 1 {
		return models[0].VocabSize, nil
	}
	return 0, nil
}

// newRequest builds the POST without re-parsing the URL per request.
func (c *Client) newRequest(ctx context.Context, body []byte, requestID string) *http.Request {
	h := make(http.Header, len(c.header)+1)
	for k, vs := range c.header {
		h[k] = vs // shared read-only slices: the transport never writes them
	}
	if requestID != "" {
		h["X-Request-Id"] = []string{requestID}
	}
	// A POST is not idempotent, so net/http would not resend one that failed
	// on a reused connection that the server had closed (llama.cpp closes
	// after every stream without saying so). Resending is safe exactly in
	// the cases the transport retries: nothing of the response arrived. A
	// zero-length key marks the request replayable without sending the
	// header; GetBody rewinds the body.
	h["Idempotency-Key"] = nil
	r := &http.Request{
		Method:        http.MethodPost,
		URL:           c.endpoint,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          c.endpoint.Host,
		GetBody: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(body)), nil
		},
	}
	return r.WithContext(ctx)
}

// Do sends one request and fills rec. base is the run's zero instant:
// rec.Start = time.Since(base) just before the request is written. Do never
// returns an error: a failure leaves rec.Success false with a one-line
// rec.Error and the HTTP status in rec.Status. Cancelling ctx fails the
// request with "canceled".
func (c *Client) Do(ctx context.Context, req *workload.Request, requestID string, base time.Time, rec *metrics.Record) {
	if rec == nil {
		return
	}
	rec.RequestID = requestID
	rec.Start, rec.TTFT, rec.Latency, rec.ITL, rec.FirstChunkTokens = time.Since(base), 0, 0, nil, 0
	rec.OutputLen, rec.CachedTokens, rec.OutputLenSource = 0, 0, ""
	rec.Success, rec.Error, rec.Status, rec.GeneratedText = false, "", 0, ""
	rec.Retries, rec.ConnReused = 0, false
	if req == nil {
		rec.Error = "no request given"
		return
	}
	rec.Index, rec.PromptLen, rec.MaxTokens = req.Index, req.PromptLen, req.MaxTokens

	body, err := c.body.appendBody(make([]byte, 0, len(req.Prompt)+8*len(req.PromptIDs)+len(c.body.modelField)+len(c.body.tail)+64), req)
	if err != nil {
		rec.Error = err.Error()
		return
	}
	reqCtx, cancelStalled := context.WithCancelCause(ctx)
	defer cancelStalled(nil)
	// The deadline counts from rec.Start, the instant latency counts from,
	// so a request cut by the timeout never reports a latency below it.
	rec.Start = time.Since(base)
	if c.timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithDeadlineCause(reqCtx, base.Add(rec.Start+c.timeout), &TimeoutError{Limit: LimitRequest, After: c.timeout})
		defer cancel()
	}
	conns := newConnTrace()
	httpReq := c.newRequest(httptrace.WithClientTrace(reqCtx, &conns.trace), body, requestID)

	watch := newStallWatch(base, rec.Start, c.firstByte, c.chunkGap, cancelStalled)
	defer watch.stop()
	resp, err := c.http.Do(httpReq)
	rec.Retries, rec.ConnReused = conns.retries(), conns.reused.Load()
	if err != nil {
		rec.Latency = time.Since(base) - rec.Start
		rec.Error = c.describe(ctx, reqCtx, err, "while waiting for the response")
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		rec.Error = readStatusError(resp).Error()
		rec.Latency = time.Since(base) - rec.Start
		return
	}
	st := c.streams.Get().(*streamState)
	defer c.putStream(st)
	st.begin(resp.Body, base, rec)
	st.framer.watch = watch
	ct := resp.Header.Get("Content-Type")
	asJSON := false
	switch {
	case strings.HasPrefix(ct, "text/event-stream"):
	case strings.HasPrefix(ct, "text/html"):
		// A web page answering 200 is a proxy, a login wall or the wrong
		// port, never a completion: say so rather than "no valid chunk".
		rec.Error = errHTMLReply
		rec.Latency = time.Since(base) - rec.Start
		return
	case strings.Contains(ct, "json"):
		asJSON = true
	default: // no usable type: an SSE stream starts with a field, JSON with '{'
		first, ok, err := st.framer.firstByte()
		if err != nil {
			st.failRead(err, c, ctx, reqCtx)
			return
		}
		asJSON = ok && first == '{'
	}
	if asJSON {
		st.readJSON(c, ctx, reqCtx)
	} else {
		st.readSSE(c, ctx, reqCtx)
	}
}

// errHTMLReply is one reason for every HTML reply, so they count together.
const errHTMLReply = "the server returned text/html, not an SSE stream: check the base URL and the endpoint path"

func (c *Client) putStream(st *streamState) {
	st.release()
	c.streams.Put(st)
}

// describe turns a transport error into a one-line reason. ctx is the
// caller's context, reqCtx the one carrying the per-request timeout.
func (c *Client) describe(ctx, reqCtx context.Context, err error, where string) string {
	if ctx.Err() != nil {
		return "canceled"
	}
	if te, ok := timeoutCause(reqCtx); ok {
		return te.Error()
	}
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("DNS lookup of %q failed (%s): check the host in the base URL", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("connection refused by %s: is the server running and listening there?", c.endpoint.Host)
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server " + where
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "server closed the connection " + where
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // the URL is known to the user and only adds noise
	}
	return textline.OneLine(err.Error()+" "+where, 0)
}
