package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/servebench/servebench/engine"
	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/perf"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/vllm"
)

// Config configures an emulated vLLM server. Engine and StepModel are
// required; everything else has a working zero value.
type Config struct {
	// Engine is the scheduler and KV-cache configuration (vLLM's flags,
	// resolved by the caller).
	Engine engine.Config
	// StepModel times each engine step; tokens are released when it says
	// the step is done.
	StepModel perf.StepModel

	// Model is the --model value: the default served name and the "root"
	// in /v1/models.
	Model string
	// ServedModelNames are the names requests may use (vLLM's
	// --served-model-name); the first labels the metrics. Empty → [Model].
	ServedModelNames []string

	// Tokenizer counts prompt tokens and must hold common English words as
	// single tokens (generated text is built from them). nil → the
	// built-in cl100k_base encoding.
	Tokenizer tokenizer.Tokenizer
	// PromptVocab is how many token IDs a token-ID prompt may use: the
	// emulated model's vocab_size, as vLLM takes any ID its model has, so
	// a client drawing random IDs from the model's vocabulary is served
	// although Tokenizer (which counts text here) is smaller. 0 or less
	// than Tokenizer's vocabulary → Tokenizer's.
	PromptVocab int

	// Seed makes generated text, output lengths and injected faults
	// reproducible.
	Seed uint64
	// OutputLen is the output length of requests without ignore_eos.
	OutputLen OutputLenDist
	// Faults injects failures for testing clients.
	Faults Faults
	// APIKey, when set, is required as "Authorization: Bearer KEY" on every
	// endpoint but /health, /version and /metrics, as newer vLLM's
	// --api-key (0.8 guarded /v1/* only).
	APIKey string
	// ErrorStyle is the JSON shape of error bodies ("" → nested).
	ErrorStyle ErrorStyle
	// EnablePromptTokensDetails reports usage.prompt_tokens_details
	// .cached_tokens, as vLLM's --enable-prompt-tokens-details.
	EnablePromptTokensDetails bool

	// StatsInterval is the period of vLLM's "Avg prompt throughput ..."
	// line (vLLM: 5 s V0, 10 s V1); 0 disables it.
	StatsInterval time.Duration
	// Logger receives the startup and stats lines; nil discards them. Use
	// NewLogHandler for vLLM's line format.
	Logger *slog.Logger

	// MaxBodyBytes bounds request bodies (larger → 413); 0 → 8 MiB.
	MaxBodyBytes int64
	// BodyReadTimeout bounds the time to receive one request body; a
	// client still sending when it expires gets a 408 and its connection
	// is closed. Streamed responses are not bounded by it. 0 → 30 s.
	BodyReadTimeout time.Duration
	// MaxConnections caps the connections open at once; further clients
	// wait in the listen backlog until one closes. 0 → no cap.
	MaxConnections int
	// StreamWriteTimeout closes the connection of a client that has not
	// accepted a write for this long; 0 → 60 s.
	StreamWriteTimeout time.Duration
	// ShutdownGrace is how long Running.Close lets in-flight requests
	// finish before ending them; 0 → 5 s.
	ShutdownGrace time.Duration
	// KVTransfer, if set, makes the server a prefill (producer) or decode
	// (consumer) instance of P/D disaggregation; see KVTransferConfig.
	KVTransfer *KVTransferConfig
	// Ingest and Delivery are the OpenAI server's per-request latencies
	// outside the engine (vllm.Resolved.Ingest, Delivery; sim.Config's
	// fields of the same names): a request reaches the engine's queue
	// Ingest after its handler accepted it, and a client receives each
	// chunk Delivery after the step that made it ended, so serve and sim
	// time a request alike. The step loop never waits for either: the
	// request's handler does. A P/D pair pays them once, as sim's fleet
	// does: a KV consumer (the decode server, reached after the prefill)
	// charges no Ingest, and a KV producer (whose one-token answer goes
	// to the proxy, not the client) charges no Delivery. 0: none.
	Ingest, Delivery time.Duration
	// IngestSpacing is the OpenAI server's event-loop work per
	// completions request (vllm.Resolved.IngestSpacing; sim.Config's
	// field of the same name): the loop hands requests on one at a time,
	// so completions requests reach the engine at least this far apart,
	// in the order they came, and the first of a burst reaches an idle
	// engine alone. A KV consumer charges none. 0: none.
	IngestSpacing time.Duration
	// ChatPrepare is the OpenAI server's event-loop time per chat request
	// before it hands the request on (vllm.Resolved.ChatPrepare;
	// sim.Config's field of the same name): requests pass the one loop in
	// the order they came, and a request is handed on only after the
	// preparations queued before its own finished, so a burst of n chat
	// requests reaches the engine after n preparations. Completions
	// requests prepare nothing but keep their place in the loop. A KV
	// consumer charges none (the prefill server did). 0: none.
	ChatPrepare time.Duration
	// ChatIngest is a chat request's latency beyond Ingest that holds no
	// other request back (vllm.Resolved.ChatIngest; sim.Config's field of
	// the same name). A KV consumer charges none. 0: none. Requests join
	// the engine in the order the event loop handed them on, so where
	// both APIs are called a completions request handed on just after a
	// chat request joins after it [deviation: vLLM lets it pass; sim runs
	// one API at a time, where the two agree].
	ChatIngest time.Duration
	// AsyncOutputLag is V0's async output processing (vLLM 0.6–0.10 by
	// default; vllm.Resolved.AsyncOutputLag, sim.Config's field of the
	// same name): a step's tokens go out when the next step ends, and
	// when no step follows, after one more decode of the sequences that
	// just finished. Without pipeline parallelism only, as in sim.
	AsyncOutputLag bool
	// SchedulerSteps is V0's --num-scheduler-steps (vLLM 0.6–0.10;
	// vllm.Resolved.SchedulerSteps, sim.Config's field of the same name):
	// a decode step opens a group of that many steps, which admit no new
	// request, and whose tokens reach the client together when the group
	// ends, or as sim.Config.AsyncOutputLag describes with AsyncOutputLag.
	// Without pipeline parallelism only, as in sim; 0 or 1: single steps.
	SchedulerSteps int
	// MultiStepStream is --multi-step-stream-outputs (vLLM 0.6.2–0.10,
	// vllm.Resolved.MultiStepStream): with AsyncOutputLag, every step of a
	// group hands its tokens on when it is processed.
	MultiStepStream bool
	// ColdStart: the server's Triton cache starts empty
	// (vllm.Resolved.ColdStart, sim.Config's field of the same name): a
	// step that first needs a fused-MoE kernel variant waits for its
	// compile.
	ColdStart *vllm.ColdStart
	// Version is what /version reports; "" → the vLLM release whose
	// behaviour the engine version models (0.5.4 for V0, 0.8.5 for V1).
	Version string
}

const (
	defaultMaxBodyBytes  = 8 << 20
	defaultBodyTimeout   = 30 * time.Second
	defaultWriteTimeout  = 60 * time.Second
	defaultShutdownGrace = 5 * time.Second
)

// DefaultStatsInterval is vLLM's logging cadence for the engine version:
// LLMEngine's 5 s local logging interval in V0, the API server's 10 s
// do_log_stats in V1.
func DefaultStatsInterval(v engine.Version) time.Duration {
	if v == engine.V0 {
		return 5 * time.Second
	}
	return 10 * time.Second
}

func (c *Config) withDefaults() Config {
	out := *c
	if len(out.ServedModelNames) == 0 && out.Model != "" {
		out.ServedModelNames = []string{out.Model}
	}
	if out.Model == "" && len(out.ServedModelNames) > 0 {
		out.Model = out.ServedModelNames[0]
	}
	if out.MaxBodyBytes <= 0 {
		out.MaxBodyBytes = defaultMaxBodyBytes
	}
	if out.BodyReadTimeout <= 0 {
		out.BodyReadTimeout = defaultBodyTimeout
	}
	if out.StreamWriteTimeout <= 0 {
		out.StreamWriteTimeout = defaultWriteTimeout
	}
	if out.ShutdownGrace <= 0 {
		out.ShutdownGrace = defaultShutdownGrace
	}
	if out.ErrorStyle == "" {
		out.ErrorStyle = ErrorStyleNested
	}
	if out.Faults.SlowFirstByte == 0 {
		out.Faults.SlowFirstByte = 2 * time.Second
	}
	out.Ingest, out.Delivery = out.chargedLatencies()
	if out.KVTransfer != nil && out.KVTransfer.Role == KVConsumer {
		out.IngestSpacing = 0 // the prefill server handed the request on
	}
	out.ChatPrepare, out.ChatIngest = out.chargedChat()
	if out.Version == "" {
		out.Version = "0.8.5"
		if out.Engine.Version == engine.V0 {
			out.Version = "0.5.4"
		}
	}
	return out
}

// chargedLatencies are the Ingest and Delivery this server pays: a P/D
// pair pays each once (see Config.Ingest).
func (c *Config) chargedLatencies() (ingest, delivery time.Duration) {
	ingest, delivery = c.Ingest, c.Delivery
	if c.KVTransfer != nil {
		switch c.KVTransfer.Role {
		case KVConsumer:
			ingest = 0
		case KVProducer:
			delivery = 0
		}
	}
	return ingest, delivery
}

// chargedChat is the chat preparation and chat ingest latency this
// server pays: none on a KV consumer, whose requests the prefill server
// prepared.
func (c *Config) chargedChat() (prepare, ingest time.Duration) {
	if c.KVTransfer != nil && c.KVTransfer.Role == KVConsumer {
		return 0, 0
	}
	return c.ChatPrepare, c.ChatIngest
}

// delaysArrival reports whether requests reach the engine later than
// their handlers submit them.
func (c *Config) delaysArrival() bool {
	return c.Ingest > 0 || c.ChatPrepare > 0 || c.ChatIngest > 0 || c.IngestSpacing > 0
}

func (c *Config) validate() error {
	if c.StepModel == nil {
		return errors.New("serve: Config.StepModel is nil; pass a perf.StepModel such as perf.NewRoofline(deployment)")
	}
	if c.Model == "" {
		return option.New("serve: Config.Model is empty; set the model name clients send ({model} or {served_model_name})")
	}
	for _, n := range c.ServedModelNames {
		if n == "" {
			return option.New("serve: an empty served model name; pass non-empty {served_model_name} values")
		}
	}
	if c.PromptVocab < 0 {
		return fmt.Errorf("serve: prompt vocabulary %d is negative; use 0 for the tokenizer's", c.PromptVocab)
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("serve: max connections %d is negative; use 0 for no cap", c.MaxConnections)
	}
	if c.Ingest < 0 || c.Delivery < 0 || c.ChatPrepare < 0 || c.ChatIngest < 0 || c.IngestSpacing < 0 {
		return fmt.Errorf("serve: request latencies (ingest %v, delivery %v, ingest spacing %v, chat preparation %v, chat ingest %v) must not be negative; use 0 for none",
			c.Ingest, c.Delivery, c.IngestSpacing, c.ChatPrepare, c.ChatIngest)
	}
	if c.SchedulerSteps < 0 {
		return fmt.Errorf("serve: scheduler steps %d is negative; use 1 (or 0) for single steps", c.SchedulerSteps)
	}
	if c.StatsInterval < 0 {
		return fmt.Errorf("serve: stats interval %v is negative; use 0 to disable the stats line", c.StatsInterval)
	}
	if _, err := ParseErrorStyle(string(c.ErrorStyle)); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if err := c.Faults.validate(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	switch c.OutputLen.Kind {
	case "", OutputLenMax, OutputLenFixed, OutputLenUniform, OutputLenLognormal:
	default:
		return fmt.Errorf("serve: output length distribution kind %q: use max, fixed, uniform or lognormal", c.OutputLen.Kind)
	}
	if _, err := ParseOutputLenDist(c.OutputLen.String()); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
