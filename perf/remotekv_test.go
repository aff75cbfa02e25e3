package perf

import "testing"

func TestRemoteKVShapeTimesOneTokenPerPrefill(t *testing.T) {
	// Two decodes (contexts 50, 70) and a 100-token prefill with 20 cached.
	s := StepShape{PrefillTokens: 100, Prefills: 1, PrefillsDone: 1, Decodes: 2,
		AttnPairs: 100*20 + 100*101/2 + 50 + 70, KVTokens: 120 + 51 + 71}
	want := StepShape{Decodes: 3, AttnPairs: 120 + 50 + 70, KVTokens: 120 + 51 + 71}
	if got := RemoteKVShape(s); got != want {
		t.Errorf("RemoteKVShape = %+v, want %+v", got, want)
	}
	if got := RemoteKVShape(StepShape{Decodes: 2, AttnPairs: 9, KVTokens: 11}); got.Decodes != 2 || got.AttnPairs != 9 {
		t.Errorf("a decode-only step changed: %+v", got)
	}
}
