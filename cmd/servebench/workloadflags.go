package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/workload"
)

// workloadFlags are the dataset, arrival and metric flags bench and sim
// share, with vLLM's names and defaults.
type workloadFlags struct {
	spec      workload.Spec
	inputLen  int // --input-len: overrides the selected dataset's input length
	outputLen int // --output-len: overrides the selected dataset's output length

	requestRate float64
	burstiness  float64
	rampUp      string
	rampStart   float64
	rampEnd     float64
	// maxConcurrency caps requests in flight (0: none); arrivals past it
	// wait in the client queue, which is measured.
	maxConcurrency int

	percentileMetrics string
	metricPercentiles string
	goodput           []string
}

func (f *workloadFlags) register(fs *pflag.FlagSet) {
	d := workload.DefaultSpec()
	f.spec = d
	fs.StringVar(&f.spec.Dataset, "dataset-name", d.Dataset, "dataset: random, sonnet, sharegpt, custom, prefix_repetition")
	fs.StringVar(&f.spec.Path, "dataset-path", "", "path to the dataset file (sonnet text, ShareGPT JSON, custom JSONL)")
	fs.IntVar(&f.spec.NumPrompts, "num-prompts", d.NumPrompts, "number of prompts to send")
	fs.Int64Var(&f.spec.Seed, "seed", 0, "seed for every random choice (same seed, same prompts and arrivals)")
	fs.IntVar(&f.spec.VocabSize, "vocab-size", d.VocabSize, "vocabulary for token-ID prompts when no tokenizer is available")
	fs.IntVar(&f.inputLen, "input-len", 0, "input length for the selected dataset (overrides --random-input-len etc.)")
	fs.IntVar(&f.outputLen, "output-len", 0, "output length for the selected dataset (overrides --random-output-len etc.)")
	fs.BoolVar(&f.spec.ShareGPT.NoOversample, "no-oversample", false, "do not repeat prompts when the dataset has fewer than --num-prompts")
	fs.BoolVar(&f.spec.ShareGPT.DisableShuffle, "disable-shuffle", false, "keep the dataset's order instead of a seeded shuffle")
	fs.Bool("skip-chat-template", false, "accepted for vLLM compatibility (servebench sends the prompt as the user message)")

	fs.IntVar(&f.spec.Random.InputLen, "random-input-len", d.Random.InputLen, "random dataset: input tokens per request")
	fs.IntVar(&f.spec.Random.OutputLen, "random-output-len", d.Random.OutputLen, "random dataset: output tokens per request")
	fs.Float64Var(&f.spec.Random.RangeRatio, "random-range-ratio", 0, "random dataset: lengths drawn uniformly from [len*(1-r), len*(1+r)], r in [0,1)")
	fs.IntVar(&f.spec.Random.PrefixLen, "random-prefix-len", 0, "random dataset: tokens of one shared prefix before each prompt")
	fs.IntVar(&f.spec.Sonnet.InputLen, "sonnet-input-len", d.Sonnet.InputLen, "sonnet dataset: input tokens per request")
	fs.IntVar(&f.spec.Sonnet.OutputLen, "sonnet-output-len", d.Sonnet.OutputLen, "sonnet dataset: output tokens per request")
	fs.IntVar(&f.spec.Sonnet.PrefixLen, "sonnet-prefix-len", d.Sonnet.PrefixLen, "sonnet dataset: tokens of shared prefix lines")
	fs.IntVar(&f.spec.ShareGPT.OutputLen, "sharegpt-output-len", 0, "sharegpt dataset: output tokens per request (default: the reference reply's length)")
	fs.IntVar(&f.spec.Custom.OutputLen, "custom-output-len", d.Custom.OutputLen, "custom dataset: output tokens for lines that do not set their own")
	fs.IntVar(&f.spec.PrefixRepetition.PrefixLen, "prefix-repetition-prefix-len", d.PrefixRepetition.PrefixLen, "prefix_repetition dataset: prefix tokens")
	fs.IntVar(&f.spec.PrefixRepetition.SuffixLen, "prefix-repetition-suffix-len", d.PrefixRepetition.SuffixLen, "prefix_repetition dataset: suffix tokens")
	fs.IntVar(&f.spec.PrefixRepetition.NumPrefixes, "prefix-repetition-num-prefixes", d.PrefixRepetition.NumPrefixes, "prefix_repetition dataset: number of distinct prefixes")
	fs.IntVar(&f.spec.PrefixRepetition.OutputLen, "prefix-repetition-output-len", d.PrefixRepetition.OutputLen, "prefix_repetition dataset: output tokens per request")

	fs.Float64Var(&f.requestRate, "request-rate", math.Inf(1), "requests per second; inf sends everything at once")
	fs.Float64Var(&f.burstiness, "burstiness", 1.0, "gamma shape of inter-arrival times: 1 is Poisson, higher is steadier, inf is constant")
	fs.StringVar(&f.rampUp, "ramp-up-strategy", "", "ramp the request rate up: linear or exponential (needs --ramp-up-start-rps and --ramp-up-end-rps)")
	fs.Float64Var(&f.rampStart, "ramp-up-start-rps", 0, "ramp-up: rate at the first request")
	fs.Float64Var(&f.rampEnd, "ramp-up-end-rps", 0, "ramp-up: rate at the last request")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "maximum requests in flight (arrivals past it wait in the client queue, which is measured)")

	fs.StringVar(&f.percentileMetrics, "percentile-metrics", "ttft,tpot,itl", "metrics to report percentiles for: ttft,tpot,itl,e2el,client_queue_time,e2el_including_client_queue")
	fs.StringVar(&f.metricPercentiles, "metric-percentiles", "99", "percentiles to report, e.g. 50,90,99")
	fs.StringArrayVar(&f.goodput, "goodput", nil, "SLOs for goodput as KEY:MS, e.g. --goodput ttft:500 tpot:50 (keys ttft, tpot, e2el)")
}

// resolve validates the flags and returns the dataset spec, the arrival
// process and the metric options. changed reports whether a flag was set.
func (f *workloadFlags) resolve(changed func(string) bool) (workload.Spec, workload.Arrivals, metrics.Options, []string, []float64, error) {
	spec := f.spec
	spec.Custom.NoOversample = spec.ShareGPT.NoOversample
	spec.Custom.DisableShuffle = spec.ShareGPT.DisableShuffle
	if f.inputLen > 0 || f.outputLen > 0 {
		in, out := f.inputLen, f.outputLen
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
	if err := spec.Validate(); err != nil {
		return spec, workload.Arrivals{}, metrics.Options{}, nil, nil, err
	}
	arr := workload.Arrivals{
		Rate: f.requestRate, Burstiness: f.burstiness, RampUp: f.rampUp,
		RampStart: f.rampStart, RampEnd: f.rampEnd, Seed: spec.Seed,
	}
	if f.rampUp != "" && !changed("request-rate") {
		arr.Rate = math.Inf(1)
	}
	if f.maxConcurrency < 0 {
		return spec, arr, metrics.Options{}, nil, nil, fmt.Errorf("--max-concurrency %d: must be positive (or omitted for no cap)", f.maxConcurrency)
	}
	if err := arr.Validate(); err != nil {
		return spec, arr, metrics.Options{}, nil, nil, err
	}
	pm, err := metrics.ParsePercentileMetrics(f.percentileMetrics)
	if err != nil {
		return spec, arr, metrics.Options{}, nil, nil, err
	}
	ps, err := metrics.ParsePercentiles(f.metricPercentiles)
	if err != nil {
		return spec, arr, metrics.Options{}, nil, nil, err
	}
	good, err := metrics.ParseGoodput(f.goodput)
	if err != nil {
		return spec, arr, metrics.Options{}, nil, nil, err
	}
	// The summary JSON always reports p50/p95/p99; the text block and result
	// JSON print only the requested ones.
	all := append([]float64{50, 95, 99}, ps...)
	opts := metrics.Options{Percentiles: all, Goodput: good}
	if len(good) == 0 {
		opts.Goodput = nil
	}
	return spec, arr, opts, pm, ps, nil
}

func setIf(dst *int, v int) {
	if v > 0 {
		*dst = v
	}
}

// parseHeaders parses --header items in either "Name: value" or Name=value
// form. Its errors never repeat the item: a malformed Authorization header
// must not print the token it carries.
func parseHeaders(items []string) ([][2]string, error) {
	out := make([][2]string, 0, len(items))
	for i, item := range items {
		name, value, err := redact.SplitHeader(item)
		if err != nil {
			return nil, fmt.Errorf("--header (item %d): %w", i+1, err)
		}
		out = append(out, [2]string{name, value})
	}
	return out, nil
}

// parseKeyValues parses KEY=VALUE items (--metadata).
func parseKeyValues(flag string, items []string) ([][2]string, error) {
	var out [][2]string
	for _, item := range items {
		k, v, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%s %q: expected KEY=VALUE", flag, item)
		}
		out = append(out, [2]string{strings.TrimSpace(k), v})
	}
	return out, nil
}
