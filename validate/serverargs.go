package validate

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/vllm"
)

// serverFlags are the `vllm serve` flags a published run may carry,
// parsed into the engine options sim models. Flags that change nothing sim
// models (ports, logging, names) are accepted and listed; any other flag
// makes the run unsimulable rather than being dropped silently.
type serverFlags struct {
	fs *pflag.FlagSet

	tensorParallel, pipelineParallel int
	maxModelLen, maxNumSeqs          int
	maxNumBatchedTokens, blockSize   int
	numSchedulerSteps                int
	gpuMemoryUtilization, swapSpace  float64
	schedulerDelayFactor             float64
	chunkedPrefill, prefixCaching    bool
	noChunkedPrefill, noPrefixCache  bool
	preemptionMode, kvCacheDType     string
	executor                         string
	enforceEager, noAsyncOutputProc  bool
	expertParallel                   bool
	dtype, quantization              string
	ignoredStrings                   []string
	ignoredBools                     []string
}

// noEffectValued and noEffectBool are the accepted flags that change nothing
// sim models: networking, logging, names, model loading.
var (
	noEffectValued = []string{"host", "port", "served-model-name", "tokenizer", "download-dir", "load-format",
		"seed", "uvicorn-log-level", "api-key", "max-log-len", "tokenizer-mode", "revision", "model",
		"chat-template", "response-role", "root-path", "middleware", "ssl-keyfile", "ssl-certfile", "tool-call-parser",
		"reasoning-parser", "config-format", "hf-overrides"}
	noEffectBool = []string{"disable-log-requests", "disable-log-stats", "trust-remote-code", "disable-frontend-multiprocessing",
		"enable-auto-tool-choice", "disable-fastapi-docs", "enable-log-requests", "no-enable-log-requests"}
)

func newServerFlags() *serverFlags {
	f := &serverFlags{fs: pflag.NewFlagSet("vllm serve", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	fs.IntVar(&f.tensorParallel, "tensor-parallel-size", 0, "")
	fs.IntVar(&f.pipelineParallel, "pipeline-parallel-size", 0, "")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 0, "")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 0, "")
	fs.IntVar(&f.blockSize, "block-size", 0, "")
	fs.IntVar(&f.numSchedulerSteps, "num-scheduler-steps", 0, "")
	fs.Float64Var(&f.gpuMemoryUtilization, "gpu-memory-utilization", 0, "")
	fs.Float64Var(&f.swapSpace, "swap-space", 0, "")
	fs.Float64Var(&f.schedulerDelayFactor, "scheduler-delay-factor", 0, "")
	fs.BoolVar(&f.chunkedPrefill, "enable-chunked-prefill", false, "")
	fs.BoolVar(&f.noChunkedPrefill, "no-enable-chunked-prefill", false, "")
	fs.BoolVar(&f.prefixCaching, "enable-prefix-caching", false, "")
	fs.BoolVar(&f.noPrefixCache, "no-enable-prefix-caching", false, "")
	fs.StringVar(&f.preemptionMode, "preemption-mode", "", "")
	fs.StringVar(&f.kvCacheDType, "kv-cache-dtype", "", "")
	fs.StringVar(&f.executor, "distributed-executor-backend", "", "")
	fs.BoolVar(&f.enforceEager, "enforce-eager", false, "")
	fs.BoolVar(&f.noAsyncOutputProc, "disable-async-output-proc", false, "")
	fs.BoolVar(&f.expertParallel, "enable-expert-parallel", false, "")
	fs.StringVar(&f.dtype, "dtype", "", "")
	fs.StringVarP(&f.quantization, "quantization", "q", "", "")
	var sink string
	for _, name := range noEffectValued {
		fs.StringVar(&sink, name, "", "")
	}
	var bsink bool
	for _, name := range noEffectBool {
		fs.BoolVar(&bsink, name, false, "")
	}
	return f
}

// normalizeServerArgs spells every flag as pflag reads it: vLLM accepts
// --max_num_seqs for --max-num-seqs and -tp / -pp for the parallel sizes.
func normalizeServerArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case a == "-tp" || strings.HasPrefix(a, "-tp="):
			a = "--tensor-parallel-size" + strings.TrimPrefix(a, "-tp")
		case a == "-pp" || strings.HasPrefix(a, "-pp="):
			a = "--pipeline-parallel-size" + strings.TrimPrefix(a, "-pp")
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			a = "--" + strings.ReplaceAll(name, "_", "-")
			if hasValue {
				a += "=" + value
			}
		}
		out = append(out, a)
	}
	return out
}

// parseServerArgs reads a run's server flags into vLLM options; what it
// cannot model is an error naming the flag.
func parseServerArgs(args []string) (*serverFlags, error) {
	f := newServerFlags()
	if err := f.fs.Parse(normalizeServerArgs(args)); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: "); ok {
			return nil, fmt.Errorf("server flag %s is not modelled by sim", name)
		}
		if rest, ok := strings.CutPrefix(err.Error(), "unknown shorthand flag: "); ok {
			// pflag says "'O' in -O3"; the argument is what the user wrote.
			if _, arg, found := strings.Cut(rest, " in "); found {
				rest = arg
			}
			return nil, fmt.Errorf("server flag %s is not modelled by sim", rest)
		}
		return nil, fmt.Errorf("server flags: %s", oneLine(err.Error()))
	}
	if rest := f.fs.Args(); len(rest) > 0 {
		// vllm serve takes the model as its one positional argument.
		if len(rest) > 1 {
			return nil, fmt.Errorf("server flags: unexpected arguments %q", rest[1:])
		}
	}
	f.fs.Visit(func(fl *pflag.Flag) {
		if slices.Contains(noEffectValued, fl.Name) {
			f.ignoredStrings = append(f.ignoredStrings, "--"+fl.Name)
		}
		if slices.Contains(noEffectBool, fl.Name) {
			f.ignoredBools = append(f.ignoredBools, "--"+fl.Name)
		}
	})
	return f, nil
}

func (f *serverFlags) changed(name string) bool { return f.fs.Changed(name) }

// ignored lists the given flags that change nothing sim models.
func (f *serverFlags) ignored() []string {
	return append(slices.Clone(f.ignoredStrings), f.ignoredBools...)
}

// apply puts the flags into o and appends their `servebench sim`
// spelling to args. Zero and unset mean vLLM's default, as in sim.
func (f *serverFlags) apply(o *vllm.Options) (args []string) {
	setInt := func(name string, v int, dst *int) {
		if f.changed(name) {
			*dst = v
			args = append(args, "--"+name, strconv.Itoa(v))
		}
	}
	setInt("max-model-len", f.maxModelLen, &o.MaxModelLen)
	setInt("max-num-seqs", f.maxNumSeqs, &o.MaxNumSeqs)
	setInt("max-num-batched-tokens", f.maxNumBatchedTokens, &o.MaxNumBatchedTokens)
	setInt("block-size", f.blockSize, &o.BlockSize)
	setInt("num-scheduler-steps", f.numSchedulerSteps, &o.NumSchedulerSteps)
	setFloat := func(name string, v float64, dst *float64) {
		if f.changed(name) {
			*dst = v
			args = append(args, "--"+name, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	setFloat("gpu-memory-utilization", f.gpuMemoryUtilization, &o.GPUMemoryUtilization)
	setFloat("scheduler-delay-factor", f.schedulerDelayFactor, &o.SchedulerDelayFactor)
	if f.changed("swap-space") {
		v := f.swapSpace
		o.SwapSpaceGiB = &v
		args = append(args, "--swap-space", strconv.FormatFloat(v, 'g', -1, 64))
	}
	setBool := func(v bool, dst **bool, on, off string) {
		b := v
		*dst = &b
		if v {
			args = append(args, on)
		} else {
			args = append(args, off)
		}
	}
	switch {
	case f.changed("no-enable-chunked-prefill") && f.noChunkedPrefill:
		setBool(false, &o.EnableChunkedPrefill, "--enable-chunked-prefill", "--enable-chunked-prefill=false")
	case f.changed("enable-chunked-prefill"):
		setBool(f.chunkedPrefill, &o.EnableChunkedPrefill, "--enable-chunked-prefill", "--enable-chunked-prefill=false")
	}
	switch {
	case f.changed("no-enable-prefix-caching") && f.noPrefixCache:
		setBool(false, &o.EnablePrefixCaching, "--enable-prefix-caching", "--no-enable-prefix-caching")
	case f.changed("enable-prefix-caching"):
		setBool(f.prefixCaching, &o.EnablePrefixCaching, "--enable-prefix-caching", "--no-enable-prefix-caching")
	}
	setString := func(name, v string, dst *string) {
		if f.changed(name) {
			*dst = v
			args = append(args, "--"+name, v)
		}
	}
	setString("preemption-mode", f.preemptionMode, &o.PreemptionMode)
	setString("distributed-executor-backend", f.executor, &o.DistributedExecutorBackend)
	setFlag := func(name string, v bool, dst *bool) {
		if f.changed(name) && v {
			*dst = true
			args = append(args, "--"+name)
		}
	}
	setFlag("enforce-eager", f.enforceEager, &o.EnforceEager)
	setFlag("disable-async-output-proc", f.noAsyncOutputProc, &o.DisableAsyncOutputProc)
	setFlag("enable-expert-parallel", f.expertParallel, &o.ExpertParallel)
	return args
}
