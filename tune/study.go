package tune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/sweep"
)

// Objective is what a study maximises: a numeric key of the result JSON
// (request_throughput, output_throughput, request_goodput, ...), subject
// to an SLA on any other key.
type Objective struct {
	Key string    `json:"key"`
	SLA sweep.SLA `json:"sla,omitempty"`
}

// Outcome is what running one trial on its target produced.
type Outcome struct {
	// Result is the load test's summary JSON (bench --summary-json's shape).
	Result     map[string]any
	Observed   *Capacity
	RateSearch map[string]any
	// LogTail is the end of the server's log, kept for failures.
	LogTail string
}

// Validator checks a point before anything runs, with the release's
// rules; an error is the point's rejection reason (vLLM's own text).
type Validator func(ctx context.Context, p Point) (*Capacity, error)

// Runner runs one validated trial on its target.
type Runner func(ctx context.Context, t Trial) (*Outcome, error)

// Config is one worker's share of a study.
type Config struct {
	Study   string
	Space   *Space
	Storage *Storage
	// Known are values of the engine a condition may name without their
	// being parameters, e.g. the model's max_model_len.
	Known     map[string]string
	Sampler   string
	Seed      int64
	Trials    int // study-wide budget: trials numbered 0..Trials-1
	Objective Objective
	Validate  Validator
	Run       Runner
	// StartupTrials are the random trials before TPE or CMA-ES model the
	// results (default 3: with 30-trial budgets TestSearchQualityOnSim
	// measured a mean of 0.971 of the grid optimum at 3, 0.941 at 8, 0.923
	// at 10 and 0.881 at 15).
	StartupTrials int
	// Identity is stored with the study; resuming with a different one is
	// refused (another target or workload would mix incomparable trials).
	Identity string
	// HeartbeatEvery and StaleAfter: a running trial's worker touches it
	// every HeartbeatEvery; one silent for StaleAfter is given back.
	HeartbeatEvery, StaleAfter time.Duration
	// Prescreen, when set, spends the first trials on the points sim
	// ranks best (for real targets, where a trial costs GPU minutes).
	Prescreen *Prescreen
	// OnTrial hears about every trial this worker finishes.
	OnTrial func(Trial)
	Logger  *slog.Logger
}

// Optimize runs trials until the study holds Trials trials or ctx ends.
// An interrupted trial goes back to WAITING, to be run again with the
// same parameters and number by the next worker or resume.
func Optimize(ctx context.Context, cfg Config) error {
	if err := cfg.check(); err != nil {
		return err
	}
	host, _ := os.Hostname()
	worker := workerID(host, os.Getpid(), rand.Int64())
	identity := studyIdentity(cfg)
	if _, err := cfg.Storage.EnsureStudy(ctx, cfg.Study, identity); err != nil {
		return err
	}
	smp, err := newSampler(cfg.Sampler, cfg.Space, cfg.Seed, cfg.StartupTrials)
	if err != nil {
		return err
	}
	var screened []Trial
	if stored, err := cfg.Storage.Trials(ctx, cfg.Study); err != nil {
		return err
	} else if cfg.Prescreen != nil && len(stored) < cfg.Prescreen.Keep {
		// A resume past the screened trials needs no screen.
		if screened, err = Screen(ctx, cfg); err != nil {
			return fmt.Errorf("prescreening on sim: %w", err)
		}
	}
	if len(screened) > 0 {
		cfg.Logger.Info("prescreened on sim", "candidates", cfg.Prescreen.candidates(), "kept", len(screened))
	}
	dead := func(w string) bool { return deadOnThisHost(host, w) }
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if reaped, err := cfg.Storage.Reap(ctx, cfg.Study, cfg.StaleAfter, dead); err != nil {
			return err
		} else if len(reaped) > 0 {
			cfg.Logger.Info("gave back trials of dead workers", "trials", reaped)
		}
		t, ok, err := cfg.Storage.ClaimWaiting(ctx, cfg.Study, worker)
		if err != nil {
			return err
		}
		if !ok {
			trials, err := cfg.Storage.Trials(ctx, cfg.Study)
			if err != nil {
				return err
			}
			if len(trials) >= cfg.Trials {
				return nil
			}
			if err := smp.sync(trials); err != nil {
				return err
			}
			if p, ok := nextScreened(cfg, screened, trials); ok {
				t, ok, err = cfg.Storage.ClaimNew(ctx, cfg.Study, worker, p, cfg.Trials)
				if err != nil || !ok {
					return err
				}
				// The sampler learns it through sync, like another worker's.
				if _, err := runTrial(ctx, cfg, worker, t); err != nil {
					return err
				}
				continue
			}
			p, id, err := askNew(smp, cfg, trials)
			if err != nil {
				return err
			}
			t, ok, err = cfg.Storage.ClaimNew(ctx, cfg.Study, worker, p, cfg.Trials)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
			// The sampler learns the point as run, after conditions moved it.
			evaluated, err := runTrial(ctx, cfg, worker, t)
			if berr := smp.bind(id, t.Number, evaluated.Params); berr != nil && err == nil {
				err = berr
			}
			if err != nil {
				return err
			}
			continue
		}
		if _, err := runTrial(ctx, cfg, worker, t); err != nil {
			return err
		}
	}
}

// maxReasks bounds how often a point the study already holds is sampled
// again before it is accepted anyway (a small space may be exhausted).
const maxReasks = 50

// askNew samples a point the study has not tried yet: in a discrete
// space TPE keeps proposing its incumbent, and a repeated trial (minutes
// of GPU time on a real target) teaches nothing a stored one did not.
// Each repeat is held against the next ask (see tpeSampler).
func askNew(smp *sampler, cfg Config, trials []Trial) (Point, int, error) {
	seen := make(map[string]bool, len(trials))
	for _, t := range trials {
		seen[t.Params.String(cfg.Space)] = true
	}
	defer func() { smp.held = nil }()
	for attempt := 0; ; attempt++ {
		p, id, err := smp.ask()
		if err != nil {
			return nil, 0, err
		}
		// Compare the point as it would run, after conditions moved it.
		probe := maps.Clone(p)
		_, _ = cfg.Space.ApplyConditions(probe, cfg.Known)
		if !seen[probe.String(cfg.Space)] && !seen[p.String(cfg.Space)] || attempt >= maxReasks {
			return p, id, nil
		}
		smp.held = append(smp.held, p)
	}
}

func (cfg *Config) check() error {
	switch {
	case cfg.Storage == nil:
		return errors.New("tune: no storage")
	case cfg.Space == nil:
		return errors.New("tune: no search space")
	case cfg.Validate == nil || cfg.Run == nil:
		return errors.New("tune: no validator or runner")
	case cfg.Trials < 1:
		return fmt.Errorf("--trials %d: need at least 1", cfg.Trials)
	case cfg.Study == "":
		return errors.New("--study: give the study a name")
	}
	if err := cfg.Space.Validate(); err != nil {
		return err
	}
	if cfg.Objective.Key == "" {
		cfg.Objective.Key = "request_throughput"
	}
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = 5 * time.Second
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = 12 * cfg.HeartbeatEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// studyIdentity is what must match to resume a study.
func studyIdentity(cfg Config) string {
	var params []string
	for _, p := range cfg.Space.Params {
		params = append(params, p.String())
	}
	var conds []string
	for _, c := range cfg.Space.Conditions {
		conds = append(conds, c.String())
	}
	return fmt.Sprintf("space=[%s] conditions=[%s] objective=%s sla=%s %s",
		strings.Join(params, " "), strings.Join(conds, "; "), cfg.Objective.Key, cfg.Objective.SLA, cfg.Identity)
}

// deadOnThisHost reports whether worker ran on this host in a process
// that is gone (kill -9 leaves no one to give its trial back).
func deadOnThisHost(host, worker string) bool {
	h, pid, ok := parseWorkerID(worker)
	if !ok || h != host || pid <= 0 {
		return false
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	err = proc.Signal(syscall.Signal(0))
	return errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH)
}

// runTrial validates, runs and records one claimed trial, keeping it
// alive with heartbeats. It returns an error only when the study must
// stop (interrupt, storage failure); a failed trial is a result.
func runTrial(ctx context.Context, cfg Config, worker string, t Trial) (Trial, error) {
	trialCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		tick := time.NewTicker(cfg.HeartbeatEvery)
		defer tick.Stop()
		for {
			select {
			case <-trialCtx.Done():
				return
			case <-tick.C:
				if ok, err := cfg.Storage.Heartbeat(trialCtx, cfg.Study, t.Number, worker); err == nil && !ok {
					close(lost)
					cancel()
					return
				}
			}
		}
	}()
	evaluate(trialCtx, cfg, &t)
	cancel()
	<-beatDone
	select {
	case <-lost:
		cfg.Logger.Warn("trial was given to another worker while it ran; its result is dropped", "trial", t.Number)
		return t, nil
	default:
	}
	if ctx.Err() != nil {
		// Interrupted: give the trial back so a resume runs it again.
		if err := cfg.Storage.Release(context.WithoutCancel(ctx), cfg.Study, t.Number, worker); err != nil {
			return t, errors.Join(ctx.Err(), err)
		}
		return t, ctx.Err()
	}
	ok, err := cfg.Storage.Finish(ctx, cfg.Study, worker, t)
	if err != nil {
		return t, err
	}
	if ok && cfg.OnTrial != nil {
		cfg.OnTrial(t)
	}
	return t, nil
}

// evaluate fills t's outcome: INVALID when validation rejects it (never
// run), FAILED when the target fails, else COMPLETE with its objective
// and SLO margins.
func evaluate(ctx context.Context, cfg Config, t *Trial) {
	t.State, t.Score = StateInvalid, 0
	repaired, err := cfg.Space.ApplyConditions(t.Params, cfg.Known)
	t.Repaired = repaired
	if err != nil {
		t.Reason = err.Error()
		return
	}
	predicted, err := cfg.Validate(ctx, t.Params)
	t.Predicted = predicted
	if err != nil {
		t.Reason = oneLine(err.Error())
		return
	}
	t.State = StateFailed
	out, err := cfg.Run(ctx, *t)
	if out != nil {
		t.Result, t.Observed, t.RateSearch, t.LogTail = out.Result, out.Observed, out.RateSearch, out.LogTail
	}
	if err != nil {
		t.Reason = oneLine(err.Error())
		return
	}
	r := report.LoadedResult{Fields: t.Result}
	if failed, ok := r.Number("failed"); ok && failed > 0 {
		completed, _ := r.Number("completed")
		t.Reason = fmt.Sprintf("%.0f of %.0f requests failed", failed, failed+completed)
		return
	}
	objective, ok := r.Number(cfg.Objective.Key)
	if !ok || math.IsNaN(objective) {
		t.Reason = fmt.Sprintf("the result has no numeric %q to maximise", cfg.Objective.Key)
		return
	}
	t.State, t.Objective, t.Score = StateComplete, &objective, objective
	if len(cfg.Objective.SLA) == 0 {
		return
	}
	margins, err := cfg.Objective.SLA.Evaluate(t.Result)
	if err != nil {
		t.State, t.Reason, t.Score = StateFailed, err.Error(), 0
		return
	}
	met, worst := true, 0.0
	for _, m := range margins {
		t.Margins = append(t.Margins, MarginJSON{Term: m.Term.String(), Value: finite(m.Value), Margin: finite(m.Margin), Met: m.Met})
		if !m.Met {
			met = false
			worst = math.Max(worst, -m.Margin)
		}
	}
	t.SLOMet = &met
	if !met {
		t.Score = Penalised(objective, worst)
		t.Reason = "SLO not met"
	}
}

// Penalised is the score of a run that misses its SLO by violation (a
// fraction of the limit): always below half its objective, and lower the
// further it misses, so the sampler prefers any feasible point of similar
// throughput but still learns which way the boundary lies.
func Penalised(objective, violation float64) float64 {
	if math.IsInf(violation, 0) || math.IsNaN(violation) {
		return 0
	}
	return 0.5 * objective / (1 + violation)
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
