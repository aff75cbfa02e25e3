package validate

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/workload"
)

func TestUnsimulableRunsAreListedAndCounted(t *testing.T) {
	c, err := LoadDir(filepath.Join("testdata", "unsimulable"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(t.Context(), c, c.Runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"fine":                "",
		"unknown-model":       "unknown model acme/not-a-model: not in perf's catalog, and no models/acme--not-a-model/config.json beside the corpus",
		"unknown-gpu":         `unknown GPU "Z9000"`,
		"weights-do-not-fit":  "vLLM would not start: Model weights need",
		"flag-not-in-release": "server flag --num-scheduler-steps: num_scheduler_steps (8): vLLM 0.5.0 has no multi-step scheduling",
		"unknown-server-flag": "server flag --speculative-model is not modelled by sim",
		"awq-on-the-fly":      "quantization awq applied on the fly to an unquantized checkpoint is not modelled",
		"fp8-on-the-fly":      "",
		"data-parallel":       "gpu_count 4 but tensor_parallel × pipeline_parallel = 1",
		"old-release":         "vLLM version 0.3.3 is not modelled",
		"fp32":                "dtype float32 is not modelled",
		"v0-removed":          "has no V0 engine",
		"context-too-long":    "every simulated request failed (50× This model's maximum context length is 128 tokens",
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results for %d runs", len(rep.Results), len(want))
	}
	for _, r := range rep.Results {
		w, ok := want[r.Run.ID]
		if !ok {
			t.Fatalf("unexpected run %s", r.Run.ID)
		}
		if w == "" && !r.Simulated() || w != "" && !strings.Contains(r.Unsimulable, w) {
			t.Errorf("%s: unsimulable %q, want %q", r.Run.ID, r.Unsimulable, w)
		}
		if strings.Contains(r.Unsimulable, "\n") {
			t.Errorf("%s: reason spans lines", r.Run.ID)
		}
	}
	s := rep.Summarize(SplitHoldout)
	if s.Runs != 12 || s.Simulated != 2 || s.Unsimulable != 10 || s.Overall.Runs != 2 {
		t.Errorf("holdout summary counts: %+v", s)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Not simulable: 11 runs (counted, not in the error tables)") ||
		!strings.Contains(b.String(), "  unsimulable/fp32: dtype float32 is not modelled") {
		t.Errorf("text:\n%s", b.String())
	}
}

// TestEvaluateIsDeterministic: the same figures whatever the number of
// workers, in the runs' order.
func TestEvaluateIsDeterministic(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	runs := c.Runs
	if testing.Short() {
		// Every fourth of the runs of at most 500 prompts still keeps four
		// workers busy (CI's -race pass); the thousand-prompt runs would
		// take most of that pass's time and show no other race.
		var small []*Run
		for _, r := range c.Runs {
			if r.Workload.NumPrompts <= 500 {
				small = append(small, r)
			}
		}
		runs = nil
		for i := 0; i < len(small); i += 4 {
			runs = append(runs, small[i])
		}
		if len(runs) < 8 {
			t.Fatalf("-short keeps %d runs; four workers need more to race", len(runs))
		}
	}
	one, err := Evaluate(t.Context(), c, runs, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	many, err := Evaluate(t.Context(), c, runs, Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one.Results, many.Results) {
		t.Fatal("1 and 4 workers gave different results")
	}
	for i, r := range many.Results {
		if r.Run != runs[i] {
			t.Fatalf("result %d is %s, run %d is %s", i, r.Run.FullID(), i, runs[i].FullID())
		}
	}
}

func TestFilter(t *testing.T) {
	c, err := LoadDir(filepath.Join("testdata", "unsimulable"))
	if err != nil {
		t.Fatal(err)
	}
	ids := func(f Filter) []string {
		var out []string
		for _, r := range f.Select(c.Runs) {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(Filter{Split: SplitFit}); !slices.Equal(got, []string{"weights-do-not-fit"}) {
		t.Errorf("--split fit: %v", got)
	}
	if got := ids(Filter{GPU: "z9000"}); !slices.Equal(got, []string{"unknown-gpu"}) {
		t.Errorf("--gpu z9000: %v", got)
	}
	if got := ids(Filter{Release: "0.5"}); !slices.Equal(got, []string{"flag-not-in-release"}) {
		t.Errorf("--release 0.5: %v", got)
	}
	if got := ids(Filter{Release: "0.11+", GPU: "L4"}); !slices.Equal(got, []string{"v0-removed"}) {
		t.Errorf("--release 0.11+ --gpu L4: %v", got)
	}
	if got := ids(Filter{Release: "0.3.3"}); !slices.Equal(got, []string{"old-release"}) {
		t.Errorf("--release 0.3.3: %v", got)
	}
	if got := ids(Filter{Regime: "serving-saturated"}); len(got) != 0 {
		t.Errorf("--regime serving-saturated: %v", got)
	}
}

func TestExpectedRows(t *testing.T) {
	e := &Expected{Cells: []Cell{
		{GPUClass: "H100", Regime: string(ServingSaturated), Runs: 12, Families: map[Family]Stat{
			FamilyThroughput: {Runs: 12, MedianAbs: 14, WorstAbs: 31}, FamilyTTFT: {Runs: 10, MedianAbs: 4.26, WorstAbs: 52.4}}},
		{GPUClass: "L4", Regime: string(ServingLow), Runs: 2, Families: map[Family]Stat{FamilyThroughput: {Runs: 2, MedianAbs: 5, WorstAbs: 6}}},
		{GPUClass: "A100", Regime: string(OfflineMixed), Runs: 1, Families: map[Family]Stat{FamilyThroughput: {Runs: 1, MedianAbs: 5, WorstAbs: 5}}},
	}}
	tests := []struct {
		gpu    string
		regime Regime
		want   [][2]string
	}{
		{"H100-SXM", ServingSaturated, [][2]string{
			{"Expected error, from the corpus:", "12 published H100 serving-saturated runs"},
			{"Expected Throughput error:", "median 14%, worst 31%"},
			{"Expected TTFT error:", "median 4.3%, worst 52% (10 runs)"}}},
		{"L4", ServingLow, [][2]string{{"Expected error:", "unknown: 2 published L4 serving-low runs (fewer than 3)"}}},
		{"A100-80GB", OfflineMixed, [][2]string{{"Expected error:", "unknown: 1 published A100 offline-mixed run (fewer than 3)"}}},
		{"B200", ServingLow, [][2]string{{"Expected error:", "unknown: no published B200 serving-low runs in the corpus"}}},
	}
	for _, tt := range tests {
		if got := e.ExpectedRows(tt.gpu, tt.regime); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s %s: %q, want %q", tt.gpu, tt.regime, got, tt.want)
		}
	}
}

// TestReportGolden pins the text and JSON layouts (the JSON's keys are a
// stable interface) on the unsimulable fixture.
func TestReportGolden(t *testing.T) {
	c, err := LoadDir(filepath.Join("testdata", "unsimulable"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(t.Context(), c, c.Runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden.CheckFile(t, filepath.Join("testdata", "golden", "report.txt"), text.Bytes())
	golden.CheckFile(t, filepath.Join("testdata", "golden", "report.json"), js.Bytes())
}

// TestPlanClient: a serving run measured by vLLM's benchmark client is
// simulated with that client's delays, one measured by inference-perf (or
// an offline run) without, and the reproduce command says which.
func TestPlanClient(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id         string
		vllmClient bool
	}{
		{"nm-vllm-nightly-2024-08/h100-llama3-8b-qps1", true},
		{"inference-sim-training/llama-2-7b-tp1-general-stage0", false},
		{"vllm-pr-7117/h100-llama3-8b-in256-out256-main", false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p := builtinPlan(t, c, tt.id)
			if p.vllmClient != tt.vllmClient {
				t.Errorf("vllmClient = %v, want %v", p.vllmClient, tt.vllmClient)
			}
			if got := slices.Contains(p.args, "vllm-bench"); got != tt.vllmClient {
				t.Errorf("reproduce command %q: --client vllm-bench present %v, want %v", p.args, got, tt.vllmClient)
			}
		})
	}
}

// TestPlanColdStart: a run the corpus records as served from an empty
// Triton cache is simulated so and its reproducing command says so; the
// others keep sim's warm default.
func TestPlanColdStart(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   string
		cold bool
	}{
		{"lambda-vllm-benchmark/h100x2-mixtral-8x7b-sharegpt10", true},
		{"inference-sim-training/mixtral-8x7b-v0-1-tp2-general-stage0", true},
		{"inference-sim-training/mixtral-8x7b-v0-1-tp2-general-stage1", false},
		{"simon-mo-vllm-benchmark-dsr1-h200/dgx-tp8-sharegpt500", false},
	} {
		t.Run(tt.id, func(t *testing.T) {
			p := builtinPlan(t, c, tt.id)
			if p.options.ColdStart != tt.cold {
				t.Errorf("options.ColdStart = %v, want %v", p.options.ColdStart, tt.cold)
			}
			if got := slices.Contains(p.args, "--cold-start"); got != tt.cold {
				t.Errorf("reproduce command %q: --cold-start present %v, want %v", p.args, got, tt.cold)
			}
		})
	}
}

// TestPlanQuantizationFlag: a run of a release older than the profile it
// is simulated with keeps the GPTQ kernel it ran (ExLlamaV2 before vLLM
// converted GPTQ to Marlin), through the flag that selects it, named in
// the reproducing command; a run simulated as a pre-Marlin release needs
// no flag, and later runs and on-the-fly fp8 keep theirs.
func TestPlanQuantizationFlag(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, simAs, want string
	}{
		{"nm-vllm-nightly-2024-03/a10g-gptq-decode-bs32", "0.5.0", "gptq"},
		{"nm-vllm-nightly-2024-03/a10g-gptq-decode-bs32", "", ""},
		{"nm-vllm-nightly-2024-06/a10g-gptq-qps1", "", ""},
		{"nm-vllm-nightly-2024-03/a10g-llama2-7b-decode-bs1", "0.5.0", ""},
		{"gpustack-quantization-impact/h100-fp8-dynamic", "", "fp8"},
	}
	for _, tt := range tests {
		t.Run(tt.id+"@"+tt.simAs, func(t *testing.T) {
			run := builtinRun(t, c, tt.id)
			if tt.simAs != "" {
				run.SimVLLMVersion = tt.simAs
			}
			p := planOf(t, c, &run)
			if p.options.Quantization != tt.want {
				t.Errorf("--quantization %q, want %q", p.options.Quantization, tt.want)
			}
			v, ok := planArg(p, "--quantization")
			if got := ok && v == tt.want; got != (tt.want != "") {
				t.Errorf("reproduce command %q: --quantization %s present %v, want %v", p.args, tt.want, got, tt.want != "")
			}
			noted := planNoted(p, "pre-Marlin kernel")
			if noted != (tt.want == "gptq") {
				t.Errorf("notes %q: pre-Marlin note present %v, want %v", p.notes, noted, tt.want == "gptq")
			}
		})
	}
}

// TestPlanPrefixIsPartOfInputLen: a run's input_len counts the whole
// prompt (vLLM's sonnet dataset and the runs' token totals count the
// shared prefix in it), while sim's random dataset, as vLLM's, adds
// random_prefix_len tokens before random_input_len: the plan passes the
// difference. Replayed per-request lengths are whole prompts, so a run
// that replays them simulates no shared prefix.
func TestPlanPrefixIsPartOfInputLen(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id                string
		prefixOnLengths   int // set on a run that replays per-request lengths
		wantInput, prefix int
		wantNote          string
	}{
		// --sonnet-input-len 1024 --sonnet-prefix-len 512: 955 tokens a request in its totals.
		{id: "vllm-pr-7921/h100-llama31-8b-sonnet-rps10-ms8", wantInput: 512, prefix: 512,
			wantNote: "input_len 1024 counts the 512-token shared prefix: each prompt is that prefix and 512 random tokens"},
		// 575 tokens measured, a 100-token system prompt among them.
		{id: "inference-sim-training/llama-2-7b-tp1-general-stage0", wantInput: 475, prefix: 100,
			wantNote: "input_len 575 counts the 100-token shared prefix"},
		{id: "gpustack-qwen3-14b-h100/random-128-4", wantInput: 128},
		{id: "dstack-h100-llama405b-fp8/sharegpt-qps16", prefixOnLengths: 40, wantNote: "the 40-token shared prefix is not simulated"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			run := builtinRun(t, c, tt.id)
			if tt.prefixOnLengths > 0 {
				if run.lengths == nil {
					t.Fatalf("%s replays no per-request lengths", tt.id)
				}
				run.Workload.PrefixLen = tt.prefixOnLengths
			}
			p := planOf(t, c, &run)
			got := p.spec.Random
			if got.PrefixLen != tt.prefix {
				t.Errorf("random prefix %d tokens, want %d", got.PrefixLen, tt.prefix)
			}
			if tt.prefixOnLengths == 0 && got.InputLen != tt.wantInput {
				t.Errorf("random input %d tokens, want %d (input_len %d less prefix_len %d)", got.InputLen, tt.wantInput, run.Workload.InputLen, run.Workload.PrefixLen)
			}
			v, ok := planArg(p, "--random-prefix-len")
			if ok != (tt.prefix > 0) || (ok && v != strconv.Itoa(tt.prefix)) {
				t.Errorf("reproduce command %q: want --random-prefix-len only when %d > 0", p.args, tt.prefix)
			}
			if v, ok := planArg(p, "--random-input-len"); ok && v != strconv.Itoa(tt.wantInput) {
				t.Errorf("reproduce command %q: want --random-input-len %d", p.args, tt.wantInput)
			}
			if tt.wantNote != "" && !planNoted(p, tt.wantNote) {
				t.Errorf("notes %q: want one saying %q", p.notes, tt.wantNote)
			}
		})
	}
}

// TestPlanShareGPTLengths: a ShareGPT run without published per-request
// lengths is simulated with ShareGPT's spread around its means
// (--random-length-dist sharegpt), one whose client fixed every reply's
// length keeps the means, and one that replays its own lengths draws none.
func TestPlanShareGPTLengths(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id       string
		wantDist string
		wantNote string
	}{
		{"gpustack-qwen3-14b-h100/sharegpt-1000", workload.LengthDistShareGPT,
			"ShareGPT approximated by random token prompts spread as ShareGPT's around the run's means (217 in, 202 out; --random-length-dist sharegpt)"},
		{"nm-vllm-nightly-2024-03/a10g-llama2-7b-sharegpt-out128", "",
			"ShareGPT approximated by random token prompts of its mean length, every reply 128 tokens as the client fixed them"},
		{"dstack-h100-llama405b-fp8/sharegpt-qps16", "", "replayed with the run's own per-request lengths"},
		{"gpustack-qwen3-14b-h100/random-128-4", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			run := builtinRun(t, c, tt.id)
			p := planOf(t, c, &run)
			if got := p.spec.Random.LengthDist; got != tt.wantDist {
				t.Errorf("length distribution %q, want %q", got, tt.wantDist)
			}
			v, ok := planArg(p, "--random-length-dist")
			if ok != (tt.wantDist != "") || (ok && v != tt.wantDist) {
				t.Errorf("reproduce command %q: want --random-length-dist %s only for a spread ShareGPT run", p.args, tt.wantDist)
			}
			if tt.wantNote != "" && !planNoted(p, tt.wantNote) {
				t.Errorf("notes %q: want one saying %q", p.notes, tt.wantNote)
			}
		})
	}
}

// A run whose client called the chat API is simulated with the server's
// chat preparation, and its reproduce command says --backend; the same run
// through the completions API gets neither, and its first tokens come
// sooner (1,000 requests at once wait behind 1,000 preparations).
func TestPlanChatBackend(t *testing.T) {
	c, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	chat := builtinRun(t, c, "gpustack-qwen3-14b-h100/random-128-4")
	completions := chat
	completions.Workload.Backend = ""
	ttft := map[string]float64{}
	for _, tt := range []struct {
		name     string
		run      Run
		wantChat bool
	}{{"chat", chat, true}, {"completions", completions, false}} {
		p := planOf(t, c, &tt.run)
		v, ok := planArg(p, "--backend")
		if p.chat != tt.wantChat || ok != tt.wantChat || (ok && v != "openai-chat") {
			t.Errorf("%s: chat %v, reproduce command %q; want chat %v and --backend openai-chat only for chat", tt.name, p.chat, p.args, tt.wantChat)
		}
		s, err := p.simulate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ttft[tt.name] = s.TTFT.Mean
	}
	// 1,000 preparations of at least 10 ms each (the 0.11 line's is more).
	const floorMs = 1000 * 10.0
	if ttft["chat"]-ttft["completions"] < floorMs {
		t.Errorf("mean TTFT %.0f ms with chat, %.0f ms without: want the chat burst at least %.0f ms later", ttft["chat"], ttft["completions"], floorMs)
	}
}

// planArg is the value p's reproduce command gives flag, and whether it
// gives the flag at all.
func planArg(p *plan, flag string) (string, bool) {
	at := slices.Index(p.args, flag)
	if at < 0 || at+1 >= len(p.args) {
		return "", false
	}
	return p.args[at+1], true
}

// planNoted reports whether one of p's notes says want.
func planNoted(p *plan, want string) bool {
	return slices.ContainsFunc(p.notes, func(n string) bool { return strings.Contains(n, want) })
}

// builtinPlan is the simulation plan of the built-in corpus run id.
func builtinPlan(t *testing.T, c *Corpus, id string) *plan {
	t.Helper()
	r := builtinRun(t, c, id)
	return planOf(t, c, &r)
}

// builtinRun is a copy of the built-in corpus run id, for a test to edit.
func builtinRun(t *testing.T, c *Corpus, id string) Run {
	t.Helper()
	i := slices.IndexFunc(c.Runs, func(r *Run) bool { return r.FullID() == id })
	if i < 0 {
		t.Fatalf("run %s not in the built-in corpus", id)
	}
	return *c.Runs[i]
}

// planOf is r's simulation plan.
func planOf(t *testing.T, c *Corpus, r *Run) *plan {
	t.Helper()
	p, err := newPlan(r, c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
