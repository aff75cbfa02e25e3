package runspec

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/perf"
)

// Defaults serve shares with the package that serves; serve's tests hold
// them equal to its own constants.
const (
	DefaultServeTokenizer = "cl100k_base"
	defaultErrorStyle     = "nested"
)

// Server is serve's own flags: where it listens, what it answers, the
// faults it injects and its limits.
type Server struct {
	Host             string
	Port             int
	ServedModelNames []string
	APIKey           Secret
	Seed             int64
	Tokenizer        string
	OutputLenDist    string
	FailureRate      float64
	FailureTypes     string
	SlowFirstByte    time.Duration
	StatsInterval    time.Duration
	DisableLogStats  bool
	ErrorStyle       string
	PromptDetails    bool
	MaxBodyBytes     int64
	BodyTimeout      time.Duration
	MaxConnections   int
	LogLevel         string

	Fixed FixedLatency
	KV    KVRole
}

// Register adds serve's flags to fs.
func (s *Server) Register(fs *pflag.FlagSet) {
	fs.StringVar(&s.Host, "host", "127.0.0.1", "host name to listen on")
	fs.IntVar(&s.Port, "port", 8000, "port to listen on (0 picks a free one)")
	s.ServedModelNames = nil
	fs.Var(&namesValue{p: &s.ServedModelNames}, "served-model-name", "model name(s) requests use and /v1/models lists (default: --model); the first labels the metrics")
	s.APIKey = Secret{}
	fs.Var(secretValue{&s.APIKey}, "api-key", "require this key as \"Authorization: Bearer KEY\" on every endpoint but /health, /version and /metrics (default: $VLLM_API_KEY, as vLLM)")
	fs.Int64Var(&s.Seed, "seed", 0, "seed for generated text, output lengths and injected failures")
	fs.StringVar(&s.Tokenizer, "tokenizer", DefaultServeTokenizer, "tokenizer counting prompt tokens: cl100k_base, o200k_base, p50k_base, r50k_base, gpt2, or a tokenizer.json path")
	fs.StringVar(&s.OutputLenDist, "output-len-dist", "max", "output length without ignore_eos: max (run to max_tokens), fixed:N, uniform:MIN:MAX or lognormal:MEAN:SIGMA; always capped by max_tokens")
	fs.Float64Var(&s.FailureRate, "failure-rate", 0, "fraction of generation requests that fail (fault injection, seeded)")
	fs.StringVar(&s.FailureTypes, "failure-types", "429,500,503,drop,slow-first-byte", "comma-separated failures to inject: 429, 500, 503, drop (connection closed mid-stream), slow-first-byte")
	fs.DurationVar(&s.SlowFirstByte, "slow-first-byte", 2*time.Second, "delay before the first byte of a slow-first-byte failure")
	fs.DurationVar(&s.StatsInterval, "stats-interval", 0, "period of the \"Avg prompt throughput\" stats line (default: vLLM's, 5s for v0 and 10s for v1; 0 disables)")
	fs.BoolVar(&s.DisableLogStats, "disable-log-stats", false, "disable the periodic stats line")
	fs.StringVar(&s.ErrorStyle, "error-style", defaultErrorStyle, "error body shape: nested ({\"error\":{...}}, current vLLM) or legacy ({\"object\":\"error\",...}, vLLM ≤0.8)")
	fs.BoolVar(&s.PromptDetails, "enable-prompt-tokens-details", false, "report usage.prompt_tokens_details.cached_tokens (prefix-cache hits)")
	fs.Int64Var(&s.MaxBodyBytes, "max-request-body-bytes", 8<<20, "largest request body accepted (larger → 413)")
	fs.DurationVar(&s.BodyTimeout, "request-body-timeout", 30*time.Second, "time a client has to send a request body (slower → 408 and the connection is closed); streamed responses are not bounded by it")
	fs.IntVar(&s.MaxConnections, "max-connections", 0, "most connections open at once; more wait until one closes (0: no cap)")
	fs.StringVar(&s.LogLevel, "log-level", "info", "log level of the vLLM-style lines on stderr: debug, info, warning, error")
	s.Fixed.Register(fs)
	s.KV.Register(fs)
}

func (s *Server) check(changed func(string) bool) error {
	switch {
	case s.FailureRate < 0 || s.FailureRate > 1:
		return fmt.Errorf("--failure-rate %g: give a fraction between 0 and 1", s.FailureRate)
	case s.BodyTimeout <= 0:
		return fmt.Errorf("--request-body-timeout %v: give a positive duration", s.BodyTimeout)
	case s.MaxConnections < 0:
		return fmt.Errorf("--max-connections %d: give a positive number, or 0 for no cap", s.MaxConnections)
	case s.Port < 0 || s.Port > 65535:
		return fmt.Errorf("--port %d: give a port between 0 and 65535", s.Port)
	case s.APIKey.Reveal() == redact.Mask:
		return fmt.Errorf("--api-key is the mask of a saved spec; pass the real key with --api-key")
	case changed("stats-interval") && s.StatsInterval < 0:
		return fmt.Errorf("--stats-interval %v: give a positive period, or 0 to disable", s.StatsInterval)
	}
	switch strings.ToLower(s.LogLevel) {
	case "debug", "info", "warning", "warn", "error":
	default:
		return fmt.Errorf("--log-level %q: use debug, info, warning or error", s.LogLevel)
	}
	return s.KV.check(changed)
}

// FixedLatency is llm-d-inference-sim's fixed-latency flags, with its
// names and meanings: any of them set replaces the engine model's step
// times.
type FixedLatency struct {
	TimeToFirstToken, TimeToFirstTokenStdDev             time.Duration
	InterTokenLatency, InterTokenLatencyStdDev           time.Duration
	KVCacheTransferLatency, KVCacheTransferLatencyStdDev time.Duration
	TimeFactorUnderLoad                                  float64
}

// FixedLatencyFlags select fixed-latency mode when any is set.
var FixedLatencyFlags = []string{"time-to-first-token", "time-to-first-token-std-dev", "inter-token-latency", "inter-token-latency-std-dev", "time-factor-under-load", "kv-cache-transfer-latency", "kv-cache-transfer-latency-std-dev"}

// Register adds the fixed-latency flags to fs.
func (f *FixedLatency) Register(fs *pflag.FlagSet) {
	*f = FixedLatency{}
	fs.Var(latencyValue{&f.TimeToFirstToken}, "time-to-first-token", "fixed-latency mode (llm-d-inference-sim's flag): a step that samples a first token takes this long instead of the engine model's time; milliseconds or a duration. Any of these five flags selects the mode; all zero is the zero-latency mode")
	fs.Var(latencyValue{&f.TimeToFirstTokenStdDev}, "time-to-first-token-std-dev", "standard deviation of --time-to-first-token (at most 30% of it; draws clamped to ±70%, seeded by --seed)")
	fs.Var(latencyValue{&f.InterTokenLatency}, "inter-token-latency", "fixed-latency mode: a decode-only step takes this long; milliseconds or a duration")
	fs.Var(latencyValue{&f.InterTokenLatencyStdDev}, "inter-token-latency-std-dev", "standard deviation of --inter-token-latency (at most 30% of it)")
	fs.Var(latencyValue{&f.KVCacheTransferLatency}, "kv-cache-transfer-latency", "fixed-latency mode: a request with kv_transfer_params.do_remote_prefill (P/D decode) waits this long for its KV instead of a prefill, then gets its first token with the next decode step; milliseconds or a duration")
	fs.Var(latencyValue{&f.KVCacheTransferLatencyStdDev}, "kv-cache-transfer-latency-std-dev", "standard deviation of --kv-cache-transfer-latency (at most 30% of it)")
	fs.Float64Var(&f.TimeFactorUnderLoad, "time-factor-under-load", 1, "fixed-latency mode: multiply both latencies by up to this factor (≥1), linearly from 1 sequence running to max-num-seqs")
}

// KVRole makes serve one side of prefill/decode disaggregation.
type KVRole struct {
	Role             string
	Peer             string
	Port             int
	Link             string
	SendHiddenStates bool
	WaitTimeout      time.Duration
}

// Register adds the P/D role flags to fs.
func (k *KVRole) Register(fs *pflag.FlagSet) {
	fs.StringVar(&k.Role, "kv-role", "", "prefill/decode disaggregation: producer (prefill: sends each prompt's KV over TCP) or consumer (decode: admits a request once its KV arrived); vLLM's kv_producer/kv_consumer are accepted")
	fs.StringVar(&k.Peer, "kv-peer", "", "producer: the consumer's KV address HOST:PORT for requests that do not name one (servebench proxy --decode names it per request)")
	fs.IntVar(&k.Port, "kv-port", 14579, "consumer: port on --host that takes KV transfers (vLLM's kv_port default; 0 picks a free one)")
	fs.StringVar(&k.Link, "kv-link", "tcp", "producer: pace transfers like this KV link preset (as sim --kv-link) so loopback timings follow the sim's link model: "+strings.Join(perf.KVLinkNames(), ", ")+", or none (as fast as the socket takes)")
	fs.BoolVar(&k.SendHiddenStates, "kv-send-hidden-states", false, "also send the last layer's hidden states per token, as V0 connectors do (default: on for --engine v0, as in sim)")
	fs.DurationVar(&k.WaitTimeout, "kv-wait-timeout", 30*time.Second, "consumer: how long a request waits for its KV before failing with 504; producer: the longest a transfer may take")
}

func (k *KVRole) check(changed func(string) bool) error {
	if k.Role == "" {
		for _, name := range []string{"kv-peer", "kv-port", "kv-link", "kv-wait-timeout"} {
			if changed(name) {
				return fmt.Errorf("--%s needs --kv-role producer or consumer", name)
			}
		}
		return nil
	}
	if k.WaitTimeout <= 0 {
		return fmt.Errorf("--kv-wait-timeout %v: give a positive duration", k.WaitTimeout)
	}
	if k.Port < 0 || k.Port > 65535 {
		return fmt.Errorf("--kv-port %d: give a port between 0 and 65535", k.Port)
	}
	return nil
}

// ServeAPIKey is the key serve requires: --api-key, or VLLM_API_KEY when
// the flag is not given (vLLM reads either).
func (s *Spec) ServeAPIKey() string {
	if key := s.Server.APIKey.Reveal(); key != "" {
		return key
	}
	return s.Env.VLLMAPIKey.Reveal()
}
