package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/servebench/servebench/perf"
)

// resolveTokenizerSpec turns a --tokenizer given as a Hugging Face id
// ("Qwen/Qwen2.5-7B-Instruct") into the tokenizer.json of its snapshot in the
// local hub cache, as vLLM would find it offline. Paths that exist, URLs,
// "server" and built-in names pass through unchanged; nothing is downloaded.
func resolveTokenizerSpec(spec string) (string, error) {
	if spec == "" || strings.Contains(spec, "://") || strings.Count(spec, "/") != 1 {
		return spec, nil
	}
	if _, err := os.Stat(spec); err == nil {
		return spec, nil
	}
	path, err := perf.FindHFFile(spec, hfEnv().CacheDirs(), "tokenizer.json")
	if err != nil {
		return "", fmt.Errorf("--tokenizer %q is neither a file nor a model in the local Hugging Face cache (pass a tokenizer.json path): %w", spec, err)
	}
	return path, nil
}
