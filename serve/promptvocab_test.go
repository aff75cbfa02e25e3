package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestPromptVocabIsTheModels: a token-ID prompt may use any ID of the
// emulated model's vocabulary (Qwen2's 151,936 here), not only the
// stand-in tokenizer's (cl100k_base's 100,277); /detokenize still needs
// IDs the tokenizer can spell.
func TestPromptVocabIsTheModels(t *testing.T) {
	cfg := testConfig(t)
	cfg.PromptVocab = 151936
	r := startServer(t, cfg)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(r.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"an ID past the tokenizer's, inside the model's", "/v1/completions", `{"prompt":[5,120000,151935],"max_tokens":1}`, 200, `"prompt_tokens":3`},
		{"the first ID past the model's", "/v1/completions", `{"prompt":[5,151936],"max_tokens":1}`, 400, "Token id 151936 is out of vocabulary"},
		{"detokenize past the tokenizer's", "/detokenize", `{"tokens":[120000]}`, 400, "Token id 120000 is out of vocabulary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("POST %s %s = %d %s; want %d with %q", tc.path, tc.body, status, body, tc.status, tc.want)
			}
		})
	}
	bad := testConfig(t)
	bad.PromptVocab = -1
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "prompt vocabulary -1") {
		t.Errorf("New with PromptVocab -1 = %v", err)
	}
}
