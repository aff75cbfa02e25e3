package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

func init() { extraCommands = append(extraCommands, newSimCmd) }

type simFlags struct {
	workload workloadFlags
	engine   engineFlags
	shard    shardFlags
	topology topologyFlags

	tokenizer     string
	throughput    bool
	statsInterval time.Duration
	logStats      bool

	output outputFlags
}

func newSimCmd() *cobra.Command {
	f := &simFlags{}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Predict how vLLM serves a workload on a given model and GPU, without a GPU",
		Long: `Simulate vLLM's engine (V0 or V1 scheduler, paged KV cache, chunked prefill, prefix caching,
swap/recompute preemption) on a virtual clock, with step times from a roofline model of the
model and GPU. Takes bench's workload flags and vllm serve's engine flags, and prints the same
result block and JSON as bench, so predicted and measured runs compare line by line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSim(cmd.Context(), cmd, f)
		},
	}
	fs := cmd.Flags()
	f.workload.register(fs)
	f.engine.register(fs)
	f.topology.register(fs)
	fs.StringVar(&f.tokenizer, "tokenizer", "", `tokenizer for text datasets (built-in name or tokenizer.json path); default: cl100k_base for sonnet, sharegpt and custom, none for random`)
	fs.BoolVar(&f.throughput, "throughput", false, "offline throughput mode: every request arrives at t=0 (vLLM's throughput benchmark) and the Throughput line is printed")
	fs.DurationVar(&f.statsInterval, "stats-interval", 0, "engine statistics sampling period in virtual time, for the time series and --log-stats (default: vLLM's, 5s for v0 and 10s for v1; 0 disables, as in serve)")
	fs.BoolVar(&f.logStats, "log-stats", false, "print vLLM's periodic stats lines (Avg prompt throughput ...) on stderr")
	f.output.register(fs)
	fs.StringVar(&f.shard.shard, "shard", "", "record only shard I/N of the simulated run (the whole schedule is simulated, so merged shards equal the unsharded run exactly)")
	return cmd
}

func runSim(ctx context.Context, cmd *cobra.Command, f *simFlags) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	changed := cmd.Flags().Changed
	spec, arrivals, sumOpts, pctMetrics, pcts, err := f.workload.resolve(changed)
	if err != nil {
		return err
	}
	if f.statsInterval < 0 {
		return fmt.Errorf("--stats-interval %v: give a positive period, or 0 to disable", f.statsInterval)
	}
	metadata, err := f.output.validate()
	if err != nil {
		return err
	}
	shard, err := f.shard.resolve(changed, &f.output)
	if err != nil {
		return err
	}
	if err := f.output.checkDirs(); err != nil {
		return err
	}
	dep, capacity, ec, stepModel, err := f.engine.build()
	if err != nil {
		return err
	}
	var topo *sim.TopologyConfig
	if f.topology.active() {
		t, err := f.topology.build(&f.engine, spec.Seed)
		if err != nil {
			return err
		}
		t.MaxConcurrency = f.workload.maxConcurrency
		topo, metadata = &t, append(metadata, topologyMetadata(t)...)
	}
	startup := append(distributedText(f.engine.resolved), capacity.LogLines()...)
	if f.logStats {
		startup = append(distributedText(f.engine.resolved), vllm.MemoryLines(f.engine.resolved)...)
	}
	for _, l := range startup {
		fmt.Fprintln(errw, l)
	}

	tok, err := simTokenizer(ctx, f.tokenizer, spec.Dataset)
	if err != nil {
		return err
	}
	if f.throughput {
		arrivals.Rate = math.Inf(1)
		arrivals.RampUp = ""
	}
	// Prompt IDs serve the prefix cache, and the prefix-aware router; that
	// router derives text prompts' IDs itself (sim.DerivePromptIDs).
	promptIDs := ec.EnablePrefixCaching || (topo != nil && topo.Router == sim.RoutePrefixAware && tok == nil)
	stream, err := buildSimWorkload(ctx, spec, arrivals, tok, promptIDs, shard != nil)
	if err != nil {
		return err
	}

	tokID := ""
	if tok != nil {
		tokID = tok.Name()
	}
	info := newRunInfo("sim", dep.Model.Name, tokID, &f.workload, spec, arrivals, &f.output, metadata, sumOpts, pctMetrics, pcts)
	outs, err := f.output.open(&info)
	if err != nil {
		return err
	}
	defer outs.close()

	// One meaning for 0 in sim and serve: unset takes vLLM's cadence, 0
	// takes no samples (the printed maxima are exact either way).
	interval := f.engine.resolved.StatsInterval
	if changed("stats-interval") {
		interval = f.statsInterval
	}
	recorder := newSimRecorder(&f.output, outs, sumOpts)
	// The recorder copies what it keeps, so the simulator may recycle
	// records. A records write error does not stop the simulation (it costs
	// no server time); it is reported after the result.
	cfg := sim.Config{Engine: ec, Model: stepModel, StatsInterval: interval, MaxConcurrency: f.workload.maxConcurrency, ReuseRecords: true}
	if f.logStats {
		cfg.OnStats = func(s sim.StatsSample) { writeSimStatsLine(errw, ec, "", s) }
		if topo != nil {
			// Each instance logs its own line, as each vLLM process does.
			topo.StatsInterval = interval
			topo.OnStats = func(s sim.InstanceSample) {
				writeSimStatsLine(errw, ec, fmt.Sprintf("[%s %d] ", s.Role, s.Index), s.StatsSample)
			}
		}
	}
	add := func(r *metrics.Record) error {
		if shard != nil && !shard.shard.Owns(r.Index) {
			return nil
		}
		addRequestOverhead(r, f.engine.calibration)
		_ = recorder.Add(r)
		return nil
	}
	var res *sim.Result
	extra := report.Section{Key: "engine"}
	writeSection := func(w io.Writer) error { return writeEngineSection(w, res) }
	if topo != nil {
		extra, writeSection, err = runTopology(ctx, *topo, stream, add)
	} else {
		res, err = sim.RunStream(ctx, cfg, stream, add)
	}
	if err == nil {
		err = stream.Err()
	}
	if err != nil {
		return err
	}
	if res != nil {
		extra.Value = simEngineJSON(res, ec, f.engine.resolved.Profile, dep.Model.Name, dep.GPU.Name, capacity.GPUBlocks)
	}
	recordsErr := recorder.Close()
	interrupted := ctx.Err() != nil
	info.Interrupted = interrupted
	// Duration as bench measures it: from the run's zero to the last
	// completion, so simulated and measured throughputs compare directly.
	summary := recorder.Summary(recorder.LastEnd())
	if shard != nil {
		hash, err := stream.ScheduleHash()
		if err != nil {
			return err
		}
		if err := shard.finishSim(errw, outs.recordsPath, hash, stream.Len(), &info, sumOpts, recorder.LastEnd(), interrupted); err != nil {
			return err
		}
	}
	result := &report.Result{Info: info, Summary: summary, Records: recorder.Records(),
		Extra: []report.Section{extra}}
	result.Extra = append(result.Extra, calibrationSections(f.engine.calibration)...)
	if err := writeSimText(out, errw, result, writeSection, f.throughput, res); err != nil {
		return err
	}
	if err := outs.write(out, errw, result); err != nil {
		return err
	}
	return runOutcome(&summary, interrupted, 0, recordsErr, outs.savedPaths(recordsErr == nil))
}

// writeSimText prints bench's result block, then the sim's own sections:
// the engine's (or the fleet's) and, with --throughput, vLLM's
// benchmark_throughput line. res is nil for a topology run.
func writeSimText(out, errw io.Writer, result *report.Result, writeSection func(io.Writer) error, throughput bool, res *sim.Result) error {
	summary := &result.Summary
	if err := report.WriteText(out, result); err != nil {
		return err
	}
	if err := writeErrorSection(out, summary); err != nil {
		return err
	}
	if err := writeSection(out); err != nil {
		return err
	}
	if throughput && res != nil {
		var total int64 = summary.TotalInput + summary.TotalOutput
		fmt.Fprintln(out, sim.ThroughputLine(res, summary.Completed, total))
	}
	if res != nil && res.Err != nil {
		fmt.Fprintf(errw, "engine failed: %v\n", res.Err)
	}
	return nil
}

func simEngineJSON(res *sim.Result, ec engine.Config, profile vllm.Profile, model, gpu string, gpuBlocks int) map[string]any {
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

func writeEngineSection(w io.Writer, res *sim.Result) error {
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
	return report.WriteSection(w, "Simulated Engine", [][2]string{
		{"Engine steps:", fmt.Sprint(res.Steps)},
		{"Preemptions:", fmt.Sprint(res.Preemptions)},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.2f", hit)},
		{"Max running / waiting / swapped:", fmt.Sprintf("%d / %d / %d", m.Running, m.Waiting, m.Swapped)},
		{"Max GPU KV cache usage (%):", fmt.Sprintf("%.1f", 100*m.KVUsage)},
		{"Host-bound steps (%):", fmt.Sprintf("%.1f", hostBound)},
		{"Host-bound step time (%):", fmt.Sprintf("%.1f", hostBoundTime)},
	})
}

// share is part/whole, 0 when whole is 0.
func share(part, whole time.Duration) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func writeSimStatsLine(w io.Writer, ec engine.Config, instance string, s sim.StatsSample) {
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

// simTokenizer is the tokenizer sim builds prompts with: --tokenizer, or
// cl100k_base for the text datasets; nil means token-ID prompts.
func simTokenizer(ctx context.Context, spec, dataset string) (tokenizer.Tokenizer, error) {
	textDataset := dataset == workload.DatasetSonnet || dataset == workload.DatasetShareGPT || dataset == workload.DatasetCustom
	if spec == "" && textDataset {
		spec = "cl100k_base"
	}
	spec, err := resolveTokenizerSpec(spec)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.New(ctx, spec, tokenizer.Options{})
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	return tok, nil
}

// newSimRecorder keeps of each record what the saved result needs, and
// streams every record to the records file as the simulation makes it.
func newSimRecorder(o *outputFlags, outs *outputs, sumOpts metrics.Options) *metrics.Recorder {
	keep := metrics.KeepNone
	switch {
	case o.saveResult && o.saveDetailed:
		keep = metrics.KeepFull
	case o.saveResult:
		keep = metrics.KeepLight
	}
	var records *metrics.JSONLWriter
	if w := outs.recordsWriter(); w != nil {
		records = metrics.NewBufferedJSONLWriter(w, 1<<20)
	}
	return metrics.NewRecorder(sumOpts, records, keep)
}
