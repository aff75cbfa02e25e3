package tune

import (
	"cmp"
	"context"
	"errors"
	"slices"
)

// Prescreen ranks candidates on the simulator before a real target runs
// any. The study's first Keep trials are the Keep best-scoring screened
// points, best first; the rest of the budget goes back to the sampler,
// which learns from every trial the real target ran. Screening is
// deterministic for a seed, so a resumed study screens to the same list
// and skips the candidates it already holds.
type Prescreen struct {
	// Keep is how many real trials the screen's best points get.
	Keep int
	// Candidates is how many points the sampler proposes on sim (default
	// max(50, 4×Keep)).
	Candidates int
	// Validate and Run screen a point on sim (a SimTarget with the real
	// target's release, model and GPU).
	Validate Validator
	Run      Runner
	// OnRanked hears the points kept, best first, once screening ends;
	// its error stops the study.
	OnRanked func([]Trial) error
}

func (p *Prescreen) candidates() int {
	if p.Candidates > 0 {
		return p.Candidates
	}
	return max(50, 4*p.Keep)
}

// Screen runs the prescreen's candidates on sim with cfg's space,
// sampler, seed and objective, and returns the distinct points that ran
// to completion, best score first, at most Keep of them.
func Screen(ctx context.Context, cfg Config) ([]Trial, error) {
	ps := cfg.Prescreen
	if ps == nil || ps.Keep <= 0 {
		return nil, nil
	}
	if ps.Validate == nil || ps.Run == nil {
		return nil, errors.New("tune: prescreen has no sim validator or runner")
	}
	smp, err := newSampler(cfg.Sampler, cfg.Space, cfg.Seed, cfg.StartupTrials)
	if err != nil {
		return nil, err
	}
	simCfg := cfg
	simCfg.Validate, simCfg.Run = ps.Validate, ps.Run
	var screened []Trial
	for number := range ps.candidates() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := smp.sync(screened); err != nil {
			return nil, err
		}
		p, id, err := askNew(smp, cfg, screened)
		if err != nil {
			return nil, err
		}
		t := Trial{Number: number, Params: p}
		evaluate(ctx, simCfg, &t)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := smp.bind(id, number, t.Params); err != nil {
			return nil, err
		}
		screened = append(screened, t)
	}
	var ranked []Trial
	seen := map[string]bool{}
	for _, t := range screened {
		key := t.Params.String(cfg.Space)
		if t.State != StateComplete || seen[key] {
			continue
		}
		seen[key] = true
		ranked = append(ranked, t)
	}
	// Stable, so equal scores keep the order the sampler found them in.
	slices.SortStableFunc(ranked, func(a, b Trial) int { return cmp.Compare(b.Score, a.Score) })
	ranked = ranked[:min(len(ranked), ps.Keep)]
	if ps.OnRanked != nil {
		if err := ps.OnRanked(ranked); err != nil {
			return nil, err
		}
	}
	return ranked, nil
}

// nextScreened is the best screened point the study does not hold yet,
// while the study holds fewer than Keep trials.
func nextScreened(cfg Config, screened []Trial, trials []Trial) (Point, bool) {
	if cfg.Prescreen == nil || len(trials) >= cfg.Prescreen.Keep {
		return nil, false
	}
	held := make(map[string]bool, len(trials))
	for _, t := range trials {
		held[t.Params.String(cfg.Space)] = true
	}
	for _, s := range screened {
		if !held[s.Params.String(cfg.Space)] {
			return clonePoint(s.Params), true
		}
	}
	return nil, false
}

func clonePoint(p Point) Point {
	q := make(Point, len(p))
	for k, v := range p {
		q[k] = v
	}
	return q
}
