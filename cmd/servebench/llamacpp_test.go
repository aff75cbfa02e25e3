package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/llamacppfake"
	"github.com/servebench/servebench/perf"
)

// TestBenchAgainstLlamaCpp runs bench the way issue 24 ran it against a
// real llama-server, on a stand-in that misbehaves as llama.cpp does
// (Nagle on, BOS on every text prompt, /metrics 501 without --metrics):
// setup says what it does, every prompt reaches the model at exactly the
// asked length, and the missing server-metrics section is explained in
// one line.
func TestBenchAgainstLlamaCpp(t *testing.T) {
	srv, err := llamacppfake.Start(llamacppfake.Options{Nagle: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const prompts = 12
	out, stderr, err := runCLI(t, "bench", "--backend", "llama.cpp", "--base-url", srv.URL,
		"--num-prompts", fmt.Sprint(prompts), "--random-input-len", "128", "--random-output-len", "3",
		"--max-concurrency", "4", "--records", "none", "--disable-tqdm", "--server-metrics-interval", "1s")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	for _, want := range []string{
		fmt.Sprintf("Building %d prompts through the server's /tokenize and /detokenize...\n", prompts),
		fmt.Sprintf("Built %d prompts in ", prompts),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// The initial test request is the first prompt again.
	seen := srv.PromptTokens()
	if len(seen) != prompts+1 {
		t.Fatalf("the model saw %d prompts, want %d (with the initial test)", len(seen), prompts+1)
	}
	for i, n := range seen {
		if n != 128 {
			t.Errorf("prompt %d reached the model as %d tokens (BOS included), want 128: %v", i, n, seen)
			break
		}
	}
	if want := fmt.Sprintf("Total input tokens:                      %d", 128*prompts); !strings.Contains(out, want) {
		t.Errorf("result lacks %q:\n%s", want, out)
	}
	var metricsLines []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "/metrics") {
			metricsLines = append(metricsLines, line)
		}
	}
	want := "No server-metrics section: GET " + srv.URL + "/metrics answered HTTP 501 Not Implemented: This server does not support metrics endpoint. Start it with `--metrics` (--server-metrics-interval 0 skips the check).\n"
	if len(metricsLines) != 1 || metricsLines[0] != want {
		t.Errorf("stderr lines about /metrics %q; want one, %q", metricsLines, want)
	}
}

// TestEmulatedRunDrawsFromTheModelsVocabulary: the first command a
// newcomer runs names the vocabulary of the model it emulates (Qwen2's),
// not that of the encoding the emulator counts text with.
func TestEmulatedRunDrawsFromTheModelsVocabulary(t *testing.T) {
	m, err := perf.LookupModel(defaultEmbeddedModel)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "bench", "--num-prompts", "4", "--random-input-len", "16", "--random-output-len", "2",
		"--records", "none", "--disable-tqdm", "--server-metrics-interval", "0")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
	want := fmt.Sprintf("Token-ID vocabulary: %d (the emulated %s's vocab_size)\n", m.Vocab, m.Name)
	if !strings.Contains(out, want) || strings.Contains(out, "cl100k") {
		t.Errorf("preamble lacks %q (or names cl100k_base):\n%s", want, out)
	}
	if !strings.Contains(out, "Successful requests:                     4") {
		t.Errorf("not every request succeeded:\n%s\n%s", out, stderr)
	}
}

// TestEmulatedDefaultsAgree: bench's emulated target, serve and sim start
// from one deployment, so a newcomer's first bench result, `servebench
// serve` and `servebench sim` describe the same thing.
func TestEmulatedDefaultsAgree(t *testing.T) {
	bench := newBenchCmd().Flags()
	for _, cmd := range []string{"serve", "sim"} {
		c, _, err := newRootCmd().Find([]string{cmd})
		if err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]string{{"emulated-model", "model"}, {"emulated-gpu", "gpu"}} {
			want := c.Flags().Lookup(pair[1])
			got := bench.Lookup(pair[0])
			if want == nil || got == nil || got.DefValue != want.DefValue {
				t.Errorf("bench --%s default %v, %s --%s default %v", pair[0], got, cmd, pair[1], want)
			}
		}
	}
}
