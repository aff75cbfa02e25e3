package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/workload"
)

// SidecarSuffix names the setup file beside a result file:
// results/run.json's setup is results/run.json.setup.yaml, a corpus run
// without published (the figures come from the result file).
const SidecarSuffix = ".setup.yaml"

// LoadResultRuns reads a user's own benchmark results (vLLM --save-result
// JSON or servebench result files) as runs to validate. The setup comes
// from the file: what it records itself (model_id, num_prompts,
// request_rate, burstiness, max_concurrency, token totals) and the keys
// given with --metadata when it was made (gpu, model, vllm_version, tp,
// pp, engine, quantization, kv_cache_dtype, server_args); a sidecar YAML
// beside it overrides both. Every missing field is an error naming the
// file, the field and both ways to give it.
func LoadResultRuns(paths []string) ([]*Run, error) {
	if len(paths) == 0 {
		return nil, errors.New("no result files given: pass vLLM --save-result or servebench result JSON files")
	}
	var runs []*Run
	for _, p := range paths {
		loaded, err := report.LoadResults(p)
		if err != nil {
			return nil, err
		}
		for i := range loaded {
			r, err := userRun(&loaded[i], len(loaded) == 1)
			if err != nil {
				return nil, err
			}
			runs = append(runs, r)
		}
	}
	return runs, nil
}

// userRun sets up one result as a run to validate; alone says the file
// holds no other result, so it can stand for its lengths in sim's command.
func userRun(lr *report.LoadedResult, alone bool) (*Run, error) {
	id := lr.Path
	if lr.Index > 0 {
		id = fmt.Sprintf("%s#%d", lr.Path, lr.Index+1)
	}
	if b, _ := lr.Text("backend"); b == "sim" {
		return nil, fmt.Errorf("%s: a servebench sim result: validate compares sim with measured runs; pass the result of a real benchmark (servebench bench or vLLM's)", id)
	}
	r := &Run{ID: id, File: lr.Path, Split: SplitUser, Benchmark: BenchmarkServing, DType: "auto", KVCacheDType: "auto",
		Published: map[string]float64{}, ownClient: lr.Tool == "servebench"}
	f := resultFields{lr}
	f.setup(r)
	for _, k := range append(slices.Clone(runKeys), publishedKeys(lr)...) {
		if v, ok := lr.Number(k); ok && !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			r.Published[k] = v
		}
	}
	f.workload(r)

	sidecar := lr.Path + SidecarSuffix
	if data, err := os.ReadFile(sidecar); err == nil {
		if err := applySidecar(r, sidecar, data); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", sidecar, err)
	}
	if err := checkUserRun(r, sidecar); err != nil {
		return nil, err
	}
	if err := f.lengths(r, alone); err != nil {
		return nil, err
	}
	return r, nil
}

// lengths replays a detailed result's own per-request lengths (vLLM's and
// servebench's --save-detailed write input_lens and output_lens) instead
// of the means, when the file holds that one result: sim's command then
// names the file itself (--random-lengths-from). A file of several
// results (JSONL, --append-result) cannot be named so: its means stand.
func (f resultFields) lengths(r *Run, alone bool) error {
	in, ok := f.lr.Fields["input_lens"]
	if !ok || !alone {
		return nil
	}
	// The arrays as decoded, in the form ParseLengths checks.
	data, err := json.Marshal(map[string]any{"input_lens": in, "output_lens": f.lr.Fields["output_lens"]})
	if err != nil {
		return fmt.Errorf("%s: input_lens and output_lens: %w", f.lr.Path, err)
	}
	lengths, err := workload.ParseLengths(data, f.lr.Path)
	if err != nil {
		return err
	}
	return r.useLengths(lengths, f.lr.Path, f.lr.Path+": input_lens and output_lens")
}

// resultFields reads a result file's metadata and figures, under the
// names vLLM's and servebench's results give them (the first found wins).
type resultFields struct{ lr *report.LoadedResult }

func (f resultFields) text(keys ...string) string {
	for _, k := range keys {
		if v, ok := f.lr.Lookup(k); ok {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" && s != "None" {
				return strings.TrimSpace(s)
			}
		}
	}
	return ""
}

func (f resultFields) number(keys ...string) (float64, bool) {
	for _, k := range keys {
		if v, ok := f.lr.Number(k); ok {
			return v, true
		}
	}
	return 0, false
}

func (f resultFields) intOf(def int, keys ...string) int {
	if v, ok := f.number(keys...); ok && v >= 1 && v < math.MaxInt32 {
		return int(v)
	}
	return def
}

// setup fills the run's hardware, model, release and engine flags.
func (f resultFields) setup(r *Run) {
	r.GPU = f.text("gpu")
	r.Model = f.text("model", "model_id")
	r.VLLMVersion = f.text("vllm_version")
	r.Engine = strings.ToLower(f.text("vllm_engine", "engine_version"))
	if e, ok := f.lr.Lookup("engine"); ok {
		if s, ok := e.(string); ok {
			r.Engine = strings.ToLower(s)
		}
	}
	if v, ok := f.number("vllm_use_v1"); ok && r.Engine == "" {
		r.Engine = map[bool]string{true: "v1", false: "v0"}[v != 0]
	}
	r.Quantization = f.text("quantization")
	if d := f.text("dtype"); d != "" {
		r.DType = d
	}
	if d := f.text("kv_cache_dtype"); d != "" {
		r.KVCacheDType = d
	}
	if a := f.text("server_args"); a != "" {
		r.ServerArgs = strings.Fields(a)
	}
	r.TensorParallel = f.intOf(1, "tp", "tensor_parallel", "tensor_parallel_size")
	r.PipelineParallel = f.intOf(1, "pp", "pipeline_parallel", "pipeline_parallel_size")
	r.GPUCount = f.intOf(r.TensorParallel*r.PipelineParallel, "gpu_count")
}

// workload rebuilds what the client sent: the mean lengths from the token
// totals, the load from the result's own settings.
func (f resultFields) workload(r *Run) {
	w := &r.Workload
	w.Dataset = "random"
	completed := r.Published["completed"]
	if completed > 0 {
		w.InputLen = int(math.Round(r.Published["total_input_tokens"] / completed))
		w.OutputLen = int(math.Round(r.Published["total_output_tokens"] / completed))
	}
	w.NumPrompts = f.intOf(int(completed), "num_prompts")
	if v, ok := f.number("request_rate"); ok && v > 0 {
		w.RequestRate = Rate(v)
	}
	if v, ok := f.number("burstiness"); ok && v > 0 {
		w.Burstiness = v
	}
	w.MaxConcurrency = f.intOf(0, "max_concurrency")
	if v, ok := f.number("random_range_ratio", "range_ratio"); ok {
		w.RangeRatio = v
	}
	w.PrefixLen = f.intOf(0, "random_prefix_len", "prefix_len")
	// Only a chat API changes what sim charges.
	w.Backend = runspec.FirstChatBackend(f.text("backend"), f.text("endpoint_type"))
	on := true // the lengths are the run's own means
	w.IgnoreEOS = &on
}

// checkUserRun says what a user's run lacks to be simulated, naming the
// metadata flag or sidecar field that supplies it.
func checkUserRun(r *Run, sidecar string) error {
	id, w := r.ID, &r.Workload
	missing := func(field, example string) error {
		return fmt.Errorf("%s: no %s: record it when benchmarking (--metadata %s=%s) or put it in %s (%s: %s)",
			id, field, field, example, sidecar, field, example)
	}
	switch {
	case r.GPU == "":
		return missing("gpu", "H100")
	case r.Model == "":
		return missing("model", "meta-llama/Llama-3.1-8B-Instruct")
	case r.VLLMVersion == "":
		return missing("vllm_version", "0.6.3")
	case w.InputLen < 1 || w.OutputLen < 1:
		return fmt.Errorf("%s: no token totals (completed, total_input_tokens, total_output_tokens) to rebuild the prompt and output lengths from: give workload.input_len and workload.output_len in %s", id, sidecar)
	case w.NumPrompts < 1:
		return missing("num_prompts", "1000")
	}
	if err := r.checkValues(); err != nil {
		return fmt.Errorf("%s: %w", id, err)
	}
	for k := range r.Published {
		if familyOf(k) != "" {
			return nil
		}
	}
	return fmt.Errorf("%s: no throughput or latency figures: is this a benchmark result (vLLM --save-result or servebench JSON)?", id)
}

// publishedKeys are the compared keys a result file can hold.
func publishedKeys(lr *report.LoadedResult) []string {
	keys := []string{"request_throughput", "output_throughput", "total_token_throughput"}
	for _, stat := range []string{"mean", "median", "p99"} {
		for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
			keys = append(keys, stat+"_"+m+"_ms")
		}
	}
	var extra []string
	for k := range lr.Fields {
		if metricKey.MatchString(k) && !slices.Contains(keys, k) && !strings.HasPrefix(k, "std_") {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	return append(keys, extra...)
}

// applySidecar overrides the run's setup with the sidecar's keys (the
// corpus run schema without published).
func applySidecar(r *Run, path string, data []byte) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	if len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	if mapValue(doc, "published") != nil {
		return fmt.Errorf("%s: field published: the figures come from the result file; leave published out of the setup", path)
	}
	if err := checkKeys(doc, Run{}, ""); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	published, id, split := r.Published, r.ID, r.Split
	if err := doc.Decode(r); err != nil {
		return fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	r.Published, r.ID, r.Split = published, id, split
	return nil
}

// Hint says that a user's runs share an error sim's calibration could
// remove, and the command that fits it.
type Hint struct {
	Runs    []string `json:"runs"`
	Reason  string   `json:"reason"`
	Command string   `json:"command"`
}

// systematicThreshold: a family's errors that share their sign and whose
// median exceeds this (percent) are systematic.
const systematicThreshold = 15

// CalibrateHints finds, among a user's own simulated runs grouped by model,
// GPU, release and parallelism (calibrate fits one deployment at a time),
// the families whose errors all share one sign with a median above 15%,
// and prints the calibrate command for that group.
func (rep *Report) CalibrateHints() []Hint {
	type group struct {
		key  string
		runs []*Result
	}
	var groups []*group
	byKey := map[string]*group{}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Run.Split != SplitUser || !r.Simulated() {
			continue
		}
		k := strings.Join([]string{r.Run.Model, r.GPU, r.Run.VLLMVersion, strconv.Itoa(r.Run.TensorParallel)}, "\x00")
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.runs = append(g.runs, r)
	}
	var hints []Hint
	for _, g := range groups {
		var off []string
		for _, f := range []Family{FamilyTTFT, FamilyTPOT, FamilyThroughput} {
			var errs []float64
			for _, r := range g.runs {
				if m, ok := r.Headline(f); ok {
					errs = append(errs, 100*m.Error)
				}
			}
			if len(errs) == 0 {
				continue
			}
			slices.Sort(errs)
			sameSign := errs[0] > 0 || errs[len(errs)-1] < 0
			med := errs[len(errs)/2]
			if len(errs)%2 == 0 {
				med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
			}
			if sameSign && math.Abs(med) > systematicThreshold {
				dir := "high"
				if med < 0 {
					dir = "low"
				}
				off = append(off, fmt.Sprintf("%s %+.0f%% (median of %d, all %s)", f.Title(), med, len(errs), dir))
			}
		}
		if len(off) == 0 {
			continue
		}
		first := g.runs[0].Run
		var files []string
		for _, r := range g.runs {
			if !slices.Contains(files, r.Run.File) {
				files = append(files, r.Run.File)
			}
		}
		args := []string{"servebench", "calibrate", "--model", shellQuote(first.Model), "--gpu", shellQuote(g.runs[0].GPU),
			"--vllm-version", shellQuote(first.VLLMVersion)}
		if first.TensorParallel > 1 {
			args = append(args, "--tensor-parallel-size", strconv.Itoa(first.TensorParallel))
		}
		for _, f := range files {
			args = append(args, shellQuote(f))
		}
		var ids []string
		for _, r := range g.runs {
			ids = append(ids, r.Run.FullID())
		}
		hints = append(hints, Hint{Runs: ids,
			Reason: fmt.Sprintf("sim is systematically off on your %s runs on %s (vLLM %s): %s. Calibrating on these files would help:",
				first.Model, g.runs[0].GPU, first.VLLMVersion, strings.Join(off, "; ")),
			Command: strings.Join(args, " ")})
	}
	return hints
}
