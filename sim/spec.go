package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/clock"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// RunSpec runs a sim spec as `servebench sim` does: it checks the spec,
// resolves the engine (or the fleet) through the release's rules,
// simulates the workload on the virtual clock, prints bench's result
// block and the simulated engine's section to io.Out (startup lines and
// --log-stats to io.Err), and saves what the spec's outputs ask for. The
// error says how the run ended, as bench's does.
func RunSpec(ctx context.Context, spec *runspec.Spec, rio runspec.IO) error {
	return RunSpecWith(ctx, spec, rio, Options{})
}

// Options are what a caller above sim adds to a spec's run.
type Options struct {
	// Trust, when set, gives the rows the "Simulated Engine" section ends
	// with: how far predictions of this kind have been from real runs.
	// (validate.TrustRows, which sim cannot import: validate runs sim.)
	Trust func(TrustInput) [][2]string
}

// TrustInput is what decides which published runs a prediction is like:
// its GPU and its regime's inputs.
type TrustInput struct {
	GPU            string
	Throughput     bool
	NumPrompts     int
	Arrivals       workload.Arrivals
	MaxConcurrency int
	Summary        *metrics.Summary
}

// RunSpecWith is RunSpec with options.
func RunSpecWith(ctx context.Context, spec *runspec.Spec, rio runspec.IO, o Options) error {
	s := spec.Clone()
	if err := s.Validate(); err != nil {
		return err
	}
	out, errw, _ := rio.Streams()
	r := &specRun{spec: s, out: out, errw: errw, opts: o}
	return r.run(ctx)
}

// specRun is one sim run of a spec, between its steps.
type specRun struct {
	spec      *runspec.Spec
	opts      Options
	out, errw io.Writer
	work      runspec.ResolvedWorkload
	shard     *runspec.ShardPlan
	eng       *runspec.ResolvedEngine
	topo      *TopologyConfig
}

func (r *specRun) run(ctx context.Context) error {
	s := r.spec
	var err error
	if r.work, err = s.ResolveWorkload(); err != nil {
		return err
	}
	// A lengths file is read (or --random-length-dist sharegpt's lengths
	// drawn) once, here: the stream replays them and the client stage
	// reads their first-token marks.
	if r.work.Spec.Random.Lengths, err = r.work.Spec.ReplayedLengths(); err != nil {
		return err
	}
	if r.shard, err = s.ShardPlan(); err != nil {
		return err
	}
	files := s.Output.Files()
	if r.shard != nil && files.Records == "" {
		files.Records = r.shard.RecordsPath
	}
	if err := report.CheckOutputDirs(files); err != nil {
		return err
	}
	s.Engine.Offline = s.Simulation.Throughput
	if r.eng, err = s.Engine.Resolve(ctx, s.ChangedFunc(), s.Env); err != nil {
		return err
	}
	var extraMeta [][2]string
	if s.Topology.Active() {
		t, err := TopologyOf(ctx, s, r.eng)
		if err != nil {
			return err
		}
		r.topo, extraMeta = &t, topologyMetadata(t)
	}
	r.writeStartup()
	tok, err := simTokenizer(ctx, s)
	if err != nil {
		return err
	}
	arrivals := r.work.Arrivals
	if s.Simulation.Throughput {
		arrivals.Rate, arrivals.RampUp = math.Inf(1), ""
	}
	r.work.Arrivals = arrivals
	// Prompt IDs serve the prefix cache, and the prefix-aware router; that
	// router derives text prompts' IDs itself (DerivePromptIDs).
	ec := r.eng.Engine
	promptIDs := ec.EnablePrefixCaching || (r.topo != nil && r.topo.Router == RoutePrefixAware && tok == nil)
	stream, err := buildWorkload(ctx, r.work.Spec, arrivals, tok, promptIDs, r.shard != nil)
	if err != nil {
		return err
	}
	tokID := ""
	if tok != nil {
		tokID = tok.Name()
	}
	info, err := s.RunInfo("sim", r.eng.Deployment.Model.Name, tokID, r.work)
	if err != nil {
		return err
	}
	info.Metadata = append(info.Metadata, extraMeta...)
	outs, err := report.OpenFiles(files, &info)
	if err != nil {
		return err
	}
	defer outs.Close()
	return r.simulate(ctx, stream, info, outs)
}

// clientStage is the view the records are taken from: with --client
// vllm-bench they pass through vLLM's benchmark client's one thread, and a
// replayed run's replies with no first token are reported as that client
// did; otherwise they go straight to the recorder. A shard keeps its own
// records only after the client has seen every request: that thread is
// shared by the whole run, so a shard's records are timed as the
// unsharded run's are.
func (r *specRun) clientStage(recorder *metrics.Recorder) *ClientStage {
	s := r.spec
	sink := func(rec *metrics.Record) error {
		if r.shard != nil && !r.shard.Shard.Owns(rec.Index) {
			return nil
		}
		_ = recorder.Add(rec)
		return nil
	}
	if s.Simulation.Client != runspec.ClientVLLMBench {
		return NewClientStage(ClientCost{}, sink)
	}
	stage := NewClientStage(VLLMBenchClient(s.Engine.HostSpeed), sink)
	stage.NoFirstTokenFrom(r.work.Spec.Random.Lengths)
	return stage
}

// writeStartup prints vLLM's startup lines: the quantized kernel, the
// distributed setup and the memory profile (the KV cache lines as --log-stats shows them).
func (r *specRun) writeStartup() {
	memory := r.eng.Capacity.LogLines()
	if r.spec.Simulation.LogStats {
		memory = vllm.MemoryLines(r.eng.Resolved)
	}
	lines := logText(vllm.StartupLines(r.eng.Resolved))
	if r.spec.Simulation.Chat() {
		lines = append(lines, logText(vllm.ChatTemplateLines(r.eng.Resolved))...)
	}
	for _, l := range append(lines, memory...) {
		fmt.Fprintln(r.errw, l)
	}
}

// logStats prints vLLM's periodic stats lines (--log-stats) from the
// engine, or from each instance of the fleet, as each vLLM process does.
func (r *specRun) logStats(cfg *Config, interval time.Duration) {
	ec := cfg.Engine
	cfg.OnStats = func(st StatsSample) { writeStatsLine(r.errw, ec, "", st) }
	if r.topo != nil {
		r.topo.StatsInterval = interval
		r.topo.OnStats = func(st InstanceSample) {
			writeStatsLine(r.errw, ec, fmt.Sprintf("[%s %d] ", st.Role, st.Index), st.StatsSample)
		}
	}
}

// simulate runs the engine or the fleet over the stream, then prints and
// saves the result.
func (r *specRun) simulate(ctx context.Context, stream *workload.Stream, info report.RunInfo, outs *report.Files) error {
	s, ec := r.spec, r.eng.Engine
	// One meaning for 0 in sim and serve: unset takes vLLM's cadence, 0
	// takes no samples (the printed maxima are exact either way).
	interval := r.eng.StatsInterval
	if s.Changed("stats-interval") {
		interval = s.Simulation.StatsInterval
	}
	recorder := newRecorder(&s.Output, outs, r.work.Summary)
	// The recorder copies what it keeps, so the simulator may recycle
	// records. A records write error does not stop the simulation (it costs
	// no server time); it is reported after the result.
	cfg := ConfigFor(r.eng.Resolved)
	cfg.StatsInterval, cfg.MaxConcurrency = interval, s.Workload.MaxConcurrency
	if s.Simulation.Chat() {
		cfg.ChatClient(r.eng.Resolved)
	}
	if s.Simulation.LogStats {
		r.logStats(&cfg, interval)
	}
	stage := r.clientStage(recorder)
	cfg.ReuseRecords, cfg.Client = !stage.Holds(), stage.cost
	add := func(rec *metrics.Record) error {
		addRequestOverhead(rec, r.eng.Calibration)
		return stage.Add(rec)
	}
	var res *Result
	var trust [][2]string
	extra := report.Section{Key: "engine"}
	writeSection := func(w io.Writer) error { return writeEngineSection(w, res, trust) }
	var err error
	if r.topo != nil {
		r.topo.MaxConcurrency, r.topo.Client = s.Workload.MaxConcurrency, stage.cost
		extra, writeSection, err = runFleet(ctx, *r.topo, stream, add)
	} else {
		res, err = RunStream(ctx, cfg, stream, add)
	}
	if err == nil {
		err = stream.Err()
	}
	_ = stage.Flush()
	if err != nil {
		return err
	}
	if res != nil {
		extra.Value = EngineJSON(res, ec, r.eng.Profile, r.eng.Deployment.Model.Name, r.eng.Deployment.GPU.Name, r.eng.Capacity.GPUBlocks)
	}
	recordsErr := recorder.Close()
	interrupted := ctx.Err() != nil
	info.Interrupted = interrupted
	// Duration as bench measures it: from the run's zero to the last
	// completion, so simulated and measured throughputs compare directly.
	summary := recorder.Summary(recorder.LastEnd())
	if res != nil && r.opts.Trust != nil {
		trust = r.opts.Trust(TrustInput{GPU: r.eng.Deployment.GPU.Name, Throughput: s.Simulation.Throughput,
			NumPrompts: r.work.Spec.NumPrompts, Arrivals: r.work.Arrivals, MaxConcurrency: s.Workload.MaxConcurrency, Summary: &summary})
	}
	if r.shard != nil {
		if err := r.writeShardManifest(stream, outs.RecordsPath, &info, recorder.LastEnd(), interrupted); err != nil {
			return err
		}
	}
	result := &report.Result{Info: info, Summary: summary, Records: recorder.Records(), Extra: []report.Section{extra}}
	result.Extra = append(result.Extra, calibrationSections(r.eng.Calibration)...)
	if err := writeText(r.out, r.errw, result, writeSection, s.Simulation.Throughput, res); err != nil {
		return err
	}
	if err := outs.Write(r.out, r.errw, result); err != nil {
		return err
	}
	return report.Outcome(&summary, interrupted, 0, recordsErr, outs.SavedPaths(recordsErr == nil))
}

// writeShardManifest writes the manifest of a simulated shard: the whole
// schedule (total requests, fingerprinted by its hash) was simulated (a
// shard's requests compete with every other request for the engine, as
// on the real server) and only this shard's records kept. Simulated
// shards share the virtual clock's zero.
func (r *specRun) writeShardManifest(stream *workload.Stream, recordsPath string, info *report.RunInfo, lastEnd time.Duration, interrupted bool) error {
	hash, err := stream.ScheduleHash()
	if err != nil {
		return err
	}
	p, total := r.shard, stream.Len()
	host, _ := os.Hostname()
	m := &report.ShardManifest{
		Format: report.ShardFormat, ScheduleHash: hash, Shard: p.Shard.Index, Shards: p.Shard.Count,
		TotalRequests: total, ShardRequests: p.Shard.Size(total), Records: filepath.Base(recordsPath), Host: host,
		Clock:    clock.Sync{Source: report.VirtualClock, Synchronized: true},
		Duration: lastEnd, Interrupted: interrupted, Run: report.NewShardRunInfo(info),
		Summary: report.ShardOptions{Percentiles: r.work.Summary.Percentiles, Goodput: r.work.Summary.Goodput},
	}
	path, err := report.WriteShardManifest(recordsPath, m)
	if err != nil {
		return err
	}
	fmt.Fprintf(r.errw, "Shard manifest: %s\n", path)
	return nil
}

// writeText prints bench's result block, then the sim's own sections: the
// engine's (or the fleet's) and, with --throughput, vLLM's
// benchmark_throughput line. res is nil for a topology run.
func writeText(out, errw io.Writer, result *report.Result, writeSection func(io.Writer) error, throughput bool, res *Result) error {
	summary := &result.Summary
	if err := report.WriteText(out, result); err != nil {
		return err
	}
	if err := report.WriteErrorSection(out, summary); err != nil {
		return err
	}
	if err := writeSection(out); err != nil {
		return err
	}
	if throughput && res != nil {
		total := summary.TotalInput + summary.TotalOutput
		fmt.Fprintln(out, ThroughputLine(res, summary.Completed, total))
	}
	if res != nil && res.Err != nil {
		fmt.Fprintf(errw, "engine failed: %v\n", res.Err)
	}
	return nil
}

// EngineJSON is the "engine" section of a simulated result: the engine's
// configuration and what it did.
func EngineJSON(res *Result, ec engine.Config, profile vllm.Profile, model, gpu string, gpuBlocks int) map[string]any {
	samples := make([]map[string]any, 0, len(res.Samples))
	for _, s := range res.Samples {
		samples = append(samples, map[string]any{
			"t": s.At.Seconds(), "running": s.Running, "waiting": s.Waiting, "swapped": s.Swapped,
			"kv_cache_usage": s.KVUsage, "prefix_hit_rate": s.PrefixHitRate,
			"prompt_throughput": s.PromptThroughput, "generation_throughput": s.GenerationThroughput,
			"host_bound_time_share": share(s.HostBoundTime, s.StepTime),
		})
	}
	e := map[string]any{
		"model": model, "gpu": gpu, "engine": string(ec.Version), "gpu_blocks": gpuBlocks, "block_size": ec.BlockSize,
		"max_num_seqs": ec.MaxNumSeqs, "max_num_batched_tokens": ec.MaxNumBatchedTokens, "max_model_len": ec.MaxModelLen,
		"enable_chunked_prefill": ec.EnableChunkedPrefill, "enable_prefix_caching": ec.EnablePrefixCaching,
		"preemption_mode": string(ec.PreemptionMode), "steps": res.Steps, "preemptions": res.Preemptions,
		"mean_step_gap_ms": float64(res.MeanStepGap) / 1e6, "simulated_duration_s": res.Duration.Seconds(),
		"prefix_cache_queries": res.Engine.PrefixQueries, "prefix_cache_hits": res.Engine.PrefixHits,
		"samples": samples, "vllm_version": profile.Release.String(), "host_bound_steps": res.HostBoundSteps,
		"host_bound_time_share": share(res.HostBoundTime, res.StepTime),
	}
	if res.Err != nil {
		e["error"] = res.Err.Error()
	}
	return e
}

func writeEngineSection(w io.Writer, res *Result, trust [][2]string) error {
	hit := 0.0
	if res.Engine.PrefixQueries > 0 {
		hit = 100 * float64(res.Engine.PrefixHits) / float64(res.Engine.PrefixQueries)
	}
	m := res.Max
	hostBound := 0.0
	if res.Steps > 0 {
		hostBound = 100 * float64(res.HostBoundSteps) / float64(res.Steps)
	}
	hostBoundTime := 100 * share(res.HostBoundTime, res.StepTime)
	return report.WriteSection(w, "Simulated Engine", append([][2]string{
		{"Engine steps:", fmt.Sprint(res.Steps)},
		{"Preemptions:", fmt.Sprint(res.Preemptions)},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.2f", hit)},
		{"Max running / waiting / swapped:", fmt.Sprintf("%d / %d / %d", m.Running, m.Waiting, m.Swapped)},
		{"Max GPU KV cache usage (%):", fmt.Sprintf("%.1f", 100*m.KVUsage)},
		{"Host-bound steps (%):", fmt.Sprintf("%.1f", hostBound)},
		{"Host-bound step time (%):", fmt.Sprintf("%.1f", hostBoundTime)},
		{"Kernel tables:", res.KernelTables},
	}, trust...))
}

// share is part/whole, 0 when whole is 0.
func share(part, whole time.Duration) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func writeStatsLine(w io.Writer, ec engine.Config, instance string, s StatsSample) {
	line := engine.StatsLine{
		Version: ec.Version, Running: s.Running, Waiting: s.Waiting, Swapped: s.Swapped,
		GPUUsage: s.KVUsage, PrefixCaching: ec.EnablePrefixCaching, PrefixHitRate: s.PrefixHitRate,
	}
	// The sample carries the interval's throughputs; one second of "elapsed"
	// turns them back into the token counts the line divides.
	line.Elapsed = time.Second
	line.PromptTokens, line.GenerationTokens = int64(s.PromptThroughput), int64(s.GenerationThroughput)
	if s.CPUBlocksTotal > 0 {
		line.CPUUsage = float64(s.CPUBlocksUsed) / float64(s.CPUBlocksTotal)
	}
	if line.Idle() {
		return
	}
	for _, l := range line.Lines() {
		fmt.Fprintf(w, "[t=%8.2fs] %s%s\n", s.At.Seconds(), instance, l)
	}
	// servebench's own line (vLLM logs no such thing): how much of the
	// interval the host CPU, not the GPU, set the pace.
	if s.HostBoundSteps > 0 {
		fmt.Fprintf(w, "[t=%8.2fs] %sHost-bound steps: %.1f%% of %d steps, %.1f%% of step time (servebench)\n",
			s.At.Seconds(), instance, 100*float64(s.HostBoundSteps)/float64(s.Steps), s.Steps, 100*share(s.HostBoundTime, s.StepTime))
	}
}

// logText is vLLM's startup lines (quantized kernels, executor,
// placement, NCCL transport; servebench's chat-template line) as sim
// prints them, warnings marked.
func logText(lines []vllm.LogLine) []string {
	var out []string
	for _, l := range lines {
		if l.Warning {
			out = append(out, "WARNING "+l.Text)
		} else {
			out = append(out, l.Text)
		}
	}
	return out
}

// simTokenizer is the tokenizer sim builds prompts with: --tokenizer, or
// cl100k_base for the text datasets; nil means token-ID prompts.
func simTokenizer(ctx context.Context, s *runspec.Spec) (tokenizer.Tokenizer, error) {
	name, dataset := s.Simulation.Tokenizer, s.Workload.Dataset.Dataset
	textDataset := dataset == workload.DatasetSonnet || dataset == workload.DatasetShareGPT || dataset == workload.DatasetCustom
	if name == "" && textDataset {
		name = "cl100k_base"
	}
	name, err := s.Env.ResolveTokenizer(name)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.New(ctx, name, tokenizer.Options{})
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	return tok, nil
}

// newRecorder keeps of each record what the saved result needs, and
// streams every record to the records file as the simulation makes it.
func newRecorder(o *runspec.Output, outs *report.Files, sumOpts metrics.Options) *metrics.Recorder {
	keep := metrics.KeepNone
	switch {
	case o.SaveResult && o.SaveDetailed:
		keep = metrics.KeepFull
	case o.SaveResult:
		keep = metrics.KeepLight
	}
	var records *metrics.JSONLWriter
	if w := outs.RecordsWriter(); w != nil {
		records = metrics.NewBufferedJSONLWriter(w, 1<<20)
	}
	return metrics.NewRecorder(sumOpts, records, keep)
}

// buildWorkload makes sim's requests with their arrivals, as a stream in
// arrival order. promptIDs says the run needs prompt token IDs (prefix
// caching, prefix-aware routing); hashSchedule that a shard needs the
// schedule's hash. Every dataset but prefix_repetition is generated one
// request at a time as the simulation takes it
// (workload.NewTokenizedStream: nothing held per request but what is in
// flight); prefix_repetition, which shuffles its whole workload, is built.
func buildWorkload(ctx context.Context, spec workload.Spec, arrivals workload.Arrivals, tok tokenizer.Tokenizer, promptIDs, hashSchedule bool) (*workload.Stream, error) {
	if workload.Streamable(spec) {
		stream, err := workload.NewTokenizedStream(ctx, spec, arrivals, tok, promptIDs)
		if err == nil && hashSchedule {
			stream.HashSchedule()
		}
		return stream, err
	}
	reqs, err := workload.Build(ctx, spec, tok)
	if err != nil {
		return nil, err
	}
	if tok != nil && promptIDs {
		// Exact token IDs make prefix-cache hits exact.
		for i := range reqs {
			if reqs[i].PromptIDs == nil {
				if ids, err := tok.Encode(ctx, reqs[i].Prompt); err == nil {
					reqs[i].PromptIDs = make([]int32, len(ids))
					for j, id := range ids {
						reqs[i].PromptIDs[j] = int32(id)
					}
				}
			}
		}
	}
	offsets, err := workload.Schedule(len(reqs), arrivals)
	if err != nil {
		return nil, err
	}
	workload.Assign(reqs, offsets)
	return workload.StreamOf(reqs), nil
}

// addRequestOverhead adds the calibration's per-request overhead to a
// simulated request's first token (and so to its latency).
func addRequestOverhead(r *metrics.Record, c *perf.Calibration) {
	if c == nil || !r.Success {
		return
	}
	d := c.Parameters.RequestOverhead()
	r.TTFT += d
	r.Latency += d
}

// calibrationSections records the calibration a prediction used.
func calibrationSections(c *perf.Calibration) []report.Section {
	if c == nil {
		return nil
	}
	return []report.Section{{Key: "calibration", Value: map[string]any{
		"file": c.Path, "model": c.Model, "gpu": c.GPU, "vllm_version": c.VLLMVersion,
		"compute_scale": c.Parameters.ComputeScale, "bandwidth_scale": c.Parameters.BandwidthScale,
		"sequence_overhead_us": c.Parameters.SequenceOverheadUs, "request_overhead_us": c.Parameters.RequestOverheadUs,
	}}}
}

// SampleEngineSection is the "engine" section of a simulated result with
// every key and zero values, for checking result keys before a run.
func SampleEngineSection() map[string]any {
	return EngineJSON(&Result{}, engine.Config{}, vllm.Profile{}, "", "", 0)
}
