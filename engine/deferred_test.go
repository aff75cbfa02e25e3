package engine

import (
	"fmt"
	"slices"
	"testing"
)

// TestDeferredPromptMatchesEager: a request whose prompt IDs come from
// Config.PromptIDs on demand schedules exactly as one that carries them
// (same steps, outputs and cache hits, preemptions included), and the IDs
// are fetched only for requests that got admitted, once each.
func TestDeferredPromptMatchesEager(t *testing.T) {
	for _, v := range []Version{V0, V1} {
		for _, pp := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s pp=%d", v, pp), func(t *testing.T) {
				prompts := map[uint64][]int32{}
				for id := range uint64(120) {
					// Shared 64-token prefix in groups of 4, so hits happen.
					p := append(seqTokens(int(id/4)*7, 64), seqTokens(int(id)*1000+500, 40+int(id%50))...)
					prompts[id] = p
				}
				run := func(deferred bool) (trace []string, fetched map[uint64]int) {
					cfg := validConfig(v)
					cfg.EnablePrefixCaching = true
					cfg.NumGPUBlocks = 120 // tight: forces preemptions
					cfg.MaxNumSeqs = 16
					cfg.PipelineParallel = pp
					fetched = map[uint64]int{}
					cfg.PromptIDs = func(id uint64) []int32 { fetched[id]++; return prompts[id] }
					e, err := New(cfg)
					if err != nil {
						t.Fatal(err)
					}
					for id := range uint64(120) {
						r := Request{ID: id, MaxTokens: 30 + int(id%40)}
						if deferred {
							r.PromptLen, r.DeferredPrompt = len(prompts[id]), true
						} else {
							r.Prompt = prompts[id]
						}
						mustAdd(t, e, r)
					}
					for step := 0; !e.Idle() && step < 100000; step++ {
						st := e.Schedule(0)
						trace = append(trace, fmt.Sprintf("%+v rej=%d", st.Shape, len(st.Rejected)))
						for _, o := range e.Complete(st) {
							trace = append(trace, fmt.Sprintf("%d:%d:%d:%t", o.ID, o.NumGenerated, o.CachedTokens, o.Finished))
						}
						// V0 looks up the queue head's hits before it finds no
						// room, so one more than the admitted per engine.
						if limit := (cfg.MaxNumSeqs + 1) * pp; step == 0 && deferred && len(fetched) > limit {
							t.Fatalf("first step fetched %d prompts; only requests up for admission (≤%d) need theirs", len(fetched), limit)
						}
					}
					return trace, fetched
				}
				want, _ := run(false)
				got, fetched := run(true)
				if !slices.Equal(got, want) {
					t.Fatalf("deferred prompts changed the schedule (%d vs %d events)", len(got), len(want))
				}
				for id, n := range fetched {
					if n != 1 {
						t.Fatalf("request %d: prompt fetched %d times, want once", id, n)
					}
				}
				if len(fetched) != len(prompts) {
					t.Fatalf("%d of %d prompts fetched", len(fetched), len(prompts))
				}
			})
		}
	}
}
