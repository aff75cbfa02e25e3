package runspec

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/internal/redact"
)

// Defaults of bench's embedded target: serve's and sim's, so the first
// bench run, `servebench serve` and `servebench sim` describe one
// deployment. vLLM's default workload (1000 prompts, 1024 in / 128 out,
// all at once) takes about 21 s on it. Qwen2-0.5B was the default before:
// it finishes in 4 s but streams 30,000 token chunks a second to 1,000
// clients, which a 2-core machine cannot emulate on time (its step loop
// fell 15-26% behind the model); this one streams about 6,000.
const (
	DefaultEmulatedModel = DefaultModel
	DefaultEmulatedGPU   = DefaultGPU
)

// Backends bench speaks: completions APIs and chat APIs.
var (
	chatBackends       = []string{"openai-chat", "vllm-chat", "sglang-chat", "sglang-oai-chat", "lmdeploy-chat", "tgi"}
	completionBackends = []string{"openai", "vllm", "sglang", "sglang-oai", "lmdeploy", "llama.cpp", "scalellm"}
)

// Target is where bench sends its requests and how it counts tokens.
type Target struct {
	Backend  string
	BaseURL  string
	Host     string
	Port     int
	Endpoint string
	Headers  []Header
	Insecure bool

	Model, ServedModelName string
	// Tokenizer is "server", a built-in encoding, a tokenizer.json path or
	// a Hugging Face id in the local cache; "" picks the server's when it
	// has /tokenize.
	Tokenizer         string
	SkipTokenizerInit bool

	// EmulatedModel and EmulatedGPU are what the built-in emulated server
	// imitates when no target is given.
	EmulatedModel, EmulatedGPU string
}

// Register adds the target flags to fs.
func (t *Target) Register(fs *pflag.FlagSet) {
	fs.StringVar(&t.Backend, "backend", "openai", "API flavour: openai, vllm, sglang, lmdeploy, llama.cpp (completions) or openai-chat, vllm-chat, sglang-chat, tgi (chat)")
	fs.Var(urlValue{&t.BaseURL}, "base-url", "server base URL, e.g. http://127.0.0.1:8000 (overrides --host/--port)")
	fs.StringVar(&t.Host, "host", "127.0.0.1", "server host")
	fs.IntVar(&t.Port, "port", 8000, "server port")
	fs.StringVar(&t.Endpoint, "endpoint", "", "API path (default /v1/completions, or /v1/chat/completions for chat backends)")
	t.Headers = nil
	fs.Var(&headersValue{p: &t.Headers}, "header", `extra request header "Name: value" or Name=value (repeatable); credential values never reach a log or file`)
	fs.BoolVar(&t.Insecure, "insecure", false, "skip TLS certificate verification")
	fs.StringVar(&t.Model, "model", "", "model name sent in requests (default: the first model the server lists)")
	fs.StringVar(&t.ServedModelName, "served-model-name", "", "model name to send if it differs from --model")
	fs.StringVar(&t.Tokenizer, "tokenizer", "", `token counter: "server" (the target's /tokenize), a built-in (cl100k_base, o200k_base, p50k_base, r50k_base, gpt2), or a tokenizer.json path; default: the server's if it has /tokenize, else none`)
	fs.String("tokenizer-mode", "auto", "accepted for vLLM compatibility")
	fs.Bool("trust-remote-code", false, "accepted for vLLM compatibility")
	fs.BoolVar(&t.SkipTokenizerInit, "skip-tokenizer-init", false, "use no tokenizer: output tokens come from usage or chunk counts")
	fs.StringVar(&t.EmulatedModel, "emulated-model", DefaultEmulatedModel, "model the built-in emulated server imitates when no target is given (serve's and sim's default)")
	fs.StringVar(&t.EmulatedGPU, "emulated-gpu", DefaultEmulatedGPU, "GPU the built-in emulated server imitates when no target is given")
}

// Chat reports whether the backend speaks the chat completions API.
func (t *Target) Chat() bool { return ChatBackend(t.Backend) }

// KnownBackend reports whether name is a --backend bench speaks.
func KnownBackend(name string) bool {
	return contains(chatBackends, name) || contains(completionBackends, name)
}

// ChatBackend reports whether --backend name calls a chat completions API.
func ChatBackend(name string) bool { return contains(chatBackends, name) }

// FirstChatBackend is the first of names that calls a chat API, or "": a
// result records its API as backend, or (vLLM 0.9's client) as
// endpoint_type beside a default backend.
func FirstChatBackend(names ...string) string {
	for _, n := range names {
		if ChatBackend(n) {
			return n
		}
	}
	return ""
}

func checkBackend(name string) error {
	if !KnownBackend(name) {
		return fmt.Errorf("--backend %q: not supported; use one of openai, vllm, sglang, lmdeploy, llama.cpp, openai-chat, vllm-chat, sglang-chat, tgi", name)
	}
	return nil
}

// EndpointPath is --endpoint, or the backend's default API path.
func (t *Target) EndpointPath() string {
	switch {
	case t.Endpoint != "":
		return t.Endpoint
	case t.Chat():
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

// Explicit reports whether the spec names a server (--base-url, --host
// or --port), rather than leaving bench to find or start one.
func (t *Target) Explicit(changed func(string) bool) bool {
	return t.BaseURL != "" || changed("host") || changed("port")
}

// URL is the explicit target's base URL: --base-url, else --host and
// --port.
func (t *Target) URL() string {
	if u := strings.TrimRight(t.BaseURL, "/"); u != "" {
		return u
	}
	return "http://" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
}

func (t *Target) check() error {
	if err := checkBackend(t.Backend); err != nil {
		return err
	}
	if strings.Contains(t.BaseURL, redact.Mask) {
		return fmt.Errorf("--base-url %s: its credentials are the mask of a saved spec; pass the real URL with --base-url, or in $%s", t.BaseURL, EnvBaseURL)
	}
	if t.BaseURL != "" {
		if u, err := url.Parse(t.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--base-url %q: expected http://HOST:PORT or https://HOST:PORT", redact.URL(t.BaseURL))
		}
	}
	if t.Port < 0 || t.Port > 65535 {
		return fmt.Errorf("--port %d: give a port between 0 and 65535", t.Port)
	}
	for i, h := range t.Headers {
		if h.invalid {
			_, err := ParseHeader(h.Value)
			return fmt.Errorf("--header (item %d): %w", i+1, err)
		}
		if !isToken(h.Name) {
			return fmt.Errorf("--header (item %d): name %q is not an HTTP header name; use letters, digits and -", i+1, h.Name)
		}
		if h.Value == redact.Mask {
			return fmt.Errorf("--header %s: its value is the mask of a saved spec; pass the real value with --header, or in $%s", h.Name, HeaderEnvVar(h.Name))
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110's tchar), what a
// header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// Client is how bench sends requests: warmups, time limits, connection
// reuse, streaming and the sampling parameters of every request body, and
// how it behaves around the run.
type Client struct {
	NumWarmups            int
	ReadyCheckTimeoutSec  float64
	RequestTimeout        time.Duration
	FirstByteTimeout      time.Duration
	ChunkTimeout          time.Duration
	ConnectionReuse       bool
	RequestIDPrefix       string
	DisableStream         bool
	ContinuousUsageStats  bool
	IgnoreEOS             bool
	ExtraBody             string
	Logprobs              *int
	TopP, MinP            *float64
	TopK                  *int
	Temperature           *float64
	FrequencyPenalty      *float64
	PresencePenalty       *float64
	RepetitionPenalty     *float64
	SkipTestRequest       bool
	DisableTqdm           bool
	ServerMetricsInterval time.Duration
	InterruptGrace        time.Duration
}

// Register adds the client flags to fs.
func (c *Client) Register(fs *pflag.FlagSet) {
	fs.IntVar(&c.NumWarmups, "num-warmups", 0, "warmup requests before the measured run (results discarded)")
	fs.Float64Var(&c.ReadyCheckTimeoutSec, "ready-check-timeout-sec", 0, "retry the first request up to this many seconds until the server answers")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 6*time.Hour, "per-request total time limit, as vLLM's client's 6 h (0: none)")
	fs.DurationVar(&c.FirstByteTimeout, "first-byte-timeout", 30*time.Minute, "time limit from sending a request to the first byte of its response body (0: none)")
	fs.DurationVar(&c.ChunkTimeout, "chunk-timeout", 5*time.Minute, "time limit between two reads of a streaming response (0: none)")
	fs.BoolVar(&c.ConnectionReuse, "connection-reuse", true, "keep connections alive between requests; false opens one per request, like vLLM's and SGLang's clients")
	fs.StringVar(&c.RequestIDPrefix, "request-id-prefix", "", "x-request-id prefix (default bench-<random>-)")
	fs.BoolVar(&c.DisableStream, "disable-stream", false, "send non-streaming requests (TTFT then equals E2EL)")
	fs.BoolVar(&c.ContinuousUsageStats, "continuous-usage-stats", false, "ask for usage on every chunk so multi-token chunks split ITL exactly")
	fs.BoolVar(&c.IgnoreEOS, "ignore-eos", false, "ask the server to ignore EOS (always on for the random dataset, as in vLLM)")
	fs.StringVar(&c.ExtraBody, "extra-body", "", `JSON object merged into every request body, e.g. '{"top_k": 5}'`)
	c.Logprobs, c.TopP, c.MinP, c.TopK, c.Temperature = nil, nil, nil, nil, nil
	c.FrequencyPenalty, c.PresencePenalty, c.RepetitionPenalty = nil, nil, nil
	fs.Var(optInt{&c.Logprobs}, "logprobs", "logprobs per token to request (default: none requested)")
	fs.Var(optFloat{&c.TopP}, "top-p", "sampling top_p (default: the server's)")
	fs.Var(optInt{&c.TopK}, "top-k", "sampling top_k (default: the server's)")
	fs.Var(optFloat{&c.MinP}, "min-p", "sampling min_p (default: the server's)")
	fs.Var(optFloat{&c.Temperature}, "temperature", "sampling temperature (default: the server's; not forced, as in current vLLM)")
	fs.Var(optFloat{&c.FrequencyPenalty}, "frequency-penalty", "sampling frequency_penalty (default: the server's)")
	fs.Var(optFloat{&c.PresencePenalty}, "presence-penalty", "sampling presence_penalty (default: the server's)")
	fs.Var(optFloat{&c.RepetitionPenalty}, "repetition-penalty", "sampling repetition_penalty (default: the server's)")
	fs.BoolVar(&c.SkipTestRequest, "skip-test-request", false, "skip the initial single test request that stops a misconfigured run before it starts (vLLM newer releases skip it by default)")
	fs.BoolVar(&c.DisableTqdm, "disable-tqdm", false, "no progress bar")
	fs.DurationVar(&c.ServerMetricsInterval, "server-metrics-interval", 5*time.Second, "scrape the server's /metrics this often during the run (0 disables)")
	fs.DurationVar(&c.InterruptGrace, "interrupt-grace", 5*time.Second, "on Ctrl-C, how long in-flight requests may finish before they are cut off")
}

// RequestExtras is what every request body carries beyond the prompt:
// the sampling parameters given and --extra-body.
func (c *Client) RequestExtras() (map[string]any, error) {
	extra := map[string]any{}
	if c.Logprobs != nil && *c.Logprobs >= 0 {
		extra["logprobs"] = *c.Logprobs
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"top_p", c.TopP}, {"min_p", c.MinP}, {"temperature", c.Temperature}, {"frequency_penalty", c.FrequencyPenalty},
		{"presence_penalty", c.PresencePenalty}, {"repetition_penalty", c.RepetitionPenalty}} {
		if f.v != nil {
			extra[f.key] = *f.v
		}
	}
	if c.TopK != nil {
		extra["top_k"] = *c.TopK
	}
	if c.ExtraBody != "" {
		var body map[string]any
		if err := json.Unmarshal([]byte(c.ExtraBody), &body); err != nil {
			return nil, fmt.Errorf("--extra-body: not a JSON object: %v", err)
		}
		for k, v := range body {
			extra[k] = v
		}
	}
	return extra, nil
}

func (c *Client) check() error {
	if c.NumWarmups < 0 {
		return fmt.Errorf("--num-warmups %d: must be 0 or more", c.NumWarmups)
	}
	if c.ReadyCheckTimeoutSec < 0 {
		return fmt.Errorf("--ready-check-timeout-sec %g: must be 0 or more seconds", c.ReadyCheckTimeoutSec)
	}
	if c.InterruptGrace < 0 || c.ServerMetricsInterval < 0 {
		return fmt.Errorf("--interrupt-grace (%v) and --server-metrics-interval (%v) must not be negative", c.InterruptGrace, c.ServerMetricsInterval)
	}
	_, err := c.RequestExtras()
	return err
}

// Simulation is sim's own flags beyond the workload and engine.
type Simulation struct {
	// Tokenizer builds text datasets' prompts; "" is cl100k_base for
	// sonnet, sharegpt and custom, none (token IDs) for random.
	Tokenizer     string
	Throughput    bool
	StatsInterval time.Duration
	LogStats      bool
	// Client is --client: ClientNone times what the server streams;
	// ClientVLLMBench what vLLM's benchmark client observes through its
	// one thread (sim.ApplyClient), whose slots under --max-concurrency
	// free when the thread has read a reply's last chunk (sim.Config.Client).
	Client string
	// Backend is the API the simulated client calls, named as bench's
	// --backend: a chat backend makes vLLM's server prepare each request's
	// chat template first (sim.Config.ChatPrepare).
	Backend string
}

// Chat reports whether the simulated client calls the chat completions API.
func (s *Simulation) Chat() bool { return ChatBackend(s.Backend) }

// The --client values.
const (
	ClientNone      = "none"
	ClientVLLMBench = "vllm-bench"
)

// Register adds sim's flags to fs.
func (s *Simulation) Register(fs *pflag.FlagSet) {
	fs.StringVar(&s.Tokenizer, "tokenizer", "", `tokenizer for text datasets (built-in name or tokenizer.json path); default: cl100k_base for sonnet, sharegpt and custom, none for random`)
	fs.BoolVar(&s.Throughput, "throughput", false, "offline throughput mode: every request arrives at t=0 (vLLM's throughput benchmark) and the Throughput line is printed")
	fs.DurationVar(&s.StatsInterval, "stats-interval", 0, "engine statistics sampling period in virtual time, for the time series and --log-stats (default: vLLM's, 5s for v0 and 10s for v1; 0 disables, as in serve)")
	fs.BoolVar(&s.LogStats, "log-stats", false, "print vLLM's periodic stats lines (Avg prompt throughput ...) on stderr")
	fs.StringVar(&s.Client, "client", ClientNone, "whose view the figures take: none (what the server streams) or vllm-bench (what vLLM's benchmark client observes: its one thread's measured CPU per request and per chunk delays what it times under load, and under --max-concurrency a request's slot frees only when that thread has read its last chunk)")
	fs.StringVar(&s.Backend, "backend", "openai", "API the client calls, as bench's --backend: openai, vllm, sglang, lmdeploy, llama.cpp (completions) or openai-chat, vllm-chat, sglang-chat, tgi (chat: vLLM's server prepares each chat template on its one event loop before the engine sees the request)")
}

func (s *Simulation) check() error {
	if s.StatsInterval < 0 {
		return fmt.Errorf("--stats-interval %v: give a positive period, or 0 to disable", s.StatsInterval)
	}
	if s.Client != "" && s.Client != ClientNone && s.Client != ClientVLLMBench {
		return fmt.Errorf("--client %q: use %s or %s", s.Client, ClientNone, ClientVLLMBench)
	}
	if s.Backend != "" {
		if err := checkBackend(s.Backend); err != nil {
			return err
		}
	}
	if s.Throughput && s.Chat() {
		return fmt.Errorf("--backend %s with --throughput: the offline throughput benchmark calls no API; leave --backend out", s.Backend)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
