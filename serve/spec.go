package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/vllm"
)

// RunSpec serves a serve spec until ctx ends: it resolves the engine
// through the release's rules (an invalid combination fails with vLLM's
// own text before listening), starts the server and the P/D KV listener,
// writes vLLM's startup lines to logw, and shuts down cleanly.
func RunSpec(ctx context.Context, spec *runspec.Spec, logw io.Writer) error {
	s := spec.Clone()
	if err := s.Validate(); err != nil {
		return err
	}
	srv := &s.Server
	r, err := s.Engine.Resolve(ctx, s.ChangedFunc(), s.Env)
	if err != nil {
		return err
	}
	cfg, fixed, err := configOf(ctx, s, r)
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(NewLogHandler(logw, logLevel(srv.LogLevel)))
	startKV, err := applyKVRole(&cfg, &srv.KV, s.ChangedFunc(), r.Deployment, srv.Host)
	if err != nil {
		return err
	}
	running, err := Start(ctx, cfg, net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port)))
	if err != nil {
		return err
	}
	logger := cfg.Logger
	ingest, delivery := cfg.chargedLatencies()
	if startKV != nil {
		if err := startKV(ctx, running, logger); err != nil {
			_ = running.Close()
			return err
		}
	}
	chatPrepare, chatIngest := cfg.chargedChat()
	logger.Info(fmt.Sprintf("servebench serve: emulating vLLM %s (engine %s) with %s on %s (TP %d, PP %d), %s, request ingest %v, delivery %v, chat preparation %v, chat ingest %v",
		r.Profile.Release, cfg.Engine.Version, r.Deployment.Model.Name, r.Deployment.GPU.Name,
		r.Deployment.TensorParallel, r.Deployment.PipelineParallel, describeEngineConfig(cfg.Engine, r.Capacity.MaxNumSeqs),
		ingest, delivery, chatPrepare, chatIngest))
	for _, l := range append(vllm.StartupLines(r.Resolved), vllm.ChatTemplateLines(r.Resolved)...) {
		if l.Warning {
			logger.Warn(l.Text)
		} else {
			logger.Info(l.Text)
		}
	}
	if fixed != nil {
		logger.Info("servebench serve: fixed-latency mode: " + describeFixedLatency(*fixed))
	}
	if warning := ExposureWarning(running.Addr(), cfg.APIKey); warning != "" {
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

// configOf is the server configuration a serve spec asks for; fixed is
// the fixed-latency settings when they replace the engine model's step
// times.
func configOf(ctx context.Context, s *runspec.Spec, r *runspec.ResolvedEngine) (Config, *FixedLatency, error) {
	srv := &s.Server
	stepModel := r.StepModel
	var fixed *FixedLatency
	if on := fixedLatencyOn(s); on {
		f := fixedLatencyOf(srv.Fixed)
		f.MaxNumSeqs, f.Seed = r.Capacity.MaxNumSeqs, uint64(srv.Seed)
		m, err := f.StepModel()
		if err != nil {
			return Config{}, nil, err
		}
		stepModel, fixed = m, &f
	}
	outputLen, err := ParseOutputLenDist(srv.OutputLenDist)
	if err != nil {
		return Config{}, nil, fmt.Errorf("--output-len-dist: %w", err)
	}
	failureTypes, err := ParseFaultTypes(srv.FailureTypes)
	if err != nil {
		return Config{}, nil, fmt.Errorf("--failure-types: %w", err)
	}
	errorStyle, err := ParseErrorStyle(srv.ErrorStyle)
	if err != nil {
		return Config{}, nil, fmt.Errorf("--error-style: %w", err)
	}
	stats := r.StatsInterval
	if s.Changed("stats-interval") {
		stats = srv.StatsInterval
	}
	if srv.DisableLogStats {
		stats = 0
	}
	tokSpec, err := s.Env.ResolveTokenizer(srv.Tokenizer)
	if err != nil {
		return Config{}, nil, err
	}
	tok, err := tokenizer.New(ctx, tokSpec, tokenizer.Options{})
	if err != nil {
		return Config{}, nil, fmt.Errorf("--tokenizer: %w", err)
	}
	if tok == nil {
		return Config{}, nil, fmt.Errorf("--tokenizer: serve needs a tokenizer; use %s or a tokenizer.json path", DefaultTokenizer)
	}
	cfg := Config{
		Engine:                    r.Engine,
		StepModel:                 stepModel,
		Model:                     s.Engine.Model,
		ServedModelNames:          srv.ServedModelNames,
		Tokenizer:                 tok,
		PromptVocab:               r.Deployment.Model.Vocab,
		Seed:                      uint64(srv.Seed),
		OutputLen:                 outputLen,
		Faults:                    Faults{Rate: srv.FailureRate, Types: failureTypes, SlowFirstByte: srv.SlowFirstByte},
		APIKey:                    s.ServeAPIKey(),
		ErrorStyle:                errorStyle,
		EnablePromptTokensDetails: srv.PromptDetails,
		StatsInterval:             stats,
		MaxBodyBytes:              srv.MaxBodyBytes,
		Version:                   r.Profile.Release.String(),
		BodyReadTimeout:           srv.BodyTimeout,
		MaxConnections:            srv.MaxConnections,
		MultiStepStream:           r.MultiStepStream,
	}
	if fixed == nil {
		// Fixed latencies are what the client sees: no lag, no groups.
		cfg.AsyncOutputLag, cfg.SchedulerSteps = r.AsyncOutputLag, r.SchedulerSteps
		cfg.ColdStart = r.ColdStart
	}
	if fixed == nil {
		// The fixed latencies are what the client sees, end to end.
		cfg.chargeRequestLatencies(r.Resolved)
	}
	return cfg, fixed, nil
}

// chargeRequestLatencies sets the per-request costs outside the engine's
// steps that the resolved release's OpenAI server charges: Ingest,
// Delivery, IngestSpacing, ChatPrepare and ChatIngest.
func (c *Config) chargeRequestLatencies(r *vllm.Resolved) {
	c.Ingest, c.Delivery, c.ChatPrepare, c.ChatIngest = r.Ingest, r.Delivery, r.ChatPrepare, r.ChatIngest
	c.IngestSpacing = r.IngestSpacing
}

func fixedLatencyOn(s *runspec.Spec) bool {
	for _, name := range runspec.FixedLatencyFlags {
		if s.Changed(name) {
			return true
		}
	}
	return false
}

func fixedLatencyOf(f runspec.FixedLatency) FixedLatency {
	return FixedLatency{
		TimeToFirstToken: f.TimeToFirstToken, TimeToFirstTokenStdDev: f.TimeToFirstTokenStdDev,
		InterTokenLatency: f.InterTokenLatency, InterTokenLatencyStdDev: f.InterTokenLatencyStdDev,
		KVCacheTransferLatency: f.KVCacheTransferLatency, KVCacheTransferLatencyStdDev: f.KVCacheTransferLatencyStdDev,
		TimeFactorUnderLoad: f.TimeFactorUnderLoad,
	}
}

func logLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warning", "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// applyKVRole sets cfg.KVTransfer for a P/D role; the returned start runs
// the consumer's KV listener once the server is up (nil for a producer or
// no role).
func applyKVRole(cfg *Config, k *runspec.KVRole, changed func(string) bool, dep perf.Deployment, host string) (func(context.Context, *Running, *slog.Logger) error, error) {
	if k.Role == "" {
		return nil, nil
	}
	role, err := ParseKVRole(k.Role)
	if err != nil {
		return nil, fmt.Errorf("--kv-role: %w", err)
	}
	hidden := k.SendHiddenStates
	if !changed("kv-send-hidden-states") {
		hidden = cfg.Engine.Version == engine.V0 // V0 connectors send the hidden states too
	}
	kv := &KVTransferConfig{
		Role:          role,
		BytesPerToken: perf.KVTransferBytes(dep.Model, dep.KVCacheDType, 1, hidden),
		Ranks:         max(dep.TensorParallel, 1),
		WaitTimeout:   k.WaitTimeout,
	}
	cfg.KVTransfer = kv
	if role == KVProducer {
		if k.Peer != "" {
			if _, _, err := net.SplitHostPort(k.Peer); err != nil {
				return nil, fmt.Errorf("--kv-peer %q: give HOST:PORT, e.g. 127.0.0.1:14579", k.Peer)
			}
		}
		kv.Peer = k.Peer
		if k.Link != "none" {
			if kv.Link, err = perf.LookupKVLink(k.Link); err != nil {
				return nil, fmt.Errorf("--kv-link: %w (or none)", err)
			}
		}
		return nil, nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(k.Port))
	return func(ctx context.Context, running *Running, log *slog.Logger) error {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("--kv-port: listening on %s: %w (pick a free port, or 0 for any)", addr, err)
		}
		if err := running.ListenKV(ln); err != nil {
			_ = ln.Close()
			return err
		}
		log.Info("servebench serve: kv_consumer taking KV transfers on " + ln.Addr().String())
		go func() {
			if err := running.ServeKV(ctx, ln); err != nil {
				log.Error(err.Error())
			}
		}()
		return nil
	}, nil
}

func describeEngineConfig(ec engine.Config, maxSeqs int) string {
	return fmt.Sprintf("max_model_len %d, max_num_seqs %d, max_num_batched_tokens %d, block_size %d, chunked prefill %v, prefix caching %v",
		ec.MaxModelLen, maxSeqs, ec.MaxNumBatchedTokens, ec.BlockSize, ec.EnableChunkedPrefill, ec.EnablePrefixCaching)
}

func describeFixedLatency(c FixedLatency) string {
	return fmt.Sprintf("time to first token %v (std-dev %v), inter-token latency %v (std-dev %v), KV-cache transfer latency %v (std-dev %v), time factor under load %g; the scheduler's limits still apply",
		c.TimeToFirstToken, c.TimeToFirstTokenStdDev, c.InterTokenLatency, c.InterTokenLatencyStdDev, c.KVCacheTransferLatency, c.KVCacheTransferLatencyStdDev, c.TimeFactorUnderLoad)
}

// ExposureWarning is the warning for a server that other hosts can reach
// with no API key, or "" when there is nothing to warn about.
func ExposureWarning(addr net.Addr, apiKey string) string {
	if apiKey != "" || IsLoopback(addr) {
		return ""
	}
	return fmt.Sprintf("Listening on %s without --api-key: anyone who can reach this address can send requests and read /metrics. Pass --api-key KEY, or --host 127.0.0.1 to accept local connections only.", addr)
}

// Emulated is a running emulated server with what it emulates.
type Emulated struct {
	*Running
	Model  string // as requests name it
	Engine *runspec.ResolvedEngine
}

// StartEmulated starts the emulated vLLM server for a resolved engine on
// a free loopback port, logging nothing: bench's embedded target and
// tune's per-trial server. model is the name requests use.
func StartEmulated(ctx context.Context, r *runspec.ResolvedEngine, model string) (*Emulated, error) {
	tok, err := tokenizer.New(ctx, DefaultTokenizer, tokenizer.Options{})
	if err != nil {
		return nil, err
	}
	cfg := Config{
		Engine: r.Engine, StepModel: r.StepModel, Model: model, Tokenizer: tok, PromptVocab: r.Deployment.Model.Vocab,
		Logger: slog.New(slog.DiscardHandler), Version: r.Profile.Release.String(),
	}
	cfg.chargeRequestLatencies(r.Resolved)
	running, err := Start(ctx, cfg, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &Emulated{Running: running, Model: model, Engine: r}, nil
}

// StartEmulatedModel resolves model on gpu with vLLM's defaults and
// starts the emulated server for it.
func StartEmulatedModel(ctx context.Context, model, gpu string, env runspec.Env) (*Emulated, error) {
	s := runspec.New(runspec.Serve)
	s.Env = env
	s.Engine.Model, s.Engine.GPU = model, gpu
	r, err := s.Engine.Resolve(ctx, s.ChangedFunc(), env)
	if err != nil {
		return nil, err
	}
	return StartEmulated(ctx, r, model)
}
