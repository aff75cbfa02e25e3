package engine

import "testing"

// A prompt whose KV arrived from a prefill instance costs the decode
// engine's token budget one token, not the prompt: with a 64-token budget a
// 1000-token remote prompt and three others are admitted in one step.
func TestRemotePromptTokensSkipTheBudget(t *testing.T) {
	for _, tc := range []struct {
		name       string
		remote     int
		wantTokens int
	}{
		{"local prompts are charged whole", 0, 64},
		{"remote prompts charge their last token", 1000, 4},
		{"more remote tokens than the prompt still compute the last", 5000, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Version: V1, BlockSize: 16, NumGPUBlocks: 1000, MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxModelLen: 4096}
			e, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if err := e.Add(Request{ID: uint64(i), PromptLen: 1000, MaxTokens: 3, RemotePromptTokens: tc.remote}); err != nil {
					t.Fatal(err)
				}
			}
			st := e.Schedule(0)
			if got := st.Shape.Tokens(); got != tc.wantTokens {
				t.Fatalf("first step computes %d tokens, want %d", got, tc.wantTokens)
			}
			if tc.remote > 0 {
				if st.Shape.KVTokens != 4*1000 {
					t.Errorf("KV tokens %d, want every prompt's context (4000)", st.Shape.KVTokens)
				}
				outs := e.Complete(st)
				if len(outs) != 4 || outs[0].NewTokens != 1 {
					t.Errorf("outputs %+v: every remote request should sample its first token in the first step", outs)
				}
			}
		})
	}
}

func TestRemotePromptTokensNegativeIsABadRequest(t *testing.T) {
	e, err := New(Config{Version: V1, BlockSize: 16, NumGPUBlocks: 100, MaxNumSeqs: 8, MaxNumBatchedTokens: 64, MaxModelLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Add(Request{ID: 1, PromptLen: 10, MaxTokens: 1, RemotePromptTokens: -1}); err == nil {
		t.Fatal("a negative remote prompt was accepted")
	}
}
