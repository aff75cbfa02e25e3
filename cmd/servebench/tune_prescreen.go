package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/sweep"
	"github.com/servebench/servebench/tune"
)

// simLoadTest runs the fixed workload on the in-process simulator with
// p's engine flags.
func (s *tuneSetup) simLoadTest(p tune.Point) sweep.Runner {
	args := append(append(slices.Clone(s.engineArgs), s.modelledArgs(p)...), withoutModel(s.loadArgs)...)
	sim := inProcessRunner(newRootCmd, sweepTarget{subcommand: "sim", name: "sim"})
	return func(ctx context.Context, extra []string, resultPath string) (map[string]any, error) {
		return sim(ctx, append(slices.Clone(args), extra...), resultPath)
	}
}

// prescreen wires --prescreen-sim: the screen runs the study's fixed
// engine and workload flags on sim (one plain load test per candidate,
// also under --sla-search), results kept in DIR/prescreen.
func (s *tuneSetup) prescreen(errw io.Writer) (*tune.Prescreen, error) {
	f := s.f
	switch {
	case f.prescreenSim < 0:
		return nil, fmt.Errorf("--prescreen-sim %d: give how many screened points the real target runs (0 = no prescreen)", f.prescreenSim)
	case f.prescreenSim == 0:
		if f.prescreenCandidates != 0 {
			return nil, errors.New("--prescreen-candidates needs --prescreen-sim N")
		}
		return nil, nil
	case s.targetName == "sim":
		return nil, errors.New("--prescreen-sim: the target is already sim; use it with --target embedded, a URL or --launch")
	case f.prescreenCandidates < 0:
		return nil, fmt.Errorf("--prescreen-candidates %d: must be positive", f.prescreenCandidates)
	}
	fs := engineFlagSet(&engineFlags{})
	for _, p := range s.space.Sampled() {
		if fs.Lookup(strings.TrimPrefix(p.Flag(), "--")) == nil {
			return nil, fmt.Errorf("--prescreen-sim: sim cannot screen --param %s (servebench does not model %s); pin it in the launch template or drop --prescreen-sim", p.Name, p.Flag())
		}
	}
	dir := filepath.Join(f.dir, "prescreen")
	return &tune.Prescreen{Keep: f.prescreenSim, Candidates: f.prescreenCandidates, Validate: s.validate,
		// ranked.json: what the real target runs first, with sim's scores.
		OnRanked: func(ranked []tune.Trial) error {
			var buf bytes.Buffer
			if err := tune.WriteJSON(&buf, ranked); err != nil {
				return err
			}
			if err := writeAtomic(filepath.Join(dir, "ranked.json"), buf.Bytes(), true); err != nil {
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
		Run: func(ctx context.Context, t tune.Trial) (*tune.Outcome, error) {
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
			if _, err := s.simLoadTest(t.Params)(ctx, nil, path); err != nil {
				return nil, err
			}
			result, err := readTrialResult(path)
			return &tune.Outcome{Result: result}, err
		}}, nil
}
