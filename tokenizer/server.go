package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/internal/textline"
)

// maxResponseBytes bounds a /tokenize or /detokenize response body; a
// million-token prompt encodes to well under this.
const maxResponseBytes = 64 << 20

// maxErrorBodyBytes is how much of an error response is read for its message.
const maxErrorBodyBytes = 4 << 10

// Server tokenizes through the target server's /tokenize and /detokenize,
// so counts match the server exactly without a local vocabulary. One
// request body suits vLLM, SGLang and llama.cpp: it carries both vLLM's
// "prompt"/"add_special_tokens" and llama.cpp's "content"/"add_special".
// A Server is safe for concurrent use.
type Server struct {
	base     string
	model    string
	client   *http.Client
	header   http.Header
	vocab    int
	specials []int

	// Learned from responses; 0 until a server reports them.
	maxModelLen   atomic.Int64
	reportedVocab atomic.Int64
	tokenizeURL   string
	detokenizeURL string
	displayedName string

	// specialAdded is SpecialTokensAdded's answer once the server gave one.
	specialMu    sync.Mutex
	specialAdded int
	specialKnown bool
}

// ServerInfo is what a server says about its tokenizer; zero means unknown.
type ServerInfo struct {
	// MaxModelLen is the context length vLLM and SGLang report with every
	// /tokenize response.
	MaxModelLen int
	// VocabSize is reported by few servers (not vLLM); see Options.VocabSize.
	VocabSize int
}

// HTTPError is a non-2xx answer from the tokenizer server.
type HTTPError struct {
	Method     string
	URL        string
	StatusCode int
	// Body is the first line of the response body, shortened.
	Body string
}

func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// NewServer returns a tokenizer that calls baseURL/tokenize and
// baseURL/detokenize, where baseURL is the server root (no /v1). It makes
// no request; call Probe to check the endpoint and learn MaxModelLen.
func NewServer(baseURL string, opts Options) (*Server, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tokenizer server %q: want an http:// or https:// URL of the server root, e.g. http://127.0.0.1:8000", baseURL)
	}
	if opts.VocabSize < 0 {
		return nil, fmt.Errorf("tokenizer server %q: Options.VocabSize %d is negative", baseURL, opts.VocabSize)
	}
	base := strings.TrimRight(baseURL, "/")
	client := stallFreeClient(opts.HTTPClient)
	name := opts.Model
	if name == "" {
		name = base
	}
	specials := slices.Clone(opts.SpecialIDs)
	slices.Sort(specials)
	return &Server{
		base:          base,
		model:         opts.Model,
		client:        client,
		header:        opts.Header.Clone(),
		vocab:         opts.VocabSize,
		specials:      slices.Compact(specials),
		tokenizeURL:   base + "/tokenize",
		detokenizeURL: base + "/detokenize",
		displayedName: name,
	}, nil
}

// maxIdleTokenizerConns keeps one idle connection for each of the calls
// that prompt building makes at once (workload.DefaultBuildWorkers), where
// net/http keeps two and closes the rest after every call.
const maxIdleTokenizerConns = 64

// stallFreeClient is c (nil: a plain client) with connections that never
// wait on a delayed ACK (see quickAck). A custom RoundTripper is kept as it
// is: its connections are not ours to set.
func stallFreeClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	var t *http.Transport
	switch rt := out.Transport.(type) {
	case nil:
		t = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		t = rt.Clone()
	default:
		return &out
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return quickAck(conn), nil
	}
	t.DisableKeepAlives = t.DisableKeepAlives || !keepAlive
	t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, maxIdleTokenizerConns)
	out.Transport = t
	return &out
}

// Name is the model name when one was given (vLLM's tokenizer_id
// defaults to it), else the server URL.
func (s *Server) Name() string { return s.displayedName }

// VocabSize is the size the server reported, else Options.VocabSize.
func (s *Server) VocabSize() int {
	if v := s.reportedVocab.Load(); v > 0 {
		return int(v)
	}
	return s.vocab
}

// SpecialIDs are Options.SpecialIDs: servers do not report them.
func (s *Server) SpecialIDs() []int { return slices.Clone(s.specials) }

// MaxModelLen is the context length from the latest /tokenize response, or 0.
func (s *Server) MaxModelLen() int { return int(s.maxModelLen.Load()) }

// Info returns what the server has reported so far.
func (s *Server) Info() ServerInfo {
	return ServerInfo{MaxModelLen: s.MaxModelLen(), VocabSize: int(s.reportedVocab.Load())}
}

// Probe tokenizes a short text to check that the endpoint works and to
// learn what the server reports about its tokenizer.
func (s *Server) Probe(ctx context.Context) (ServerInfo, error) {
	if _, err := s.Encode(ctx, "Hello"); err != nil {
		return ServerInfo{}, err
	}
	return s.Info(), nil
}

type tokenizeRequest struct {
	Model            string `json:"model,omitempty"`
	Prompt           string `json:"prompt"`
	Content          string `json:"content"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
	AddSpecial       bool   `json:"add_special"`
}

type tokenizeResponse struct {
	Tokens      json.RawMessage `json:"tokens"`
	MaxModelLen int64           `json:"max_model_len"`
	VocabSize   int64           `json:"vocab_size"`
}

type detokenizeRequest struct {
	Model  string `json:"model,omitempty"`
	Tokens []int  `json:"tokens"`
}

type detokenizeResponse struct {
	Prompt  *string `json:"prompt"`
	Content *string `json:"content"`
}

// Encode asks the server to tokenize text without special tokens. Empty
// text needs no request.
func (s *Server) Encode(ctx context.Context, text string) ([]int, error) {
	if text == "" {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("tokenizer server: %w", err)
		}
		return []int{}, nil
	}
	return s.encode(ctx, text, false)
}

// specialProbeText is tokenized with and without special tokens to count
// the ones the server adds.
const specialProbeText = "Hello"

// SpecialTokensAdded is how many special tokens (BOS, and EOS where the
// model adds one) the server puts around a text prompt: the difference
// between /tokenize with and without them ("add_special" for llama.cpp,
// "add_special_tokens" for vLLM, which adds them by default). Encode counts
// without them, as vLLM's benchmark does, so a prompt of Encode length n
// reaches the model as n plus this; llama.cpp adds BOS to every text
// prompt. Asked once; a failed ask is retried on the next call.
func (s *Server) SpecialTokensAdded(ctx context.Context) (int, error) {
	s.specialMu.Lock()
	defer s.specialMu.Unlock()
	if s.specialKnown {
		return s.specialAdded, nil
	}
	with, err := s.encode(ctx, specialProbeText, true)
	if err != nil {
		return 0, err
	}
	without, err := s.encode(ctx, specialProbeText, false)
	if err != nil {
		return 0, err
	}
	s.specialAdded, s.specialKnown = max(0, len(with)-len(without)), true
	return s.specialAdded, nil
}

func (s *Server) encode(ctx context.Context, text string, special bool) ([]int, error) {
	var resp tokenizeResponse
	req := tokenizeRequest{Model: s.model, Prompt: text, Content: text, AddSpecialTokens: special, AddSpecial: special}
	if err := s.post(ctx, s.tokenizeURL, req, &resp); err != nil {
		return nil, err
	}
	if resp.MaxModelLen > 0 {
		s.maxModelLen.Store(resp.MaxModelLen)
	}
	if resp.VocabSize > 0 {
		s.reportedVocab.Store(resp.VocabSize)
	}
	ids, err := parseTokenList(resp.Tokens)
	if err != nil {
		return nil, fmt.Errorf("tokenizer server: POST %s: %w", s.tokenizeURL, err)
	}
	return ids, nil
}

// parseTokenList accepts [1,2,3] and llama.cpp's with_pieces form
// [{"id":1,"piece":"a"}, ...].
func parseTokenList(raw json.RawMessage) ([]int, error) {
	if isNull(raw) {
		return nil, fmt.Errorf(`response has no "tokens" list`)
	}
	ids := []int{}
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, nil
	}
	var pieces []struct {
		ID *int `json:"id"`
	}
	if err := json.Unmarshal(raw, &pieces); err != nil {
		return nil, fmt.Errorf(`response "tokens" is not a list of integer IDs`)
	}
	ids = make([]int, len(pieces))
	for i, p := range pieces {
		if p.ID == nil {
			return nil, fmt.Errorf(`response "tokens" item %d has no "id"`, i)
		}
		ids[i] = *p.ID
	}
	return ids, nil
}

// Decode asks the server to turn IDs back into text. No IDs need no
// request.
func (s *Server) Decode(ctx context.Context, ids []int) (string, error) {
	if len(ids) == 0 {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("tokenizer server: %w", err)
		}
		return "", nil
	}
	var resp detokenizeResponse
	if err := s.post(ctx, s.detokenizeURL, detokenizeRequest{Model: s.model, Tokens: ids}, &resp); err != nil {
		return "", err
	}
	switch {
	case resp.Prompt != nil:
		return *resp.Prompt, nil
	case resp.Content != nil:
		return *resp.Content, nil
	}
	return "", fmt.Errorf(`tokenizer server: POST %s: response has neither "prompt" (vLLM) nor "content" (llama.cpp)`, s.detokenizeURL)
}

func (s *Server) post(ctx context.Context, target string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("tokenizer server: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("tokenizer server: %w", err)
	}
	for k, v := range s.header {
		req.Header[k] = slices.Clone(v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("tokenizer server: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBodyBytes))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
		return fmt.Errorf("tokenizer server: %w", &HTTPError{
			Method:     http.MethodPost,
			URL:        target,
			StatusCode: resp.StatusCode,
			Body:       textline.OneLine(string(snippet), 200),
		})
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("tokenizer server: POST %s: read response: %w", target, err)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("tokenizer server: POST %s: response exceeds %d MiB", target, maxResponseBytes>>20)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("tokenizer server: POST %s: response is not the expected JSON (%v): %s", target, err, textline.OneLine(string(data), 200))
	}
	return nil
}
