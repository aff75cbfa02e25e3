// Package calibrate fits a deployment's step-time parameters to benchmark
// results a user already has (servebench result JSON with records, vLLM's
// --save-result JSON) by running sim in the loop: it replays each run's
// workload on the simulator and searches the parameters that make the
// simulated TTFT and TPOT match the measured ones.
//
// The search is gonum's optimize.NelderMead, restarted with a smaller
// simplex until a restart stops helping, and stopped by a converger of
// ours that waits for the best point to settle (the simulator's
// objective is piecewise flat, where gonum's function-value test stops
// on a step). Uncertainties come from a bootstrap over requests (or over
// runs), each resample's optimum found by one Gauss–Newton step on the
// residuals linearised at the fit.
package calibrate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/vllm"
	"github.com/servebench/servebench/workload"
)

// Tags say what a run measured: the model, the GPU and the vLLM release.
type Tags struct {
	Model, GPU, VLLMVersion string
}

// Figures are the statistics a fit matches, in milliseconds.
type Figures struct {
	MeanTTFT, MedianTTFT, MeanTPOT, MedianTPOT float64
}

func (f Figures) values() [4]float64 {
	return [4]float64{f.MeanTTFT, f.MedianTTFT, f.MeanTPOT, f.MedianTPOT}
}

var figureNames = [4]string{"mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms", "median_tpot_ms"}

// Deployment is what one run ran on, resolved.
type Deployment struct {
	Profile vllm.Profile
	Model   perf.Model
	GPU     perf.GPU
	Options vllm.Options
}

// Observation is one measured run, ready to replay.
type Observation struct {
	Path string
	// Index is the run's position in a file holding several.
	Index      int
	Tags       Tags
	Deployment Deployment
	// Requests is the workload reconstructed from the file: arrivals and
	// output lengths per request from records when present, else the
	// summary's request rate and mean lengths.
	Requests []workload.Request
	// FromRecords says Requests came from per-request timings.
	FromRecords    bool
	MaxConcurrency int
	// Chat says the run's client called a chat API (its backend or
	// endpoint_type), whose preparation vLLM's server charges before the
	// engine (sim.Config.ChatPrepare).
	Chat     bool
	Observed Figures
	// Timings are the per-request timings (nil without records), for the
	// bootstrap.
	Timings []report.RequestTiming
}

// Name is how errors and reports name the run.
func (o *Observation) Name() string {
	if o.Index > 0 {
		return fmt.Sprintf("%s (run %d)", o.Path, o.Index+1)
	}
	return o.Path
}

// Resolver turns tags into the model, GPU and release profile.
type Resolver func(Tags) (perf.Model, perf.GPU, vllm.Profile, error)

// DefaultResolver looks tags up in the catalogs.
func DefaultResolver(t Tags) (perf.Model, perf.GPU, vllm.Profile, error) {
	m, err := perf.LookupModel(t.Model)
	if err != nil {
		return perf.Model{}, perf.GPU{}, vllm.Profile{}, err
	}
	g, err := perf.LookupGPU(t.GPU)
	if err != nil {
		return perf.Model{}, perf.GPU{}, vllm.Profile{}, err
	}
	p, err := vllm.Lookup(t.VLLMVersion, "")
	return m, g, p, err
}

// LoadOptions say how to read result files.
type LoadOptions struct {
	// Given are tags from flags: they fill what a file lacks and override
	// what it records.
	Given Tags
	// Options are the engine flags the runs used; a file's recorded engine
	// settings fill the ones left at zero.
	Options vllm.Options
	// Resolve looks tags up (DefaultResolver when nil).
	Resolve Resolver
	// Seed draws arrivals for runs without per-request records.
	Seed int64
}

// Load reads result files into observations. Every error names the file
// and says what to pass.
func Load(paths []string, o LoadOptions) ([]Observation, error) {
	if len(paths) == 0 {
		return nil, errors.New("no result files given: pass servebench or vLLM --save-result JSON files")
	}
	resolve := o.Resolve
	if resolve == nil {
		resolve = DefaultResolver
	}
	var out []Observation
	for _, p := range paths {
		runs, err := report.LoadResults(p)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			obs, err := observe(r, o, resolve)
			if err != nil {
				return nil, err
			}
			out = append(out, *obs)
		}
	}
	if err := checkConsistent(out); err != nil {
		return nil, err
	}
	return out, nil
}

// observe reads one run of a result file: its tags resolved to a
// deployment, the figures a fit matches, and its workload rebuilt from
// per-request records or, without them, from its rate and mean lengths.
func observe(r report.LoadedResult, o LoadOptions, resolve Resolver) (*Observation, error) {
	obs := &Observation{Path: r.Path, Index: r.Index}
	fail := func(err error) (*Observation, error) {
		return nil, fmt.Errorf("%s: %w", obs.Name(), err)
	}
	tags, err := runTags(r, o.Given)
	if err != nil {
		return fail(err)
	}
	obs.Tags = tags
	model, gpu, profile, err := resolve(tags)
	if err != nil {
		return fail(err)
	}
	obs.Tags.GPU, obs.Tags.VLLMVersion = gpu.Name, profile.Release.String()
	obs.Deployment = Deployment{Profile: profile, Model: model, GPU: gpu, Options: fileOptions(r, o.Options)}
	if obs.Deployment.Options.ModelID == "" {
		// The run's own name for its model picks the chat template vLLM
		// 0.11.0 parses per request.
		obs.Deployment.Options.ModelID = tags.Model
	}
	obs.Chat = runspec.FirstChatBackend(text(r, "backend"), text(r, "endpoint_type")) != ""
	if obs.Observed, err = observedFigures(r); err != nil {
		return fail(err)
	}
	completed, meanIn, meanOut, err := meanLengths(r)
	if err != nil {
		return fail(err)
	}
	timings, err := r.Requests()
	if err != nil {
		return fail(fmt.Errorf("reading per-request timings: %w", err))
	}
	if reqs, ok := requestsFromTimings(timings, meanIn, meanOut); ok {
		obs.Requests, obs.FromRecords, obs.Timings = reqs, true, successful(timings)
		return obs, nil
	}
	if obs.Requests, err = rebuiltArrivals(r, completed, meanIn, meanOut, o.Seed); err != nil {
		return fail(err)
	}
	withRecordedLengths(obs.Requests, successful(timings))
	if c, ok := r.Number("max_concurrency"); ok && c >= 1 && !math.IsInf(c, 1) {
		obs.MaxConcurrency = int(c)
	}
	return obs, nil
}

// runTags are the model, GPU and release a file records, overridden by
// what the user gave.
func runTags(r report.LoadedResult, given Tags) (Tags, error) {
	tags := Tags{Model: text(r, "model"), GPU: text(r, "gpu"), VLLMVersion: text(r, "vllm_version")}
	if tags.Model == "" {
		tags.Model = text(r, "model_id")
	}
	if given.Model != "" {
		tags.Model = given.Model
	}
	if given.GPU != "" {
		tags.GPU = given.GPU
	}
	if given.VLLMVersion != "" {
		tags.VLLMVersion = given.VLLMVersion
	}
	if tags.Model == "" {
		return tags, errors.New("no model recorded; pass --model")
	}
	if tags.GPU == "" {
		return tags, errors.New("no GPU recorded (servebench writes it with --metadata gpu=NAME); pass --gpu")
	}
	return tags, nil
}

// observedFigures are the run's TTFT and TPOT statistics a fit matches.
func observedFigures(r report.LoadedResult) (Figures, error) {
	var v [len(figureNames)]float64
	for i, key := range figureNames {
		x, ok := r.Number(key)
		if !ok || math.IsNaN(x) || x < 0 {
			return Figures{}, fmt.Errorf("no %s: is this a benchmark result (servebench or vLLM --save-result JSON)?", key)
		}
		v[i] = x
	}
	f := Figures{MeanTTFT: v[0], MedianTTFT: v[1], MeanTPOT: v[2], MedianTPOT: v[3]}
	if f.MedianTTFT <= 0 || f.MedianTPOT <= 0 {
		return Figures{}, fmt.Errorf("median TTFT %.3g ms and TPOT %.3g ms must both be positive; a run needs requests with more than one output token",
			f.MedianTTFT, f.MedianTPOT)
	}
	return f, nil
}

// meanLengths are the completed requests and their mean prompt and output
// lengths, from the run's totals.
func meanLengths(r report.LoadedResult) (completed, meanIn, meanOut int, err error) {
	n, ok := r.Number("completed")
	if !ok || n < 1 {
		return 0, 0, 0, errors.New("no completed requests recorded (key completed)")
	}
	totalIn, okIn := r.Number("total_input_tokens")
	totalOut, okOut := r.Number("total_output_tokens")
	if !okIn || !okOut || totalIn <= 0 || totalOut <= 0 {
		return 0, 0, 0, errors.New("no total_input_tokens / total_output_tokens: the workload's lengths cannot be rebuilt")
	}
	return int(n), max(1, int(math.Round(totalIn/n))), max(1, int(math.Round(totalOut/n))), nil
}

// rebuiltArrivals is a run without per-request records replayed from its
// request rate and burstiness at its mean lengths.
func rebuiltArrivals(r report.LoadedResult, n, meanIn, meanOut int, seed int64) ([]workload.Request, error) {
	rate, ok := r.Number("request_rate")
	if !ok || rate <= 0 {
		return nil, errors.New("no per-request records and no request_rate: the arrivals cannot be rebuilt")
	}
	burstiness, ok := r.Number("burstiness")
	if !ok || burstiness <= 0 {
		burstiness = 1
	}
	offsets, err := workload.Schedule(n, workload.Arrivals{Rate: rate, Burstiness: burstiness, Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("rebuilding arrivals: %w", err)
	}
	reqs := make([]workload.Request, n)
	for i := range reqs {
		reqs[i] = workload.Request{Index: i, PromptLen: meanIn, MaxTokens: meanOut}
	}
	workload.Assign(reqs, offsets)
	return reqs, nil
}

// withRecordedLengths gives rebuilt requests the run's own prompt and
// output lengths, in order, when the file records every completed
// request's (vLLM's --save-detailed without start_times): a burst of
// mixed prompts then prefills as it did, not as prompts of the mean.
func withRecordedLengths(reqs []workload.Request, timings []report.RequestTiming) {
	if len(timings) != len(reqs) {
		return
	}
	for i, t := range timings {
		if t.PromptLen > 0 {
			reqs[i].PromptLen = t.PromptLen
		}
		if t.OutputLen > 0 {
			reqs[i].MaxTokens = t.OutputLen
		}
	}
}

// requestsFromTimings replays recorded starts and lengths; a request
// whose file gives no prompt length takes the run's mean. Starts already
// include any client-side concurrency wait, so no cap is applied on
// replay.
func requestsFromTimings(timings []report.RequestTiming, meanIn, meanOut int) ([]workload.Request, bool) {
	ok := successful(timings)
	if len(ok) == 0 {
		return nil, false
	}
	reqs := make([]workload.Request, 0, len(ok))
	for i, t := range ok {
		if math.IsNaN(t.Start) || t.Start < 0 {
			return nil, false
		}
		out := t.OutputLen
		if out <= 0 {
			out = meanOut
		}
		in := t.PromptLen
		if in <= 0 {
			in = meanIn
		}
		reqs = append(reqs, workload.Request{Index: i, PromptLen: in, MaxTokens: out,
			Arrival: time.Duration(t.Start * float64(time.Second))})
	}
	return reqs, true
}

func successful(ts []report.RequestTiming) []report.RequestTiming {
	var out []report.RequestTiming
	for _, t := range ts {
		if t.Success && !math.IsNaN(t.TTFT) {
			out = append(out, t)
		}
	}
	return out
}

func text(r report.LoadedResult, key string) string {
	s, ok := r.Text(key)
	if !ok || s == "None" || s == "null" {
		return ""
	}
	return strings.TrimSpace(s)
}

// fileOptions fills engine flags the caller left unset from the file's
// recorded engine settings (servebench's engine section).
func fileOptions(r report.LoadedResult, base vllm.Options) vllm.Options {
	o := base
	setInt := func(dst *int, key string) {
		if *dst != 0 {
			return
		}
		if v, ok := r.Number(key); ok && v > 0 && v < math.MaxInt32 {
			*dst = int(v)
		}
	}
	setInt(&o.MaxNumSeqs, "max_num_seqs")
	setInt(&o.MaxNumBatchedTokens, "max_num_batched_tokens")
	setInt(&o.MaxModelLen, "max_model_len")
	setInt(&o.BlockSize, "block_size")
	setBool := func(dst **bool, key string) {
		if *dst != nil {
			return
		}
		if s, ok := r.Text(key); ok {
			if b, err := strconv.ParseBool(s); err == nil {
				*dst = &b
			}
		}
	}
	setBool(&o.EnableChunkedPrefill, "enable_chunked_prefill")
	setBool(&o.EnablePrefixCaching, "enable_prefix_caching")
	return o
}

// checkConsistent refuses a set of runs that span models or GPUs: one
// calibration holds for one model on one GPU.
func checkConsistent(obs []Observation) error {
	for _, o := range obs[1:] {
		first := obs[0]
		if o.Tags.GPU != first.Tags.GPU {
			return fmt.Errorf("%s: GPU %s, but %s ran on %s; calibrate one GPU at a time", o.Name(), o.Tags.GPU, first.Name(), first.Tags.GPU)
		}
		if o.Deployment.Model.Name != first.Deployment.Model.Name {
			return fmt.Errorf("%s: model %s, but %s ran %s; calibrate one model at a time", o.Name(), o.Deployment.Model.Name, first.Name(), first.Deployment.Model.Name)
		}
	}
	return nil
}

// EnvResolver looks tags up as sim's --model and --gpu do: the catalogs,
// config and GPU files, and the local Hugging Face cache of env. Its
// errors say which flag to pass.
func EnvResolver(env runspec.Env) Resolver {
	return func(t Tags) (perf.Model, perf.GPU, vllm.Profile, error) {
		m, err := perf.LookupModelInCache(t.Model, env.HF.CacheDirs())
		if err != nil {
			return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("model %q: %w (pass --model)", t.Model, err)
		}
		g, err := runspec.LookupGPU(t.GPU)
		if err != nil {
			return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("%w (pass --gpu)", err)
		}
		p, err := vllm.Lookup(t.VLLMVersion, "")
		if err != nil {
			return perf.Model{}, perf.GPU{}, vllm.Profile{}, fmt.Errorf("vLLM version %q: %w (pass --vllm-version)", t.VLLMVersion, err)
		}
		return m, g, p, nil
	}
}
