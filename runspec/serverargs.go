package runspec

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/vllm"
)

// ServerArgs are the `vllm serve` flags a server ran with (a published
// run's, or the ones a user gives calibrate), parsed into the engine
// options sim models. They are Engine's flags (sim's and serve's, so one
// definition serves every command), less the ones only servebench has,
// plus the two vLLM spells that Engine does not (--dtype,
// --no-enable-chunked-prefill). Flags that change nothing sim models
// (ports, logging, names) are accepted and listed; any other flag is an
// error rather than being dropped silently.
type ServerArgs struct {
	fs *pflag.FlagSet

	// Engine holds the parsed values; Changed says which were given.
	Engine Engine
	// DType is --dtype as given.
	DType            string
	noChunkedPrefill bool
	ignoredStrings   []string
	ignoredBools     []string
}

// noEffectValued and noEffectBool are the accepted flags that change nothing
// sim models: networking, logging, names, model loading.
var (
	noEffectValued = []string{"host", "port", "served-model-name", "tokenizer", "download-dir", "load-format",
		"seed", "uvicorn-log-level", "api-key", "max-log-len", "tokenizer-mode", "revision", "model",
		"chat-template", "response-role", "root-path", "middleware", "ssl-keyfile", "ssl-certfile", "tool-call-parser",
		"reasoning-parser", "config-format", "hf-overrides"}
	noEffectBool = []string{"disable-log-requests", "disable-log-stats", "trust-remote-code",
		"enable-auto-tool-choice", "disable-fastapi-docs", "enable-log-requests", "no-enable-log-requests"}
)

// modelledServerFlags are the engine flags Apply and its callers carry
// into the simulation. A flag Engine registers that is not here (the
// ones only servebench has, such as --gpu or --host-speed, and any added
// later) is refused, so that none is dropped without a word.
var modelledServerFlags = []string{"tensor-parallel-size", "pipeline-parallel-size", "max-model-len", "max-num-seqs",
	"max-num-batched-tokens", "block-size", "num-scheduler-steps", "gpu-memory-utilization", "swap-space",
	"scheduler-delay-factor", "enable-chunked-prefill", "no-enable-chunked-prefill", "enable-prefix-caching",
	"no-enable-prefix-caching", "preemption-mode", "kv-cache-dtype", "distributed-executor-backend", "enforce-eager",
	"max-seq-len-to-capture",
	"disable-async-output-proc", "disable-frontend-multiprocessing", "multi-step-stream-outputs", "async-scheduling", "no-async-scheduling", "enable-expert-parallel", "dtype", "quantization"}

func newServerArgs() *ServerArgs {
	f := &ServerArgs{fs: pflag.NewFlagSet("vllm serve", pflag.ContinueOnError)}
	fs := f.fs
	fs.SetOutput(io.Discard)
	f.Engine.Register(fs)
	fs.StringVar(&f.DType, "dtype", "", "")
	fs.BoolVar(&f.noChunkedPrefill, "no-enable-chunked-prefill", false, "")
	var sink string
	for _, name := range noEffectValued {
		if fs.Lookup(name) == nil {
			fs.StringVar(&sink, name, "", "")
		}
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

// ParseServerArgs reads a server's flags into vLLM options; what sim
// cannot model is an error naming the flag.
func ParseServerArgs(args []string) (*ServerArgs, error) {
	f := newServerArgs()
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
		return nil, fmt.Errorf("server flags: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	if rest := f.fs.Args(); len(rest) > 0 {
		// vllm serve takes the model as its one positional argument.
		if len(rest) > 1 {
			return nil, fmt.Errorf("server flags: unexpected arguments %q", rest[1:])
		}
	}
	var unmodelled string
	f.fs.Visit(func(fl *pflag.Flag) {
		switch {
		case slices.Contains(noEffectValued, fl.Name):
			f.ignoredStrings = append(f.ignoredStrings, "--"+fl.Name)
		case slices.Contains(noEffectBool, fl.Name):
			f.ignoredBools = append(f.ignoredBools, "--"+fl.Name)
		case !slices.Contains(modelledServerFlags, fl.Name) && unmodelled == "":
			unmodelled = "--" + fl.Name
		}
	})
	if unmodelled != "" {
		return nil, fmt.Errorf("server flag %s is not modelled by sim", unmodelled)
	}
	return f, nil
}

// Changed reports whether the flag (its long name) was given.
func (f *ServerArgs) Changed(name string) bool { return f.fs.Changed(name) }

// Ignored lists the given flags that change nothing sim models.
func (f *ServerArgs) Ignored() []string {
	return append(slices.Clone(f.ignoredStrings), f.ignoredBools...)
}

// Apply puts the flags into o and returns their `servebench sim`
// spelling. Zero and unset mean vLLM's default, as in sim.
func (f *ServerArgs) Apply(o *vllm.Options) (args []string) {
	setInt := func(name string, v int, dst *int) {
		if f.Changed(name) {
			*dst = v
			args = append(args, "--"+name, strconv.Itoa(v))
		}
	}
	e := &f.Engine
	setInt("max-model-len", e.MaxModelLen, &o.MaxModelLen)
	setInt("max-num-seqs", e.MaxNumSeqs, &o.MaxNumSeqs)
	setInt("max-num-batched-tokens", e.MaxNumBatchedTokens, &o.MaxNumBatchedTokens)
	setInt("block-size", e.BlockSize, &o.BlockSize)
	setInt("num-scheduler-steps", e.NumSchedulerSteps, &o.NumSchedulerSteps)
	setInt("max-seq-len-to-capture", e.MaxSeqLenToCapture, &o.MaxSeqLenToCapture)
	setFloat := func(name string, v float64, dst *float64) {
		if f.Changed(name) {
			*dst = v
			args = append(args, "--"+name, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	setFloat("gpu-memory-utilization", e.GPUMemoryUtilization, &o.GPUMemoryUtilization)
	setFloat("scheduler-delay-factor", e.SchedulerDelayFactor, &o.SchedulerDelayFactor)
	if f.Changed("swap-space") {
		v := e.SwapSpace
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
	// A flag vLLM also takes negated (--no-X): the negation, when given
	// as true, wins.
	setNegatable := func(name, negation string, negated, v bool, dst **bool, off string) {
		switch {
		case f.Changed(negation) && negated:
			setBool(false, dst, "--"+name, off)
		case f.Changed(name):
			setBool(v, dst, "--"+name, off)
		}
	}
	setNegatable("enable-chunked-prefill", "no-enable-chunked-prefill", f.noChunkedPrefill, e.EnableChunkedPrefill,
		&o.EnableChunkedPrefill, "--enable-chunked-prefill=false")
	setNegatable("enable-prefix-caching", "no-enable-prefix-caching", e.NoEnablePrefixCaching, e.EnablePrefixCaching,
		&o.EnablePrefixCaching, "--no-enable-prefix-caching")
	if f.Changed("multi-step-stream-outputs") {
		setBool(e.MultiStepStreamOutputs, &o.MultiStepStreamOutputs, "--multi-step-stream-outputs", "--multi-step-stream-outputs=false")
	}
	setNegatable("async-scheduling", "no-async-scheduling", e.NoAsyncScheduling, e.AsyncScheduling,
		&o.AsyncScheduling, "--no-async-scheduling")
	setString := func(name, v string, dst *string) {
		if f.Changed(name) {
			*dst = v
			args = append(args, "--"+name, v)
		}
	}
	setString("preemption-mode", e.PreemptionMode, &o.PreemptionMode)
	setString("distributed-executor-backend", e.Executor, &o.DistributedExecutorBackend)
	setFlag := func(name string, v bool, dst *bool) {
		if f.Changed(name) && v {
			*dst = true
			args = append(args, "--"+name)
		}
	}
	setFlag("enforce-eager", e.EnforceEager, &o.EnforceEager)
	setFlag("disable-async-output-proc", e.DisableAsyncOutputProc, &o.DisableAsyncOutputProc)
	setFlag("disable-frontend-multiprocessing", e.DisableFrontendMultiprocessing, &o.DisableFrontendMultiprocessing)
	setFlag("enable-expert-parallel", e.ExpertParallel, &o.ExpertParallel)
	return args
}
