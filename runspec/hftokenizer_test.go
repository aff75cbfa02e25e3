package runspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --tokenizer given as a Hugging Face id loads the tokenizer.json of the
// cached snapshot; other specs pass through; a miss names the cache paths.
func TestResolveTokenizerSpecFromHFCache(t *testing.T) {
	const id = "acme/Tiny-Llama"
	home := isolateEnv(t)
	hub := filepath.Join(home, "hf", "hub")
	t.Setenv("HF_HOME", filepath.Join(home, "hf"))
	cacheModel(t, hub, id, filepath.Join("..", "perf", "testdata", "moe", "Mixtral-8x7B-v0.1", "config.json"))
	snap := filepath.Join(hub, "models--acme--Tiny-Llama", "snapshots", "0123456789abcdef")
	tokJSON, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "tiny-llama3-style", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "tokenizer.json"), tokJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec, want, wantErr string
	}{
		{spec: id, want: filepath.Join(snap, "tokenizer.json")},
		{spec: "cl100k_base", want: "cl100k_base"},
		{spec: "server", want: "server"},
		{spec: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000"},
		{spec: "", want: ""},
		{spec: "acme/Missing-7B", wantErr: filepath.Join(home, "hf", "hub")},
	}
	for _, tt := range tests {
		got, err := testEnv().ResolveTokenizer(tt.spec)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ResolveTokenizer(%q) error %v; want one naming %s", tt.spec, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ResolveTokenizer(%q) = %q, %v; want %q", tt.spec, got, err, tt.want)
		}
	}
}
