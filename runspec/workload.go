package runspec

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// Workload is what a bench or sim run sends: the dataset, the arrival
// process, the concurrency cap and the metrics reported, with vLLM's
// flag names and defaults.
type Workload struct {
	Dataset workload.Spec
	// InputLen and OutputLen (--input-len, --output-len) override the
	// selected dataset's lengths when positive.
	InputLen, OutputLen int

	RequestRate    float64
	Burstiness     float64
	RampUpStrategy string
	RampUpStartRPS float64
	RampUpEndRPS   float64
	// MaxConcurrency caps requests in flight (0: none); arrivals past it
	// wait in the client queue, which is measured.
	MaxConcurrency int

	PercentileMetrics string
	MetricPercentiles string
	Goodput           []string
}

// Register adds the workload flags to fs.
func (w *Workload) Register(fs *pflag.FlagSet) {
	d := workload.DefaultSpec()
	w.Dataset = d
	ds := &w.Dataset
	fs.StringVar(&ds.Dataset, "dataset-name", d.Dataset, "dataset: random, sonnet, sharegpt, custom, prefix_repetition")
	fs.StringVar(&ds.Path, "dataset-path", "", "path to the dataset file (sonnet text, ShareGPT JSON, custom JSONL)")
	fs.IntVar(&ds.NumPrompts, "num-prompts", d.NumPrompts, "number of prompts to send")
	fs.Int64Var(&ds.Seed, "seed", 0, "seed for every random choice (same seed, same prompts and arrivals)")
	fs.IntVar(&ds.VocabSize, "vocab-size", d.VocabSize, "vocabulary for token-ID prompts when no tokenizer is available")
	fs.IntVar(&w.InputLen, "input-len", 0, "input length for the selected dataset (overrides --random-input-len etc.)")
	fs.IntVar(&w.OutputLen, "output-len", 0, "output length for the selected dataset (overrides --random-output-len etc.)")
	fs.BoolVar(&ds.ShareGPT.NoOversample, "no-oversample", false, "do not repeat prompts when the dataset has fewer than --num-prompts")
	fs.BoolVar(&ds.ShareGPT.DisableShuffle, "disable-shuffle", false, "keep the dataset's order instead of a seeded shuffle")
	fs.Bool("skip-chat-template", false, "accepted for vLLM compatibility (servebench sends the prompt as the user message)")

	fs.IntVar(&ds.Random.InputLen, "random-input-len", d.Random.InputLen, "random dataset: input tokens per request")
	fs.IntVar(&ds.Random.OutputLen, "random-output-len", d.Random.OutputLen, "random dataset: output tokens per request")
	fs.Float64Var(&ds.Random.RangeRatio, "random-range-ratio", 0, "random dataset: lengths drawn uniformly from [len*(1-r), len*(1+r)], r in [0,1)")
	fs.IntVar(&ds.Random.PrefixLen, "random-prefix-len", 0, "random dataset: tokens of one shared prefix before each prompt")
	fs.StringVar(&ds.Random.LengthDist, "random-length-dist", workload.LengthDistUniform, "random dataset: how lengths spread around --random-input-len and --random-output-len, which stay their means: uniform (vLLM's, within --random-range-ratio) or sharegpt (ShareGPT's spread: prompts shaped as vLLM's ShareGPT sample, log-normal outputs)")
	fs.StringVar(&ds.Random.LengthsFrom, "random-lengths-from", "", "random dataset: take each request's input and output length, in order, from a result JSON's input_lens and output_lens (vLLM's or servebench's --save-detailed)")
	fs.IntVar(&ds.Sonnet.InputLen, "sonnet-input-len", d.Sonnet.InputLen, "sonnet dataset: input tokens per request")
	fs.IntVar(&ds.Sonnet.OutputLen, "sonnet-output-len", d.Sonnet.OutputLen, "sonnet dataset: output tokens per request")
	fs.IntVar(&ds.Sonnet.PrefixLen, "sonnet-prefix-len", d.Sonnet.PrefixLen, "sonnet dataset: tokens of shared prefix lines")
	fs.IntVar(&ds.ShareGPT.OutputLen, "sharegpt-output-len", 0, "sharegpt dataset: output tokens per request (default: the reference reply's length)")
	fs.IntVar(&ds.Custom.OutputLen, "custom-output-len", d.Custom.OutputLen, "custom dataset: output tokens for lines that do not set their own")
	fs.IntVar(&ds.PrefixRepetition.PrefixLen, "prefix-repetition-prefix-len", d.PrefixRepetition.PrefixLen, "prefix_repetition dataset: prefix tokens")
	fs.IntVar(&ds.PrefixRepetition.SuffixLen, "prefix-repetition-suffix-len", d.PrefixRepetition.SuffixLen, "prefix_repetition dataset: suffix tokens")
	fs.IntVar(&ds.PrefixRepetition.NumPrefixes, "prefix-repetition-num-prefixes", d.PrefixRepetition.NumPrefixes, "prefix_repetition dataset: number of distinct prefixes")
	fs.IntVar(&ds.PrefixRepetition.OutputLen, "prefix-repetition-output-len", d.PrefixRepetition.OutputLen, "prefix_repetition dataset: output tokens per request")

	fs.Float64Var(&w.RequestRate, "request-rate", math.Inf(1), "requests per second; inf sends everything at once")
	fs.Float64Var(&w.Burstiness, "burstiness", 1.0, "gamma shape of inter-arrival times: 1 is Poisson, higher is steadier, inf is constant")
	fs.StringVar(&w.RampUpStrategy, "ramp-up-strategy", "", "ramp the request rate up: linear or exponential (needs --ramp-up-start-rps and --ramp-up-end-rps)")
	fs.Float64Var(&w.RampUpStartRPS, "ramp-up-start-rps", 0, "ramp-up: rate at the first request")
	fs.Float64Var(&w.RampUpEndRPS, "ramp-up-end-rps", 0, "ramp-up: rate at the last request")
	fs.IntVar(&w.MaxConcurrency, "max-concurrency", 0, "maximum requests in flight (arrivals past it wait in the client queue, which is measured)")

	fs.StringVar(&w.PercentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics to report percentiles for: ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue")
	fs.StringVar(&w.MetricPercentiles, "metric-percentiles", "99", "percentiles to report, e.g. 50,90,99")
	fs.StringArrayVar(&w.Goodput, "goodput", nil, "SLOs for goodput as KEY:MS, e.g. --goodput ttft:500 tpot:50 (keys ttft, tpot, e2el)")
}

// ResolvedWorkload is a checked workload: the dataset, the arrival
// process and what the summary reports.
type ResolvedWorkload struct {
	Spec     workload.Spec
	Arrivals workload.Arrivals
	Summary  metrics.Options
	// PercentileMetrics and Percentiles are what the result block and
	// JSON print.
	PercentileMetrics []string
	Percentiles       []float64
}

// Resolve checks the flags and returns the dataset spec, the arrival
// process and the metric options. changed reports whether a flag was set.
func (w *Workload) Resolve(changed func(string) bool) (ResolvedWorkload, error) {
	var r ResolvedWorkload
	spec := w.Dataset
	spec.Custom.NoOversample = spec.ShareGPT.NoOversample
	spec.Custom.DisableShuffle = spec.ShareGPT.DisableShuffle
	if w.InputLen > 0 || w.OutputLen > 0 {
		in, out := w.InputLen, w.OutputLen
		switch spec.Dataset {
		case workload.DatasetRandom, "":
			setIf(&spec.Random.InputLen, in)
			setIf(&spec.Random.OutputLen, out)
		case workload.DatasetSonnet:
			setIf(&spec.Sonnet.InputLen, in)
			setIf(&spec.Sonnet.OutputLen, out)
		case workload.DatasetShareGPT:
			setIf(&spec.ShareGPT.OutputLen, out)
		case workload.DatasetCustom:
			setIf(&spec.Custom.OutputLen, out)
		case workload.DatasetPrefixRepetition:
			setIf(&spec.PrefixRepetition.OutputLen, out)
		}
	}
	r.Spec = spec
	if err := w.checkLengthsFrom(changed); err != nil {
		return r, err
	}
	if err := spec.Validate(); err != nil {
		return r, err
	}
	arr := workload.Arrivals{
		Rate: w.RequestRate, Burstiness: w.Burstiness, RampUp: w.RampUpStrategy,
		RampStart: w.RampUpStartRPS, RampEnd: w.RampUpEndRPS, Seed: spec.Seed,
	}
	if w.RampUpStrategy != "" && !changed("request-rate") {
		arr.Rate = math.Inf(1)
	}
	r.Arrivals = arr
	if err := w.checkRampRates(changed); err != nil {
		return r, err
	}
	if w.MaxConcurrency < 0 {
		return r, fmt.Errorf("--max-concurrency %d: must be positive (or omitted for no cap)", w.MaxConcurrency)
	}
	if err := arr.Validate(); err != nil {
		return r, err
	}
	pm, err := metrics.ParsePercentileMetrics(w.PercentileMetrics)
	if err != nil {
		return r, err
	}
	ps, err := metrics.ParsePercentiles(w.MetricPercentiles)
	if err != nil {
		return r, err
	}
	good, err := metrics.ParseGoodput(w.Goodput)
	if err != nil {
		return r, err
	}
	// The summary JSON always reports p50/p95/p99; the text block and result
	// JSON print only the requested ones.
	all := append([]float64{50, 95, 99}, ps...)
	r.Summary = metrics.Options{Percentiles: all, Goodput: good}
	if len(good) == 0 {
		r.Summary.Goodput = nil
	}
	r.PercentileMetrics, r.Percentiles = pm, ps
	return r, nil
}

// checkLengthsFrom refuses the length flags a lengths file replaces when
// they were given, rather than silently ignoring them.
func (w *Workload) checkLengthsFrom(changed func(string) bool) error {
	if w.Dataset.Random.LengthsFrom == "" || (w.Dataset.Dataset != workload.DatasetRandom && w.Dataset.Dataset != "") {
		return nil // Validate refuses a lengths file for another dataset
	}
	for _, name := range []string{"random_input_len", "random_output_len", "input_len", "output_len"} {
		if changed(flagName(name)) {
			return option.Errorf("{"+name+"} and {random_lengths_from} %q: the file gives every request's lengths; drop {"+name+"}", w.Dataset.Random.LengthsFrom)
		}
	}
	return nil
}

// checkRampRates blames the rates a ramp-up needs but was not given,
// before their zero defaults are judged as values the user chose.
func (w *Workload) checkRampRates(changed func(string) bool) error {
	if w.RampUpStrategy == "" {
		return nil
	}
	var missing []string
	for _, name := range []string{"ramp_up_start_rps", "ramp_up_end_rps"} {
		if !changed(flagName(name)) {
			missing = append(missing, "{"+name+"}")
		}
	}
	if len(missing) == 0 {
		return nil
	}
	// The missing names go into the format as placeholders, so the CLI
	// spells them as flags.
	return option.Errorf("{ramp_up_strategy} %s needs "+strings.Join(missing, " and ")+": the rates at the first and last request, e.g. {ramp_up_start_rps} 1 {ramp_up_end_rps} 20",
		w.RampUpStrategy)
}

func setIf(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
}

// flagName spells a library option name (vLLM's argument name, e.g.
// random_input_len) as a flag name without dashes.
func flagName(option string) string { return strings.ReplaceAll(option, "_", "-") }
