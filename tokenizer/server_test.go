package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeServer answers /tokenize and /detokenize like vLLM (dialect "vllm")
// or llama.cpp ("llamacpp"), with one token per rune so results are easy
// to predict. It records what it was sent.
type fakeServer struct {
	dialect string
	// bos is the ID put first when special tokens are asked for: by
	// "add_special" (llama.cpp, default false) or "add_special_tokens"
	// (vLLM, default true). 0 means the model adds none (Qwen2).
	bos      int
	requests atomic.Int64
	mu       sync.Mutex
	bodies   []map[string]any
	headers  []http.Header
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.Method != http.MethodPost {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/tokenize":
		key := map[string]string{"vllm": "prompt", "llamacpp": "content"}[f.dialect]
		text, _ := body[key].(string)
		ids := []int{}
		special := map[string]string{"vllm": "add_special_tokens", "llamacpp": "add_special"}[f.dialect]
		add, given := body[special].(bool)
		if f.bos != 0 && (add || (!given && f.dialect == "vllm")) {
			ids = append(ids, f.bos)
		}
		for _, r := range text {
			ids = append(ids, int(r))
		}
		resp := map[string]any{"tokens": ids}
		if f.dialect == "vllm" {
			resp["count"] = len(ids)
			resp["max_model_len"] = 4096
		}
		_ = json.NewEncoder(w).Encode(resp)
	case "/detokenize":
		var runes []rune
		for _, id := range body["tokens"].([]any) {
			runes = append(runes, rune(id.(float64)))
		}
		key := map[string]string{"vllm": "prompt", "llamacpp": "content"}[f.dialect]
		_ = json.NewEncoder(w).Encode(map[string]any{key: string(runes)})
	default:
		http.NotFound(w, r)
	}
}

func TestServerDialects(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"vllm", "llamacpp"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			fake := &fakeServer{dialect: dialect}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			header := http.Header{"Authorization": {"Bearer secret"}}
			tk, err := New(context.Background(), "server", Options{BaseURL: srv.URL + "/", Model: "tiny", Header: header, HTTPClient: srv.Client(), VocabSize: 32000, SpecialIDs: []int{2, 1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			text := "héllo 😀"
			ids := mustEncode(t, tk, text)
			if diff := cmp.Diff([]int{'h', 'é', 'l', 'l', 'o', ' ', '😀'}, ids); diff != "" {
				t.Errorf("Encode (-want +got):\n%s", diff)
			}
			if got := mustDecode(t, tk, ids); got != text {
				t.Errorf("Decode = %q, want %q", got, text)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			wantTokenize := map[string]any{"model": "tiny", "prompt": text, "content": text, "add_special_tokens": false, "add_special": false}
			if diff := cmp.Diff(wantTokenize, fake.bodies[0]); diff != "" {
				t.Errorf("tokenize body (-want +got):\n%s", diff)
			}
			if got := fake.bodies[1]["model"]; got != "tiny" {
				t.Errorf("detokenize model = %v", got)
			}
			for _, h := range fake.headers {
				if h.Get("Authorization") != "Bearer secret" || h.Get("Content-Type") != "application/json" {
					t.Errorf("headers = %v", h)
				}
			}
			if tk.Name() != "tiny" || tk.VocabSize() != 32000 || !slices.Equal(tk.SpecialIDs(), []int{1, 2}) {
				t.Errorf("Name %q VocabSize %d SpecialIDs %v", tk.Name(), tk.VocabSize(), tk.SpecialIDs())
			}
			wantMax := map[string]int{"vllm": 4096, "llamacpp": 0}[dialect]
			if got := tk.(*Server).MaxModelLen(); got != wantMax {
				t.Errorf("MaxModelLen = %d, want %d", got, wantMax)
			}
		})
	}
}

func TestServerProbe(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeServer{dialect: "vllm"})
	defer srv.Close()
	s, err := NewServer(srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Probe(context.Background())
	if err != nil || info != (ServerInfo{MaxModelLen: 4096}) {
		t.Errorf("Probe = %+v, %v; want MaxModelLen 4096", info, err)
	}
	if s.Name() != srv.URL {
		t.Errorf("Name() = %q, want the URL when no model is set", s.Name())
	}
}

// TestServerSpecialTokensAdded: Encode counts without special tokens, as
// vLLM's benchmark does, but a text prompt reaches the model with them
// (llama.cpp adds BOS to every one, vLLM by default), so random prompts
// must be shortened by what the server adds: asked once, then remembered.
func TestServerSpecialTokensAdded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fake    *fakeServer
		want    int
		wantErr string
	}{
		{"llama.cpp adds BOS when asked", &fakeServer{dialect: "llamacpp", bos: 1}, 1, ""},
		{"vLLM with a BOS model (Llama)", &fakeServer{dialect: "vllm", bos: 128000}, 1, ""},
		{"vLLM with a model without BOS (Qwen2)", &fakeServer{dialect: "vllm"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(tc.fake)
			defer srv.Close()
			s, err := NewServer(srv.URL, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if got, err := s.SpecialTokensAdded(context.Background()); got != tc.want || err != nil {
					t.Fatalf("SpecialTokensAdded = %d, %v; want %d", got, err, tc.want)
				}
			}
			if n := tc.fake.requests.Load(); n != 2 {
				t.Errorf("%d requests for two calls; want 2 (with and without special tokens, once)", n)
			}
			ids, err := s.Encode(context.Background(), "abc")
			if err != nil || len(ids) != 3 {
				t.Errorf("Encode(abc) = %v, %v; want 3 IDs without special tokens", ids, err)
			}
		})
	}
	t.Run("a failed ask is retried", func(t *testing.T) {
		t.Parallel()
		var fail atomic.Bool
		fail.Store(true)
		fake := &fakeServer{dialect: "llamacpp", bos: 1}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if fail.Load() {
				http.Error(w, "loading model", http.StatusServiceUnavailable)
				return
			}
			fake.ServeHTTP(w, r)
		}))
		defer srv.Close()
		s, err := NewServer(srv.URL, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SpecialTokensAdded(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("SpecialTokensAdded against a 503 = %v; want the server's error", err)
		}
		fail.Store(false)
		if got, err := s.SpecialTokensAdded(context.Background()); got != 1 || err != nil {
			t.Fatalf("SpecialTokensAdded after the server recovered = %d, %v; want 1", got, err)
		}
	})
}

// cannedServer answers every request with one status and body.
func cannedServer(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestServerResponseShapes(t *testing.T) {
	t.Parallel()
	// A real llama.cpp /tokenize answer (see shared/examples).
	llamacpp, err := os.ReadFile("testdata/llamacpp-tokenize.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body string
		want       []int
	}{
		{"llama.cpp capture", string(llamacpp), []int{1552, 6635, 3290, 373, 278, 1775}},
		{"vLLM", `{"count":2,"max_model_len":8192,"tokens":[9906,1917],"token_strs":null}`, []int{9906, 1917}},
		{"llama.cpp with pieces", `{"tokens":[{"id":15043,"piece":"Hello"},{"id":3186,"piece":" world"}]}`, []int{15043, 3186}},
		{"empty", `{"tokens":[]}`, []int{}},
	}
	for _, tt := range tests {
		srv := cannedServer(t, http.StatusOK, tt.body)
		s, err := NewServer(srv.URL, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, mustEncode(t, s, "Hello world")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	srv := cannedServer(t, http.StatusOK, `{"tokens":[1],"max_model_len":2048,"vocab_size":151936}`)
	s, _ := NewServer(srv.URL, Options{VocabSize: 1000})
	if s.VocabSize() != 1000 {
		t.Errorf("VocabSize before any response = %d, want the fallback 1000", s.VocabSize())
	}
	if info, err := s.Probe(context.Background()); err != nil || info.VocabSize != 151936 || s.VocabSize() != 151936 {
		t.Errorf("after Probe: info %+v err %v VocabSize %d; want the reported 151936", info, err, s.VocabSize())
	}
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	unknownModel, err := os.ReadFile("testdata/vllm-error-unknown-model.txt")
	if err != nil {
		t.Fatal(err)
	}
	vllmError, _, _ := strings.Cut(string(unknownModel), "\n") // the capture's second line is its status
	tests := []struct {
		name   string
		status int
		body   string
		decode bool
		want   []string
	}{
		{"vLLM unknown model", http.StatusNotFound, vllmError, false, []string{"404 Not Found", "/tokenize", "The model `nope` does not exist."}},
		{"multi-line body", http.StatusInternalServerError, "boom\ntraceback line\n", false, []string{"500", "boom"}},
		{"long body", http.StatusBadGateway, strings.Repeat("x", 5000), false, []string{"502", "…"}},
		{"not JSON", http.StatusOK, "<html>oops</html>", false, []string{"/tokenize", "not the expected JSON", "<html>"}},
		{"no tokens", http.StatusOK, `{"detail":"hm"}`, false, []string{`no "tokens"`}},
		{"tokens not IDs", http.StatusOK, `{"tokens":["a"]}`, false, []string{"not a list of integer IDs"}},
		{"piece without id", http.StatusOK, `{"tokens":[{"piece":"a"}]}`, false, []string{`item 0 has no "id"`}},
		{"detokenize without text", http.StatusOK, `{"tokens":[1]}`, true, []string{"/detokenize", `neither "prompt"`}},
		{"detokenize error", http.StatusBadRequest, `{"error":"bad token id"}`, true, []string{"400", "bad token id"}},
	}
	for _, tt := range tests {
		srv := cannedServer(t, tt.status, tt.body)
		s, err := NewServer(srv.URL, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tt.decode {
			_, err = s.Decode(context.Background(), []int{1})
		} else {
			_, err = s.Encode(context.Background(), "hi")
		}
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, want := range tt.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, want)
			}
		}
		if strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
			t.Errorf("%s: error is not one short line: %q", tt.name, err)
		}
		var httpErr *HTTPError
		if isHTTP := errors.As(err, &httpErr); isHTTP != (tt.status != http.StatusOK) || (isHTTP && httpErr.StatusCode != tt.status) {
			t.Errorf("%s: errors.As HTTPError = %v (%+v)", tt.name, isHTTP, httpErr)
		}
	}
}

func TestServerNoRequestForEmptyInput(t *testing.T) {
	t.Parallel()
	fake := &fakeServer{dialect: "vllm"}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	s, _ := NewServer(srv.URL, Options{})
	if ids := mustEncode(t, s, ""); ids == nil || len(ids) != 0 {
		t.Errorf("Encode(\"\") = %#v, want an empty slice", ids)
	}
	if text := mustDecode(t, s, nil); text != "" {
		t.Errorf("Decode(nil) = %q", text)
	}
	if n := fake.requests.Load(); n != 0 {
		t.Errorf("%d requests for empty input", n)
	}
}

func TestServerContext(t *testing.T) {
	t.Parallel()
	blocked := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-blocked:
		}
	}))
	defer srv.Close()
	defer close(blocked)
	s, _ := NewServer(srv.URL, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Encode(ctx, "hang")
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Encode with canceled context: %v", err)
	}
	for _, call := range []func() error{
		func() error { _, err := s.Encode(ctx, ""); return err },
		func() error { _, err := s.Decode(ctx, nil); return err },
	} {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("call with canceled context: %v", err)
		}
	}
}

func TestServerConcurrentUse(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeServer{dialect: "vllm"})
	defer srv.Close()
	s, _ := NewServer(srv.URL, Options{HTTPClient: srv.Client()})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				text := strings.Repeat(string(rune('a'+g)), i+1)
				ids, err := s.Encode(context.Background(), text)
				if err != nil || len(ids) != i+1 || ids[0] != 'a'+g {
					t.Errorf("Encode(%q) = %v, %v", text, ids, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNewServerRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"ftp://host", "http://", "127.0.0.1:8000", "http://%zz"} {
		if _, err := NewServer(base, Options{}); err == nil || !strings.Contains(err.Error(), "http://") {
			t.Errorf("NewServer(%q) error = %v, want one explaining the URL form", base, err)
		}
	}
	if _, err := NewServer("http://127.0.0.1:1", Options{VocabSize: -1}); err == nil {
		t.Error("negative VocabSize accepted")
	}
}
