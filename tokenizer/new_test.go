package tokenizer

import (
	"context"
	"errors"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewResolvesSpecs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeServer{dialect: "vllm"})
	defer srv.Close()
	ctx := context.Background()
	tests := []struct {
		spec     string
		opts     Options
		wantType string
		wantName string
	}{
		{"cl100k_base", Options{}, "*tokenizer.bpeModel", "cl100k_base"},
		{"gpt2", Options{}, "tokenizer.aliasTokenizer", "gpt2"},
		{"server", Options{BaseURL: srv.URL, Model: "m"}, "*tokenizer.Server", "m"},
		{srv.URL, Options{BaseURL: "http://ignored.invalid"}, "*tokenizer.Server", srv.URL},
		{"testdata/tiny-gpt2-style", Options{}, "*tokenizer.bpeModel", "testdata/tiny-gpt2-style"},
		{"testdata/tiny-llama3-style/tokenizer.json", Options{}, "*tokenizer.bpeModel", "testdata/tiny-llama3-style/tokenizer.json"},
	}
	for _, tt := range tests {
		tk, err := New(ctx, tt.spec, tt.opts)
		if err != nil {
			t.Errorf("New(%q): %v", tt.spec, err)
			continue
		}
		if got := typeName(tk); got != tt.wantType || tk.Name() != tt.wantName {
			t.Errorf("New(%q) = %s named %q, want %s named %q", tt.spec, got, tk.Name(), tt.wantType, tt.wantName)
		}
		if _, err := tk.Encode(ctx, "Hello"); err != nil {
			t.Errorf("New(%q).Encode: %v", tt.spec, err)
		}
	}
	tk, err := New(ctx, "", Options{})
	if tk != nil || err != nil {
		t.Errorf(`New("") = %v, %v; want nil, nil`, tk, err)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case *bpeModel:
		return "*tokenizer.bpeModel"
	case aliasTokenizer:
		return "tokenizer.aliasTokenizer"
	case *Server:
		return "*tokenizer.Server"
	}
	return "other"
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "Llama-3-8B")
	emptyDir := t.TempDir()
	tests := []struct {
		spec     string
		opts     Options
		want     string
		notExist bool
	}{
		{missing, Options{}, `tokenizer "` + missing + `": no such file; pass a tokenizer.json path, a directory containing one, "server", or one of cl100k_base, o200k_base, p50k_base, r50k_base, gpt2`, true},
		{emptyDir, Options{}, `tokenizer "` + emptyDir + `": directory has no tokenizer.json; pass a tokenizer.json path`, true},
		{"meta-llama/Llama-3.1-8B", Options{}, `tokenizer "meta-llama/Llama-3.1-8B": no such file`, true},
		{"server", Options{}, `tokenizer "server": no server URL`, false},
		{"http://", Options{}, `want an http:// or https:// URL`, false},
	}
	for _, tt := range tests {
		_, err := New(context.Background(), tt.spec, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q) error =\n  %v\nwant it to contain\n  %s", tt.spec, err, tt.want)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) != tt.notExist {
			t.Errorf("New(%q): errors.Is(err, fs.ErrNotExist) = %v", tt.spec, !tt.notExist)
		}
	}
	// The message the --tokenizer flag shows, exactly.
	_, err := New(context.Background(), missing, Options{})
	if want := `tokenizer "` + missing + `": no such file; pass a tokenizer.json path, a directory containing one, "server", or one of cl100k_base, o200k_base, p50k_base, r50k_base, gpt2`; err == nil || err.Error() != want {
		t.Errorf("missing path error =\n  %v\nwant\n  %s", err, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(ctx, "gpt2", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("New with canceled context: %v", err)
	}
}
