package validate

import (
	"slices"
	"strings"

	"github.com/servebench/servebench/metrics"
)

// Twins are a split's runs that sim cannot tell apart: the same
// simulation input (the same `servebench sim` command and benchmark), so
// the same prediction, against published figures that differ (another
// box, another day, a warm-up the runs' setups do not record). Their
// spread, each figure against its group's median, is error that no better
// model of those inputs removes.
type Twins struct {
	// Groups counts the sets of twins (two or more runs each) and Runs
	// their runs.
	Groups int `json:"groups"`
	Runs   int `json:"runs"`
	// Spread is, per family, each twin's published figure against its
	// group's median, as an error of that median; Sim is sim's error on
	// the same runs and figures.
	Spread Cell `json:"spread"`
	Sim    Cell `json:"sim"`
}

// twinKey is what sim is given for a run: its command, and the benchmark
// whose figures validate reads from the simulation (a latency run's from
// the same command as a throughput run's, but other figures).
func twinKey(r *Result) string {
	return r.Run.Benchmark + "\x00" + strings.Join(r.Command, "\x00")
}

// twinsOf groups runs by their sim command and benchmark.
func twinsOf(runs []*Result) Twins {
	var keys []string
	groups := map[string][]*Result{}
	for _, r := range runs {
		k := twinKey(r)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	tw := Twins{Spread: Cell{Families: map[Family]Stat{}}, Sim: Cell{Families: map[Family]Stat{}}}
	spread, sim := map[Family][]float64{}, map[Family][]float64{}
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		tw.Groups++
		tw.Runs += len(g)
		for _, f := range Families() {
			// The family's headline figure, where every twin that has one
			// published it under the same key (a mean beside a median says
			// nothing of the spread).
			var pub, errs []float64
			key := ""
			for _, r := range g {
				m, ok := r.Headline(f)
				if !ok {
					continue
				}
				if key == "" {
					key = m.Key
				}
				if m.Key != key || !(m.Published > 0) {
					continue
				}
				pub = append(pub, m.Published)
				errs = append(errs, m.Error)
			}
			if len(pub) < 2 {
				continue
			}
			sorted := slices.Clone(pub)
			slices.Sort(sorted)
			median := metrics.Percentile(sorted, 50)
			for i, x := range pub {
				spread[f] = append(spread[f], 100*(median/x-1))
				sim[f] = append(sim[f], 100*errs[i])
			}
		}
	}
	tw.Spread.Runs, tw.Sim.Runs = tw.Runs, tw.Runs
	for _, f := range Families() {
		if len(spread[f]) > 0 {
			tw.Spread.Families[f] = statOf(spread[f])
			tw.Sim.Families[f] = statOf(sim[f])
		}
	}
	return tw
}
