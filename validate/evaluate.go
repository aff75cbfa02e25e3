package validate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/servebench/servebench/metrics"
)

// Options shape an evaluation.
type Options struct {
	// HFCacheDirs are Hugging Face hub caches where a user's own run may
	// find its model's config.json; corpus runs never look there, so the
	// corpus gives the same answer on every machine.
	HFCacheDirs []string
	// Workers simulates that many runs at once (default GOMAXPROCS).
	Workers int
}

// Filter selects runs; empty fields select everything.
type Filter struct {
	// GPU matches the GPU as published, its catalog name or its class.
	GPU string
	// Regime is a regime name.
	Regime string
	// Release matches a release line ("0.5", "0.7-0.10") or a version
	// prefix ("0.6.3").
	Release string
	// Split is fit, holdout or user.
	Split string
}

// Select returns the runs the filter keeps, in order.
func (f Filter) Select(runs []*Run) []*Run {
	var out []*Run
	for _, r := range runs {
		if f.Split != "" && r.Split != f.Split {
			continue
		}
		if f.Regime != "" && r.Regime != f.Regime {
			continue
		}
		if f.GPU != "" && !matchesGPU(f.GPU, r.GPU, GPUClass(r.GPU)) && !matchesGPU(f.GPU, catalogGPUName(r.GPU), GPUClass(r.GPU)) {
			continue
		}
		if f.Release != "" && f.Release != ReleaseLine(r.simRelease()) &&
			r.VLLMVersion != f.Release && !strings.HasPrefix(r.VLLMVersion, strings.TrimSuffix(f.Release, ".")+".") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// Metric is one published figure next to sim's.
type Metric struct {
	Key       string
	Family    Family
	Published float64
	Sim       float64
	// Error is Sim/Published − 1; NaN when the published figure is 0.
	Error float64
}

// Result is one run's outcome: sim's figures against the published ones,
// or why the run could not be simulated.
type Result struct {
	Run *Run
	// GPU is the catalog's name for the run's GPU (as published when the
	// catalog lacks it); GPUClass groups it.
	GPU, GPUClass string
	// Regime is the run's declared regime (the rule's for a user's run).
	Regime      Regime
	ReleaseLine string
	// Command is the equivalent `servebench sim` arguments.
	Command []string
	// Notes say how the setup was approximated.
	Notes   []string
	Metrics []Metric
	// Unsimulable is why sim could not run the setup ("" when it did).
	Unsimulable string
	// Sim holds sim's figures under vLLM's keys.
	Sim map[string]float64
}

// Simulated says sim ran the setup.
func (r *Result) Simulated() bool { return r.Unsimulable == "" }

// Headline is the run's error in a family: the first of the family's
// headline keys the run published, with a defined error.
func (r *Result) Headline(f Family) (Metric, bool) {
	for _, k := range headline[f] {
		for _, m := range r.Metrics {
			if m.Key == k && !math.IsNaN(m.Error) {
				return m, true
			}
		}
	}
	return Metric{}, false
}

// Report is an evaluation of a set of runs.
type Report struct {
	// Corpus names where the runs came from: BuiltinName, a directory, or
	// "result files".
	Corpus  string
	Results []Result
}

// Evaluate simulates every run, GOMAXPROCS at a time, and compares sim
// with the published figures. Results keep the runs' order. A run sim
// cannot simulate is reported with its reason; only a cancelled context
// fails the whole evaluation.
func Evaluate(ctx context.Context, c *Corpus, runs []*Run, o Options) (*Report, error) {
	name := ""
	if c != nil {
		name = c.Name
	}
	rep := &Report{Corpus: name, Results: make([]Result, len(runs))}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(runs)) {
		wg.Go(func() {
			for i := range next {
				rep.Results[i] = evaluate(ctx, c, runs[i], o)
			}
		})
	}
	for i := range runs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rep, nil
}

func evaluate(ctx context.Context, c *Corpus, r *Run, o Options) Result {
	res := Result{Run: r, GPU: catalogGPUName(r.GPU), GPUClass: GPUClass(r.GPU), Regime: Regime(r.Regime),
		ReleaseLine: ReleaseLine(r.simRelease())}
	p, err := newPlan(r, c, o)
	if err == nil {
		if reason := p.peakBound(r); reason != "" {
			err = cannot("%s", reason)
		}
	}
	if err == nil {
		res.Command, res.Notes = p.args, p.notes
		var summary metrics.Summary
		summary, err = p.simulate(ctx)
		if err == nil {
			res.Sim = p.figures(&summary)
			if summary.Failed > 0 {
				res.Notes = append(res.Notes, fmt.Sprintf("%d of %d simulated requests failed (%s); the figures are over the rest",
					summary.Failed, summary.Failed+summary.Completed, failureReasons(&summary)))
			}
		}
	}
	if res.Regime == "" {
		in := RegimeInput{Benchmark: r.Benchmark, NumPrompts: r.Workload.NumPrompts, RequestRate: float64(r.Workload.RequestRate),
			MaxConcurrency: r.Workload.MaxConcurrency, InputLen: float64(r.Workload.InputLen), OutputLen: float64(r.Workload.OutputLen)}
		if p != nil {
			in = regimeInput(r, p.inputLen, p.outputLen, r.Published)
		}
		if reg, ok := ClassifyRegime(in); ok {
			res.Regime = reg
		} else {
			res.Regime = ServingLow
			res.Notes = append(res.Notes, "no duration published: regime taken as serving-low")
		}
	}
	var u *unsimulable
	switch {
	case errors.As(err, &u):
		res.Unsimulable = u.reason
		return res
	case err != nil:
		res.Unsimulable = oneLine(err.Error())
		return res
	}
	for k, v := range r.Published {
		f := familyOf(k)
		if f == "" {
			continue
		}
		s := res.Sim[k]
		e := math.NaN()
		if v > 0 {
			e = s/v - 1
		}
		res.Metrics = append(res.Metrics, Metric{Key: k, Family: f, Published: v, Sim: s, Error: e})
	}
	slices.SortFunc(res.Metrics, func(a, b Metric) int {
		af, ai, ak := keyOrder(a.Key)
		bf, bi, bk := keyOrder(b.Key)
		if af != bf {
			return af - bf
		}
		if ai != bi {
			return ai - bi
		}
		return strings.Compare(ak, bk)
	})
	return res
}

// catalogGPUName is perf's name for a GPU, or the name as given.
func catalogGPUName(name string) string {
	if g, err := lookupGPU(name); err == nil {
		return g
	}
	return name
}
