package engine

import (
	"testing"
	"time"
)

// BenchmarkDecodeStep is one Schedule+Complete of 256 decoding sequences
// (the steady state of a saturated server); tokens/s is tokens the engine
// can account for per wall-clock second.
func BenchmarkDecodeStep(b *testing.B) {
	for _, caching := range []bool{false, true} {
		for _, v := range []Version{V0, V1} {
			name := string(v)
			if caching {
				name += "-prefix-caching"
			}
			b.Run(name, func(b *testing.B) {
				cfg := validConfig(v)
				cfg.NumGPUBlocks = 1 << 20
				cfg.MaxModelLen = 1 << 20
				cfg.EnableChunkedPrefill = true
				cfg.EnablePrefixCaching = caching
				e, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				for id := range uint64(256) {
					if err := e.Add(Request{ID: id, Prompt: seqTokens(int(id)*1000, 200), MaxTokens: 1 << 19}); err != nil {
						b.Fatal(err)
					}
				}
				for range 50 {
					e.Complete(e.Schedule(0))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					e.Complete(e.Schedule(time.Duration(0)))
				}
				b.ReportMetric(float64(b.N)*256/b.Elapsed().Seconds(), "tokens/s")
			})
		}
	}
}
