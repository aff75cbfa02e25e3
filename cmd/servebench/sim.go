package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

func init() { extraCommands = append(extraCommands, newSimCmd) }

type simFlags struct {
	workload workloadFlags
	engine   engineFlags

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
	fs.StringVar(&f.tokenizer, "tokenizer", "", `tokenizer for text datasets (built-in name or tokenizer.json path); default: cl100k_base for sonnet, sharegpt and custom, none for random`)
	fs.BoolVar(&f.throughput, "throughput", false, "offline throughput mode: every request arrives at t=0 (vLLM's throughput benchmark) and the Throughput line is printed")
	fs.DurationVar(&f.statsInterval, "stats-interval", 0, "engine statistics sampling period in virtual time (default: vLLM's 5s for v0, 10s for v1)")
	fs.BoolVar(&f.logStats, "log-stats", false, "print vLLM's periodic stats lines (Avg prompt throughput ...) on stderr")
	f.output.register(fs, false)
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
		return fmt.Errorf("--stats-interval %v: give a positive period, or 0 for vLLM's default", f.statsInterval)
	}
	metadata, err := f.output.validate()
	if err != nil {
		return err
	}
	dep, capacity, ec, stepModel, err := f.engine.build()
	if err != nil {
		return err
	}
	for _, l := range capacity.LogLines() {
		fmt.Fprintln(errw, l)
	}

	tokSpec := f.tokenizer
	textDataset := spec.Dataset == workload.DatasetSonnet || spec.Dataset == workload.DatasetShareGPT || spec.Dataset == workload.DatasetCustom
	if tokSpec == "" && textDataset {
		tokSpec = "cl100k_base"
	}
	tok, err := tokenizer.New(ctx, tokSpec, tokenizer.Options{})
	if err != nil {
		return fmt.Errorf("--tokenizer: %w", err)
	}
	reqs, err := workload.Build(ctx, spec, tok)
	if err != nil {
		return err
	}
	if tok != nil && ec.EnablePrefixCaching {
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
	if f.throughput {
		arrivals.Rate = math.Inf(1)
		arrivals.RampUp = ""
	}
	workload.Assign(reqs, workload.Schedule(len(reqs), arrivals))

	tokID := ""
	if tok != nil {
		tokID = tok.Name()
	}
	info := report.RunInfo{
		Date: time.Now(), Backend: "sim", EndpointType: "sim", Label: f.output.label, ModelID: dep.Model.Name, TokenizerID: tokID,
		NumPrompts: spec.NumPrompts, RequestRate: arrivals.Rate, Burstiness: arrivals.Burstiness, Metadata: metadata,
		MaxConcurrency:    f.workload.maxConcurrency,
		PercentileMetrics: pctMetrics, Percentiles: pcts, Goodput: len(sumOpts.Goodput) > 0,
	}
	if arrivals.RampUp != "" {
		info.RampUp = &report.RampUp{Strategy: arrivals.RampUp, StartRPS: arrivals.RampStart, EndRPS: arrivals.RampEnd}
	}
	resultPath, recordsPath := f.output.paths(&info)
	var records *bufio.Writer
	if recordsPath != "" {
		fh, err := createFile("--records", recordsPath)
		if err != nil {
			return err
		}
		defer fh.Close()
		records = bufio.NewWriterSize(fh, 1<<20)
		defer records.Flush()
	}

	interval := f.statsInterval
	if interval == 0 {
		interval = 10 * time.Second
		if ec.Version == engine.V0 {
			interval = 5 * time.Second
		}
	}
	acc := metrics.NewAccumulator(sumOpts)
	var kept []metrics.Record
	var end time.Duration
	var enc *json.Encoder
	if records != nil {
		enc = json.NewEncoder(records)
	}
	// The emit below keeps nothing of a record past its return (it copies
	// what it keeps), so the simulator may recycle records.
	cfg := sim.Config{Engine: ec, Model: stepModel, StatsInterval: interval, MaxConcurrency: f.workload.maxConcurrency, ReuseRecords: true}
	if f.logStats {
		cfg.OnStats = func(s sim.StatsSample) { writeSimStatsLine(errw, ec, s) }
	}
	res, err := sim.Run(ctx, cfg, reqs, func(r *metrics.Record) error {
		acc.Add(r)
		end = max(end, r.End())
		if enc != nil {
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("write records: %w", err)
			}
		}
		if resultPath != "" {
			light := *r
			light.ITL = nil
			if f.output.saveDetailed {
				light.ITL = slices.Clone(r.ITL)
			}
			kept = append(kept, light)
		}
		return nil
	})
	if err != nil {
		return err
	}
	interrupted := ctx.Err() != nil
	info.Interrupted = interrupted
	// Duration as bench measures it: from the run's zero to the last
	// completion, so simulated and measured throughputs compare directly.
	summary := acc.Summary(end)
	result := &report.Result{Info: info, Summary: summary, Records: kept,
		Extra: []report.Section{{Key: "engine", Value: simEngineJSON(res, ec, dep.Model.Name, dep.GPU.Name, capacity.GPUBlocks)}}}
	if err := report.WriteText(out, result); err != nil {
		return err
	}
	if err := writeEngineSection(out, res); err != nil {
		return err
	}
	if f.throughput {
		var total int64 = summary.TotalInput + summary.TotalOutput
		fmt.Fprintln(out, sim.ThroughputLine(res, summary.Completed, total))
	}
	if res.Err != nil {
		fmt.Fprintf(errw, "engine failed: %v\n", res.Err)
	}
	if err := f.output.write(out, errw, resultPath, result); err != nil {
		return err
	}
	if interrupted {
		return exitCodeError{code: 130, err: fmt.Errorf("interrupted: partial simulation printed")}
	}
	return nil
}

func simEngineJSON(res *sim.Result, ec engine.Config, model, gpu string, gpuBlocks int) map[string]any {
	samples := make([]map[string]any, 0, len(res.Samples))
	for _, s := range res.Samples {
		samples = append(samples, map[string]any{
			"t": s.At.Seconds(), "running": s.Running, "waiting": s.Waiting, "swapped": s.Swapped,
			"kv_cache_usage": s.KVUsage, "prefix_hit_rate": s.PrefixHitRate,
			"prompt_throughput": s.PromptThroughput, "generation_throughput": s.GenerationThroughput,
		})
	}
	e := map[string]any{
		"model": model, "gpu": gpu, "engine": string(ec.Version), "gpu_blocks": gpuBlocks, "block_size": ec.BlockSize,
		"max_num_seqs": ec.MaxNumSeqs, "max_num_batched_tokens": ec.MaxNumBatchedTokens, "max_model_len": ec.MaxModelLen,
		"enable_chunked_prefill": ec.EnableChunkedPrefill, "enable_prefix_caching": ec.EnablePrefixCaching,
		"preemption_mode": string(ec.PreemptionMode), "steps": res.Steps, "preemptions": res.Preemptions,
		"mean_step_gap_ms": float64(res.MeanStepGap) / 1e6, "simulated_duration_s": res.Duration.Seconds(),
		"prefix_cache_queries": res.Engine.PrefixQueries, "prefix_cache_hits": res.Engine.PrefixHits,
		"samples": samples,
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
	var maxRun, maxWait, maxSwap int
	var maxKV float64
	for _, s := range res.Samples {
		maxRun, maxWait, maxSwap = max(maxRun, s.Running), max(maxWait, s.Waiting), max(maxSwap, s.Swapped)
		maxKV = max(maxKV, s.KVUsage)
	}
	return report.WriteSection(w, "Simulated Engine", [][2]string{
		{"Engine steps:", fmt.Sprint(res.Steps)},
		{"Preemptions:", fmt.Sprint(res.Preemptions)},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.2f", hit)},
		{"Max running / waiting / swapped:", fmt.Sprintf("%d / %d / %d", maxRun, maxWait, maxSwap)},
		{"Max GPU KV cache usage (%):", fmt.Sprintf("%.1f", 100*maxKV)},
	})
}

func writeSimStatsLine(w io.Writer, ec engine.Config, s sim.StatsSample) {
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
		fmt.Fprintf(w, "[t=%8.2fs] %s\n", s.At.Seconds(), l)
	}
}
