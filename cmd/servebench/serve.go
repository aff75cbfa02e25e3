package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/tokenizer"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newServeCmd) }

// serveFlags are `serve`'s own flags on top of the engine flags.
type serveFlags struct {
	engine engineFlags
	fixed  fixedLatencyFlags
	kv     kvRoleFlags

	host            string
	port            int
	servedNames     []string
	apiKey          string
	seed            uint64
	tokenizer       string
	outputLenDist   string
	failureRate     float64
	failureTypes    string
	slowFirstByte   time.Duration
	statsInterval   time.Duration
	disableLogStats bool
	errorStyle      string
	promptDetails   bool
	maxBodyBytes    int64
	bodyTimeout     time.Duration
	maxConnections  int
	logLevel        string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [MODEL]",
		Short: "Run a vLLM-compatible OpenAI server whose tokens are timed by the engine model (no GPU)",
		Long: `serve emulates a vLLM server: /v1/completions, /v1/chat/completions, /v1/models,
/tokenize, /detokenize, /metrics (vLLM's metric names and buckets), /health, /version and
/reset_prefix_cache. Requests go through the same scheduler and KV-cache model as "sim", and each
engine step lasts what the step-time model says, so tokens stream out when a GPU running vLLM with
these flags would produce them. It takes vllm serve's engine flags; invalid combinations fail
with vLLM's own error text before listening.

Test a router against several emulated replicas:

  servebench serve --port 8001 --seed 1 &
  servebench serve --port 8002 --seed 2 &
  servebench serve --port 8003 --seed 3 --failure-rate 0.05 --failure-types 503,drop &
  # point the router at 127.0.0.1:8001-8003, then load it:
  servebench bench --base-url http://127.0.0.1:9000 --num-prompts 500 --request-rate 20`,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true, // vLLM's -tp/-pp need rewriting first (vllmArgs)
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.DisableFlagParsing = false
			if err := cmd.ParseFlags(vllmArgs(args)); err != nil {
				return err
			}
			if help, _ := cmd.Flags().GetBool("help"); help {
				return cmd.Help()
			}
			return runServe(cmd, &f, cmd.Flags().Args())
		},
	}
	fs := cmd.Flags()
	f.engine.register(fs)
	f.fixed.register(fs)
	fs.StringVar(&f.host, "host", "127.0.0.1", "host name to listen on")
	fs.IntVar(&f.port, "port", 8000, "port to listen on (0 picks a free one)")
	fs.StringSliceVar(&f.servedNames, "served-model-name", nil, "model name(s) requests use and /v1/models lists (default: --model); the first labels the metrics")
	fs.StringVar(&f.apiKey, "api-key", "", "require this key as \"Authorization: Bearer KEY\" on every endpoint but /health, /version and /metrics (default: $VLLM_API_KEY, as vLLM)")
	fs.Uint64Var(&f.seed, "seed", 0, "seed for generated text, output lengths and injected failures")
	fs.StringVar(&f.tokenizer, "tokenizer", serve.DefaultTokenizer, "tokenizer counting prompt tokens: cl100k_base, o200k_base, p50k_base, r50k_base, gpt2, or a tokenizer.json path")
	fs.StringVar(&f.outputLenDist, "output-len-dist", "max", "output length without ignore_eos: max (run to max_tokens), fixed:N, uniform:MIN:MAX or lognormal:MEAN:SIGMA; always capped by max_tokens")
	fs.Float64Var(&f.failureRate, "failure-rate", 0, "fraction of generation requests that fail (fault injection, seeded)")
	fs.StringVar(&f.failureTypes, "failure-types", "429,500,503,drop,slow-first-byte", "comma-separated failures to inject: 429, 500, 503, drop (connection closed mid-stream), slow-first-byte")
	fs.DurationVar(&f.slowFirstByte, "slow-first-byte", 2*time.Second, "delay before the first byte of a slow-first-byte failure")
	fs.DurationVar(&f.statsInterval, "stats-interval", 0, "period of the \"Avg prompt throughput\" stats line (default: vLLM's, 5s for v0 and 10s for v1; 0 disables)")
	fs.BoolVar(&f.disableLogStats, "disable-log-stats", false, "disable the periodic stats line")
	fs.StringVar(&f.errorStyle, "error-style", string(serve.ErrorStyleNested), "error body shape: nested ({\"error\":{...}}, current vLLM) or legacy ({\"object\":\"error\",...}, vLLM ≤0.8)")
	fs.BoolVar(&f.promptDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens (prefix-cache hits)")
	fs.Int64Var(&f.maxBodyBytes, "max-request-body-bytes", 8<<20, "largest request body accepted (larger → 413)")
	fs.DurationVar(&f.bodyTimeout, "request-body-timeout", 30*time.Second, "time a client has to send a request body (slower → 408 and the connection is closed); streamed responses are not bounded by it")
	fs.IntVar(&f.maxConnections, "max-connections", 0, "most connections open at once; more wait until one closes (0: no cap)")
	f.kv.register(fs)
	fs.StringVar(&f.logLevel, "log-level", "info", "log level of the vLLM-style lines on stderr: debug, info, warning, error")
	return cmd
}

func runServe(cmd *cobra.Command, f *serveFlags, args []string) error {
	switch {
	case len(args) > 1:
		return fmt.Errorf("serve takes at most one positional argument (the model), got %d: %s", len(args), strings.Join(args, " "))
	case len(args) == 1 && f.engine.changed("model"):
		return fmt.Errorf("model given twice (positional %q and --model %q); pass one", args[0], f.engine.model)
	case len(args) == 1:
		f.engine.model = args[0]
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("VLLM_API_KEY") // vLLM takes the key from either
	}
	deployment, capacity, ec, stepModel, err := f.engine.build()
	if err != nil {
		return err
	}
	stepModel, fixedLatency, err := f.fixed.stepModel(stepModel, capacity.MaxNumSeqs, f.seed)
	if err != nil {
		return err
	}
	outputLen, err := serve.ParseOutputLenDist(f.outputLenDist)
	if err != nil {
		return fmt.Errorf("--output-len-dist: %w", err)
	}
	failureTypes, err := serve.ParseFaultTypes(f.failureTypes)
	if err != nil {
		return fmt.Errorf("--failure-types: %w", err)
	}
	if f.failureRate < 0 || f.failureRate > 1 {
		return fmt.Errorf("--failure-rate %g: give a fraction between 0 and 1", f.failureRate)
	}
	errorStyle, err := serve.ParseErrorStyle(f.errorStyle)
	if err != nil {
		return fmt.Errorf("--error-style: %w", err)
	}
	level, err := parseServeLogLevel(f.logLevel)
	if err != nil {
		return err
	}
	if f.bodyTimeout <= 0 {
		return fmt.Errorf("--request-body-timeout %v: give a positive duration", f.bodyTimeout)
	}
	if f.maxConnections < 0 {
		return fmt.Errorf("--max-connections %d: give a positive number, or 0 for no cap", f.maxConnections)
	}
	if f.port < 0 || f.port > 65535 {
		return fmt.Errorf("--port %d: give a port between 0 and 65535", f.port)
	}
	stats := f.engine.resolved.StatsInterval
	if cmd.Flags().Changed("stats-interval") {
		if f.statsInterval < 0 {
			return fmt.Errorf("--stats-interval %v: give a positive period, or 0 to disable", f.statsInterval)
		}
		stats = f.statsInterval
	}
	if f.disableLogStats {
		stats = 0
	}
	ctx := cmd.Context()
	tokSpec, err := resolveTokenizerSpec(f.tokenizer)
	if err != nil {
		return err
	}
	tok, err := tokenizer.New(ctx, tokSpec, tokenizer.Options{})
	if err != nil {
		return fmt.Errorf("--tokenizer: %w", err)
	}
	if tok == nil {
		return fmt.Errorf("--tokenizer: serve needs a tokenizer; use %s or a tokenizer.json path", serve.DefaultTokenizer)
	}
	logger := slog.New(serve.NewLogHandler(cmd.ErrOrStderr(), level))
	cfg := serve.Config{
		Engine:                    ec,
		StepModel:                 stepModel,
		Model:                     f.engine.model,
		ServedModelNames:          f.servedNames,
		Tokenizer:                 tok,
		Seed:                      f.seed,
		OutputLen:                 outputLen,
		Faults:                    serve.Faults{Rate: f.failureRate, Types: failureTypes, SlowFirstByte: f.slowFirstByte},
		APIKey:                    f.apiKey,
		ErrorStyle:                errorStyle,
		EnablePromptTokensDetails: f.promptDetails,
		StatsInterval:             stats,
		Logger:                    logger,
		MaxBodyBytes:              f.maxBodyBytes,
		Version:                   f.engine.resolved.Profile.Release.String(),
		BodyReadTimeout:           f.bodyTimeout,
		MaxConnections:            f.maxConnections,
	}
	startKV, err := f.kv.apply(&cfg, deployment, f.host)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(f.host, strconv.Itoa(f.port))
	running, err := serve.Start(ctx, cfg, addr)
	if err != nil {
		return err
	}
	if startKV != nil {
		if err := startKV(ctx, running, logger); err != nil {
			_ = running.Close()
			return err
		}
	}
	logger.Info(fmt.Sprintf("servebench serve: emulating vLLM %s (engine %s) with %s on %s (TP %d, PP %d), %s",
		f.engine.resolved.Profile.Release, ec.Version, deployment.Model.Name, deployment.GPU.Name,
		deployment.TensorParallel, deployment.PipelineParallel, describeEngineConfig(ec, capacity.MaxNumSeqs)))
	logDistributedLines(logger, f.engine.resolved)
	if fixedLatency {
		logger.Info("servebench serve: fixed-latency mode: " + describeFixedLatency(f.fixed.cfg))
	}
	if warning := exposureWarning(running.Addr(), f.apiKey); warning != "" {
		logger.Warn(warning)
	}
	logger.Info("Starting vLLM API server on " + running.URL())
	<-ctx.Done()
	logger.Info("Shutting down")
	if err := running.Close(); err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

func describeEngineConfig(ec engine.Config, maxSeqs int) string {
	return fmt.Sprintf("max_model_len %d, max_num_seqs %d, max_num_batched_tokens %d, block_size %d, chunked prefill %v, prefix caching %v",
		ec.MaxModelLen, maxSeqs, ec.MaxNumBatchedTokens, ec.BlockSize, ec.EnableChunkedPrefill, ec.EnablePrefixCaching)
}

func parseServeLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warning", "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level %q: use debug, info, warning or error", s)
}
