package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/workload"
)

// RunSpec runs a bench spec as `servebench bench` does: it checks the
// spec, picks the target (the one given; else a server at vLLM's default
// address; else the built-in emulated server), builds the workload,
// sends vLLM's initial test request, runs the benchmark, prints vLLM's
// result block to io.Out and saves what the spec's outputs ask for. A
// spec with --shards N --local runs N shard processes (RunLocalShards).
// The error says how the run ended: report.ErrInterrupted after Ctrl-C,
// and no request succeeding or a records write failing are errors too,
// after everything measured was printed and saved.
func RunSpec(ctx context.Context, spec *runspec.Spec, rio runspec.IO) error {
	s := spec.Clone()
	if err := s.Validate(); err != nil {
		return err
	}
	if s.LocalShards() {
		return RunLocalShards(ctx, s, rio)
	}
	r := &specRun{spec: s, io: rio}
	r.out, r.errw, r.in = rio.Streams()
	return r.run(ctx)
}

// specRun is one bench run of a spec, between its steps.
type specRun struct {
	spec           *runspec.Spec
	io             runspec.IO
	out, errw      io.Writer
	in             io.Reader
	work           runspec.ResolvedWorkload
	shard          *runspec.ShardPlan
	baseURL        string
	emulated       *serve.Emulated // the emulator bench started, if any
	header         http.Header
	httpClient     *http.Client
	modelID, model string // the model's name, and the one requests send
}

func (r *specRun) run(ctx context.Context) error {
	files, extra, err := r.check()
	if err != nil {
		return err
	}
	stopTarget, err := r.chooseTarget(ctx)
	if err != nil {
		return err
	}
	defer stopTarget()
	r.header = requestHeader(r.spec)
	r.httpClient = &http.Client{Timeout: 30 * time.Second}
	if r.spec.Target.Insecure {
		r.httpClient.Transport = insecureTransport()
	}
	cl, err := r.newClient(ctx, extra)
	if err != nil {
		return err
	}
	defer cl.CloseIdleConnections()
	reqs, tok, tokName, vocab, err := r.workload(ctx, cl)
	if err != nil {
		return err
	}
	sh := shardRun{total: len(reqs)}
	if r.shard != nil {
		if reqs, sh.hash, err = selectShard(r.shard, reqs); err != nil {
			return err
		}
	}
	info, err := r.spec.RunInfo(r.spec.Target.Backend, r.modelID, tokName, r.work)
	if err != nil {
		return err
	}
	outs, err := report.OpenFiles(files, &info)
	if err != nil {
		return err
	}
	defer outs.Close()
	cfg := r.config(cl, reqs, tok, outs)
	if !r.spec.Client.SkipTestRequest || cfg.ReadyCheckTimeout > 0 {
		if err := r.initialTest(ctx, &cfg, outs); err != nil {
			return err
		}
	}
	if err := report.WritePreamble(r.out, &info); err != nil {
		return err
	}
	if vocab != nil {
		fmt.Fprint(r.out, vocab.preambleLine())
	}
	cfg.Scraper = r.scraper(ctx)
	res, err := r.measure(ctx, cfg, &sh)
	if err != nil {
		return err
	}
	// A run a full disk stopped early did not finish either: its result
	// says so, as an interrupted one's does.
	info.Interrupted = res.Interrupted || res.SinkErr != nil
	if err := r.writeShardManifest(&sh, res, outs.RecordsPath, len(reqs), &info); err != nil {
		return err
	}
	return r.writeResult(info, res, outs)
}

// check resolves what the run needs before it touches the target: the
// workload, the shard, writable destinations and the request extras.
func (r *specRun) check() (report.OutputOptions, map[string]any, error) {
	s := r.spec
	files := s.Output.Files()
	var err error
	if r.work, err = s.ResolveWorkload(); err != nil {
		return files, nil, err
	}
	if r.shard, err = s.ShardPlan(); err != nil {
		return files, nil, err
	}
	if r.shard != nil && files.Records == "" {
		files.Records = r.shard.RecordsPath
	}
	if err := report.CheckOutputDirs(files); err != nil {
		return files, nil, err
	}
	extra, err := s.Client.RequestExtras()
	return files, extra, err
}

// shardRun is what a shard's manifest needs of its run.
type shardRun struct {
	total int       // the unsharded schedule's requests
	hash  string    // its fingerprint
	clock ClockSync // the wall clock's sync state at the start
}

// measure waits for a shard's start instant, then runs the benchmark
// with the progress hooked in.
func (r *specRun) measure(ctx context.Context, cfg Config, sh *shardRun) (*Result, error) {
	if r.shard != nil {
		sh.clock = ReadClockSync()
		var err error
		if cfg.StartAt, err = waitForStart(r.shard, r.in, r.errw); err != nil {
			return nil, err
		}
	}
	if p := r.io.Progress; p != nil {
		cfg.OnRecord = p.Update
		defer p.Finish()
	}
	return Run(ctx, cfg)
}

// writeShardManifest says how the shard started and writes its manifest,
// for a sharded run.
func (r *specRun) writeShardManifest(sh *shardRun, res *Result, recordsPath string, sent int, info *report.RunInfo) error {
	if r.shard == nil {
		return nil
	}
	m := ShardManifest(r.shard, recordsPath, sh.hash, sh.total, sent, info, r.work, sh.clock)
	m.Started, m.StartLate, m.Duration, m.Interrupted, m.NotSent = res.Started, res.StartLate, res.Summary.Duration, info.Interrupted, res.NotSent
	fmt.Fprintln(r.errw, shardStatusLine(r.shard, sh.clock, res.StartLate))
	return WriteShardManifest(r.errw, recordsPath, m)
}

// config is the benchmark's configuration for the built requests.
func (r *specRun) config(cl *client.Client, reqs []workload.Request, tok tokenizer.Tokenizer, outs *report.Files) Config {
	c := &r.spec.Client
	prefix := c.RequestIDPrefix
	if prefix == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		prefix = "bench-" + hex.EncodeToString(b[:]) + "-"
	}
	return Config{
		Client: cl, Requests: reqs, MaxConcurrency: r.spec.Workload.MaxConcurrency, Warmups: c.NumWarmups,
		ReadyCheckTimeout: time.Duration(c.ReadyCheckTimeoutSec * float64(time.Second)), RequestIDPrefix: prefix,
		Summary: r.work.Summary, Tokenizer: tok, KeepRecords: r.spec.Output.SaveDetailed, GracePeriod: c.InterruptGrace,
		Records: outs.RecordsWriter(), Abort: r.io.Abort,
	}
}

// scraper is the /metrics scraper, when the interval is set and the
// server has the endpoint.
func (r *specRun) scraper(ctx context.Context) *Scraper {
	interval := r.spec.Client.ServerMetricsInterval
	if interval <= 0 {
		return nil
	}
	s := NewScraper(r.baseURL+"/metrics", r.httpClient, interval)
	probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.Probe(probeCtx); err != nil {
		fmt.Fprintf(r.errw, "No server-metrics section: %s (--server-metrics-interval 0 skips the check).\n", oneLineErr(err))
		return nil
	}
	return s
}

// workload builds the requests with their arrivals, the tokenizer that
// counts them and, for token-ID prompts, the vocabulary they draw from.
func (r *specRun) workload(ctx context.Context, cl *client.Client) ([]workload.Request, tokenizer.Tokenizer, string, *vocabChoice, error) {
	s := r.spec
	spec := r.work.Spec
	idPrompts := spec.Dataset == workload.DatasetRandom || spec.Dataset == workload.DatasetPrefixRepetition || spec.Dataset == ""
	chat := strings.HasSuffix(s.Target.EndpointPath(), "chat/completions")
	vocab := serverVocab(ctx, cl, r.model, spec.VocabSize, s.Changed("vocab-size"))
	if em := r.emulated; em != nil && !s.Changed("vocab-size") {
		m := em.Engine.Deployment.Model
		vocab = vocabChoice{m.Vocab, "the emulated " + m.Name + "'s vocab_size"}
	}
	spec.VocabSize = vocab.size // the server tokenizer's fallback
	tok, tokName, err := r.tokenizer(ctx, spec.VocabSize, idPrompts && !chat)
	if err != nil {
		return nil, nil, "", nil, err
	}
	if tok == nil && idPrompts && chat {
		// Chat messages carry text, not token IDs: without the server's
		// tokenizer, build the prompts with a built-in one and say so.
		if tok, err = tokenizer.New(ctx, "cl100k_base", tokenizer.Options{}); err != nil {
			return nil, nil, "", nil, err
		}
		tokName = tok.Name()
		fmt.Fprintln(r.errw, "Chat endpoint with token-ID prompts and no tokenizer: building prompts with the built-in cl100k_base encoding; input lengths are exact for it, approximate for the server's (pass --tokenizer to choose).")
	}
	vocab = vocab.final(tok)
	spec.VocabSize = vocab.size
	reqs, err := r.build(ctx, spec, tok)
	if err != nil {
		return nil, nil, "", nil, err
	}
	offsets, err := workload.Schedule(len(reqs), r.work.Arrivals)
	if err != nil {
		return nil, nil, "", nil, err
	}
	workload.Assign(reqs, offsets)
	if !idPrompts {
		return reqs, tok, tokName, nil, nil
	}
	return reqs, tok, tokName, &vocab, nil
}

// build makes the workload. Through a server's tokenizer each prompt
// costs round trips, so it says so, shows its progress (io.Setup) and
// says how long it took.
func (r *specRun) build(ctx context.Context, spec workload.Spec, tok tokenizer.Tokenizer) ([]workload.Request, error) {
	if _, remote := tok.(*tokenizer.Server); !remote {
		return workload.Build(ctx, spec, tok)
	}
	fmt.Fprintf(r.errw, "Building %d prompts through the server's /tokenize and /detokenize...\n", spec.NumPrompts)
	var opts workload.BuildOptions
	if p := r.io.Setup; p != nil {
		opts.Progress = p.Update
	}
	start := time.Now()
	reqs, err := workload.BuildWith(ctx, spec, tok, opts)
	if p := r.io.Setup; p != nil {
		p.Finish()
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.errw, "Built %d prompts in %.2f s.\n", len(reqs), time.Since(start).Seconds())
	return reqs, nil
}

// requestHeader is the --header pairs plus the OpenAI key from the
// environment, as vLLM's client sends it, unless a header already sets
// one.
func requestHeader(s *runspec.Spec) http.Header {
	header := http.Header{}
	for _, h := range s.Target.Headers {
		header.Add(h.Name, h.Value)
	}
	if key := s.Env.OpenAIAPIKey.Reveal(); key != "" && header.Get("Authorization") == "" {
		header.Set("Authorization", "Bearer "+key)
	}
	return header
}

// newClient builds the streaming client. The model is --model, or the
// first model the server lists; requests send --served-model-name when
// given.
func (r *specRun) newClient(ctx context.Context, extra map[string]any) (*client.Client, error) {
	s := r.spec
	t, c := &s.Target, &s.Client
	// The random dataset always ignores EOS against OpenAI-style backends,
	// as in vLLM, so output lengths are what was asked for.
	dataset := r.work.Spec.Dataset
	ignoreEOS := c.IgnoreEOS || dataset == workload.DatasetRandom || dataset == ""
	cfg := client.Config{
		BaseURL: r.baseURL, Endpoint: t.EndpointPath(), Header: r.header, NoStream: c.DisableStream,
		IgnoreEOS: ignoreEOS, ExtraBody: extra, Timeout: c.RequestTimeout, ContinuousUsage: c.ContinuousUsageStats,
		InsecureSkipVerify: t.Insecure, FirstByteTimeout: c.FirstByteTimeout, ChunkTimeout: c.ChunkTimeout,
		DisableConnectionReuse: !c.ConnectionReuse,
	}
	if em := r.emulated; em != nil {
		// In memory, not over TCP: on a 2-core machine the system calls
		// of a token chunk over loopback were most of what the default
		// run cost (serve.Running.DialInMemory).
		cfg.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) { return em.DialInMemory(ctx) }
	}
	if r.modelID == "" {
		lister, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		models, err := lister.Models(ctx)
		lister.CloseIdleConnections()
		if err != nil || len(models) == 0 {
			return nil, fmt.Errorf("no --model given and %s/v1/models did not list one (%v); pass --model", r.baseURL, oneLineErr(err))
		}
		r.modelID = models[0]
	}
	r.model = r.modelID
	if t.ServedModelName != "" {
		r.model = t.ServedModelName
	}
	cfg.Model = r.model
	return client.New(cfg)
}

// chooseTarget picks the server: an explicit one; else whatever answers
// at vLLM's default address; else the embedded emulator, which the
// returned stop shuts down.
func (r *specRun) chooseTarget(ctx context.Context) (stop func(), err error) {
	s := r.spec
	r.modelID = s.Target.Model
	url, em, err := findTarget(ctx, s, r.errw)
	if err != nil {
		return func() {}, err
	}
	r.baseURL = url
	if em == nil {
		return func() {}, nil
	}
	r.emulated = em
	if r.modelID == "" {
		r.modelID = em.Model
	}
	return func() { _ = em.Close() }, nil
}

// findTarget is the base URL bench sends to, and the emulator it started
// for it (nil when a server was given or found).
func findTarget(ctx context.Context, s *runspec.Spec, errw io.Writer) (string, *serve.Emulated, error) {
	t := &s.Target
	if t.Explicit(s.Changed) {
		u := t.URL()
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return "", nil, fmt.Errorf("--base-url %q: expected http://HOST:PORT or https://HOST:PORT", t.BaseURL)
		}
		return u, nil, nil
	}
	addr := s.Env.Target()
	if serverAnswers(ctx, addr) {
		u := "http://" + addr
		fmt.Fprintf(errw, "No --base-url given: benchmarking the server answering at %s.\n", u)
		return u, nil, nil
	}
	emulate := t.EmulatedModel
	if t.Model != "" && !s.Changed("emulated-model") {
		emulate = t.Model
	}
	em, err := serve.StartEmulatedModel(ctx, emulate, t.EmulatedGPU, s.Env)
	if err != nil {
		return "", nil, fmt.Errorf("no server answered at %s and the built-in emulated server cannot start: %w (pass --base-url to benchmark a real server, or --emulated-model)", addr, err)
	}
	dep := em.Engine.Deployment
	fmt.Fprintf(errw, "No server answered at %s: benchmarking the built-in emulated vLLM server at %s (model %s, GPU %s, engine %s); pass --base-url http://HOST:PORT to benchmark a real server.\n",
		addr, em.URL(), dep.Model.Name, dep.GPU.Name, em.Engine.Engine.Version)
	return em.URL(), em, nil
}

// targetProbeTimeout bounds the look for a server at the default address,
// so a fresh machine falls back to the emulator at once.
const targetProbeTimeout = time.Second

// serverAnswers reports whether an HTTP server answers GET /v1/models at
// addr (any status: an auth error still means a server is there).
func serverAnswers(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, targetProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/models", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return true
}

// initialTest is vLLM's fail-fast check: a wrong model, endpoint or
// address stops here with the server's reason instead of as N failed
// requests. After it the run needs no ready check.
func (r *specRun) initialTest(ctx context.Context, cfg *Config, outs *report.Files) error {
	fmt.Fprintln(r.out, "Starting initial single prompt test run...")
	if err := InitialTest(ctx, *cfg); err != nil {
		outs.DiscardEmptyRecords()
		if ctx.Err() != nil {
			return report.Interrupted(errors.New("interrupted during the initial test request: nothing was measured"))
		}
		return fmt.Errorf("%w; check --model, --base-url and --endpoint, or pass --skip-test-request to run anyway", err)
	}
	fmt.Fprintln(r.out, "Initial test run completed. Starting main benchmark run...")
	cfg.ReadyCheckTimeout = 0
	return nil
}

// writeResult prints and saves a finished run and turns its outcome into
// the error.
func (r *specRun) writeResult(info report.RunInfo, res *Result, outs *report.Files) error {
	result := &report.Result{Info: info, Summary: res.Summary, Records: res.Records}
	if res.Server != nil {
		result.Extra = append(result.Extra, report.Section{Key: "server_metrics", Value: serverMetricsJSON(res)})
	}
	if err := report.WriteText(r.out, result); err != nil {
		return err
	}
	if err := report.WriteErrorSection(r.out, &res.Summary); err != nil {
		return err
	}
	if s := res.Server; s != nil {
		if err := WriteServerMetrics(r.out, r.errw, s, r.spec.Client.ServerMetricsInterval, res.Summary.Duration); err != nil {
			return err
		}
	}
	// After the result is saved: a result that had to take another name
	// takes its records along.
	werr := outs.Write(r.out, r.errw, result)
	if outs.RecordsPath != "" {
		fmt.Fprintf(r.errw, "Per-request records: %s\n", outs.RecordsPath)
	}
	if werr != nil {
		return werr
	}
	return report.Outcome(&res.Summary, res.Interrupted, res.NotSent, keptError(res, outs.RecordsPath), outs.SavedPaths(res.SinkErr == nil))
}

// keptError is a records write error with what the records file kept,
// so the message says how much of the run is on disk.
func keptError(res *Result, recordsPath string) error {
	if res.SinkErr == nil || res.RecordsKept < 0 {
		return res.SinkErr
	}
	measured := res.Summary.Completed + res.Summary.Failed
	return fmt.Errorf("%w; %s kept %d of the %d requests measured, and %d were never sent", res.SinkErr, recordsPath, res.RecordsKept, measured, res.NotSent)
}

// tokenizer resolves --tokenizer: none with --skip-tokenizer-init; the
// one named; else, for the embedded emulator, none where prompts are
// token IDs (idPrompts: drawn from the emulated model's vocabulary, exact
// by construction, and neither side spends CPU on text) and its built-in
// encoding otherwise (counted as it counts, without HTTP round trips);
// else the server's own /tokenize when it answers, so prompt lengths are
// exact for the served model; else none.
func (r *specRun) tokenizer(ctx context.Context, vocabSize int, idPrompts bool) (tokenizer.Tokenizer, string, error) {
	t := &r.spec.Target
	if t.SkipTokenizerInit || (t.Tokenizer == "" && r.emulated != nil && idPrompts) {
		return nil, "", nil
	}
	// VocabSize is the server's (llama.cpp reports it) or --vocab-size.
	opts := tokenizer.Options{BaseURL: r.baseURL, Model: r.model, HTTPClient: r.httpClient, Header: r.header, VocabSize: vocabSize}
	name := t.Tokenizer
	if name == "" && r.emulated != nil {
		name = serve.DefaultTokenizer
	}
	name, err := r.spec.Env.ResolveTokenizer(name)
	if err != nil {
		return nil, "", err
	}
	if name != "" {
		tok, err := tokenizer.New(ctx, name, opts)
		if err != nil || tok == nil {
			return nil, "", err
		}
		return tok, tok.Name(), nil
	}
	tok, err := tokenizer.New(ctx, "server", opts)
	if err == nil {
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err = tok.Encode(probeCtx, "hello"); err == nil {
			return tok, tok.Name(), nil
		}
	}
	fmt.Fprintf(r.errw, "No --tokenizer and the server has no usable /tokenize (%v): random prompts go as token IDs, output tokens come from usage.\n", oneLineErr(err))
	return nil, "", nil
}

func oneLineErr(err error) string {
	if err == nil {
		return "no error"
	}
	return textline.OneLine(err.Error(), 0)
}

func insecureTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A benchmark holds many connections to one host: the default of two
	// idle connections per host would reconnect constantly.
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 1 << 16
	t.DisableCompression = true
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user asked for --insecure
	return t
}

// hostname is this machine's name for shard manifests.
func hostname() string {
	h, _ := os.Hostname()
	return h
}
