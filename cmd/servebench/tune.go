package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/sweep"
	"github.com/servebench/servebench/tokenizer"
	"github.com/servebench/servebench/tune"
	"github.com/servebench/servebench/tune/launch"
)

func init() { extraCommands = append(extraCommands, newTuneCmd) }

type tuneFlags struct {
	target         string
	launch         string
	launchPort     int
	startupTimeout time.Duration
	healthPath     string

	trials        int
	sampler       string
	seed          int64
	startupTrials int
	spaceFile     string
	params        []string
	conditions    []string
	objective     string
	sla           string
	slaSearch     bool
	slaMaxRuns    int
	paretoTTFT    string

	storage    string
	study      string
	dir        string
	staleAfter time.Duration
	confirm    int

	worker tuneWorkerFlags

	prescreenSim        int
	prescreenCandidates int

	html       string
	reportOnly bool
}

const tuneLong = `Search vLLM's engine flags for the highest throughput (or any result key) under an SLO.
Every sampled point is first checked with the chosen release's rules through the resolver
sim uses (argument choices, scheduler config, parallelism, memory fit, KV capacity); an
invalid point is never run, it is recorded with vLLM's own message and scored 0 so the
sampler learns to avoid it. Valid points run on the target:

  --target sim        (default) the simulator, in-process: seconds per trial
  --target embedded   the built-in emulated vLLM server, restarted per trial, load-tested by bench
  --target URL        bench against a server you run (its flags are not changed per trial)
  --launch TEMPLATE   a real server per trial from a shell template, e.g.
                      'vllm serve {model} --port {port} --load-format dummy {flags}'

Placeholders: {model}, {port}, {host}, {flags} (the point as vllm serve flags) and each
parameter by name ({max_num_seqs}). A launched server is polled on /health until healthy
(--startup-timeout); its log is kept in the trial's directory; vLLM's "# GPU blocks", "GPU
KV cache size" and "Maximum concurrency" lines and nvidia-smi's memory are recorded. A
server that exits at startup, never becomes healthy or dies mid-run fails its trial with the
log tail, and the study goes on.

Engine and workload flags fixed for the whole study go after "--", as for sim and bench:

  servebench tune --trials 40 --sla 'p99_ttft_ms<=2000,p99_tpot_ms<=60' -- \
      --model Qwen2.5-7B-Instruct --gpu L40S --vllm-version 0.6.3 --max-model-len 4096 \
      --num-prompts 300 --random-input-len 1024 --random-output-len 256 --request-rate 8

The search space defaults to the release's knobs around its defaults. Give your own with
--param (repeatable) or --space FILE:

  --param max_num_seqs=int:16:512:log   --param block_size=8,16,32
  --param enable_chunked_prefill=bool   --param max_model_len=4096 (pinned)
  --condition 'enable_chunked_prefill==false => max_num_batched_tokens>=max_model_len'

  # space.yaml
  params:
    max_num_seqs: {type: int, low: 16, high: 512, log: true}
    max_num_batched_tokens: {type: int, low: 512, high: 16384, log: true}
    block_size: [8, 16, 32]
    enable_chunked_prefill: {type: bool}
    scheduler_delay_factor: {type: float, low: 0, high: 0.5}
    max_model_len: 4096            # pinned: passed to every trial
  conditions:
    - if: enable_chunked_prefill == false
      then: max_num_batched_tokens >= max_model_len

A condition "X >= Y" (or <=) that fails moves X to Y when X's range allows it; any other
failing condition rejects the point. Names are vLLM's options in snake_case; a condition may
name max_model_len etc. even when it is not a parameter (the model's resolved value).

Studies persist in --storage (an SQLite file, or postgresql://USER@HOST/DB for workers on
several machines): rerun the same command to resume after Ctrl-C or kill -9, with no trial
lost or run twice; start it again in another terminal to add a worker. Trials of a dead
worker are given back after --stale-after (at once when it ran on this host). Samplers:
random, tpe (default), cmaes (int/float parameters only).

Real targets can be screened on sim first: --prescreen-sim N lets the sampler try
--prescreen-candidates points on the simulator (same release, model, GPU and flags) and spends
the study's first N trials on sim's N best, best first (DIR/prescreen/ranked.json); the rest of
--trials is sampled as usual. Every sampled parameter must be one servebench models.

Output: a live table of trials (config, objective, SLO pass/fail, predicted or observed KV
and memory, failure reason), then the best config as a vllm serve command, the TTFT vs
objective Pareto front, and trials.json / trials.csv plus each trial's result JSON in --dir.
--html FILE also writes the study as one offline page (objective by trial, Pareto front,
parameter importance, trials); --report-only --html FILE writes it from --storage/--study
without running a trial.`

func newTuneCmd() *cobra.Command {
	f := &tuneFlags{}
	cmd := &cobra.Command{
		Use:   "tune [flags] -- ENGINE-AND-WORKLOAD-FLAGS",
		Short: "Search vLLM flags for the best throughput under an SLO (sim, emulated server or a real vLLM)",
		Long:  tuneLong,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 || dash < 0 && len(args) > 0 {
				return fmt.Errorf("unexpected argument %q: engine and workload flags go after --, e.g. servebench tune -- --model Qwen2.5-7B-Instruct", args[0])
			}
			return runTune(cmd.Context(), cmd, f, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.target, "target", "sim", `where trials run: "sim", "embedded" or a server URL`)
	fs.StringVar(&f.launch, "launch", "", "shell template that starts a real server per trial (see above); overrides --target")
	fs.IntVar(&f.launchPort, "launch-port", 0, "port for launched servers (default: a free loopback port per trial)")
	fs.DurationVar(&f.startupTimeout, "startup-timeout", 10*time.Minute, "how long a launched server may take to answer /health")
	fs.StringVar(&f.healthPath, "health-path", "/health", "readiness path of launched servers")
	fs.IntVar(&f.trials, "trials", 30, "trials in the study (all workers together), invalid ones included")
	fs.StringVar(&f.sampler, "sampler", tune.SamplerTPE, "sampler: "+strings.Join(tune.Samplers, ", "))
	fs.Int64Var(&f.seed, "sampler-seed", 0, "seed of the sampler")
	fs.IntVar(&f.startupTrials, "startup-trials", 3, "random trials before TPE or CMA-ES start modelling")
	fs.StringVar(&f.spaceFile, "space", "", "search space YAML file (see above)")
	fs.StringArrayVar(&f.params, "param", nil, "search space parameter NAME=SPEC (repeatable; see above)")
	fs.StringArrayVar(&f.conditions, "condition", nil, "condition 'IF => THEN' or 'THEN' between parameters (repeatable)")
	fs.StringVar(&f.objective, "objective", "request_throughput", "result key to maximise: request_throughput, output_throughput, request_goodput (needs --goodput) or any numeric key")
	fs.StringVar(&f.sla, "sla", "", "SLO every trial must meet, e.g. 'p99_ttft_ms<=500,p99_tpot_ms<=50' (sweep's syntax)")
	fs.BoolVar(&f.slaSearch, "sla-search", false, "per trial, search the highest --request-rate meeting --sla (sweep's search) and score the trial there")
	fs.IntVar(&f.slaMaxRuns, "sla-max-runs", 8, "most load tests one trial's SLA search may take")
	fs.StringVar(&f.paretoTTFT, "pareto-ttft", "p99_ttft_ms", "TTFT key of the Pareto front (TTFT vs objective)")
	fs.StringVar(&f.storage, "storage", "", "study storage: FILE.db, sqlite:///FILE or postgresql://USER@HOST/DB (default: DIR/study.db)")
	fs.StringVar(&f.study, "study", "default", "study name inside the storage")
	fs.StringVar(&f.dir, "dir", "", "directory for trial results, server logs, trials.json and trials.csv (default tune-STUDY)")
	fs.DurationVar(&f.staleAfter, "stale-after", time.Minute, "give back a running trial whose worker has been silent this long")
	f.worker.register(fs)

	fs.StringVar(&f.html, "html", "", "also write the study as one HTML page: objective by trial, Pareto front, parameter importance, all trials")
	fs.BoolVar(&f.reportOnly, "report-only", false, "run no trial: print and write (--html) the stored study's report; needs no engine flags")
	fs.IntVar(&f.prescreenSim, "prescreen-sim", 0, "real targets: rank candidates on sim first and spend the first N trials on sim's N best (see above)")
	fs.IntVar(&f.prescreenCandidates, "prescreen-candidates", 0, "points the sampler screens on sim for --prescreen-sim (default max(50, 4×N))")
	fs.IntVar(&f.confirm, "confirm", 0, "re-run the best N configs 3 times each with other workload seeds and report the spread")
	return cmd
}

// tuneSetup is everything derived from the flags before the study runs.
type tuneSetup struct {
	f          *tuneFlags
	space      *tune.Space
	engineArgs []string // fixed engine flags (after --) for sim and serve
	loadArgs   []string // fixed workload flags for sim and bench
	model      string
	known      map[string]string
	sla        sweep.SLA
	targetName string
}

func runTune(ctx context.Context, cmd *cobra.Command, f *tuneFlags, args []string) error {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.reportOnly {
		return reportStoredStudy(ctx, out, f)
	}
	s, err := newTuneSetup(cmd, f, args)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if f.storage == "" {
		f.storage = filepath.Join(f.dir, "study.db")
	}
	store, err := tune.OpenStorage(ctx, f.storage)
	if err != nil {
		return err
	}
	defer store.Close()

	fmt.Fprintf(errw, "study %q in %s: %d trials, sampler %s, target %s, objective %s", f.study, store.URL, f.trials, f.sampler, s.targetName, f.objective)
	if len(s.sla) > 0 {
		fmt.Fprintf(errw, " subject to %s", s.sla)
	}
	fmt.Fprintln(errw)
	if f.launch == "" && s.targetName != "sim" && s.targetName != "embedded" {
		fmt.Fprintf(errw, "warning: --target %s is a server tune cannot restart: every trial runs against its current flags, so only the load side differs; use --launch to start a server per trial\n", s.targetName)
	}
	prescreen, err := s.prescreen(errw)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, tune.TableHeader(s.space, f.objective))
	cfg := tune.Config{
		Study: f.study, Space: s.space, Storage: store, Known: s.known,
		Sampler: f.sampler, Seed: f.seed, Trials: f.trials, StartupTrials: f.startupTrials,
		Objective: tune.Objective{Key: f.objective, SLA: s.sla},
		Validate:  s.validate, Run: s.run,
		Identity:   "target=" + s.targetName + " fixed=" + strings.Join(args, " "),
		StaleAfter: f.staleAfter, HeartbeatEvery: min(5*time.Second, f.staleAfter/4),
		Prescreen: prescreen,
		OnTrial:   func(t tune.Trial) { fmt.Fprintln(out, tune.TableRow(s.space, t)) },
		Logger:    slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	runErr := f.worker.optimize(ctx, cfg)
	// Whatever finished is reported and saved, interrupted or not.
	trials, err := store.Trials(context.WithoutCancel(ctx), f.study)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := s.writeOutputs(out, errw, trials); err != nil {
		return errors.Join(runErr, err)
	}
	if err := writeStudyHTML(out, f, trials); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return exitCodeError{code: 130, err: fmt.Errorf("tune interrupted with %d trials stored; rerun the same command to resume: %w", countFinished(trials), runErr)}
		}
		return runErr
	}
	if f.confirm > 0 {
		return s.confirmTop(ctx, out, trials)
	}
	return nil
}

func countFinished(trials []tune.Trial) int {
	n := 0
	for _, t := range trials {
		if t.State == tune.StateComplete || t.State == tune.StateFailed || t.State == tune.StateInvalid {
			n++
		}
	}
	return n
}

func newTuneSetup(cmd *cobra.Command, f *tuneFlags, args []string) (*tuneSetup, error) {
	s := &tuneSetup{f: f, known: map[string]string{}}
	if err := f.worker.check(cmd.Flags().Changed, f); err != nil {
		return nil, err
	}
	switch {
	case f.launch != "":
		s.targetName = "launch"
	case f.target == "sim" || f.target == "embedded":
		s.targetName = f.target
	default:
		if _, err := parseSweepTarget(f.target); err != nil {
			return nil, err
		}
		s.targetName = f.target
	}
	if f.dir == "" {
		f.dir = "tune-" + f.study
	}
	if f.sla != "" {
		sla, err := sweep.ParseSLA(f.sla)
		if err != nil {
			return nil, err
		}
		s.sla = sla
	}
	if f.slaSearch && len(s.sla) == 0 {
		return nil, errors.New("--sla-search needs --sla: the search looks for the highest rate meeting it")
	}
	// The fixed flags resolve once: the release picks the default space
	// and conditions learn the model's max_model_len.
	s.engineArgs, s.loadArgs = splitEngineArgs(args)
	var base engineFlags
	if err := parseEngineArgs(&base, s.engineArgs); err != nil {
		return nil, fmt.Errorf("engine flags after --: %w", err)
	}
	if _, _, ec, _, err := base.build(); err != nil {
		return nil, fmt.Errorf("the fixed engine flags are invalid on their own: %w", err)
	} else {
		s.known["max_model_len"] = strconv.Itoa(ec.MaxModelLen)
		s.known["max_num_seqs"] = strconv.Itoa(ec.MaxNumSeqs)
		s.known["max_num_batched_tokens"] = strconv.Itoa(ec.MaxNumBatchedTokens)
		s.known["block_size"] = strconv.Itoa(ec.BlockSize)
	}
	s.model = base.model
	space, err := tuneSpace(f, base)
	if err != nil {
		return nil, err
	}
	s.space = space
	if f.launch == "" {
		fs := engineFlagSet(&engineFlags{})
		for _, p := range space.Params {
			if fs.Lookup(strings.TrimPrefix(p.Flag(), "--")) == nil {
				return nil, fmt.Errorf("--param %s: servebench does not model %s, so only a --launch target can vary it", p.Name, p.Flag())
			}
		}
	}
	return s, nil
}

func tuneSpace(f *tuneFlags, base engineFlags) (*tune.Space, error) {
	space := &tune.Space{}
	if f.spaceFile != "" {
		loaded, err := tune.LoadSpaceFile(f.spaceFile)
		if err != nil {
			return nil, fmt.Errorf("--space: %w", err)
		}
		space = loaded
	}
	for _, spec := range f.params {
		p, err := tune.ParseParam(spec)
		if err != nil {
			return nil, err
		}
		space.Set(p)
	}
	if len(space.Params) == 0 {
		conditions := space.Conditions
		space = tune.DefaultSpace(base.resolved.Profile, base.resolved.Deployment.GPU.MemoryBytes >= 70<<30)
		space.Conditions = append(space.Conditions, conditions...)
	}
	for _, spec := range f.conditions {
		c, err := tune.ParseCondition(spec)
		if err != nil {
			return nil, err
		}
		space.Conditions = append(space.Conditions, c)
	}
	if err := space.Validate(); err != nil {
		return nil, fmt.Errorf("search space: %w", err)
	}
	return space, nil
}

// splitEngineArgs separates `vllm serve`'s engine flags (for sim and the
// emulated server) from the workload flags (for sim and bench). --model
// goes to both: bench names the served model with it.
func splitEngineArgs(args []string) (engineArgs, loadArgs []string) {
	fs := engineFlagSet(&engineFlags{})
	args = vllmArgs(args)
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := fs.Lookup(name)
		if !strings.HasPrefix(a, "--") || fl == nil {
			loadArgs = append(loadArgs, a)
			continue
		}
		group := []string{a}
		if !hasValue && fl.Value.Type() != "bool" && i+1 < len(args) {
			group = append(group, args[i+1])
			i++
		}
		engineArgs = append(engineArgs, group...)
		if name == "model" {
			loadArgs = append(loadArgs, group...)
		}
	}
	return engineArgs, loadArgs
}

// engineFlagSet is a flag set holding only `vllm serve`'s engine flags,
// bound to ef.
func engineFlagSet(ef *engineFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ef.register(fs)
	return fs
}

func parseEngineArgs(ef *engineFlags, args []string) error {
	return engineFlagSet(ef).Parse(args)
}

// modelledArgs are the point's flags servebench's engine understands
// (all of them, unless a launch template varies more).
func (s *tuneSetup) modelledArgs(p tune.Point) []string {
	fs := engineFlagSet(&engineFlags{})
	var out []string
	for _, a := range p.Args(s.space) {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if fs.Lookup(name) != nil {
			out = append(out, a)
		}
	}
	return out
}

// engineFor resolves the fixed engine flags plus the point, exactly as
// sim and serve would.
func (s *tuneSetup) engineFor(p tune.Point) (*engineFlags, error) {
	var ef engineFlags
	if err := parseEngineArgs(&ef, append(slices.Clone(s.engineArgs), s.modelledArgs(p)...)); err != nil {
		return nil, err
	}
	if _, _, _, _, err := ef.build(); err != nil {
		return nil, err
	}
	return &ef, nil
}

func (s *tuneSetup) validate(_ context.Context, p tune.Point) (*tune.Capacity, error) {
	ef, err := s.engineFor(p)
	if err != nil {
		return nil, err
	}
	return tune.PredictedCapacity(ef.resolved.Capacity, ef.resolved.Engine.MaxModelLen), nil
}

func (s *tuneSetup) trialDir(t tune.Trial) string {
	return filepath.Join(s.f.dir, fmt.Sprintf("trial-%04d", t.Number))
}

// run is the tune.Runner: bring up the target for the point, run the
// load test (or the SLA search), bring it down.
func (s *tuneSetup) run(ctx context.Context, t tune.Trial) (*tune.Outcome, error) {
	dir := s.trialDir(t)
	// A trial given back by an interrupt or a dead worker runs again from
	// scratch: its earlier attempt's partial result must not stand in.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	outcome := &tune.Outcome{}
	var loadTest sweep.Runner
	// after checks the server survived the run. When the load test failed
	// it waits briefly for a dying server's exit to register, so a crash
	// is reported as a crash rather than as the requests it broke.
	var after func(loadFailed bool) error
	switch {
	case s.f.launch != "":
		srv, err := s.launch(ctx, t, dir)
		if err != nil {
			return outcome, err
		}
		defer srv.Stop()
		st := launch.ParseStartup(srv.Log())
		outcome.Observed = &tune.Capacity{GPUBlocks: st.GPUBlocks, KVCacheTokens: st.KVCacheTokens, KVCacheGiB: st.KVCacheGiB,
			MaxConcurrency: st.MaxConcurrency, GPUMemory: launch.GPUMemory(ctx)}
		loadTest = s.benchAt(srv.URL)
		died := func() error {
			outcome.LogTail = srv.TailLine()
			return fmt.Errorf("server died mid-run (%s): %s", srv.ExitError(), srv.TailLine())
		}
		after = func(loadFailed bool) error {
			select {
			case <-srv.Exited():
				return died()
			default:
			}
			if !loadFailed {
				return nil
			}
			timer := time.NewTimer(3 * time.Second)
			defer timer.Stop()
			select {
			case <-srv.Exited():
				return died()
			case <-timer.C:
				return nil
			}
		}
	case s.targetName == "sim":
		loadTest = s.simLoadTest(t.Params)
	case s.targetName == "embedded":
		url, stop, err := s.startEmulator(ctx, t.Params)
		if err != nil {
			return outcome, err
		}
		defer stop()
		loadTest = s.benchAt(url)
	default:
		loadTest = s.benchAt(s.f.target)
	}
	if after == nil {
		after = func(bool) error { return nil }
	}
	if s.f.slaSearch {
		res, _, err := sweep.Search(ctx, sweep.SearchConfig{Dir: filepath.Join(dir, "sla"), BaseArgs: nil, SLA: s.sla,
			MaxRuns: s.f.slaMaxRuns, Resume: true, Run: loadTest, Target: s.targetName})
		if aerr := after(err != nil); aerr != nil {
			return outcome, aerr
		}
		if res != nil {
			outcome.RateSearch = map[string]any{"runs": res.Runs, "stopped": res.Stopped, "upper": res.Upper}
			if res.Best != nil {
				outcome.Result = res.Best.Metrics
				outcome.RateSearch["best_rate"] = res.Best.Text
				return outcome, nil
			}
		}
		if err != nil {
			return outcome, fmt.Errorf("SLA search: %w", err)
		}
		return outcome, fmt.Errorf("no request rate met %s", s.sla)
	}
	resultPath := filepath.Join(dir, "result.json")
	_, runErr := loadTest(ctx, nil, resultPath)
	if aerr := after(runErr != nil || resultHasFailures(resultPath)); aerr != nil {
		return outcome, aerr
	}
	if runErr != nil {
		return outcome, runErr
	}
	result, err := readTrialResult(resultPath)
	outcome.Result = result
	return outcome, err
}

func resultHasFailures(path string) bool {
	m, err := readTrialResult(path)
	if err != nil {
		return true
	}
	failed, _ := numberIn(m, "failed")
	return failed > 0
}

func withoutModel(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--model" {
			i++
			continue
		}
		if strings.HasPrefix(args[i], "--model=") {
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// benchAt load-tests url with the study's workload flags.
func (s *tuneSetup) benchAt(url string) sweep.Runner {
	bench := inProcessRunner(newRootCmd, sweepTarget{subcommand: "bench", args: []string{"--base-url", url}, name: url})
	return func(ctx context.Context, extra []string, resultPath string) (map[string]any, error) {
		return bench(ctx, append(slices.Clone(s.loadArgs), extra...), resultPath)
	}
}

// startEmulator starts servebench's emulated vLLM with the point's flags
// on a free loopback port.
func (s *tuneSetup) startEmulator(ctx context.Context, p tune.Point) (string, func(), error) {
	ef, err := s.engineFor(p)
	if err != nil {
		return "", nil, err
	}
	tok, err := tokenizer.New(ctx, serve.DefaultTokenizer, tokenizer.Options{})
	if err != nil {
		return "", nil, err
	}
	running, err := serve.Start(ctx, serve.Config{
		Engine: ef.resolved.Engine, StepModel: ef.resolved.StepModel, Model: ef.model, Tokenizer: tok,
		Logger: slog.New(slog.DiscardHandler), Version: ef.resolved.Profile.Release.String(),
	}, "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	return running.URL(), func() { _ = running.Close() }, nil
}

func (s *tuneSetup) launch(ctx context.Context, t tune.Trial, dir string) (*launch.Server, error) {
	port := s.f.launchPort
	if port == 0 {
		var err error
		if port, err = launch.FreePort(); err != nil {
			return nil, err
		}
	}
	vars := map[string]string{"model": s.model, "port": strconv.Itoa(port), "host": "127.0.0.1",
		"flags": strings.Join(t.Params.VLLMArgs(s.space), " ")}
	for k, v := range t.Params {
		vars[k] = v
	}
	return launch.Start(ctx, launch.Config{Template: s.f.launch, Vars: vars, Port: port,
		HealthPath: s.f.healthPath, StartupTimeout: s.f.startupTimeout, LogPath: filepath.Join(dir, "server.log"), Env: tune.GPUEnv(ctx)})
}

func readTrialResult(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the load test wrote no result: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("result %s: %w", path, err)
	}
	return m, nil
}

func (s *tuneSetup) writeOutputs(out, errw io.Writer, trials []tune.Trial) error {
	counts := map[tune.State]int{}
	for _, t := range trials {
		counts[t.State]++
	}
	fmt.Fprintf(out, "\n%d trials: %d complete, %d failed, %d invalid (never run)", len(trials), counts[tune.StateComplete], counts[tune.StateFailed], counts[tune.StateInvalid])
	if n := counts[tune.StateRunning] + counts[tune.StateWaiting]; n > 0 {
		fmt.Fprintf(out, ", %d running or waiting", n)
	}
	fmt.Fprintln(out)
	if best := tune.Best(trials); best != nil {
		fmt.Fprintf(out, "best: trial %d, %s %.2f (%s)\n", best.Number, s.f.objective, *best.Objective, best.Params.String(s.space))
		fmt.Fprintf(out, "  %s\n", tune.ServeCommand(s.model, s.space, best.Params, nil))
	} else {
		fmt.Fprintln(out, "best: no trial met the SLO")
	}
	if front := tune.Pareto(trials, s.f.paretoTTFT); len(front) > 0 {
		fmt.Fprintf(out, "Pareto front (%s vs %s):\n", s.f.paretoTTFT, s.f.objective)
		for _, p := range front {
			fmt.Fprintf(out, "  trial %-4d %10.2f %12.2f\n", p.Number, p.Objective, p.TTFTMillis)
		}
	}
	write := func(name string, w func(io.Writer) error) error {
		path := filepath.Join(s.f.dir, name)
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := w(file); err != nil {
			file.Close()
			return err
		}
		return file.Close()
	}
	if err := write("trials.json", func(w io.Writer) error { return tune.WriteJSON(w, trials) }); err != nil {
		return err
	}
	if err := write("trials.csv", func(w io.Writer) error { return tune.WriteCSV(w, s.space, trials) }); err != nil {
		return err
	}
	fmt.Fprintf(errw, "trials in %s and %s\n", filepath.Join(s.f.dir, "trials.json"), filepath.Join(s.f.dir, "trials.csv"))
	return nil
}

// confirmTop re-runs the best configs with other workload seeds, because
// one run's best is partly luck (SCOOT keeps the worst of several orders).
func (s *tuneSetup) confirmTop(ctx context.Context, out io.Writer, trials []tune.Trial) error {
	top := tune.Top(trials, s.f.confirm)
	if len(top) == 0 {
		return nil
	}
	fmt.Fprintf(out, "confirmation (3 more runs each, workload seeds 1001-1003):\n")
	for _, t := range top {
		var values []float64
		for i := 1; i <= 3; i++ {
			seeded := *s
			seeded.loadArgs = append(slices.Clone(s.loadArgs), "--seed", strconv.Itoa(1000+i))
			confirm := t
			confirm.Number = 100000*i + t.Number
			o, err := seeded.run(ctx, confirm)
			if err != nil {
				return fmt.Errorf("confirming trial %d: %w", t.Number, err)
			}
			v, ok := numberIn(o.Result, s.f.objective)
			if ok {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			fmt.Fprintf(out, "  trial %-4d: the confirmation runs reported no %s\n", t.Number, s.f.objective)
			continue
		}
		lo, hi, mean := spread(values)
		fmt.Fprintf(out, "  trial %-4d %s: tuned %.2f, confirmed mean %.2f (min %.2f, max %.2f, spread %.1f%%)\n",
			t.Number, s.f.objective, *t.Objective, mean, lo, hi, 100*(hi-lo)/math.Max(mean, 1e-9))
	}
	return nil
}

func numberIn(m map[string]any, key string) (float64, bool) {
	return report.LoadedResult{Fields: m}.Number(key)
}

func spread(vs []float64) (lo, hi, mean float64) {
	if len(vs) == 0 {
		return 0, 0, 0
	}
	lo, hi = vs[0], vs[0]
	for _, v := range vs {
		lo, hi, mean = math.Min(lo, v), math.Max(hi, v), mean+v
	}
	return lo, hi, mean / float64(len(vs))
}
