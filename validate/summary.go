package validate

import (
	"cmp"
	"math"
	"slices"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/vllm"
)

// Stat is one family's error over a group of runs, in percent.
type Stat struct {
	Runs int `json:"runs"`
	// MedianAbs and WorstAbs are the median and largest |error|;
	// MedianSigned the median signed error (its sign says which way sim
	// is off).
	MedianAbs    float64 `json:"median_abs_error_pct"`
	WorstAbs     float64 `json:"worst_abs_error_pct"`
	MedianSigned float64 `json:"median_error_pct"`
}

// Cell is a group of simulated runs: one GPU class, regime and release line,
// or every one of them where the field is empty; or (Source set) one
// publication's runs.
type Cell struct {
	GPUClass    string          `json:"gpu_class,omitempty"`
	Regime      string          `json:"regime,omitempty"`
	ReleaseLine string          `json:"release_line,omitempty"`
	Source      string          `json:"source,omitempty"`
	Runs        int             `json:"runs"`
	Families    map[Family]Stat `json:"families"`
}

// Summary is the error of one split's runs, grouped every way the tables
// print it.
type Summary struct {
	Split       string `json:"split"`
	Runs        int    `json:"runs"`
	Simulated   int    `json:"simulated"`
	Unsimulable int    `json:"unsimulable"`
	Overall     Cell   `json:"overall"`
	ByGPUClass  []Cell `json:"by_gpu_class"`
	ByRegime    []Cell `json:"by_regime"`
	ByRelease   []Cell `json:"by_release_line"`
	// ByGPUClassRegime is what sim's expected error reads.
	ByGPUClassRegime []Cell `json:"by_gpu_class_regime"`
	// Cells are the finest groups: GPU class × regime × release line.
	Cells []Cell `json:"cells"`
	// BySource is each publication's runs (a user's: each result file),
	// so one lab's machines or setup cannot hide in the medians.
	BySource []Cell `json:"by_source"`
	// Twins are the runs sim cannot tell apart: their published figures'
	// spread beside sim's error on them.
	Twins Twins `json:"twins"`
}

// Splits lists the splits present in the report, holdout first.
func (rep *Report) Splits() []string {
	var out []string
	for _, s := range []string{SplitHoldout, SplitFit, SplitUser} {
		for _, r := range rep.Results {
			if r.Run.Split == s {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

// Summarize groups one split's runs.
func (rep *Report) Summarize(split string) Summary {
	s := Summary{Split: split}
	var sims []*Result
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Run.Split != split {
			continue
		}
		s.Runs++
		if r.Simulated() {
			s.Simulated++
			sims = append(sims, r)
		} else {
			s.Unsimulable++
		}
	}
	s.Overall = cellOf(Cell{}, sims)
	// by keys a run by the chosen fields of its GPU class, regime and
	// release line.
	by := func(class, regime, line bool) func(*Result) Cell {
		return func(r *Result) Cell {
			var c Cell
			if class {
				c.GPUClass = r.GPUClass
			}
			if regime {
				c.Regime = string(r.Regime)
			}
			if line {
				c.ReleaseLine = r.ReleaseLine
			}
			return c
		}
	}
	group := func(key func(*Result) Cell) []Cell {
		id := func(c Cell) [4]string { return [4]string{c.GPUClass, c.Regime, c.ReleaseLine, c.Source} }
		var keys []Cell
		members := map[[4]string][]*Result{}
		for _, r := range sims {
			k := key(r)
			if _, ok := members[id(k)]; !ok {
				keys = append(keys, k)
			}
			members[id(k)] = append(members[id(k)], r)
		}
		slices.SortFunc(keys, compareCells)
		out := make([]Cell, len(keys))
		for i, k := range keys {
			out[i] = cellOf(k, members[id(k)])
		}
		return out
	}
	s.ByGPUClass = group(by(true, false, false))
	s.ByRegime = group(by(false, true, false))
	s.ByRelease = group(by(false, false, true))
	s.ByGPUClassRegime = group(by(true, true, false))
	s.Cells = group(by(true, true, true))
	// A run's publication (a user's: its result file), in its name's order.
	s.BySource = group(func(r *Result) Cell { return Cell{Source: r.Run.SourceName()} })
	s.Twins = twinsOf(sims)
	return s
}

func compareCells(a, b Cell) int {
	return cmp.Or(cmp.Compare(a.GPUClass, b.GPUClass), cmp.Compare(regimeIndex(a.Regime), regimeIndex(b.Regime)),
		cmp.Compare(lineIndex(a.ReleaseLine), lineIndex(b.ReleaseLine)), cmp.Compare(a.Source, b.Source))
}

func regimeIndex(r string) int {
	if r == "" {
		return -1
	}
	if i := slices.Index(Regimes(), Regime(r)); i >= 0 {
		return i
	}
	return len(Regimes())
}

// lineOrder is vllm's release lines, oldest first; "unmodelled" and any
// other name sort after them.
var lineOrder = vllm.LineNames()

func lineIndex(l string) int {
	if l == "" {
		return -1
	}
	if i := slices.Index(lineOrder, l); i >= 0 {
		return i
	}
	return len(lineOrder)
}

func cellOf(c Cell, runs []*Result) Cell {
	c.Runs = len(runs)
	c.Families = map[Family]Stat{}
	for _, f := range Families() {
		var signed []float64
		for _, r := range runs {
			if m, ok := r.Headline(f); ok {
				signed = append(signed, 100*m.Error)
			}
		}
		if len(signed) > 0 {
			c.Families[f] = statOf(signed)
		}
	}
	return c
}

// statOf summarises signed errors in percent: a cell's, and twins'.
func statOf(signed []float64) Stat {
	abs := make([]float64, len(signed))
	for i, e := range signed {
		abs[i] = math.Abs(e)
	}
	signed = slices.Clone(signed)
	slices.Sort(abs)
	slices.Sort(signed)
	return Stat{Runs: len(abs), MedianAbs: metrics.Percentile(abs, 50), WorstAbs: abs[len(abs)-1], MedianSigned: metrics.Percentile(signed, 50)}
}
