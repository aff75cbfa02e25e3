package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sweep"
)

// Targets a study's trials run on, besides a server URL.
const (
	TargetSim      = "sim"
	TargetEmbedded = "embedded"
	targetLaunch   = "launch"
)

// Launch starts a real server per trial from a shell template.
type Launch struct {
	// Template is the shell command, with {model}, {port}, {host},
	// {flags} and each parameter by name as placeholders.
	Template       string
	Port           int // 0: a free loopback port per trial
	StartupTimeout time.Duration
	HealthPath     string
}

// Study is a tune study as `servebench tune` runs it: what to search,
// where each trial runs, how it is judged, and what it writes.
type Study struct {
	Name    string
	Dir     string // trial results, server logs, trials.json and trials.csv
	Storage string // FILE.db, sqlite:///FILE or postgresql://...; default DIR/study.db
	// Target is TargetSim, TargetEmbedded or a server URL; Launch, when
	// its Template is set, overrides it.
	Target string
	Launch Launch

	Trials, StartupTrials int
	Sampler               string
	Seed                  int64
	// Space is the search space; nil builds it from SpaceFile, Params and
	// Conditions, or the release's default knobs.
	Space      *Space
	SpaceFile  string
	Params     []string
	Conditions []string

	Objective  string
	SLA        sweep.SLA
	SLASearch  bool
	SLAMaxRuns int
	ParetoTTFT string
	StaleAfter time.Duration
	Confirm    int

	// Worker makes this process one worker of a shared study: it claims
	// and runs trials until the study's budget is used, ConcurrentTrials
	// at once with GPUsPerTrial of the visible GPUs each.
	Worker                         bool
	ConcurrentTrials, GPUsPerTrial int

	// NewStudy allows a study to start in a storage that exists but
	// holds none (a zero-byte SQLite file); without it that is an error,
	// so a study never starts over unasked. It is refused when the study
	// exists.
	NewStudy bool

	PrescreenSim, PrescreenCandidates int
	// HTML, when set, is where the study page is written at the end.
	HTML string

	// Fixed is the study's fixed flags as a sim spec: the engine flags
	// every trial adds its point to and, for the sim target, the workload.
	Fixed *runspec.Spec
	// Load is the load test of the other targets as a bench spec (its
	// workload is Fixed's); nil for the sim target.
	Load *runspec.Spec
}

// ParseFixed reads the flags a study fixes for every trial (the engine
// and workload flags after "--") into Fixed and Load.
func ParseFixed(args []string, target string) (fixed, load *runspec.Spec, err error) {
	if target == TargetSim {
		fixed, err = runspec.Parse(runspec.Sim, args)
		if err != nil {
			return nil, nil, fmt.Errorf("flags after --: %w", err)
		}
		return fixed, nil, nil
	}
	engineArgs, loadArgs := runspec.SplitEngineArgs(args)
	if fixed, err = runspec.Parse(runspec.Sim, engineArgs); err != nil {
		return nil, nil, fmt.Errorf("engine flags after --: %w", err)
	}
	if load, err = runspec.Parse(runspec.Bench, loadArgs); err != nil {
		return nil, nil, fmt.Errorf("workload flags after --: %w", err)
	}
	fixed.CopyWorkload(load)
	if load.Target.Chat() {
		// sim screens the study as the load test calls the server.
		fixed.Simulation.Backend = load.Target.Backend
	}
	return fixed, load, nil
}

// targetName is what the study's trials run on, for messages.
func (st *Study) targetName() string {
	if st.Launch.Template != "" {
		return targetLaunch
	}
	return st.Target
}

// check fills the defaults and refuses options that cannot work, before
// anything is written.
func (st *Study) check() error {
	st.setDefaults()
	switch t := st.targetName(); t {
	case TargetSim, TargetEmbedded, targetLaunch:
	default:
		if u, err := url.Parse(t); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf(`--target %q: use a server URL such as http://127.0.0.1:8000, "embedded" or "sim"`, t)
		}
	}
	switch {
	case st.Trials < 1:
		return fmt.Errorf("--trials %d: a study needs at least 1 trial", st.Trials)
	case st.SLASearch && len(st.SLA) == 0:
		return errors.New("--sla-search needs --sla: the search looks for the highest rate meeting it")
	case st.Fixed == nil || st.targetName() != TargetSim && st.Load == nil:
		return errors.New("tune: the study has no fixed run spec (Fixed, and Load for targets other than sim)")
	}
	if !slices.Contains(Samplers, st.Sampler) {
		return fmt.Errorf("--sampler %q: use one of %s", st.Sampler, strings.Join(Samplers, ", "))
	}
	if st.Storage != "" {
		if _, err := parseStorage(st.Storage); err != nil {
			return err
		}
	}
	if err := st.checkPrescreen(); err != nil {
		return err
	}
	return st.checkWorker()
}

// setDefaults fills what a library caller may leave zero with the CLI's
// defaults.
func (st *Study) setDefaults() {
	if st.Name == "" {
		st.Name = "default"
	}
	if st.Dir == "" {
		st.Dir = "tune-" + st.Name
	}
	if st.Target == "" {
		st.Target = TargetSim
	}
	if st.Sampler == "" {
		st.Sampler = SamplerTPE
	}
	if st.Objective == "" {
		st.Objective = "request_throughput"
	}
	if st.ParetoTTFT == "" {
		st.ParetoTTFT = "p99_ttft_ms"
	}
	if st.StaleAfter <= 0 {
		st.StaleAfter = time.Minute
	}
}

// checkWorker refuses worker options that cannot work.
func (st *Study) checkWorker() error {
	if !st.Worker {
		if st.ConcurrentTrials > 1 || st.GPUsPerTrial != 0 {
			return errors.New("--concurrent-trials and --gpus-per-trial need --worker")
		}
		return nil
	}
	switch {
	case st.Storage == "":
		return errors.New("--worker: give the shared study's --storage (postgresql://USER@HOST/DB, or an SQLite file every worker can reach)")
	case st.Confirm > 0:
		return errors.New("--worker: --confirm would run on every worker; run it once, without --worker, after the study")
	case st.GPUsPerTrial > 0 && st.Launch.Template == "":
		return fmt.Errorf("--gpus-per-trial %d: only --launch servers run on GPUs", st.GPUsPerTrial)
	}
	return nil
}

// loadSpec is the spec whose results the study judges: the bench load
// test, or sim's.
func (st *Study) loadSpec() *runspec.Spec {
	if st.Load != nil {
		return st.Load
	}
	return st.Fixed
}

// checkKeys refuses an objective, SLA or Pareto key no result will hold.
func (st *Study) checkKeys() error {
	sample, err := sweep.ResultSample(st.loadSpec())
	if err != nil {
		return err
	}
	if err := st.SLA.CheckKeys(sample); err != nil {
		return err
	}
	for _, k := range []struct{ flag, key string }{{"--objective", st.Objective}, {"--pareto-ttft", st.ParetoTTFT}} {
		if err := sweep.CheckResultKey(sample, k.key); err != nil {
			return fmt.Errorf("%s %s: %w", k.flag, k.key, err)
		}
	}
	return nil
}

// Run runs the study: it checks everything it can before writing
// anything (the options, the fixed flags through the release's rules,
// the SLA and objective keys, and that the space holds a point vLLM
// accepts), then runs trials until the budget is used, writes the
// trials table, trials.json and trials.csv, the study page, and confirms
// the best configurations when asked. Trials stream to rio.Out as they
// finish. After Ctrl-C the error is report.ErrInterrupted-marked and
// every stored trial is kept for a resume.
func (st *Study) Run(ctx context.Context, rio runspec.IO) error {
	out, errw, _ := rio.Streams()
	if err := st.check(); err != nil {
		return err
	}
	p, err := st.prepare(ctx)
	if err != nil {
		return err
	}
	storagePath := st.Storage
	if storagePath == "" {
		storagePath = filepath.Join(st.Dir, "study.db")
	}
	if err := CheckStudyStorage(ctx, storagePath, st.Name, st.NewStudy); err != nil {
		return err
	}
	if err := os.MkdirAll(st.Dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	store, err := OpenStorage(ctx, storagePath)
	if err != nil {
		return err
	}
	defer store.Close()
	fmt.Fprintf(errw, "study %q in %s: %d trials, sampler %s, target %s, objective %s", st.Name, store.URL, st.Trials, st.Sampler, st.targetName(), st.Objective)
	if len(st.SLA) > 0 {
		fmt.Fprintf(errw, " subject to %s", st.SLA)
	}
	fmt.Fprintln(errw)
	if st.Launch.Template == "" && st.Target != TargetSim && st.Target != TargetEmbedded {
		fmt.Fprintf(errw, "warning: --target %s is a server tune cannot restart: every trial runs against its current flags, so only the load side differs; use --launch to start a server per trial\n", st.Target)
	}
	prescreen, err := p.prescreen(errw)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, TableHeader(p.space, st.Objective))
	cfg := Config{
		Study: st.Name, Space: p.space, Storage: store, Known: p.known,
		Sampler: st.Sampler, Seed: st.Seed, Trials: st.Trials, StartupTrials: st.StartupTrials,
		Objective: Objective{Key: st.Objective, SLA: st.SLA},
		Validate:  p.validate, Run: p.run,
		Identity:   "target=" + st.targetName() + " fixed=" + strings.Join(append(st.Fixed.RedactedArgs(), st.loadArgs()...), " "),
		StaleAfter: st.StaleAfter, HeartbeatEvery: min(5*time.Second, st.StaleAfter/4),
		Prescreen: prescreen,
		OnTrial:   func(t Trial) { fmt.Fprintln(out, TableRow(p.space, t)) },
		Logger:    slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	runErr := st.optimize(ctx, cfg)
	// Whatever finished is reported and saved, interrupted or not.
	trials, err := store.Trials(context.WithoutCancel(ctx), st.Name)
	if err != nil {
		return errors.Join(runErr, err)
	}
	if err := p.writeOutputs(out, errw, trials); err != nil {
		return errors.Join(runErr, err)
	}
	if err := WriteStudyPage(out, st.HTML, st.Name, trials, st.Objective, st.ParetoTTFT); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil {
		if ctx.Err() != nil {
			return interrupted(fmt.Errorf("tune interrupted with %d trials stored; rerun the same command to resume: %w", countFinished(trials), runErr))
		}
		return runErr
	}
	if st.Confirm > 0 {
		return p.confirmTop(ctx, out, trials)
	}
	return nil
}

func (st *Study) loadArgs() []string {
	if st.Load == nil {
		return nil
	}
	return st.Load.RedactedArgs()
}

// optimize runs the study: one loop, or as a worker one loop per
// concurrent trial, each with its share of the GPUs.
func (st *Study) optimize(ctx context.Context, cfg Config) error {
	if !st.Worker {
		return Optimize(ctx, cfg)
	}
	devices, from := VisibleGPUs(os.Getenv)
	slots, err := SplitGPUs(devices, from, max(st.ConcurrentTrials, 1), st.GPUsPerTrial)
	if err != nil {
		return err
	}
	return RunWorkers(ctx, cfg, slots)
}

func countFinished(trials []Trial) int {
	n := 0
	for _, t := range trials {
		if t.State == StateComplete || t.State == StateFailed || t.State == StateInvalid {
			n++
		}
	}
	return n
}

// prepared is a checked study: the space, the engine values conditions
// may name, and the trial runners.
type prepared struct {
	st    *Study
	space *Space
	known map[string]string
	model string
}

// prepare resolves the fixed engine flags once (the release picks the
// default space, and conditions learn the model's max_model_len), builds
// the space and checks that a point of it passes vLLM's rules.
func (st *Study) prepare(ctx context.Context) (*prepared, error) {
	if err := st.Fixed.Validate(); err != nil {
		return nil, fmt.Errorf("the fixed flags: %w", err)
	}
	if st.Load != nil {
		if err := st.Load.Validate(); err != nil {
			return nil, fmt.Errorf("the fixed flags: %w", err)
		}
	}
	if err := st.checkKeys(); err != nil {
		return nil, err
	}
	base, err := st.Fixed.Engine.Resolve(ctx, st.Fixed.ChangedFunc(), st.Fixed.Env)
	if err != nil {
		return nil, fmt.Errorf("the fixed engine flags are invalid on their own: %w", err)
	}
	ec := base.Engine
	p := &prepared{st: st, model: st.Fixed.Engine.Model, known: map[string]string{
		"max_model_len": strconv.Itoa(ec.MaxModelLen), "max_num_seqs": strconv.Itoa(ec.MaxNumSeqs),
		"max_num_batched_tokens": strconv.Itoa(ec.MaxNumBatchedTokens), "block_size": strconv.Itoa(ec.BlockSize),
	}}
	if p.space, err = st.buildSpace(base); err != nil {
		return nil, err
	}
	if st.Launch.Template == "" {
		for _, prm := range p.space.Params {
			if !runspec.IsEngineFlag(strings.TrimPrefix(prm.Flag(), "--")) {
				return nil, fmt.Errorf("--param %s: servebench does not model %s, so only a --launch target can vary it", prm.Name, prm.Flag())
			}
		}
	}
	if err := FindValidPoint(ctx, p.space, p.known, p.validate, st.Seed); err != nil {
		return nil, err
	}
	return p, nil
}

// buildSpace is the study's space: Space, or SpaceFile and Params, else
// the release's default knobs around its defaults; Conditions added.
func (st *Study) buildSpace(base *runspec.ResolvedEngine) (*Space, error) {
	space := st.Space
	if space == nil {
		space = &Space{}
		if st.SpaceFile != "" {
			loaded, err := LoadSpaceFile(st.SpaceFile)
			if err != nil {
				return nil, fmt.Errorf("--space: %w", err)
			}
			space = loaded
		}
		for _, spec := range st.Params {
			p, err := ParseParam(spec)
			if err != nil {
				return nil, err
			}
			space.Set(p)
		}
	}
	if len(space.Params) == 0 {
		conditions := space.Conditions
		space = DefaultSpace(base.Profile, base.Deployment.GPU.MemoryBytes >= 70<<30)
		space.Conditions = append(space.Conditions, conditions...)
	}
	for _, spec := range st.Conditions {
		c, err := ParseCondition(spec)
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

// engineFor is the fixed flags plus the point's modelled flags (all of
// them, unless a launch template varies more) as a sim spec, resolved as
// sim and serve would.
func (p *prepared) engineFor(ctx context.Context, pt Point) (*runspec.Spec, *runspec.ResolvedEngine, error) {
	s := p.st.Fixed.Clone()
	for _, a := range pt.Args(p.space) {
		name, value, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !runspec.IsEngineFlag(name) {
			continue
		}
		if err := s.Set(name, value); err != nil {
			return nil, nil, err
		}
	}
	r, err := s.Engine.Resolve(ctx, s.ChangedFunc(), s.Env)
	if err != nil {
		return nil, nil, err
	}
	return s, r, nil
}

func (p *prepared) validate(ctx context.Context, pt Point) (*Capacity, error) {
	_, r, err := p.engineFor(ctx, pt)
	if err != nil {
		return nil, err
	}
	return PredictedCapacity(r.Capacity, r.Engine.MaxModelLen), nil
}

// ReportStored writes the study page of a stored study without running
// a trial (--report-only): from storage, or DIR/study.db.
func ReportStored(ctx context.Context, out io.Writer, name, dir, storage, html, objective, paretoTTFT string) error {
	if storage == "" {
		if dir == "" {
			dir = "tune-" + name
		}
		storage = filepath.Join(dir, "study.db")
		if _, err := os.Stat(storage); err != nil {
			return fmt.Errorf("--report-only: no study at %s; give --storage", storage)
		}
	}
	if ss, err := parseStorage(storage); err != nil {
		return err
	} else if ss.path != "" {
		if _, err := os.Stat(ss.path); err != nil {
			return fmt.Errorf("--report-only: no study at %s; give the study's --storage", ss.shown)
		}
	}
	if err := CheckStudyStorage(ctx, storage, name, false); err != nil {
		return err
	}
	store, err := OpenStorage(ctx, storage)
	if err != nil {
		return err
	}
	defer store.Close()
	trials, err := store.Trials(ctx, name)
	if err != nil {
		return err
	}
	if len(trials) == 0 {
		return fmt.Errorf("--study %q: no trials in %s", name, store.URL)
	}
	if html == "" {
		return fmt.Errorf("--report-only needs --html FILE")
	}
	return WriteStudyPage(out, html, name, trials, objective, paretoTTFT)
}
