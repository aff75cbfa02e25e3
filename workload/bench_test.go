package workload

import (
	"context"
	"testing"
)

// BenchmarkBuildRandom builds vLLM's default random workload scaled to
// 10,000 prompts of 1024 tokens.
func BenchmarkBuildRandom(b *testing.B) {
	s := randomSpec(10000, 1024, 128, 0, 0)
	ctx := context.Background()
	b.Run("no-tokenizer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(ctx, s, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(s.NumPrompts)*float64(b.N)/b.Elapsed().Seconds(), "prompts/s")
	})
	b.Run("fake-tokenizer", func(b *testing.B) {
		tok := newGreedyTokenizer()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Build(ctx, s, tok); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(s.NumPrompts)*float64(b.N)/b.Elapsed().Seconds(), "prompts/s")
	})
}

func BenchmarkSchedule(b *testing.B) {
	const n = 1_000_000
	for _, bc := range []struct {
		name string
		a    Arrivals
	}{
		{"poisson", Arrivals{Rate: 1000, Burstiness: 1}},
		{"gamma-0.5", Arrivals{Rate: 1000, Burstiness: 0.5}},
		{"constant", Arrivals{Rate: 1000, Burstiness: inf}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(mustSchedule(b, n, bc.a)) != n {
					b.Fatal("short schedule")
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/n, "ns/arrival")
		})
	}
}
