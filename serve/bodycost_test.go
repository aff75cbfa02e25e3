package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestOversizedPromptCost sends 8 MB bodies whose prompt cannot fit (issue
// 9: a one-word 8 MB prompt took about 1 GB and seconds of CPU) and checks
// that each is refused with memory under 10× its body size, for text,
// chat, /tokenize and token-ID prompts, with a short and a long context.
func TestOversizedPromptCost(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 8 MB bodies (23 s under -race); run without -short")
	}
	const bodySize = 8<<20 - 256
	word := strings.Repeat("a", bodySize)
	idList := strings.TrimSuffix(strings.Repeat("100,", bodySize/4), ",")
	cases := []struct {
		name, path, body, want string
	}{
		{"completion", "/v1/completions", `{"prompt":"` + word + `","max_tokens":16}`, "However, you requested at least"},
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + word + `"}]}`, "However, you requested at least"},
		{"tokenize", "/tokenize", `{"prompt":"` + word + `"}`, "The prompt needs at least"},
		{"token-ids", "/v1/completions", `{"prompt":[` + idList + `],"max_tokens":16}`, "However, you requested 2097"},
	}
	for _, maxModelLen := range []int{4096, 131072} {
		cfg := testConfig(t)
		cfg.Engine.MaxModelLen = maxModelLen
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range cases {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body)))
			runtime.ReadMemStats(&after)
			ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(tc.body))
			t.Logf("max_model_len %d, %s: %d bytes of body, allocated %.1f× that", maxModelLen, tc.name, len(tc.body), ratio)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("max_model_len %d, %s: %d %.300s; want 400 containing %q", maxModelLen, tc.name, rec.Code, rec.Body.String(), tc.want)
			}
			if ratio > 10 {
				t.Errorf("max_model_len %d, %s: allocated %.1f× the body, want under 10×", maxModelLen, tc.name, ratio)
			}
		}
	}
}

// unsized hides a reader's length, as a chunked request body does.
type unsized struct{ io.Reader }

// Refusing a body over --max-request-body-bytes costs at most the limit,
// whether it announces its size or arrives chunked: 50 concurrent 50 MB
// bodies against an 8 MiB limit once peaked near 1 GB, because the read
// buffer doubled to 16 MiB before the limit fired.
func TestOversizedBodyCostsAtMostTheLimit(t *testing.T) {
	const limit = 4 << 20
	cfg := testConfig(t)
	cfg.MaxBodyBytes = limit
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 3*limit)
	tests := []struct {
		name     string
		request  func() *http.Request
		maxAlloc int64
	}{
		{"announced", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
		}, 64 << 10},
		{"chunked", func() *http.Request {
			return httptest.NewRequest(http.MethodPost, "/v1/completions", unsized{strings.NewReader(body)})
		}, limit + 64<<10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.request()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			runtime.ReadMemStats(&after)
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			t.Logf("%s: allocated %d bytes refusing %d against a limit of %d", tt.name, allocated, len(body), limit)
			if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "exceeds the limit of 4194304 bytes") {
				t.Errorf("%d %.200s: want 413 naming the limit", rec.Code, rec.Body.String())
			}
			if allocated > tt.maxAlloc {
				t.Errorf("allocated %d bytes refusing the body, want at most %d", allocated, tt.maxAlloc)
			}
		})
	}
}

// Chunked bodies of every size up to the limit arrive whole.
func TestChunkedBodiesArriveWhole(t *testing.T) {
	for _, size := range []int{0, 1, 4<<10 - 1, 4 << 10, 4<<10 + 1, 3 << 20} {
		payload := strings.Repeat("y", size)
		got, err := readSegments(strings.NewReader(payload), 3<<20)
		if err != nil || string(got) != payload {
			t.Errorf("size %d: read %d bytes, err %v", size, len(got), err)
		}
	}
}
