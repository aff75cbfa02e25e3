// Package llamacppfake is a loopback stand-in for llama.cpp's llama-server
// that misbehaves the way the real one does, for tests and benchmarks of
// servebench's client side:
//
//   - Nagle stays on and every response leaves in two writes, headers then
//     body, as llama.cpp's HTTP library sends them: on a kept-alive
//     connection the body waits for the client's delayed ACK of the
//     headers (about 40 ms on Linux), on a fresh one it does not;
//   - /tokenize adds BOS only when asked ("add_special"), while a text
//     prompt to /v1/completions always gets BOS, so a prompt counted
//     without special tokens reaches the model one token longer;
//   - /metrics answers 501 unless Options.Metrics is set, as llama-server
//     does without --metrics.
//
// Its vocabulary is small and exact: IDs 0..94 are the printable ASCII
// bytes 32..126 and ID 95 is BOS, so text made of those bytes round-trips
// token for token and anything else is dropped.
package llamacppfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Vocabulary of the fake model.
const (
	// BOS is the ID the server puts before every text prompt.
	BOS = 95
	// VocabSize is n_vocab, BOS included.
	VocabSize = 96
	// ModelName is what /v1/models lists.
	ModelName = "tiny"
)

// Options choose how the fake behaves.
type Options struct {
	// Nagle leaves Nagle's algorithm on for accepted connections (llama.cpp
	// does); false sets TCP_NODELAY, as most HTTP servers do.
	Nagle bool
	// Metrics serves /metrics (llama-server --metrics); false answers 501.
	Metrics bool
	// TokenDelay is the time between two streamed tokens.
	TokenDelay time.Duration
}

// Server is a running fake.
type Server struct {
	// URL is the server root, e.g. http://127.0.0.1:34567.
	URL string

	srv *http.Server
	ln  net.Listener

	connections atomic.Int64
	tokenize    atomic.Int64
	detokenize  atomic.Int64
	// promptTokens is every completion's prompt length as the model saw
	// it, in arrival order.
	promptTokens chan int
}

// Start listens on a free loopback port and serves until Close.
func Start(opts Options) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llamacppfake: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln, promptTokens: make(chan int, 1<<16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", s.handleTokenize)
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.handleCompletions(w, r, opts.TokenDelay) })
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { s.handleMetrics(w, opts.Metrics) })
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			s.connections.Add(1)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(!opts.Nagle) // loopback TCP always accepts it
			}
			return ctx
		},
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server and its connections.
func (s *Server) Close() error { return s.srv.Close() }

// Connections is how many connections the server has accepted.
func (s *Server) Connections() int { return int(s.connections.Load()) }

// TokenizeCalls and DetokenizeCalls count the tokenizer endpoints' requests.
func (s *Server) TokenizeCalls() int   { return int(s.tokenize.Load()) }
func (s *Server) DetokenizeCalls() int { return int(s.detokenize.Load()) }

// PromptTokens returns the prompt lengths the model has seen so far (BOS
// included), in arrival order, and forgets them.
func (s *Server) PromptTokens() []int {
	var out []int
	for {
		select {
		case n := <-s.promptTokens:
			out = append(out, n)
		default:
			return out
		}
	}
}

// Encode is the fake's tokenizer: one ID per printable ASCII byte, others
// dropped, BOS first when addSpecial.
func Encode(text string, addSpecial bool) []int {
	ids := make([]int, 0, len(text)+1)
	if addSpecial {
		ids = append(ids, BOS)
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c >= 32 && c <= 126 {
			ids = append(ids, int(c)-32)
		}
	}
	return ids
}

// Decode turns IDs back into text; BOS and unknown IDs decode to nothing.
func Decode(ids []int) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && id < BOS {
			b.WriteByte(byte(id + 32))
		}
	}
	return b.String()
}

// writeTwice sends headers and body in two writes, as llama.cpp does: the
// second is what Nagle holds until the client acknowledges the first.
func writeTwice(w http.ResponseWriter, status int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_ = http.NewResponseController(w).Flush()
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v) // maps and slices of plain values always marshal
	writeTwice(w, status, "application/json; charset=utf-8", body)
}

func writeError(w http.ResponseWriter, status int, msg, kind string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": msg, "type": kind}})
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	s.tokenize.Add(1)
	var req struct {
		Content    *string `json:"content"`
		AddSpecial bool    `json:"add_special"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Content == nil {
		writeError(w, http.StatusBadRequest, `"content" must be provided`, "invalid_request_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": Encode(*req.Content, req.AddSpecial)})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	s.detokenize.Add(1)
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": Decode(req.Tokens)})
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id": ModelName, "object": "model", "owned_by": "llamacpp",
			"meta": map[string]any{"n_vocab": VocabSize, "n_ctx_train": 4096},
		}},
	})
}

func (s *Server) handleMetrics(w http.ResponseWriter, enabled bool) {
	if !enabled {
		writeError(w, http.StatusNotImplemented, "This server does not support metrics endpoint. Start it with `--metrics`", "not_supported_error")
		return
	}
	writeTwice(w, http.StatusOK, "text/plain; version=0.0.4", []byte("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n"))
}

// promptLen is the prompt's length as llama.cpp's model sees it: a text
// prompt is tokenized with BOS, an array of IDs is taken as it is.
func promptLen(raw json.RawMessage) (int, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return len(Encode(text, true)), nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return len(ids), nil
	}
	return 0, errors.New(`"prompt" must be a string or an array of token IDs`)
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request, tokenDelay time.Duration) {
	var req struct {
		Prompt    json.RawMessage `json:"prompt"`
		MaxTokens int             `json:"max_tokens"`
		Stream    bool            `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	n, err := promptLen(req.Prompt)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	select {
	case s.promptTokens <- n:
	default: // a test that never reads them loses nothing it asked for
	}
	out := max(req.MaxTokens, 1)
	usage := map[string]int{"prompt_tokens": n, "completion_tokens": out, "total_tokens": n + out}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"object": "text_completion", "model": ModelName,
			"choices": []any{map[string]any{"index": 0, "text": strings.Repeat(" a", out), "finish_reason": "length"}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for i := range out {
		if tokenDelay > 0 {
			time.Sleep(tokenDelay)
		}
		chunk := map[string]any{
			"object": "text_completion", "model": ModelName,
			"choices": []any{map[string]any{"index": 0, "text": " a", "finish_reason": nil}},
		}
		if i == out-1 {
			// llama.cpp puts usage on its last content chunk.
			chunk["choices"] = []any{map[string]any{"index": 0, "text": " a", "finish_reason": "length"}}
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		_ = rc.Flush()
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}
