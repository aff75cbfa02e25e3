package llamacppfake

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLlamaServerBehaviour: BOS only when /tokenize is asked for special
// tokens but always on a text prompt, none on an ID prompt, and /metrics
// refused with llama-server's 501 unless enabled.
func TestLlamaServerBehaviour(t *testing.T) {
	srv, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/tokenize", `{"content":"Hi!"}`, 200, `{"tokens":[40,73,1]}`},
		{"POST", "/tokenize", `{"content":"Hi!","add_special":true}`, 200, `{"tokens":[95,40,73,1]}`},
		{"POST", "/detokenize", `{"tokens":[95,40,73,1]}`, 200, `{"content":"Hi!"}`},
		{"POST", "/v1/completions", `{"prompt":"Hi!","max_tokens":1}`, 200, `"prompt_tokens":4`},
		{"POST", "/v1/completions", `{"prompt":[40,73,1],"max_tokens":1}`, 200, `"prompt_tokens":3`},
		{"GET", "/v1/models", ``, 200, `"n_vocab":96`},
		{"GET", "/metrics", ``, 501, "Start it with `--metrics`"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s %s = %d %s; want %d with %s", tc.method, tc.path, tc.body, resp.StatusCode, b, tc.status, tc.want)
		}
	}
	if got := srv.PromptTokens(); len(got) != 2 || got[0] != 4 || got[1] != 3 {
		t.Errorf("PromptTokens = %v, want [4 3]", got)
	}
}
