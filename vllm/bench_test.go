package vllm_test

import (
	"testing"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/vllm"
)

// BenchmarkStepTime: what host modelling adds per simulated step over the
// bare roofline (sim's speed budget is 10%).
func BenchmarkStepTime(b *testing.B) {
	r, err := resolve(b, "0.8.5", "", "Llama-3.1-8B", "H100", vllm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	host := r.StepModel.(*vllm.HostStepModel)
	shape := perf.StepShape{PrefillTokens: 1800, Prefills: 9, PrefillsDone: 8, Decodes: 248, AttnPairs: 400000, KVTokens: 60000}
	b.Run("roofline", func(b *testing.B) {
		for b.Loop() {
			host.GPU.StepTime(shape)
		}
	})
	b.Run("host", func(b *testing.B) {
		for b.Loop() {
			host.StepTimeHost(shape)
		}
	})
}
