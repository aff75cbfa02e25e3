package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeLlamaCpp imitates llama.cpp's server with a tiny vocabulary: the
// captured completion stream, /tokenize and /detokenize (a 500 for an ID
// outside the vocabulary, as the real server answers), and /v1/models in
// llama.cpp's shape (with meta.n_vocab) when withMeta. The stream is a
// captured llama.cpp response (testdata); no /v1/models response was
// captured, so its bytes follow llama.cpp's server source (handle_models:
// data[].meta.n_vocab).
func fakeLlamaCpp(t *testing.T, vocab int, withMeta bool, outOfVocab *atomic.Int64) *httptest.Server {
	t.Helper()
	stream, err := os.ReadFile("testdata/llamacpp-completions-stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		meta := ""
		if withMeta {
			meta = `,"meta":{"vocab_type":2,"n_vocab":` + itoaTest(vocab) + `,"n_ctx_train":2048,"n_embd":64,"n_params":1234567,"size":2469134}`
		}
		_, _ = io.WriteString(w, `{"models":[{"name":"tiny.gguf","model":"tiny.gguf"}],"object":"list","data":[{"id":"tiny.gguf","object":"model","created":1795329665,"owned_by":"llamacpp"`+meta+`}]}`)
	})
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Content string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		ids := []int{}
		for i := range strings.Fields(req.Content) {
			ids = append(ids, 1+i%(vocab-1))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": ids})
	})
	mux.HandleFunc("POST /detokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Tokens []int }
		_ = json.NewDecoder(r.Body).Decode(&req)
		for _, id := range req.Tokens {
			if id < 0 || id >= vocab {
				outOfVocab.Add(1)
				http.Error(w, `{"error":{"code":500,"message":"invalid token id"}}`, http.StatusInternalServerError)
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"content": strings.TrimSpace(strings.Repeat(" w", len(req.Tokens)))})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt json.RawMessage
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var ids []int
		if json.Unmarshal(req.Prompt, &ids) == nil {
			for _, id := range ids {
				if id >= vocab {
					outOfVocab.Add(1)
					http.Error(w, "token id out of vocabulary", http.StatusInternalServerError)
					return
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(stream)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func itoaTest(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestVocabularyFromTheServer(t *testing.T) {
	tests := []struct {
		name       string
		withMeta   bool
		args       []string
		wantLine   string
		wantFailed bool
	}{
		{"llama.cpp reports n_vocab", true, nil, "Token-ID vocabulary: 4259 (the server's /v1/models (meta.n_vocab))", false},
		{"--vocab-size wins", true, []string{"--vocab-size", "1000"}, "Token-ID vocabulary: 1000 (--vocab-size)", false},
		{"no report: the default, said so", false, nil, "Token-ID vocabulary: 32000 (default: the server did not say", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var outOfVocab atomic.Int64
			srv := fakeLlamaCpp(t, 4259, tc.withMeta, &outOfVocab)
			args := append([]string{"bench", "--backend", "llama.cpp", "--base-url", srv.URL, "--model", "tiny",
				"--num-prompts", "8", "--random-input-len", "64", "--random-output-len", "4", "--records", "none",
				"--disable-tqdm", "--server-metrics-interval", "0"}, tc.args...)
			out, stderr, err := runCLI(t, args...)
			if tc.wantFailed {
				if err == nil && outOfVocab.Load() == 0 {
					t.Errorf("with the default vocabulary no ID reached past 4259; the test cannot tell sources apart")
				}
			} else if err != nil || outOfVocab.Load() != 0 {
				t.Fatalf("err %v, %d out-of-vocabulary requests\n%s\n%s", err, outOfVocab.Load(), out, stderr)
			}
			if !strings.Contains(out, tc.wantLine) && err == nil {
				t.Errorf("preamble lacks %q:\n%s", tc.wantLine, out)
			}
		})
	}
}
