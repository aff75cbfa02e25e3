package calibrate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRejectsIncompleteRuns: a result file that lacks what a fit
// needs gets one error that names the file and what is missing, and a
// complete file without per-request records is rebuilt from its rate and
// mean lengths.
func TestLoadRejectsIncompleteRuns(t *testing.T) {
	complete := func() map[string]any {
		return map[string]any{
			"model_id": "Qwen2-0.5B", "completed": 10, "total_input_tokens": 1000, "total_output_tokens": 500,
			"mean_ttft_ms": 20.0, "median_ttft_ms": 19.0, "mean_tpot_ms": 5.5, "median_tpot_ms": 5.0,
			"request_rate": 4.0, "burstiness": 1.0, "max_concurrency": 8,
		}
	}
	tests := []struct {
		name   string
		edit   func(map[string]any)
		given  Tags
		errHas string // empty: loads
	}{
		{name: "complete", given: Tags{GPU: "H100"}},
		{name: "no model", edit: func(m map[string]any) { delete(m, "model_id") }, given: Tags{GPU: "H100"}, errHas: "no model recorded; pass --model"},
		{name: "no GPU", errHas: "no GPU recorded (servebench writes it with --metadata gpu=NAME); pass --gpu"},
		{name: "unknown model", given: Tags{Model: "no-such-model", GPU: "H100"}, errHas: "no-such-model"},
		{name: "no TPOT", edit: func(m map[string]any) { delete(m, "median_tpot_ms") }, given: Tags{GPU: "H100"}, errHas: "no median_tpot_ms: is this a benchmark result"},
		{name: "zero TPOT", edit: func(m map[string]any) { m["median_tpot_ms"] = 0.0 }, given: Tags{GPU: "H100"}, errHas: "must both be positive"},
		{name: "nothing completed", edit: func(m map[string]any) { m["completed"] = 0 }, given: Tags{GPU: "H100"}, errHas: "no completed requests recorded"},
		{name: "no totals", edit: func(m map[string]any) { delete(m, "total_output_tokens") }, given: Tags{GPU: "H100"}, errHas: "no total_input_tokens / total_output_tokens"},
		{name: "no rate, no records", edit: func(m map[string]any) { delete(m, "request_rate") }, given: Tags{GPU: "H100"}, errHas: "no per-request records and no request_rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := complete()
			if tc.edit != nil {
				tc.edit(run)
			}
			path := writeResult(t, run)
			obs, err := Load([]string{path}, LoadOptions{Given: tc.given, Seed: 1})
			if tc.errHas != "" {
				if err == nil {
					t.Fatalf("loaded; want an error containing %q", tc.errHas)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, tc.errHas) || strings.Contains(msg, "\n") {
					t.Fatalf("error %q; want one line naming %s and containing %q", msg, path, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := obs[0]
			if o.FromRecords || len(o.Requests) != 10 || o.MaxConcurrency != 8 {
				t.Fatalf("rebuilt %d requests (from records %v, concurrency %d); want 10 from the rate, concurrency 8", len(o.Requests), o.FromRecords, o.MaxConcurrency)
			}
			for _, r := range o.Requests {
				if r.PromptLen != 100 || r.MaxTokens != 50 {
					t.Fatalf("request %d: %d in, %d out; want the means 100 and 50", r.Index, r.PromptLen, r.MaxTokens)
				}
			}
			if want := (Figures{MeanTTFT: 20, MedianTTFT: 19, MeanTPOT: 5.5, MedianTPOT: 5}); o.Observed != want {
				t.Fatalf("figures %+v; want %+v", o.Observed, want)
			}
		})
	}
}

// A run whose client called a chat API (backend, or endpoint_type beside a
// default backend) is replayed with the server's chat preparation, so a
// burst's first tokens come later than the same run's through completions.
func TestObservationChatBackend(t *testing.T) {
	ttft := map[bool]float64{}
	for _, tc := range []struct {
		fields   map[string]any
		wantChat bool
	}{
		{map[string]any{"backend": "vllm"}, false},
		{map[string]any{"backend": "openai-chat"}, true},
		{map[string]any{"backend": "vllm", "endpoint_type": "openai-chat"}, true},
	} {
		run := map[string]any{
			"model_id": "Qwen2-0.5B", "completed": 200, "total_input_tokens": 20000, "total_output_tokens": 2000,
			"mean_ttft_ms": 20.0, "median_ttft_ms": 19.0, "mean_tpot_ms": 5.5, "median_tpot_ms": 5.0,
			"request_rate": "inf", "burstiness": 1.0, "vllm_version": "0.11.0",
		}
		for k, v := range tc.fields {
			run[k] = v
		}
		path := writeResult(t, run)
		obs, err := Load([]string{path}, LoadOptions{Given: Tags{GPU: "H100"}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if obs[0].Chat != tc.wantChat {
			t.Errorf("%v: Chat %v, want %v", tc.fields, obs[0].Chat, tc.wantChat)
		}
		f, err := simulate(t.Context(), &obs[0], Params{})
		if err != nil {
			t.Fatal(err)
		}
		ttft[obs[0].Chat] = f.MeanTTFT
	}
	// 200 requests at once wait behind 200 preparations of vLLM 0.11.0's
	// (16.7 ms for a model whose chat template was not measured) before
	// the first reaches the engine.
	if ttft[true]-ttft[false] < 200*16 {
		t.Errorf("mean TTFT %.0f ms with chat, %.0f ms without: want the chat burst at least 3.2 s later", ttft[true], ttft[false])
	}
}

// writeResult writes run as a result JSON file in a fresh directory.
func writeResult(t *testing.T, run map[string]any) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A vLLM --save-detailed file without start_times (vLLM before 0.6.3) is
// rebuilt from its rate, with every request's own prompt and output
// length in order; lists that do not cover every request fall back to
// the means.
func TestRebuiltRequestsKeepRecordedLengths(t *testing.T) {
	run := func(ins []any) map[string]any {
		return map[string]any{
			"model_id": "Qwen2-0.5B", "completed": 4, "total_input_tokens": 400, "total_output_tokens": 40,
			"mean_ttft_ms": 20.0, "median_ttft_ms": 19.0, "mean_tpot_ms": 5.5, "median_tpot_ms": 5.0,
			"request_rate": "inf", "ttfts": []any{0.02, 0.02, 0.02, 0.02}, "errors": []any{"", "", "", ""},
			"input_lens": ins, "output_lens": []any{5, 15, 8, 12},
		}
	}
	tests := []struct {
		name    string
		ins     []any
		wantIn  []int
		wantOut []int
	}{
		{"every request's lengths", []any{10, 300, 40, 50}, []int{10, 300, 40, 50}, []int{5, 15, 8, 12}},
		{"prompt lengths missing", nil, []int{100, 100, 100, 100}, []int{5, 15, 8, 12}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := Load([]string{writeResult(t, run(tc.ins))}, LoadOptions{Given: Tags{GPU: "H100"}, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			reqs := obs[0].Requests
			if obs[0].FromRecords || len(reqs) != 4 {
				t.Fatalf("%d requests, from records %v; want 4 rebuilt from the rate", len(reqs), obs[0].FromRecords)
			}
			for i, r := range reqs {
				if r.PromptLen != tc.wantIn[i] || r.MaxTokens != tc.wantOut[i] || r.Arrival != 0 {
					t.Fatalf("request %d: %d in, %d out at %v; want %d in, %d out at 0", i, r.PromptLen, r.MaxTokens, r.Arrival, tc.wantIn[i], tc.wantOut[i])
				}
			}
		})
	}
}
