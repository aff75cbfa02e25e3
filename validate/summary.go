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
	key := func(r *Result, class, regime, line bool) Cell {
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
	group := func(class, regime, line bool) []Cell {
		var keys []Cell
		members := map[[3]string][]*Result{}
		for _, r := range sims {
			k := key(r, class, regime, line)
			id := [3]string{k.GPUClass, k.Regime, k.ReleaseLine}
			if _, ok := members[id]; !ok {
				keys = append(keys, k)
			}
			members[id] = append(members[id], r)
		}
		slices.SortFunc(keys, compareCells)
		out := make([]Cell, len(keys))
		for i, k := range keys {
			out[i] = cellOf(k, members[[3]string{k.GPUClass, k.Regime, k.ReleaseLine}])
		}
		return out
	}
	s.ByGPUClass = group(true, false, false)
	s.ByRegime = group(false, true, false)
	s.ByRelease = group(false, false, true)
	s.ByGPUClassRegime = group(true, true, false)
	s.Cells = group(true, true, true)
	s.BySource = bySource(sims)
	return s
}

// bySource groups runs by the publication they come from, in its name's
// order.
func bySource(sims []*Result) []Cell {
	members := map[string][]*Result{}
	var names []string
	for _, r := range sims {
		name := r.Run.SourceName()
		if _, ok := members[name]; !ok {
			names = append(names, name)
		}
		members[name] = append(members[name], r)
	}
	slices.Sort(names)
	out := make([]Cell, len(names))
	for i, name := range names {
		out[i] = cellOf(Cell{Source: name}, members[name])
	}
	return out
}

func compareCells(a, b Cell) int {
	return cmp.Or(cmp.Compare(a.GPUClass, b.GPUClass), cmp.Compare(regimeIndex(a.Regime), regimeIndex(b.Regime)),
		cmp.Compare(lineIndex(a.ReleaseLine), lineIndex(b.ReleaseLine)))
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
		var abs, signed []float64
		for _, r := range runs {
			if m, ok := r.Headline(f); ok {
				abs = append(abs, 100*math.Abs(m.Error))
				signed = append(signed, 100*m.Error)
			}
		}
		if len(abs) == 0 {
			continue
		}
		slices.Sort(abs)
		slices.Sort(signed)
		c.Families[f] = Stat{Runs: len(abs), MedianAbs: metrics.Percentile(abs, 50),
			WorstAbs: abs[len(abs)-1], MedianSigned: metrics.Percentile(signed, 50)}
	}
	return c
}
