package serve

import (
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
