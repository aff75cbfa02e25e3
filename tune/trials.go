package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/serve"
	"github.com/servebench/servebench/sweep"
	"github.com/servebench/servebench/tune/launch"
)

func interrupted(err error) error { return report.Interrupted(err) }

func (p *prepared) trialDir(t Trial) string {
	return filepath.Join(p.st.Dir, fmt.Sprintf("trial-%04d", t.Number))
}

// run is the Runner: bring up the target for the point, run the load
// test (or the SLA search), bring it down.
func (p *prepared) run(ctx context.Context, t Trial) (*Outcome, error) {
	return p.runSeeded(ctx, t, "")
}

// runSeeded is run with the workload's --seed replaced (confirmation
// runs), or as given when seed is "".
func (p *prepared) runSeeded(ctx context.Context, t Trial, seed string) (*Outcome, error) {
	dir := p.trialDir(t)
	// A trial given back by an interrupt or a dead worker runs again from
	// scratch: its earlier attempt's partial result must not stand in.
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	outcome := &Outcome{}
	target, after, stop, err := p.bringUp(ctx, t, dir, outcome)
	if err != nil {
		return outcome, err
	}
	defer stop()
	if seed != "" {
		if err := target.Set("seed", seed); err != nil {
			return outcome, err
		}
	}
	if err := sweep.WriteSpec(dir, target); err != nil {
		return outcome, err
	}
	if p.st.SLASearch {
		return p.searchRate(ctx, target, dir, outcome, after)
	}
	resultPath := filepath.Join(dir, "result.json")
	_, runErr := sweep.RunSpec(ctx, target, resultPath)
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

// searchRate scores a trial at the highest request rate meeting the SLA.
func (p *prepared) searchRate(ctx context.Context, target *runspec.Spec, dir string, outcome *Outcome, after func(bool) error) (*Outcome, error) {
	res, _, err := sweep.Search(ctx, sweep.SearchConfig{Dir: filepath.Join(dir, "sla"), Base: target, SLA: p.st.SLA,
		MaxRuns: p.st.SLAMaxRuns, Resume: true, Run: sweep.RunSpec, Target: p.st.targetName()})
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
	return outcome, fmt.Errorf("no request rate met %s", p.st.SLA)
}

// bringUp starts the trial's target and returns the run spec of its load
// test; after checks the server survived the run (when the load test
// failed it waits briefly for a dying server's exit to register, so a
// crash is reported as a crash rather than as the requests it broke);
// stop brings the target down.
func (p *prepared) bringUp(ctx context.Context, t Trial, dir string, outcome *Outcome) (target *runspec.Spec, after func(loadFailed bool) error, stop func(), err error) {
	after, stop = func(bool) error { return nil }, func() {}
	switch st := p.st; {
	case st.Launch.Template != "":
		srv, err := p.launch(ctx, t, dir)
		if err != nil {
			return nil, nil, nil, err
		}
		started := launch.ParseStartup(srv.Log())
		outcome.Observed = &Capacity{GPUBlocks: started.GPUBlocks, KVCacheTokens: started.KVCacheTokens, KVCacheGiB: started.KVCacheGiB,
			MaxConcurrency: started.MaxConcurrency, GPUMemory: launch.GPUMemory(ctx)}
		target, err = p.benchAt(srv.URL)
		return target, serverSurvived(srv, outcome), func() { _ = srv.Stop() }, err
	case st.Target == TargetSim:
		target, _, err = p.engineFor(ctx, t.Params)
		return target, after, stop, err
	case st.Target == TargetEmbedded:
		_, r, err := p.engineFor(ctx, t.Params)
		if err != nil {
			return nil, nil, nil, err
		}
		em, err := serve.StartEmulated(ctx, r, p.model)
		if err != nil {
			return nil, nil, nil, err
		}
		target, err = p.benchAt(em.URL())
		return target, after, func() { _ = em.Close() }, err
	default:
		target, err = p.benchAt(st.Target)
		return target, after, stop, err
	}
}

// serverSurvived is the after check of a launched server.
func serverSurvived(srv *launch.Server, outcome *Outcome) func(bool) error {
	died := func() error {
		outcome.LogTail = srv.TailLine()
		return fmt.Errorf("server died mid-run (%s): %s", srv.ExitError(), srv.TailLine())
	}
	return func(loadFailed bool) error {
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
}

func resultHasFailures(path string) bool {
	m, err := readTrialResult(path)
	if err != nil {
		return true
	}
	failed, _ := numberIn(m, "failed")
	return failed > 0
}

// benchAt is the study's load test against url.
func (p *prepared) benchAt(url string) (*runspec.Spec, error) {
	s := p.st.Load.Clone()
	if err := s.Set("base-url", url); err != nil {
		return nil, err
	}
	return s, nil
}

// simSpec is the point's run on the simulator with the study's workload:
// the sim target's trial, and the prescreen's candidates.
func (p *prepared) simSpec(ctx context.Context, pt Point) (*runspec.Spec, error) {
	s, _, err := p.engineFor(ctx, pt)
	return s, err
}

func (p *prepared) launch(ctx context.Context, t Trial, dir string) (*launch.Server, error) {
	l := p.st.Launch
	port := l.Port
	if port == 0 {
		var err error
		if port, err = launch.FreePort(); err != nil {
			return nil, err
		}
	}
	vars := map[string]string{"model": p.model, "port": strconv.Itoa(port), "host": "127.0.0.1",
		"flags": strings.Join(t.Params.VLLMArgs(p.space), " ")}
	for k, v := range t.Params {
		vars[k] = v
	}
	return launch.Start(ctx, launch.Config{Template: l.Template, Vars: vars, Port: port,
		HealthPath: l.HealthPath, StartupTimeout: l.StartupTimeout, LogPath: filepath.Join(dir, "server.log"), Env: GPUEnv(ctx)})
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

// writeOutputs prints the study's end (counts, best, Pareto front) and
// writes trials.json and trials.csv.
func (p *prepared) writeOutputs(out, errw io.Writer, trials []Trial) error {
	st := p.st
	counts := map[State]int{}
	for _, t := range trials {
		counts[t.State]++
	}
	fmt.Fprintf(out, "\n%d trials: %d complete, %d failed, %d invalid (never run)", len(trials), counts[StateComplete], counts[StateFailed], counts[StateInvalid])
	if n := counts[StateRunning] + counts[StateWaiting]; n > 0 {
		fmt.Fprintf(out, ", %d running or waiting", n)
	}
	fmt.Fprintln(out)
	switch best := Best(trials); {
	case best != nil:
		fmt.Fprintf(out, "best: trial %d, %s %.2f (%s)\n", best.Number, st.Objective, *best.Objective, best.Params.String(p.space))
		fmt.Fprintf(out, "  %s\n", ServeCommand(p.model, p.space, best.Params, nil))
	case len(st.SLA) > 0:
		fmt.Fprintln(out, "best: no trial met the SLO")
	default:
		fmt.Fprintln(out, "best: no trial completed")
	}
	if front := Pareto(trials, st.ParetoTTFT); len(front) > 0 {
		fmt.Fprintf(out, "Pareto front (%s vs %s):\n", st.ParetoTTFT, st.Objective)
		for _, pt := range front {
			fmt.Fprintf(out, "  trial %-4d %10.2f %12.2f\n", pt.Number, pt.Objective, pt.TTFTMillis)
		}
	}
	write := func(name string, w func(io.Writer) error) error {
		var buf bytes.Buffer
		if err := w(&buf); err != nil {
			return err
		}
		return report.WriteAtomic(filepath.Join(st.Dir, name), buf.Bytes(), true)
	}
	if err := write("trials.json", func(w io.Writer) error { return WriteJSON(w, trials) }); err != nil {
		return err
	}
	if err := write("trials.csv", func(w io.Writer) error { return WriteCSV(w, p.space, trials) }); err != nil {
		return err
	}
	fmt.Fprintf(errw, "trials in %s and %s\n", filepath.Join(st.Dir, "trials.json"), filepath.Join(st.Dir, "trials.csv"))
	return nil
}

// confirmTop re-runs the best configs with other workload seeds, because
// one run's best is partly luck (SCOOT keeps the worst of several orders).
func (p *prepared) confirmTop(ctx context.Context, out io.Writer, trials []Trial) error {
	top := Top(trials, p.st.Confirm)
	if len(top) == 0 {
		return nil
	}
	objective := p.st.Objective
	fmt.Fprintf(out, "confirmation (3 more runs each, workload seeds 1001-1003):\n")
	for _, t := range top {
		var values []float64
		for i := 1; i <= 3; i++ {
			confirm := t
			confirm.Number = 100000*i + t.Number
			o, err := p.runSeeded(ctx, confirm, strconv.Itoa(1000+i))
			if err != nil {
				return fmt.Errorf("confirming trial %d: %w", t.Number, err)
			}
			if v, ok := numberIn(o.Result, objective); ok {
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			fmt.Fprintf(out, "  trial %-4d: the confirmation runs reported no %s\n", t.Number, objective)
			continue
		}
		lo, hi, mean := spread(values)
		fmt.Fprintf(out, "  trial %-4d %s: tuned %.2f, confirmed mean %.2f (min %.2f, max %.2f, spread %.1f%%)\n",
			t.Number, objective, *t.Objective, mean, lo, hi, 100*(hi-lo)/math.Max(mean, 1e-9))
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

// checkPrescreen refuses prescreen options that cannot work.
func (st *Study) checkPrescreen() error {
	switch {
	case st.PrescreenSim < 0:
		return fmt.Errorf("--prescreen-sim %d: give how many screened points the real target runs (0 = no prescreen)", st.PrescreenSim)
	case st.PrescreenSim == 0:
		if st.PrescreenCandidates != 0 {
			return errors.New("--prescreen-candidates needs --prescreen-sim N")
		}
	case st.targetName() == TargetSim:
		return errors.New("--prescreen-sim: the target is already sim; use it with --target embedded, a URL or --launch")
	case st.PrescreenCandidates < 0:
		return fmt.Errorf("--prescreen-candidates %d: must be positive", st.PrescreenCandidates)
	}
	return nil
}

// prescreen wires --prescreen-sim: the screen runs the study's fixed
// engine and workload on sim (one plain load test per candidate, also
// under --sla-search), results kept in DIR/prescreen.
func (p *prepared) prescreen(errw io.Writer) (*Prescreen, error) {
	st := p.st
	if st.PrescreenSim == 0 {
		return nil, nil
	}
	for _, prm := range p.space.Sampled() {
		if !runspec.IsEngineFlag(strings.TrimPrefix(prm.Flag(), "--")) {
			return nil, fmt.Errorf("--prescreen-sim: sim cannot screen --param %s (servebench does not model %s); pin it in the launch template or drop --prescreen-sim", prm.Name, prm.Flag())
		}
	}
	dir := filepath.Join(st.Dir, "prescreen")
	return &Prescreen{Keep: st.PrescreenSim, Candidates: st.PrescreenCandidates, Validate: p.validate,
		// ranked.json: what the real target runs first, with sim's scores.
		OnRanked: func(ranked []Trial) error {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, ranked); err != nil {
				return err
			}
			if err := report.WriteAtomic(filepath.Join(dir, "ranked.json"), buf.Bytes(), true); err != nil {
				return err
			}
			if len(ranked) > 0 {
				fmt.Fprintf(errw, "prescreen: sim ranked its candidates (%s); the first %d trials run its best, sim scores %.2f … %.2f (list in %s)\n",
					dir, len(ranked), ranked[0].Score, ranked[len(ranked)-1].Score, filepath.Join(dir, "ranked.json"))
			} else {
				fmt.Fprintln(errw, "prescreen: no candidate completed on sim; the sampler picks every trial")
			}
			return nil
		},
		Run: func(ctx context.Context, t Trial) (*Outcome, error) {
			// A resumed study screens again from scratch (the same
			// candidates: the screen is seeded), so sim must not find an
			// earlier screen's results and records in its way.
			if t.Number == 0 {
				if err := os.RemoveAll(dir); err != nil {
					return nil, err
				}
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			path := filepath.Join(dir, fmt.Sprintf("candidate-%04d.json", t.Number))
			s, err := p.simSpec(ctx, t.Params)
			if err != nil {
				return nil, err
			}
			if _, err := sweep.RunSpec(ctx, s, path); err != nil {
				return nil, err
			}
			result, err := readTrialResult(path)
			return &Outcome{Result: result}, err
		}}, nil
}

// WriteStudyPage writes the study as one HTML page to path, when path is
// set, and says where on out.
func WriteStudyPage(out io.Writer, path, study string, trials []Trial, objective, paretoTTFT string) error {
	if path == "" {
		return nil
	}
	var page bytes.Buffer
	if err := StudyPage(study, trials, objective, paretoTTFT).Write(&page); err != nil {
		return err
	}
	if err := report.WriteAtomic(path, page.Bytes(), true); err != nil {
		return fmt.Errorf("--html %s: %w", path, err)
	}
	fmt.Fprintf(out, "study page in %s\n", path)
	return nil
}
