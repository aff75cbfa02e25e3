package workload

import (
	"context"
	"testing"

	"github.com/servebench/servebench/internal/llamacppfake"
	"github.com/servebench/servebench/tokenizer"
)

// BenchmarkSetupLlamaCpp200 builds vLLM's default random prompts (1024
// tokens) for 200 requests through the /tokenize and /detokenize of a
// loopback llama-server stand-in that leaves Nagle on and answers in two
// writes, as llama.cpp does (internal/llamacppfake), and reports the setup
// time and the tokenizer calls per prompt. The target: under 2 s.
func BenchmarkSetupLlamaCpp200(b *testing.B) {
	for _, tc := range []struct {
		name  string
		nagle bool
	}{{"nagle", true}, {"nodelay", false}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, err := llamacppfake.Start(llamacppfake.Options{Nagle: tc.nagle})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			spec := DefaultSpec()
			spec.NumPrompts = 200
			var calls int
			for b.Loop() {
				tok, err := tokenizer.NewServer(srv.URL, tokenizer.Options{VocabSize: llamacppfake.VocabSize})
				if err != nil {
					b.Fatal(err)
				}
				before := srv.TokenizeCalls() + srv.DetokenizeCalls()
				reqs, err := Build(context.Background(), spec, tok)
				if err != nil {
					b.Fatal(err)
				}
				if len(reqs) != 200 {
					b.Fatalf("%d requests", len(reqs))
				}
				calls = srv.TokenizeCalls() + srv.DetokenizeCalls() - before
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/setup")
			b.ReportMetric(float64(calls)/200, "calls/prompt")
		})
	}
}
