package validate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// plan is one run's simulation, set up exactly as `servebench sim args...`
// sets it up from its flags (cmd/servebench/sim.go, engineflags.go,
// workloadflags.go): the same model, GPU, release profile, engine options,
// workload spec, arrivals and summary options.
type plan struct {
	args  []string
	notes []string

	profile        vllm.Profile
	model          perf.Model
	gpu            perf.GPU
	options        vllm.Options
	spec           workload.Spec
	arrivals       workload.Arrivals
	maxConcurrency int
	summary        metrics.Options
	// batchLatency: the latency benchmark's figure is the whole batch's
	// time, the simulated duration.
	batchLatency bool
	// vllmClient: the figures were measured by vLLM's own serving
	// benchmark client (benchmark: serving), whose one thread the
	// simulated records pass through.
	vllmClient bool
	// chat: the client called a chat API, whose preparation the server
	// pays per request (sim.Config.ChatPrepare).
	chat      bool
	inputLen  int
	outputLen int
	// lengthDist is how sim spreads the lengths around their means
	// (--random-length-dist).
	lengthDist string
}

// unsimulable is a run sim cannot simulate, with the reason.
type unsimulable struct{ reason string }

func (u *unsimulable) Error() string { return u.reason }

func cannot(format string, args ...any) error {
	return &unsimulable{fmt.Sprintf(format, args...)}
}

// newPlan turns a run's setup into sim's inputs and the equivalent
// command line. Its errors are the reasons a run cannot be simulated.
func newPlan(r *Run, c *Corpus, o Options) (*plan, error) {
	p := &plan{}
	model, modelArg, err := lookupModel(r, c, o)
	if err != nil {
		return nil, err
	}
	p.model = model
	server, err := runspec.ParseServerArgs(r.ServerArgs)
	if err != nil {
		return nil, cannot("%v", err)
	}
	if ig := server.Ignored(); len(ig) > 0 {
		p.notes = append(p.notes, "server flags with no effect on the simulation: "+strings.Join(ig, " "))
	}
	kvDType, onTheFly, err := p.planPrecision(r, server)
	if err != nil {
		return nil, err
	}
	tp, pp := r.TensorParallel, r.PipelineParallel
	if err := checkParallelSizes(r, server); err != nil {
		return nil, err
	}
	gpu, err := perf.LookupGPU(r.GPU)
	if err != nil {
		return nil, cannot("unknown GPU %q: not in perf's catalog (servebench sim --help lists it); a GPU the corpus needs goes in perf/gpu.go with its data sheet", r.GPU)
	}
	p.gpu = gpu
	eng := engine.Version(r.Engine)
	release := r.simRelease()
	if release != r.VLLMVersion {
		p.notes = append(p.notes, fmt.Sprintf("vLLM %s simulated as release %s", r.VLLMVersion, release))
	}
	p.profile, err = vllm.Lookup(release, eng)
	if err != nil {
		return nil, cannot("vLLM %s (engine %s): %v", r.VLLMVersion, r.Engine, err)
	}

	// The engine options start from sim's flag defaults.
	p.options = vllm.Options{ModelID: r.Model, TensorParallel: tp, PipelineParallel: pp, BlockSize: 16, GPUMemoryUtilization: 0.9,
		KVCacheDType: kvDType, Nodes: 1}
	p.args = []string{"--model", modelArg, "--gpu", gpu.Name, "--vllm-version", release}
	if r.Engine != "" {
		p.args = append(p.args, "--engine", r.Engine)
	}
	if tp != 1 {
		p.args = append(p.args, "--tensor-parallel-size", strconv.Itoa(tp))
	}
	if pp != 1 {
		p.args = append(p.args, "--pipeline-parallel-size", strconv.Itoa(pp))
	}
	if kvDType != "auto" {
		p.args = append(p.args, "--kv-cache-dtype", kvDType)
	}
	if quantization := p.quantizationFlag(r, release, server, onTheFly); quantization != "" {
		p.options.Quantization = quantization
		p.args = append(p.args, "--quantization", quantization)
	}
	if err := p.planDeploymentFields(r); err != nil {
		return nil, err
	}
	p.args = append(p.args, server.Apply(&p.options)...)
	p.planWorkload(r)
	return p, nil
}

// checkParallelSizes refuses a run whose server flags contradict its own
// parallel sizes, or whose GPUs are not all one model replica.
func checkParallelSizes(r *Run, server *runspec.ServerArgs) error {
	tp, pp := r.TensorParallel, r.PipelineParallel
	if server.Changed("tensor-parallel-size") && server.Engine.TensorParallel != tp {
		return cannot("server flag --tensor-parallel-size %d disagrees with the run's own %d", server.Engine.TensorParallel, tp)
	}
	if server.Changed("pipeline-parallel-size") && server.Engine.PipelineParallel != pp {
		return cannot("server flag --pipeline-parallel-size %d disagrees with the run's own %d", server.Engine.PipelineParallel, pp)
	}
	if r.GPUCount != tp*pp {
		return cannot("gpu_count %d but tensor_parallel × pipeline_parallel = %d: data-parallel replicas are not simulated", r.GPUCount, tp*pp)
	}
	return nil
}

// planDeploymentFields applies the run's fields that are sim flags rather
// than vllm serve flags: the interconnect, FlashInfer's sampler and a
// cold Triton cache.
func (p *plan) planDeploymentFields(r *Run) error {
	if r.Link != "" {
		link, err := perf.ParseLink(r.Link, "link")
		if err != nil {
			return cannot("link %s: %v", r.Link, err)
		}
		p.options.Link = link
		p.args = append(p.args, "--link", r.Link)
	}
	if r.FlashInferSampler {
		p.options.FlashInferSampler = true
		p.args = append(p.args, "--flashinfer-sampler")
	}
	if r.ColdStart {
		p.options.ColdStart = true
		p.args = append(p.args, "--cold-start")
	}
	return nil
}

// lookupModel finds the model: a config.json committed beside the corpus
// first, then perf's catalog (or a config.json path). A user's own run may
// also name a model in the local Hugging Face cache; the corpus never
// depends on one.
func lookupModel(r *Run, c *Corpus, o Options) (perf.Model, string, error) {
	if data, where, ok := c.modelConfig(r.Model); ok {
		m, err := perf.ParseModelConfig(data, where)
		if err != nil {
			return perf.Model{}, "", cannot("model %s: %v", r.Model, err)
		}
		return m, where, nil
	}
	dirs := []string(nil)
	if r.Source == nil {
		dirs = o.HFCacheDirs
	}
	m, err := perf.LookupModelInCache(r.Model, dirs)
	if err != nil {
		return perf.Model{}, "", cannot("unknown model %s: not in perf's catalog, and no models/%s/config.json beside the corpus", r.Model, strings.ReplaceAll(r.Model, "/", "--"))
	}
	return m, r.Model, nil
}

// planPrecision checks the run's precision (checkPrecision) and, for fp8
// applied on the fly, serves p.model as an fp8 checkpoint.
func (p *plan) planPrecision(r *Run, server *runspec.ServerArgs) (kvDType, onTheFly string, err error) {
	if kvDType, onTheFly, err = checkPrecision(r, p.model, server); err != nil || onTheFly == "" {
		return kvDType, onTheFly, err
	}
	if p.model, err = p.model.WithQuantization(onTheFly); err != nil {
		return "", "", cannot("quantization %s: %v", onTheFly, err)
	}
	p.notes = append(p.notes, fmt.Sprintf("quantization %s applied to the unquantized checkpoint as it loads, as sim --quantization %s does", onTheFly, onTheFly))
	return kvDType, onTheFly, nil
}

// quantizationFlag is sim's --quantization for the run: the server's
// own flag, else the method applied on the fly, else, for a release
// older than the one simulated that ran the checkpoint's method before
// vLLM converted it to Marlin, the flag that selects that older kernel
// in the simulated release.
func (p *plan) quantizationFlag(r *Run, release string, server *runspec.ServerArgs, onTheFly string) string {
	if server.Changed("quantization") {
		return server.Engine.Quantization
	}
	if onTheFly != "" {
		return onTheFly
	}
	method := p.model.Quantization.Method
	flag := vllm.PreMarlinQuantizationFlag(r.VLLMVersion, release, method)
	if flag != "" {
		p.notes = append(p.notes, fmt.Sprintf("vLLM %s ran %s checkpoints on its pre-Marlin kernel: simulated with --quantization %s, which selects that kernel in %s", r.VLLMVersion, method, flag, release))
	}
	return flag
}

// checkPrecision refuses what sim cannot express: quantization other than
// fp8 applied on the fly to an unquantized checkpoint (sim takes gptq and
// awq from the checkpoint's config.json) and fp32. It returns the KV cache
// dtype the run used and the method to apply on the fly ("" for none).
func checkPrecision(r *Run, m perf.Model, server *runspec.ServerArgs) (kvDType, onTheFly string, err error) {
	want := perf.QuantizationMethod(r.Quantization)
	if flag := perf.QuantizationMethod(server.Engine.Quantization); server.Changed("quantization") && flag != want && want != "" {
		return "", "", cannot("server flag --quantization %s disagrees with the run's quantization %q", server.Engine.Quantization, r.Quantization)
	} else if want == "" {
		want = flag
	}
	have := perf.QuantizationMethod(m.Quantization.Method)
	if want != "" && want != have {
		if have != "" {
			return "", "", cannot("quantization %s, but the checkpoint's config.json says %s", want, have)
		}
		if want != "fp8" {
			return "", "", cannot("quantization %s applied on the fly to an unquantized checkpoint is not modelled: only fp8 is (sim reads gptq and awq from the checkpoint's config.json; commit the quantized checkpoint's config under models/)", want)
		}
		onTheFly = want
	}
	dtype := strings.ToLower(r.DType)
	if server.Changed("dtype") {
		if r.DType != "auto" && !strings.EqualFold(server.DType, r.DType) {
			return "", "", cannot("server flag --dtype %s disagrees with the run's dtype %s", server.DType, r.DType)
		}
		dtype = strings.ToLower(server.DType)
	}
	switch dtype {
	case "auto", "half", "float16", "fp16", "bfloat16", "bf16":
	default:
		return "", "", cannot("dtype %s is not modelled (sim models 16-bit activations)", dtype)
	}
	kv := r.KVCacheDType
	if server.Changed("kv-cache-dtype") && server.Engine.KVCacheDType != kv {
		if kv != "auto" {
			return "", "", cannot("server flag --kv-cache-dtype %s disagrees with the run's kv_cache_dtype %s", server.Engine.KVCacheDType, kv)
		}
		kv = server.Engine.KVCacheDType
	}
	return kv, onTheFly, nil
}

// planWorkload sets the workload as sim's flags would. Every dataset is
// simulated as token-ID prompts of the run's lengths (the random dataset):
// sim needs no dataset file, and ShareGPT's mean lengths, sonnet's shared
// prefix and fixed lengths all have a random-dataset spelling.
func (p *plan) planWorkload(r *Run) {
	w := r.Workload
	prefixLen := p.planLengths(r)
	spec := workload.DefaultSpec()
	spec.Dataset = workload.DatasetRandom
	spec.NumPrompts = w.NumPrompts
	spec.Random = workload.RandomOptions{InputLen: p.inputLen, OutputLen: p.outputLen, RangeRatio: w.RangeRatio, PrefixLen: prefixLen,
		Lengths: r.lengths, LengthDist: p.lengthDist}
	rate := float64(w.RequestRate)
	switch r.Benchmark {
	case BenchmarkLatency:
		spec.NumPrompts = w.BatchSize
		p.batchLatency = true
		rate = math.Inf(1)
		p.options.Offline = true // benchmark_latency runs the LLM class
	case BenchmarkThroughput:
		rate = math.Inf(1)
		p.options.Offline = true // so does benchmark_throughput
	}
	p.spec = spec
	p.arrivals = workload.Arrivals{Rate: rate, Burstiness: w.Burstiness, Seed: spec.Seed}
	p.maxConcurrency = w.MaxConcurrency

	p.args = append(p.args, "--dataset-name", "random", "--num-prompts", strconv.Itoa(spec.NumPrompts))
	if r.lengths != nil {
		p.args = append(p.args, "--random-lengths-from", r.lengthsFile)
	} else {
		p.args = append(p.args, "--random-input-len", strconv.Itoa(p.inputLen), "--random-output-len", strconv.Itoa(p.outputLen))
	}
	if w.RangeRatio != 0 {
		p.args = append(p.args, "--random-range-ratio", strconv.FormatFloat(w.RangeRatio, 'g', -1, 64))
	}
	if p.lengthDist != "" {
		p.args = append(p.args, "--random-length-dist", p.lengthDist)
	}
	if prefixLen != 0 {
		p.args = append(p.args, "--random-prefix-len", strconv.Itoa(prefixLen))
	}
	p.vllmClient = r.Benchmark == BenchmarkServing && !r.ownClient && r.Client == ""
	if p.vllmClient {
		// The command a user runs to reproduce the figures says so too.
		p.args = append(p.args, "--client", "vllm-bench")
	}
	if r.Benchmark == BenchmarkServing {
		// checkValues leaves a backend only on serving runs.
		if w.Backend != "" {
			p.chat = runspec.ChatBackend(w.Backend)
			p.args = append(p.args, "--backend", w.Backend)
		}
		if !math.IsInf(rate, 1) {
			p.args = append(p.args, "--request-rate", strconv.FormatFloat(rate, 'g', -1, 64))
		}
		if w.Burstiness != 1 {
			p.args = append(p.args, "--burstiness", strconv.FormatFloat(w.Burstiness, 'g', -1, 64))
		}
		if w.MaxConcurrency > 0 {
			p.args = append(p.args, "--max-concurrency", strconv.Itoa(w.MaxConcurrency))
		}
	} else {
		p.args = append(p.args, "--throughput")
	}
	p.planPercentiles(r)
}

// planLengths sets the prompt and output lengths sim sends, notes how they
// stand for the run's, and returns the shared prefix sim puts before each
// prompt. input_len is the whole prompt, as a run's token totals count it;
// sim's random dataset (as vLLM's) puts random_prefix_len shared tokens
// before random_input_len of its own.
func (p *plan) planLengths(r *Run) (prefixLen int) {
	w := r.Workload
	prefixLen = w.PrefixLen
	p.inputLen, p.outputLen = w.InputLen-prefixLen, w.OutputLen
	if !*w.IgnoreEOS && r.lengths == nil {
		completed, out := r.Published["completed"], r.Published["total_output_tokens"]
		if completed > 0 && out > 0 {
			mean := max(1, int(math.Round(out/completed)))
			if mean != w.OutputLen {
				p.notes = append(p.notes, fmt.Sprintf("outputs stopped at EOS: simulated at the run's mean of %d tokens (total_output_tokens / completed), not output_len %d", mean, w.OutputLen))
			}
			p.outputLen = mean
		} else {
			p.notes = append(p.notes, fmt.Sprintf("outputs stopped at EOS, and no totals give their mean: simulated at output_len %d", w.OutputLen))
		}
	}
	switch {
	case r.lengths != nil:
		p.notes = append(p.notes, fmt.Sprintf("%s replayed with the run's own per-request lengths (%s; random token prompts)", w.Dataset, r.lengthsFile))
		if prefixLen > 0 {
			p.notes = append(p.notes, fmt.Sprintf("the replayed lengths are whole prompts: the %d-token shared prefix is not simulated, so no prompt shares cached blocks", prefixLen))
			prefixLen = 0
		}
	case w.Dataset == "sharegpt" && w.ShareGPTOutputLen > 0:
		p.notes = append(p.notes, fmt.Sprintf("ShareGPT approximated by random token prompts of its mean length, every reply %d tokens as the client fixed them", w.ShareGPTOutputLen))
	case w.Dataset == "sharegpt":
		p.lengthDist = workload.LengthDistShareGPT
		p.notes = append(p.notes, fmt.Sprintf("ShareGPT approximated by random token prompts spread as ShareGPT's around the run's means (%d in, %d out; --random-length-dist sharegpt): "+
			"prompts shaped as vLLM's own ShareGPT sample, replies log-normal with ShareGPT's median/mean of 0.63", p.inputLen, p.outputLen))
	case w.Dataset == "sonnet":
		p.notes = append(p.notes, "sonnet approximated by random token prompts of the same lengths and shared prefix")
	}
	if prefixLen > 0 {
		p.notes = append(p.notes, fmt.Sprintf("input_len %d counts the %d-token shared prefix: each prompt is that prefix and %d random tokens (--random-input-len %d --random-prefix-len %d)",
			w.InputLen, prefixLen, p.inputLen, p.inputLen, prefixLen))
	}
	return prefixLen
}

// planPercentiles asks for the percentiles the run published, as
// --metric-percentiles and --percentile-metrics would.
func (p *plan) planPercentiles(r *Run) {
	percentiles := []float64{99}
	e2el := false
	for k := range r.Published {
		m := metricKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		e2el = e2el || m[4] == "e2el"
		if m[2] != "" {
			v, _ := strconv.ParseFloat(m[2], 64)
			percentiles = append(percentiles, v)
		}
	}
	slices.Sort(percentiles)
	percentiles = slices.Compact(percentiles)
	p.summary = metrics.Options{Percentiles: append([]float64{50, 95, 99}, percentiles...)}
	if e2el && !p.batchLatency {
		p.args = append(p.args, "--percentile-metrics", "ttft,tpot,itl,e2el")
	}
	if len(percentiles) > 1 {
		list := make([]string, len(percentiles))
		for i, v := range percentiles {
			list[i] = strconv.FormatFloat(v, 'f', -1, 64)
		}
		p.args = append(p.args, "--metric-percentiles", strings.Join(list, ","))
	}
}

// simulate runs the plan as `servebench sim` runs its flags: vllm.Resolve,
// the random dataset streamed without a tokenizer (token IDs only when the
// prefix cache needs them), sim.RunStream with the release's stats
// cadence, and metrics' recorder summarising over the span to the last
// completion.
func (p *plan) simulate(ctx context.Context) (metrics.Summary, error) {
	r, err := vllm.Resolve(ctx, p.profile, p.model, p.gpu, p.options)
	if err != nil {
		var opt *vllm.OptionError
		if errors.As(err, &opt) {
			return metrics.Summary{}, cannot("server flag --%s: %s", strings.ReplaceAll(opt.Option, "_", "-"), opt.Msg)
		}
		return metrics.Summary{}, cannot("vLLM would not start: %s", oneLine(err.Error()))
	}
	stream, err := workload.NewTokenizedStream(ctx, p.spec, p.arrivals, nil, r.Engine.EnablePrefixCaching)
	if err != nil {
		return metrics.Summary{}, cannot("workload: %v", err)
	}
	recorder := metrics.NewRecorder(p.summary, nil, metrics.KeepNone)
	cfg := sim.ConfigFor(r)
	cfg.StatsInterval, cfg.MaxConcurrency = r.StatsInterval, p.maxConcurrency
	if p.chat {
		cfg.ChatClient(r)
	}
	// The published figures are what vLLM's benchmark client observed: its
	// one thread queues every send and chunk (vllm doc, "Benchmark client"),
	// so those runs keep their records whole and pass them through it
	// before summing; the others are summed as they come.
	var client sim.ClientCost
	if p.vllmClient {
		client = sim.VLLMBenchClient(1)
	}
	cfg.Client = client
	stage := sim.NewClientStage(client, recorder.Add)
	if p.vllmClient {
		stage.NoFirstTokenFrom(p.spec.Random.Lengths)
	}
	cfg.ReuseRecords = !stage.Holds()
	res, err := sim.RunStream(ctx, cfg, stream, stage.Add)
	_ = stage.Flush()
	if err == nil {
		err = stream.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return metrics.Summary{}, err
		}
		return metrics.Summary{}, cannot("simulation: %v", err)
	}
	_ = recorder.Close()
	summary := recorder.Summary(recorder.LastEnd())
	if res.Err != nil {
		return summary, cannot("sim's engine failed: %v", res.Err)
	}
	if summary.Completed == 0 {
		return summary, cannot("every simulated request failed (%s)", failureReasons(&summary))
	}
	return summary, nil
}

// failureReasons lists why simulated requests failed, most frequent first.
func failureReasons(s *metrics.Summary) string {
	type reason struct {
		text string
		n    int
	}
	var rs []reason
	for k, n := range s.Errors {
		rs = append(rs, reason{k, n})
	}
	slices.SortFunc(rs, func(a, b reason) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.text, b.text)
	})
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d× %s", r.n, oneLine(r.text)))
	}
	if len(parts) == 0 {
		return "no reason recorded"
	}
	return strings.Join(parts, "; ")
}

// figures are a summary's values under vLLM's result-JSON keys.
func (p *plan) figures(s *metrics.Summary) map[string]float64 {
	f := map[string]float64{
		"completed": float64(s.Completed), "failed": float64(s.Failed), "duration": s.Duration.Seconds(),
		"max_output_tokens_per_s": s.MaxOutputTokensPerS, "max_concurrent_requests": float64(s.MaxConcurrentRequests),
		"total_input_tokens": float64(s.TotalInput), "total_output_tokens": float64(s.TotalOutput),
		"request_throughput": s.RequestThroughput, "output_throughput": s.OutputThroughput,
		"total_token_throughput": s.TotalTokenThroughput,
	}
	if secs := s.Duration.Seconds(); secs > 0 {
		// Before 0.6, benchmark_serving printed input tokens over the duration.
		f["input_throughput"] = float64(s.TotalInput) / secs
	}
	for name, d := range map[string]metrics.Distribution{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2el": s.E2EL} {
		f["mean_"+name+"_ms"] = d.Mean
		f["median_"+name+"_ms"] = d.Median
		f["std_"+name+"_ms"] = d.Std
		for _, pv := range d.Percentiles {
			f["p"+strconv.FormatFloat(pv.P, 'f', -1, 64)+"_"+name+"_ms"] = pv.Value
		}
	}
	if p.batchLatency {
		// benchmark_latency times the whole batch: the last request's end.
		f["mean_e2el_ms"] = float64(s.Duration) / 1e6
	}
	return f
}
