//go:build tpeeval

package tune

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/servebench/servebench/sweep"
)

func evalOffset() int {
	n, _ := strconv.Atoi(os.Getenv("TPE_EVAL_OFFSET"))
	return n
}

func evalSeeds() int {
	n, _ := strconv.Atoi(os.Getenv("TPE_EVAL_SEEDS"))
	if n <= 0 {
		n = 50
	}
	return n
}

type evalStats struct {
	ratio, sq                               float64
	reached, toReach, toReachMiss, distinct int
}

func (s evalStats) String(n int) string {
	m := s.ratio / float64(n)
	sd := math.Sqrt(math.Max(0, s.sq/float64(n)-m*m))
	reach := "n/a"
	if s.reached > 0 {
		reach = fmt.Sprintf("%.1f", float64(s.toReach)/float64(s.reached))
	}
	return fmt.Sprintf("best/grid %.3f ± %.3f (se); reached 95%% %d/%d after %s; with misses as 31: %.1f; distinct points %.1f",
		m, sd/math.Sqrt(float64(n)), s.reached, n, reach, float64(s.toReachMiss)/float64(n), float64(s.distinct)/float64(n))
}

func TestEvalQuality(t *testing.T) {
	seeds, budget := evalSeeds(), 30
	target := newSimTarget(t, 150)
	space := qualitySpace()
	sla, _ := sweep.ParseSLA("p99_tpot_ms<=60")
	run := &memo{space: space, runs: map[string]*Outcome{}, run: target.Run}
	base := Config{Space: space, Known: map[string]string{"max_model_len": "4096"},
		Objective: Objective{Key: "request_throughput", SLA: sla}, Validate: target.Validate, Run: run.Run, Trials: budget}
	ctx := context.Background()
	gridBest := 0.0
	for _, p := range grid(space) {
		tr := Trial{Params: p}
		evaluate(ctx, base, &tr)
		if tr.State == StateComplete && *tr.SLOMet {
			gridBest = max(gridBest, *tr.Objective)
		}
	}
	for _, sampler := range []string{SamplerRandom, SamplerTPE} {
		var s evalStats
		for seed := range seeds {
			cfg := base
			cfg.Storage = openTestStorage(t)
			cfg.Study = fmt.Sprintf("%s-%d", sampler, seed)
			cfg.Sampler, cfg.Seed = sampler, int64(seed+evalOffset())
			if err := Optimize(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			trials, _ := cfg.Storage.Trials(ctx, cfg.Study)
			best, at := bestAndReach(trials, 0.95*gridBest)
			s.distinct += distinctPoints(trials, space)
			s.ratio += best / gridBest
			s.sq += (best / gridBest) * (best / gridBest)
			if at > 0 {
				s.reached++
				s.toReach += at
				s.toReachMiss += at
			} else {
				s.toReachMiss += budget + 1
			}
		}
		t.Logf("quality %-6s %d seeds: %s", sampler, seeds, s.String(seeds))
	}
}

func TestEvalPrescreen(t *testing.T) {
	seeds, budget, keep := evalSeeds(), 30, 5
	screenTarget := newSimTarget(t, 150)
	realTarget := newSimTarget(t, 150)
	realTarget.Base.GPUMemoryUtilization = 0.42
	realTarget.Profile.Host.SchedFixed *= 2
	realTarget.Profile.Host.SchedPerSeq *= 2
	realTarget.Requests = newSimTargetSeed(t, 150, 7).Requests
	space := qualitySpace()
	sla, _ := sweep.ParseSLA("p99_tpot_ms<=60")
	realRuns := &memo{space: space, runs: map[string]*Outcome{}, run: realTarget.Run}
	screenRuns := &memo{space: space, runs: map[string]*Outcome{}, run: screenTarget.Run}
	base := Config{Space: space, Known: map[string]string{"max_model_len": "4096"}, Sampler: SamplerTPE,
		Objective: Objective{Key: "request_throughput", SLA: sla}, Validate: realTarget.Validate, Run: realRuns.Run, Trials: budget}
	ctx := context.Background()
	realBest := 0.0
	for _, p := range grid(space) {
		tr := Trial{Params: clonePoint(p)}
		evaluate(ctx, base, &tr)
		if tr.State == StateComplete && *tr.SLOMet {
			realBest = max(realBest, *tr.Objective)
		}
	}
	for _, prescreen := range []bool{false, true} {
		var s evalStats
		for seed := range seeds {
			cfg := base
			cfg.Storage = openTestStorage(t)
			cfg.Study = fmt.Sprintf("p-%v-%d", prescreen, seed)
			cfg.Seed = int64(seed + evalOffset())
			if prescreen {
				cfg.Prescreen = &Prescreen{Keep: keep, Validate: screenTarget.Validate, Run: screenRuns.Run}
			}
			if err := Optimize(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			trials, _ := cfg.Storage.Trials(ctx, cfg.Study)
			best, at := bestAndReach(trials, 0.95*realBest)
			t.Logf("perseed prescreen=%v seed=%d at=%d best=%.4f", prescreen, seed+evalOffset(), at, best/realBest)
			s.distinct += distinctPoints(trials, space)
			s.ratio += best / realBest
			s.sq += (best / realBest) * (best / realBest)
			if at > 0 {
				s.reached++
				s.toReach += at
				s.toReachMiss += at
			} else {
				s.toReachMiss += budget + 1
			}
		}
		t.Logf("prescreen=%-5v %d seeds: %s", prescreen, seeds, s.String(seeds))
	}
}

// Mixed space: log ints, a float, a choice and a bool; no grid, so the
// figure is the mean best-in-30 objective (SLO-feasible) over seeds.
func TestEvalMixedSpace(t *testing.T) {
	seeds, budget := evalSeeds(), 30
	target := newSimTarget(t, 150)
	space := &Space{Params: []Param{
		{Name: "max_num_seqs", Kind: KindInt, Low: 8, High: 256, Log: true},
		{Name: "max_num_batched_tokens", Kind: KindInt, Low: 512, High: 8192, Log: true},
		{Name: "gpu_memory_utilization", Kind: KindFloat, Low: 0.3, High: 0.95},
		{Name: "block_size", Kind: KindChoice, Choices: []string{"16", "32"}},
		{Name: "enable_chunked_prefill", Kind: KindBool},
	}, Conditions: []Condition{{If: "enable_chunked_prefill == false", Then: "max_num_batched_tokens >= max_model_len"}}}
	sla, _ := sweep.ParseSLA("p99_tpot_ms<=60")
	run := &memo{space: space, runs: map[string]*Outcome{}, run: target.Run}
	base := Config{Space: space, Known: map[string]string{"max_model_len": "4096"},
		Objective: Objective{Key: "request_throughput", SLA: sla}, Validate: target.Validate, Run: run.Run, Trials: budget}
	ctx := context.Background()
	for _, sampler := range []string{SamplerRandom, SamplerTPE} {
		sum, sq := 0.0, 0.0
		for seed := range seeds {
			cfg := base
			cfg.Storage = openTestStorage(t)
			cfg.Study = fmt.Sprintf("%s-%d", sampler, seed)
			cfg.Sampler, cfg.Seed = sampler, int64(seed+evalOffset())
			if err := Optimize(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			trials, _ := cfg.Storage.Trials(ctx, cfg.Study)
			best, _ := bestAndReach(trials, math.Inf(1))
			sum += best
			sq += best * best
		}
		m := sum / float64(seeds)
		t.Logf("mixed %-6s %d seeds: mean best-in-30 %.3f ± %.3f (se) req/s", sampler, seeds, m, math.Sqrt(math.Max(0, sq/float64(seeds)-m*m)/float64(seeds)))
	}
}

func distinctPoints(trials []Trial, space *Space) int {
	seen := map[string]bool{}
	for _, t := range trials {
		seen[t.Params.String(space)] = true
	}
	return len(seen)
}

func TestEvalTrace(t *testing.T) {
	target := newSimTarget(t, 150)
	space := qualitySpace()
	sla, _ := sweep.ParseSLA("p99_tpot_ms<=60")
	run := &memo{space: space, runs: map[string]*Outcome{}, run: target.Run}
	base := Config{Space: space, Known: map[string]string{"max_model_len": "4096"},
		Objective: Objective{Key: "request_throughput", SLA: sla}, Validate: target.Validate, Run: run.Run, Trials: 30}
	ctx := context.Background()
	for seed := range 3 {
		cfg := base
		cfg.Storage = openTestStorage(t)
		cfg.Study = fmt.Sprintf("tpe-%d", seed)
		cfg.Sampler, cfg.Seed = SamplerTPE, int64(seed)
		if err := Optimize(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		trials, _ := cfg.Storage.Trials(ctx, cfg.Study)
		for _, tr := range trials {
			t.Logf("seed %d #%2d %-8s %6.3f %s", seed, tr.Number, tr.State, tr.Score, tr.Params.String(space))
		}
	}
}

func TestEvalTracePrescreen(t *testing.T) {
	screenTarget := newSimTarget(t, 150)
	realTarget := newSimTarget(t, 150)
	realTarget.Base.GPUMemoryUtilization = 0.42
	realTarget.Profile.Host.SchedFixed *= 2
	realTarget.Profile.Host.SchedPerSeq *= 2
	realTarget.Requests = newSimTargetSeed(t, 150, 7).Requests
	space := qualitySpace()
	sla, _ := sweep.ParseSLA("p99_tpot_ms<=60")
	realRuns := &memo{space: space, runs: map[string]*Outcome{}, run: realTarget.Run}
	screenRuns := &memo{space: space, runs: map[string]*Outcome{}, run: screenTarget.Run}
	base := Config{Space: space, Known: map[string]string{"max_model_len": "4096"}, Sampler: SamplerTPE,
		Objective: Objective{Key: "request_throughput", SLA: sla}, Validate: realTarget.Validate, Run: realRuns.Run, Trials: 30}
	ctx := context.Background()
	for _, p := range grid(space) {
		tr := Trial{Params: clonePoint(p)}
		evaluate(ctx, base, &tr)
		t.Logf("grid %-8s %6.3f %s", tr.State, tr.Score, tr.Params.String(space))
	}
	for seed := range 3 {
		cfg := base
		cfg.Storage = openTestStorage(t)
		cfg.Study = fmt.Sprintf("p-%d", seed)
		cfg.Seed = int64(seed)
		cfg.Prescreen = &Prescreen{Keep: 5, Validate: screenTarget.Validate, Run: screenRuns.Run}
		if err := Optimize(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		trials, _ := cfg.Storage.Trials(ctx, cfg.Study)
		for _, tr := range trials {
			t.Logf("seed %d #%2d %-8s %6.3f %s", seed, tr.Number, tr.State, tr.Score, tr.Params.String(space))
		}
	}
}
