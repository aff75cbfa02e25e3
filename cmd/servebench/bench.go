package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// benchFlags are `servebench bench`'s flags beyond the shared workload ones.
type benchFlags struct {
	workload workloadFlags
	shard    shardFlags

	backend, baseURL, host, endpoint string
	port                             int
	headers                          []string
	insecure                         bool

	model, servedModelName, tokenizer string
	skipTokenizerInit                 bool

	numWarmups       int
	readyCheckSec    float64
	requestTimeout   time.Duration
	firstByteTimeout time.Duration
	chunkTimeout     time.Duration
	connectionReuse  bool
	requestIDPrefix  string
	disableStream    bool
	continuousUsage  bool
	ignoreEOS        bool
	extraBody        string
	logprobs         int
	topP, minP, temp float64
	topK             int
	freqPenalty      float64
	presencePenalty  float64
	repPenalty       float64

	output                     outputFlags
	disableTqdm                bool
	scrapeInterval             time.Duration
	emulatedModel, emulatedGPU string
	grace                      time.Duration
	skipTestRequest            bool
	// defaultTarget is where a server is looked for when no --base-url,
	// --host or --port is given (vLLM's default, 127.0.0.1:8000).
	defaultTarget string
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{defaultTarget: defaultTargetAddr}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test an OpenAI-compatible endpoint (vLLM benchmark_serving.py flags and output)",
		Long: `Load-test an OpenAI-compatible endpoint and report TTFT, TPOT, ITL, E2EL, throughput and
goodput exactly as vLLM's benchmark_serving.py does. Without --base-url, --host or --port it
benchmarks the server at 127.0.0.1:8000 when one answers there, as vLLM does; otherwise it
starts the built-in emulated vLLM server (emulating --model) on a free loopback port and
benchmarks that. Files are written only with --save-result, --records or --result-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBench(cmd.Context(), cmd, f)
		},
	}
	fs := cmd.Flags()
	f.workload.register(fs)
	f.shard.register(fs)
	fs.StringVar(&f.backend, "backend", "openai", "API flavour: openai, vllm, sglang, lmdeploy, llama.cpp (completions) or openai-chat, vllm-chat, sglang-chat, tgi (chat)")
	fs.StringVar(&f.baseURL, "base-url", "", "server base URL, e.g. http://127.0.0.1:8000 (overrides --host/--port)")
	fs.StringVar(&f.host, "host", "127.0.0.1", "server host")
	fs.IntVar(&f.port, "port", 8000, "server port")
	fs.StringVar(&f.endpoint, "endpoint", "", "API path (default /v1/completions, or /v1/chat/completions for chat backends)")
	fs.StringArrayVar(&f.headers, "header", nil, "extra request header KEY=VALUE (repeatable)")
	fs.BoolVar(&f.insecure, "insecure", false, "skip TLS certificate verification")
	fs.StringVar(&f.model, "model", "", "model name sent in requests (default: the first model the server lists)")
	fs.StringVar(&f.servedModelName, "served-model-name", "", "model name to send if it differs from --model")
	fs.StringVar(&f.tokenizer, "tokenizer", "", `token counter: "server" (the target's /tokenize), a built-in (cl100k_base, o200k_base, p50k_base, r50k_base, gpt2), or a tokenizer.json path; default: the server's if it has /tokenize, else none`)
	fs.String("tokenizer-mode", "auto", "accepted for vLLM compatibility")
	fs.Bool("trust-remote-code", false, "accepted for vLLM compatibility")
	fs.BoolVar(&f.skipTokenizerInit, "skip-tokenizer-init", false, "use no tokenizer: output tokens come from usage or chunk counts")

	fs.IntVar(&f.numWarmups, "num-warmups", 0, "warmup requests before the measured run (results discarded)")
	fs.Float64Var(&f.readyCheckSec, "ready-check-timeout-sec", 0, "retry the first request up to this many seconds until the server answers")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 6*time.Hour, "per-request total time limit, as vLLM's client's 6 h (0: none)")
	fs.DurationVar(&f.firstByteTimeout, "first-byte-timeout", 30*time.Minute, "time limit from sending a request to the first byte of its response body (0: none)")
	fs.DurationVar(&f.chunkTimeout, "chunk-timeout", 5*time.Minute, "time limit between two reads of a streaming response (0: none)")
	fs.BoolVar(&f.connectionReuse, "connection-reuse", true, "keep connections alive between requests; false opens one per request, like vLLM's and SGLang's clients")
	fs.StringVar(&f.requestIDPrefix, "request-id-prefix", "", "x-request-id prefix (default bench-<random>-)")
	fs.BoolVar(&f.disableStream, "disable-stream", false, "send non-streaming requests (TTFT then equals E2EL)")
	fs.BoolVar(&f.continuousUsage, "continuous-usage-stats", false, "ask for usage on every chunk so multi-token chunks split ITL exactly")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "ask the server to ignore EOS (always on for the random dataset, as in vLLM)")
	fs.StringVar(&f.extraBody, "extra-body", "", `JSON object merged into every request body, e.g. '{"top_k": 5}'`)
	fs.IntVar(&f.logprobs, "logprobs", -1, "logprobs per token to request")
	fs.Float64Var(&f.topP, "top-p", math.NaN(), "sampling top_p")
	fs.IntVar(&f.topK, "top-k", -2, "sampling top_k")
	fs.Float64Var(&f.minP, "min-p", math.NaN(), "sampling min_p")
	fs.Float64Var(&f.temp, "temperature", math.NaN(), "sampling temperature (not forced, as in current vLLM)")
	fs.Float64Var(&f.freqPenalty, "frequency-penalty", math.NaN(), "sampling frequency_penalty")
	fs.Float64Var(&f.presencePenalty, "presence-penalty", math.NaN(), "sampling presence_penalty")
	fs.Float64Var(&f.repPenalty, "repetition-penalty", math.NaN(), "sampling repetition_penalty")

	f.output.register(fs)
	fs.BoolVar(&f.skipTestRequest, "skip-test-request", false, "skip the initial single test request that stops a misconfigured run before it starts (vLLM newer releases skip it by default)")
	fs.BoolVar(&f.disableTqdm, "disable-tqdm", false, "no progress bar")
	fs.DurationVar(&f.scrapeInterval, "server-metrics-interval", 5*time.Second, "scrape the server's /metrics this often during the run (0 disables)")
	fs.StringVar(&f.emulatedModel, "emulated-model", defaultEmbeddedModel, "model the built-in emulated server imitates when no target is given")
	fs.StringVar(&f.emulatedGPU, "emulated-gpu", defaultEmbeddedGPU, "GPU the built-in emulated server imitates when no target is given")
	fs.DurationVar(&f.grace, "interrupt-grace", 5*time.Second, "on Ctrl-C, how long in-flight requests may finish before they are cut off")
	return cmd
}

var chatBackends = map[string]bool{"openai-chat": true, "vllm-chat": true, "sglang-chat": true, "sglang-oai-chat": true, "lmdeploy-chat": true, "tgi": true}
var completionBackends = map[string]bool{"openai": true, "vllm": true, "sglang": true, "sglang-oai": true, "lmdeploy": true, "llama.cpp": true, "scalellm": true}

func runBench(ctx context.Context, cmd *cobra.Command, f *benchFlags) error {
	changed := cmd.Flags().Changed
	if f.shard.local || changed("shards") {
		return runLocalShards(ctx, cmd, f)
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	spec, arrivals, sumOpts, pctMetrics, pcts, err := f.workload.resolve(changed)
	if err != nil {
		return err
	}
	if !chatBackends[f.backend] && !completionBackends[f.backend] {
		return fmt.Errorf("--backend %q: not supported; use one of openai, vllm, sglang, lmdeploy, llama.cpp, openai-chat, vllm-chat, sglang-chat, tgi", f.backend)
	}
	endpoint := f.endpoint
	if endpoint == "" {
		endpoint = "/v1/completions"
		if chatBackends[f.backend] {
			endpoint = "/v1/chat/completions"
		}
	}
	if f.numWarmups < 0 {
		return fmt.Errorf("--num-warmups %d: must be 0 or more", f.numWarmups)
	}
	metadata, err := f.output.validate()
	if err != nil {
		return err
	}
	shard, err := f.shard.resolve(changed, &f.output)
	if err != nil {
		return err
	}
	if err := f.output.checkDirs(); err != nil {
		return err
	}
	headerPairs, err := parseHeaders(f.headers)
	if err != nil {
		return err
	}
	extra, err := f.requestExtras()
	if err != nil {
		return err
	}

	baseURL, defaultTokenizer, stopTarget, err := f.chooseTarget(ctx, changed, errw)
	if err != nil {
		return err
	}
	defer stopTarget()

	header := requestHeader(headerPairs)
	httpClient := &http.Client{Timeout: 30 * time.Second}
	if f.insecure {
		httpClient.Transport = insecureTransport()
	}
	cl, modelID, sendModel, err := f.newClient(ctx, baseURL, endpoint, header, extra, spec.Dataset)
	if err != nil {
		return err
	}
	defer cl.CloseIdleConnections()

	vocab := serverVocab(ctx, cl, sendModel, spec.VocabSize, changed("vocab-size"))
	f.workload.spec.VocabSize = vocab.size // the server tokenizer's fallback
	tok, tokName, err := resolveBenchTokenizer(ctx, f, defaultTokenizer, baseURL, sendModel, header, httpClient, errw)
	if err != nil {
		return err
	}
	idPrompts := spec.Dataset == workload.DatasetRandom || spec.Dataset == workload.DatasetPrefixRepetition || spec.Dataset == ""
	if tok == nil && idPrompts && strings.HasSuffix(endpoint, "chat/completions") {
		// Chat messages carry text, not token IDs: without the server's
		// tokenizer, build the prompts with a built-in one and say so.
		tok, err = tokenizer.New(ctx, "cl100k_base", tokenizer.Options{})
		if err != nil {
			return err
		}
		tokName = tok.Name()
		fmt.Fprintln(errw, "Chat endpoint with token-ID prompts and no tokenizer: building prompts with the built-in cl100k_base encoding; input lengths are exact for it, approximate for the server's (pass --tokenizer to choose).")
	}
	vocab = vocab.final(tok)
	spec.VocabSize = vocab.size

	reqs, err := workload.Build(ctx, spec, tok)
	if err != nil {
		return err
	}
	offsets, err := workload.Schedule(len(reqs), arrivals)
	if err != nil {
		return err
	}
	workload.Assign(reqs, offsets)
	total, scheduleHash := len(reqs), ""
	if shard != nil {
		if reqs, scheduleHash, err = shard.selectRequests(reqs); err != nil {
			return err
		}
	}

	info := newRunInfo(f.backend, modelID, tokName, &f.workload, spec, arrivals, &f.output, metadata, sumOpts, pctMetrics, pcts)
	outs, err := f.output.open(&info)
	if err != nil {
		return err
	}
	defer outs.close()

	prefix := f.requestIDPrefix
	if prefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		prefix = "bench-" + hex.EncodeToString(b[:]) + "-"
	}
	cfg := bench.Config{
		Client: cl, Requests: reqs, MaxConcurrency: f.workload.maxConcurrency, Warmups: f.numWarmups,
		ReadyCheckTimeout: time.Duration(f.readyCheckSec * float64(time.Second)), RequestIDPrefix: prefix,
		Summary: sumOpts, Tokenizer: tok, KeepRecords: f.output.saveDetailed, GracePeriod: f.grace,
		Records: outs.recordsWriter(), Abort: abortChannel(ctx),
	}
	if !f.skipTestRequest || cfg.ReadyCheckTimeout > 0 {
		if err := runInitialTest(ctx, out, &cfg, outs); err != nil {
			return err
		}
	}

	if err := writePreamble(out, &info); err != nil {
		return err
	}
	if idPrompts {
		fmt.Fprint(out, vocab.preambleLine())
	}
	if f.scrapeInterval > 0 {
		s := bench.NewScraper(baseURL+"/metrics", httpClient, f.scrapeInterval)
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := s.Probe(probeCtx); err == nil {
			cfg.Scraper = s
		}
		cancel()
	}
	if shard != nil {
		if cfg.StartAt, err = shard.waitForStart(cmd.InOrStdin(), errw); err != nil {
			return err
		}
	}
	bar := newProgress(errw, len(reqs), f.disableTqdm)
	cfg.OnRecord = bar.update
	res, err := bench.Run(ctx, cfg)
	bar.finish()
	if err != nil {
		return err
	}
	info.Interrupted = res.Interrupted
	if shard != nil {
		if err := shard.finish(errw, outs.recordsPath, scheduleHash, total, len(reqs), &info, sumOpts, benchOutcome(res)); err != nil {
			return err
		}
	}
	return writeBenchResult(out, errw, info, res, outs, f.scrapeInterval)
}

// requestHeader is the --header pairs plus the OpenAI key from the
// environment, as vLLM's client sends it, unless a header already sets one.
func requestHeader(pairs [][2]string) http.Header {
	header := http.Header{}
	for _, kv := range pairs {
		header.Add(kv[0], kv[1])
	}
	if key := os.Getenv("OPENAI_API_KEY"); key != "" && header.Get("Authorization") == "" {
		header.Set("Authorization", "Bearer "+key)
	}
	return header
}

// newClient builds the streaming client. modelID is --model, or the first
// model the server lists; sendModel is what requests carry
// (--served-model-name when given).
func (f *benchFlags) newClient(ctx context.Context, baseURL, endpoint string, header http.Header, extra map[string]any, dataset string) (cl *client.Client, modelID, sendModel string, err error) {
	// The random dataset always ignores EOS against OpenAI-style backends, as
	// in vLLM, so output lengths are what was asked for.
	ignoreEOS := f.ignoreEOS || dataset == workload.DatasetRandom || dataset == ""
	clientCfg := client.Config{
		BaseURL: baseURL, Endpoint: endpoint, Header: header, NoStream: f.disableStream,
		IgnoreEOS: ignoreEOS, ExtraBody: extra, Timeout: f.requestTimeout, ContinuousUsage: f.continuousUsage,
		InsecureSkipVerify: f.insecure, FirstByteTimeout: f.firstByteTimeout, ChunkTimeout: f.chunkTimeout,
		DisableConnectionReuse: !f.connectionReuse,
	}
	modelID = f.model
	if modelID == "" {
		lister, err := client.New(clientCfg)
		if err != nil {
			return nil, "", "", err
		}
		models, err := lister.Models(ctx)
		lister.CloseIdleConnections()
		if err != nil || len(models) == 0 {
			return nil, "", "", fmt.Errorf("no --model given and %s/v1/models did not list one (%v); pass --model", baseURL, oneLineErr(err))
		}
		modelID = models[0]
	}
	sendModel = modelID
	if f.servedModelName != "" {
		sendModel = f.servedModelName
	}
	clientCfg.Model = sendModel
	cl, err = client.New(clientCfg)
	return cl, modelID, sendModel, err
}

// chooseTarget picks the server: an explicit one; else whatever answers at
// vLLM's default address; else the embedded emulator, which stop shuts
// down. defaultTokenizer is the emulator's built-in encoding, so prompts
// are counted as it counts them without HTTP round trips.
func (f *benchFlags) chooseTarget(ctx context.Context, changed func(string) bool, errw io.Writer) (baseURL, defaultTokenizer string, stop func(), err error) {
	stop = func() {}
	baseURL = strings.TrimRight(f.baseURL, "/")
	explicitTarget := baseURL != "" || changed("host") || changed("port")
	if !explicitTarget && serverAnswers(ctx, f.defaultTarget) {
		baseURL = "http://" + f.defaultTarget
		fmt.Fprintf(errw, "No --base-url given: benchmarking the server answering at %s.\n", baseURL)
	}
	switch {
	case baseURL == "" && !explicitTarget:
		emulate := f.emulatedModel
		if f.model != "" && !changed("emulated-model") {
			emulate = f.model
		}
		target, err := startEmbeddedTarget(ctx, errw, emulate, f.emulatedGPU)
		if err != nil {
			return "", "", stop, fmt.Errorf("no server answered at %s and the built-in emulated server cannot start: %w (pass --base-url to benchmark a real server, or --emulated-model)", f.defaultTarget, err)
		}
		baseURL, defaultTokenizer, stop = target.url, serve.DefaultTokenizer, target.stop
		if f.model == "" {
			f.model = target.model
		}
	case baseURL == "":
		baseURL = "http://" + net.JoinHostPort(f.host, strconv.Itoa(f.port))
	}
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		stop()
		return "", "", func() {}, fmt.Errorf("--base-url %q: expected http://HOST:PORT or https://HOST:PORT", f.baseURL)
	}
	return baseURL, defaultTokenizer, stop, nil
}

// runInitialTest is vLLM's fail-fast check: a wrong model, endpoint or
// address stops here with the server's reason instead of as N failed
// requests. After it the run needs no ready check.
func runInitialTest(ctx context.Context, out io.Writer, cfg *bench.Config, outs *outputs) error {
	fmt.Fprintln(out, "Starting initial single prompt test run...")
	if err := bench.InitialTest(ctx, *cfg); err != nil {
		outs.discardEmptyRecords()
		if ctx.Err() != nil {
			return exitCodeError{code: 130, err: errors.New("interrupted during the initial test request: nothing was measured")}
		}
		return fmt.Errorf("%w; check --model, --base-url and --endpoint, or pass --skip-test-request to run anyway", err)
	}
	fmt.Fprintln(out, "Initial test run completed. Starting main benchmark run...")
	cfg.ReadyCheckTimeout = 0
	return nil
}

// writeBenchResult prints and saves a finished run and turns its outcome
// into the exit status.
func writeBenchResult(out, errw io.Writer, info report.RunInfo, res *bench.Result, outs *outputs, scrapeInterval time.Duration) error {
	result := &report.Result{Info: info, Summary: res.Summary, Records: res.Records}
	if res.Server != nil {
		result.Extra = append(result.Extra, report.Section{Key: "server_metrics", Value: serverMetricsJSON(res)})
	}
	if err := report.WriteText(out, result); err != nil {
		return err
	}
	if err := writeErrorSection(out, &res.Summary); err != nil {
		return err
	}
	if s := res.Server; s != nil {
		if err := writeServerMetrics(out, errw, s, scrapeInterval, res.Summary.Duration); err != nil {
			return err
		}
	}
	if outs.recordsPath != "" {
		fmt.Fprintf(errw, "Per-request records: %s\n", outs.recordsPath)
	}
	if err := outs.write(out, errw, result); err != nil {
		return err
	}
	return runOutcome(&res.Summary, res.Interrupted, res.NotSent, res.SinkErr, outs.savedPaths(res.SinkErr == nil))
}

func (f *benchFlags) requestExtras() (map[string]any, error) {
	extra := map[string]any{}
	if f.logprobs >= 0 {
		extra["logprobs"] = f.logprobs
	}
	setFloat := func(key string, v float64) {
		if !math.IsNaN(v) {
			extra[key] = v
		}
	}
	setFloat("top_p", f.topP)
	setFloat("min_p", f.minP)
	setFloat("temperature", f.temp)
	setFloat("frequency_penalty", f.freqPenalty)
	setFloat("presence_penalty", f.presencePenalty)
	setFloat("repetition_penalty", f.repPenalty)
	if f.topK != -2 {
		extra["top_k"] = f.topK
	}
	if f.extraBody != "" {
		var body map[string]any
		if err := json.Unmarshal([]byte(f.extraBody), &body); err != nil {
			return nil, fmt.Errorf("--extra-body: not a JSON object: %v", err)
		}
		for k, v := range body {
			extra[k] = v
		}
	}
	return extra, nil
}

func resolveBenchTokenizer(ctx context.Context, f *benchFlags, defaultSpec, baseURL, model string, header http.Header, hc *http.Client, errw io.Writer) (tokenizer.Tokenizer, string, error) {
	if f.skipTokenizerInit {
		return nil, "", nil
	}
	// VocabSize is the server's (llama.cpp reports it) or --vocab-size.
	opts := tokenizer.Options{BaseURL: baseURL, Model: model, HTTPClient: hc, Header: header, VocabSize: f.workload.spec.VocabSize}
	spec := f.tokenizer
	if spec == "" {
		spec = defaultSpec
	}
	spec, err := resolveTokenizerSpec(spec)
	if err != nil {
		return nil, "", err
	}
	if spec != "" {
		tok, err := tokenizer.New(ctx, spec, opts)
		if err != nil {
			return nil, "", err
		}
		if tok == nil {
			return nil, "", nil
		}
		return tok, tok.Name(), nil
	}
	// Default: the target's own tokenizer when it has /tokenize, so prompt
	// lengths are exact for the served model; otherwise none.
	tok, err := tokenizer.New(ctx, "server", opts)
	if err == nil {
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err = tok.Encode(probeCtx, "hello"); err == nil {
			return tok, tok.Name(), nil
		}
	}
	fmt.Fprintf(errw, "No --tokenizer and the server has no usable /tokenize (%v): random prompts go as token IDs, output tokens come from usage.\n", oneLineErr(err))
	return nil, "", nil
}

func oneLineErr(err error) string {
	if err == nil {
		return "no error"
	}
	return textline.OneLine(err.Error(), 0)
}

func serverMetricsJSON(res *bench.Result) map[string]any {
	samples := make([]map[string]any, 0, len(res.ServerSamples))
	var prevHits, prevQueries float64
	for i, s := range res.ServerSamples {
		hitRate := 0.0
		if i > 0 && s.PrefixQueries > prevQueries {
			hitRate = (s.PrefixHits - prevHits) / (s.PrefixQueries - prevQueries)
		}
		prevHits, prevQueries = s.PrefixHits, s.PrefixQueries
		samples = append(samples, map[string]any{
			"t": s.At.Seconds(), "running": s.Running, "waiting": s.Waiting, "swapped": s.Swapped,
			"kv_cache_usage": s.KVCacheUsage, "prefix_hit_rate": hitRate,
		})
	}
	return map[string]any{"summary": res.Server, "samples": samples}
}

// writeServerMetrics prints the scraped server section, or says why there
// is none. Gauges are point samples: on a lightly loaded server whose
// requests are much shorter than the scrape interval every sample can find
// it idle even on a long run, while the token counters still show the work
// done; so the section is printed whenever either shows load.
func writeServerMetrics(out, errw io.Writer, s *bench.ServerSummary, interval, runDuration time.Duration) error {
	if s.EmulatorLag != nil && s.EmulatorLag.Warning() != "" {
		fmt.Fprintln(errw, s.EmulatorLag.Warning())
	}
	if s.MaxRunning > 0 || s.MaxWaiting > 0 || s.MaxKVCacheUsage > 0 || s.GenerationTokens > 0 || s.PromptTokens > 0 {
		return writeServerSection(out, s)
	}
	why := fmt.Sprintf("the run was shorter than --server-metrics-interval %s", interval)
	if runDuration >= interval {
		why = fmt.Sprintf("every scrape found the server idle and its token counters did not move; lower --server-metrics-interval %s to sample short requests", interval)
	}
	fmt.Fprintf(errw, "Server metrics: %d scrapes, none while requests were in flight (%s).\n", s.Samples, why)
	return nil
}

func writeServerSection(w io.Writer, s *bench.ServerSummary) error {
	rows := [][2]string{
		{"Samples:", strconv.Itoa(s.Samples)},
		{"Running requests mean / max:", fmt.Sprintf("%.2f / %.0f", s.MeanRunning, s.MaxRunning)},
		{"Waiting requests mean / max:", fmt.Sprintf("%.2f / %.0f", s.MeanWaiting, s.MaxWaiting)},
		{"KV cache usage mean / max (%):", fmt.Sprintf("%.1f / %.1f", 100*s.MeanKVCacheUsage, 100*s.MaxKVCacheUsage)},
		{"Prefix cache hit rate (%):", fmt.Sprintf("%.1f", 100*s.PrefixCacheHitRate)},
		{"Preemptions:", fmt.Sprintf("%.0f", s.Preemptions)},
	}
	if s.EmulatorLag != nil {
		rows = append(rows, s.EmulatorLag.Rows()...)
	}
	return report.WriteSection(w, "Server Metrics (scraped)", rows)
}
