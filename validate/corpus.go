package validate

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/workload"
)

// builtin is the corpus committed under validate/corpus, in the binary so
// `servebench validate` works from any directory.
//
//go:embed corpus
var builtin embed.FS

// BuiltinName is how reports name the embedded corpus.
const BuiltinName = "built-in"

// Corpus is a set of published runs and the files beside them (model
// configs under models/).
type Corpus struct {
	// Name is BuiltinName or the directory it was read from.
	Name string
	// Dir is the directory on disk ("" for the built-in corpus): sim
	// commands printed for a run point at its model config there.
	Dir     string
	Sources []*Source
	Runs    []*Run
	files   fs.FS
}

// Source is one publication: a page, an issue or a pull request.
type Source struct {
	ID        string `yaml:"id"`
	Title     string `yaml:"title"`
	URL       string `yaml:"url"`
	Ref       string `yaml:"ref"`
	Published string `yaml:"published"`
	Notes     string `yaml:"notes"`
	// File is the corpus file the source was read from.
	File string `yaml:"-"`
}

// Run is one published benchmark run with its full setup, or one of the
// user's own result files (Source is then nil and Split is SplitUser).
type Run struct {
	// ownClient: a user's servebench bench result, measured by servebench's
	// own client rather than vLLM's one-thread benchmark client.
	ownClient bool
	// lengths are the run's own per-request lengths (workload.lengths, or
	// a user's detailed result file), read when the run loads; lengthsFile
	// is the path sim commands name them by.
	lengths     []workload.RequestLengths
	lengthsFile string

	ID               string   `yaml:"id"`
	Split            string   `yaml:"split"`
	Regime           string   `yaml:"regime"`
	Benchmark        string   `yaml:"benchmark"`
	GPU              string   `yaml:"gpu"`
	GPUCount         int      `yaml:"gpu_count"`
	TensorParallel   int      `yaml:"tensor_parallel"`
	PipelineParallel int      `yaml:"pipeline_parallel"`
	Model            string   `yaml:"model"`
	Quantization     string   `yaml:"quantization"`
	DType            string   `yaml:"dtype"`
	KVCacheDType     string   `yaml:"kv_cache_dtype"`
	VLLMVersion      string   `yaml:"vllm_version"`
	Engine           string   `yaml:"engine"`
	ServerArgs       []string `yaml:"server_args"`
	Workload         Workload `yaml:"workload"`
	// Published holds the figures exactly as printed, under vLLM's
	// result-JSON keys.
	Published map[string]float64 `yaml:"published"`
	Uncertain []string           `yaml:"uncertain"`
	// Ref says where this run's figures are, when the source's ref covers
	// many runs.
	Ref string `yaml:"ref"`
	// SimVLLMVersion is the release sim models the run as, when
	// vllm_version is one sim does not take (before 0.4, a .postN or
	// .devN build); empty: vllm_version.
	SimVLLMVersion string `yaml:"sim_vllm_version"`
	// Link is the interconnect between the run's GPUs as sim's --link
	// names it; empty: sim's default for the GPU.
	Link string `yaml:"link"`
	// FlashInferSampler: the server's V1 sampler ran FlashInfer's
	// top-k/top-p kernel (sim --flashinfer-sampler).
	FlashInferSampler bool `yaml:"flashinfer_sampler"`
	// ColdStart: the server started with an empty Triton cache, as a
	// fresh container without ~/.triton kept does (sim --cold-start).
	ColdStart bool `yaml:"cold_start"`
	// Client is the benchmark client of a serving run when it is not
	// vLLM's own (benchmark_serving.py / vllm bench serve): "" or
	// ClientInferencePerf.
	Client string `yaml:"client"`

	// Source is the publication (nil for a user's own result file).
	Source *Source `yaml:"-"`
	// File is where the run was read from: the corpus file, or the user's
	// result file.
	File string `yaml:"-"`
}

// Workload is what the benchmark client sent.
type Workload struct {
	Dataset string `yaml:"dataset"`
	// InputLen is a request's whole prompt (the mean where lengths vary),
	// as total_input_tokens counts it: PrefixLen's shared tokens are part
	// of it, as in vLLM's sonnet dataset (--sonnet-input-len), not added
	// to it as --random-prefix-len is to --random-input-len.
	InputLen       int     `yaml:"input_len"`
	OutputLen      int     `yaml:"output_len"`
	RangeRatio     float64 `yaml:"range_ratio"`
	PrefixLen      int     `yaml:"prefix_len"`
	NumPrompts     int     `yaml:"num_prompts"`
	RequestRate    Rate    `yaml:"request_rate"`
	MaxConcurrency int     `yaml:"max_concurrency"`
	Burstiness     float64 `yaml:"burstiness"`
	BatchSize      int     `yaml:"batch_size"`
	IgnoreEOS      *bool   `yaml:"ignore_eos"`
	// Lengths is a file beside the corpus (lengths/<source>/<run>.json)
	// holding the run's per-request input_lens and output_lens as its
	// detailed result JSON published them; sim then replays those
	// lengths instead of the means.
	Lengths string `yaml:"lengths"`
	// ShareGPTOutputLen is the reply length every ShareGPT request asked
	// for when the client fixed it (benchmark_throughput's --output-len,
	// --sharegpt-output-len); 0: each reply's own length, which sim
	// spreads as ShareGPT's replies (--random-length-dist sharegpt).
	ShareGPTOutputLen int `yaml:"sharegpt_output_len"`
	// Backend is the API the client called, as vLLM's --backend (or
	// --endpoint-type) named it; empty: a completions API, vLLM's default.
	// A chat backend has sim charge the server's chat preparation
	// (sim --backend).
	Backend string `yaml:"backend"`
}

// Rate is requests per second; +Inf ("inf") sends everything at once.
type Rate float64

// UnmarshalYAML accepts a number, or inf as vLLM prints it.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "inf", ".inf", "+inf", "infinity":
		*r = Rate(math.Inf(1))
		return nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsNaN(v) || v <= 0 {
		return fmt.Errorf("request_rate %q: give requests per second (> 0) or inf", n.Value)
	}
	*r = Rate(v)
	return nil
}

// FullID is the run's id across the corpus: <source id>/<run id>, or the
// result file (and its index in a file holding several) for a user's run.
func (r *Run) FullID() string {
	if r.Source == nil {
		return r.ID
	}
	return r.Source.ID + "/" + r.ID
}

// SourceName is the publication a run comes from (its corpus source's
// id), or for a user's result the file it was read from.
func (r *Run) SourceName() string {
	if r.Source == nil {
		return r.File
	}
	return r.Source.ID
}

// Splits, benchmarks, regimes and datasets the schema allows
// (corpus/README.md).
const (
	SplitFit     = "fit"
	SplitHoldout = "holdout"
	// SplitUser marks a user's own result file: neither fitted nor held
	// out, reported on its own.
	SplitUser = "user"

	BenchmarkServing    = "serving"
	BenchmarkThroughput = "throughput"
	BenchmarkLatency    = "latency"
)

// Regime is a run's load regime.
type Regime string

// The regimes, in the order tables list them.
const (
	OfflinePrefill   Regime = "offline-prefill"
	OfflineDecode    Regime = "offline-decode"
	OfflineMixed     Regime = "offline-mixed"
	ServingLow       Regime = "serving-low"
	ServingSaturated Regime = "serving-saturated"
)

// Regimes lists every regime in table order.
func Regimes() []Regime {
	return []Regime{OfflinePrefill, OfflineDecode, OfflineMixed, ServingLow, ServingSaturated}
}

var (
	splits     = []string{SplitFit, SplitHoldout}
	benchmarks = []string{BenchmarkServing, BenchmarkThroughput, BenchmarkLatency}
	datasets   = []string{"random", "sharegpt", "sonnet", "fixed"}
	engines    = []string{"v0", "v1"}
	idPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// LoadBuiltin reads the embedded corpus.
func LoadBuiltin() (*Corpus, error) {
	sub, err := fs.Sub(builtin, "corpus")
	if err != nil {
		return nil, fmt.Errorf("validate: built-in corpus: %w", err)
	}
	return load(sub, BuiltinName, "")
}

// LoadDir reads a corpus directory: <source-id>.yaml files and, for models
// outside perf's catalog, models/<org>--<name>/config.json.
func LoadDir(dir string) (*Corpus, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("validate: corpus %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("validate: corpus %s is not a directory: pass the directory holding the <source-id>.yaml files", dir)
	}
	return load(os.DirFS(dir), dir, dir)
}

func load(files fs.FS, name, dir string) (*Corpus, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("validate: corpus %s: %w", name, err)
	}
	c := &Corpus{Name: name, Dir: dir, files: files}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return nil, fmt.Errorf("validate: corpus %s: %w", name, err)
		}
		file := e.Name()
		if dir != "" {
			file = path.Join(dir, e.Name())
		}
		src, runs, err := parseCorpusFile(file, data)
		if err != nil {
			return nil, err
		}
		// The file name is the source's id, so ids are unique.
		if stem := strings.TrimSuffix(e.Name(), ".yaml"); src.ID != stem {
			return nil, fmt.Errorf("%s: field source.id %q: must equal the file name without .yaml (%q)", file, src.ID, stem)
		}
		for _, r := range runs {
			if err := r.loadLengths(files, dir); err != nil {
				return nil, fmt.Errorf("%s: run %s: %w", file, r.ID, err)
			}
		}
		c.Sources = append(c.Sources, src)
		c.Runs = append(c.Runs, runs...)
	}
	if len(c.Runs) == 0 {
		return nil, fmt.Errorf("validate: corpus %s holds no runs: it needs <source-id>.yaml files (see validate/corpus/README.md)", name)
	}
	return c, nil
}

// corpusFile is one <source-id>.yaml.
type corpusFile struct {
	Source Source `yaml:"source"`
	Runs   []Run  `yaml:"runs"`
}

// Required keys, by where they sit; the rest default as corpus/README.md
// says.
var (
	requiredSource = []string{"id", "title", "url", "ref"}
	requiredRun    = []string{"id", "split", "regime", "benchmark", "gpu", "gpu_count", "tensor_parallel",
		"pipeline_parallel", "model", "vllm_version", "engine", "workload", "published"}
	requiredWorkload = map[string][]string{
		BenchmarkServing:    {"dataset", "input_len", "output_len", "num_prompts", "request_rate"},
		BenchmarkThroughput: {"dataset", "input_len", "output_len", "num_prompts"},
		BenchmarkLatency:    {"dataset", "input_len", "output_len", "batch_size"},
	}
)

func parseCorpusFile(file string, data []byte) (*Source, []*Run, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, nil, fmt.Errorf("%s: %s", file, oneLine(err.Error()))
	}
	if len(root.Content) == 0 {
		return nil, nil, fmt.Errorf("%s: empty file: a corpus file holds source: and runs:", file)
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: expected source: and runs: at the top level", file)
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k := doc.Content[i]; k.Value != "source" && k.Value != "runs" {
			return nil, nil, fmt.Errorf("%s: field %s (line %d): unknown key; a corpus file holds source: and runs:", file, k.Value, k.Line)
		}
	}
	srcNode, runsNode := mapValue(doc, "source"), mapValue(doc, "runs")
	if srcNode == nil {
		return nil, nil, fmt.Errorf("%s: field source: missing", file)
	}
	if runsNode == nil || runsNode.Kind != yaml.SequenceNode || len(runsNode.Content) == 0 {
		return nil, nil, fmt.Errorf("%s: field runs: missing or empty; list at least one run", file)
	}
	if err := checkKeys(srcNode, Source{}, "source."); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := requireKeys(srcNode, requiredSource, "source."); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	for i, node := range runsNode.Content {
		where := fmt.Sprintf("run %d", i+1)
		if id := mapValue(node, "id"); id != nil && id.Value != "" {
			where = "run " + id.Value
		}
		if err := checkKeys(node, Run{}, ""); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", file, where, err)
		}
	}
	var cf corpusFile
	if err := doc.Decode(&cf); err != nil {
		return nil, nil, fmt.Errorf("%s: %s", file, oneLine(err.Error()))
	}
	src := cf.Source
	src.File = file
	if !idPattern.MatchString(src.ID) {
		return nil, nil, fmt.Errorf("%s: field source.id %q: use letters, digits, '.', '_' and '-'", file, src.ID)
	}
	seen := map[string]bool{}
	runs := make([]*Run, 0, len(cf.Runs))
	for i := range cf.Runs {
		r := &cf.Runs[i]
		node := runsNode.Content[i]
		where := fmt.Sprintf("run %d", i+1)
		if r.ID != "" {
			where = "run " + r.ID
		}
		if err := r.checkCorpusRun(node, seen); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", file, where, err)
		}
		r.Source, r.File = &src, file
		runs = append(runs, r)
	}
	return &src, runs, nil
}

// checkCorpusRun checks one run of a corpus file (node is its YAML; seen
// holds the file's ids so far): the keys, labels, setup and figures.
func (r *Run) checkCorpusRun(node *yaml.Node, seen map[string]bool) error {
	if err := requireKeys(node, requiredRun, ""); err != nil {
		return err
	}
	if !idPattern.MatchString(r.ID) {
		return fmt.Errorf("field id %q: use letters, digits, '.', '_' and '-'", r.ID)
	}
	if seen[r.ID] {
		return fmt.Errorf("field id %q: duplicate id in this file", r.ID)
	}
	seen[r.ID] = true
	if !slices.Contains(splits, r.Split) {
		return fmt.Errorf("field split %q: must be fit or holdout", r.Split)
	}
	if !slices.Contains(Regimes(), Regime(r.Regime)) {
		return fmt.Errorf("field regime %q: must be one of %s", r.Regime, regimeList())
	}
	if !slices.Contains(engines, r.Engine) {
		return fmt.Errorf("field engine %q: must be v0 or v1", r.Engine)
	}
	if err := r.checkSetup(node); err != nil {
		return err
	}
	if err := r.checkClient(); err != nil {
		return err
	}
	return checkPublished(r.Published, r.Benchmark)
}

// ClientInferencePerf is kubernetes-sigs/inference-perf: many worker
// processes, so unlike vLLM's one-thread client its own CPU time does not
// delay what it measures; sim reports what the server streams.
const ClientInferencePerf = "inference-perf"

func (r *Run) checkClient() error {
	switch {
	case r.Client == "":
		return nil
	case r.Client != ClientInferencePerf:
		return fmt.Errorf("field client %q: leave it out for vLLM's benchmark client, or give %s", r.Client, ClientInferencePerf)
	case r.Benchmark != BenchmarkServing:
		return fmt.Errorf("field client %q: only serving runs name their client", r.Client)
	}
	return nil
}

// checkSetup checks a corpus run's setup: the workload keys its benchmark
// needs, then the values.
func (r *Run) checkSetup(node *yaml.Node) error {
	if !slices.Contains(benchmarks, r.Benchmark) {
		return fmt.Errorf("field benchmark %q: must be serving, throughput or latency", r.Benchmark)
	}
	wl := mapValue(node, "workload")
	if wl == nil {
		return errors.New("field workload: missing")
	}
	if err := requireKeys(wl, requiredWorkload[r.Benchmark], "workload."); err != nil {
		return err
	}
	return r.checkValues()
}

// checkValues checks the setup's values, shared by corpus runs and a
// user's own runs, and fills the defaults corpus/README.md states.
func (r *Run) checkValues() error {
	if !slices.Contains(benchmarks, r.Benchmark) {
		return fmt.Errorf("field benchmark %q: must be serving, throughput or latency", r.Benchmark)
	}
	if r.Engine != "" && !slices.Contains(engines, r.Engine) {
		return fmt.Errorf("field engine %q: must be v0 or v1", r.Engine)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"gpu_count", r.GPUCount}, {"tensor_parallel", r.TensorParallel}, {"pipeline_parallel", r.PipelineParallel}} {
		if f.v < 1 {
			return fmt.Errorf("field %s %d: must be at least 1", f.name, f.v)
		}
	}
	if strings.TrimSpace(r.GPU) == "" || strings.TrimSpace(r.Model) == "" || strings.TrimSpace(r.VLLMVersion) == "" {
		return errors.New("fields gpu, model and vllm_version must not be empty")
	}
	w := &r.Workload
	if !slices.Contains(datasets, w.Dataset) {
		return fmt.Errorf("field workload.dataset %q: must be one of %s", w.Dataset, strings.Join(datasets, ", "))
	}
	switch {
	case w.InputLen < 1:
		return fmt.Errorf("field workload.input_len %d: must be at least 1", w.InputLen)
	case w.OutputLen < 1:
		return fmt.Errorf("field workload.output_len %d: must be at least 1", w.OutputLen)
	case w.RangeRatio < 0 || w.RangeRatio >= 1:
		return fmt.Errorf("field workload.range_ratio %g: must be in [0, 1)", w.RangeRatio)
	case w.PrefixLen < 0:
		return fmt.Errorf("field workload.prefix_len %d: must not be negative", w.PrefixLen)
	case w.PrefixLen >= w.InputLen && w.PrefixLen > 0:
		return fmt.Errorf("field workload.prefix_len %d: must be below input_len %d, which counts the whole prompt, the shared prefix included", w.PrefixLen, w.InputLen)
	case w.MaxConcurrency < 0:
		return fmt.Errorf("field workload.max_concurrency %d: must not be negative (0: no cap)", w.MaxConcurrency)
	case w.Burstiness < 0:
		return fmt.Errorf("field workload.burstiness %g: must be positive", w.Burstiness)
	case w.ShareGPTOutputLen != 0 && w.Dataset != "sharegpt":
		return fmt.Errorf("field workload.sharegpt_output_len %d: only a sharegpt workload has one; leave it out", w.ShareGPTOutputLen)
	case w.ShareGPTOutputLen != 0 && w.ShareGPTOutputLen != w.OutputLen:
		return fmt.Errorf("field workload.sharegpt_output_len %d: every reply is that long, so output_len must be %d too, not %d", w.ShareGPTOutputLen, w.ShareGPTOutputLen, w.OutputLen)
	case w.Backend != "" && !runspec.KnownBackend(w.Backend):
		return fmt.Errorf("field workload.backend %q: give vLLM's --backend name (openai, vllm, openai-chat, ...) or leave it out for a completions API", w.Backend)
	case w.Backend != "" && r.Benchmark != BenchmarkServing:
		return fmt.Errorf("field workload.backend %q: only a serving benchmark calls an API; leave it out", w.Backend)
	}
	switch r.Benchmark {
	case BenchmarkLatency:
		if w.BatchSize < 1 {
			return fmt.Errorf("field workload.batch_size %d: the latency benchmark needs a batch of at least 1", w.BatchSize)
		}
	default:
		if w.NumPrompts < 1 {
			return fmt.Errorf("field workload.num_prompts %d: must be at least 1", w.NumPrompts)
		}
		if w.BatchSize != 0 {
			return fmt.Errorf("field workload.batch_size %d: only the latency benchmark has a batch size", w.BatchSize)
		}
	}
	if r.Benchmark != BenchmarkServing && (w.MaxConcurrency != 0 || (w.RequestRate != 0 && !math.IsInf(float64(w.RequestRate), 1))) {
		return fmt.Errorf("fields workload.request_rate and max_concurrency: the %s benchmark sends every request at once; leave them out", r.Benchmark)
	}
	if w.Burstiness == 0 {
		w.Burstiness = 1
	}
	if w.RequestRate == 0 {
		w.RequestRate = Rate(math.Inf(1))
	}
	if w.IgnoreEOS == nil {
		on := true
		w.IgnoreEOS = &on
	}
	if r.DType == "" {
		r.DType = "auto"
	}
	if r.KVCacheDType == "" {
		r.KVCacheDType = "auto"
	}
	return nil
}

// metricKey matches the latency statistics of vLLM's result JSON.
var metricKey = regexp.MustCompile(`^(mean|median|std|p(\d+(\.\d+)?))_(ttft|tpot|itl|e2el)_ms$`)

// runKeys are the published keys of vLLM's result JSON that describe the
// run rather than predict a figure validate compares.
var runKeys = []string{"completed", "failed", "duration", "total_input_tokens", "total_output_tokens",
	"num_prompts", "request_rate", "burstiness", "max_concurrency", "request_goodput", "max_concurrent_requests"}

func checkPublished(p map[string]float64, benchmark string) error {
	compared := 0
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := p[k]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("field published.%s %g: must be a finite number, 0 or more", k, v)
		}
		switch {
		case slices.Contains(runKeys, k):
		case familyOf(k) != "":
			compared++
		default:
			return fmt.Errorf("field published.%s: unknown key; use vLLM's result-JSON keys (%s, request_throughput, output_throughput, total_token_throughput, mean_ttft_ms, median_tpot_ms, p99_itl_ms, mean_e2el_ms, ...)",
				k, strings.Join(runKeys, ", "))
		}
	}
	if compared == 0 {
		return errors.New("field published: no throughput or latency figure to compare with")
	}
	if benchmark == BenchmarkLatency {
		for k := range p {
			if k != "mean_e2el_ms" {
				return fmt.Errorf("field published.%s: the latency benchmark prints only its average latency (mean_e2el_ms)", k)
			}
		}
	}
	return nil
}

func regimeList() string {
	names := make([]string, 0, 5)
	for _, r := range Regimes() {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}

// loadLengths reads a run's workload.lengths file from beside the corpus
// (dir is the corpus directory, "" for the built-in one).
func (r *Run) loadLengths(files fs.FS, dir string) error {
	rel := r.Workload.Lengths
	if rel == "" {
		return nil
	}
	if !fs.ValidPath(rel) || !strings.HasPrefix(rel, "lengths/") {
		return fmt.Errorf("field workload.lengths %q: give a path under lengths/ beside the corpus files", rel)
	}
	data, err := fs.ReadFile(files, rel)
	if err != nil {
		return fmt.Errorf("field workload.lengths %q: %w", rel, err)
	}
	lengths, err := workload.ParseLengths(data, rel)
	if err != nil {
		return fmt.Errorf("field workload.lengths: %w", err)
	}
	if dir == "" {
		dir = builtinModelsDir
	}
	return r.useLengths(lengths, path.Join(dir, rel), "field workload.lengths "+strconv.Quote(rel))
}

// useLengths keeps the per-request lengths a run sent, after checking them
// against it: enough requests, and the totals it published. file is the
// path sim commands name them by; what names them in errors.
func (r *Run) useLengths(lengths []workload.RequestLengths, file, what string) error {
	n := r.Workload.NumPrompts
	if r.Benchmark == BenchmarkLatency {
		n = r.Workload.BatchSize
	}
	if len(lengths) < n {
		return fmt.Errorf("%s: %d requests, but the run sent %d", what, len(lengths), n)
	}
	lengths = lengths[:n]
	var in, out float64
	for _, l := range lengths {
		in += float64(l.Input)
		out += float64(l.Output)
	}
	for _, total := range []struct {
		key string
		sum float64
	}{{"total_input_tokens", in}, {"total_output_tokens", out}} {
		if want, ok := r.Published[total.key]; ok && want != total.sum {
			return fmt.Errorf("%s: its requests sum to %.0f tokens, but published.%s is %.0f", what, total.sum, total.key, want)
		}
	}
	r.lengths, r.lengthsFile = lengths, file
	return nil
}

// modelConfig returns the config.json committed beside the corpus for an
// HF id outside perf's catalog (models/<org>--<name>/config.json), and
// the path a sim command names it by.
func (c *Corpus) modelConfig(id string) (data []byte, where string, ok bool) {
	if c == nil || c.files == nil {
		return nil, "", false
	}
	rel := path.Join("models", strings.ReplaceAll(id, "/", "--"), "config.json")
	data, err := fs.ReadFile(c.files, rel)
	if err != nil {
		return nil, "", false
	}
	if c.Dir != "" {
		return data, path.Join(c.Dir, rel), true
	}
	return data, path.Join(builtinModelsDir, rel), true
}

// builtinModelsDir is where the built-in corpus sits in the repository,
// for the sim commands of its runs.
const builtinModelsDir = "validate/corpus/"
