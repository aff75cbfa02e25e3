package tune

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/servebench/servebench/report"
)

// importanceBins is how many equal-count groups a numeric parameter with
// more distinct values is cut into: coarse enough that each group holds a
// few trials of a 30-trial study.
const importanceBins = 4

// ImportanceNote explains Importance on the study page.
var ImportanceNote = fmt.Sprintf("Share of the score's variance across completed trials that grouping the trials by one "+
	"parameter explains (the correlation ratio η²: between-group variance / total variance; numeric parameters with "+
	"more than %d values in %d equal-count groups). The score is the objective, lowered for SLO misses. Parameters "+
	"interact and a model-based sampler does not sample them independently, so the shares need not add up to 100%% "+
	"and are a guide to what mattered, not a proof.", importanceBins, importanceBins)

// Importance ranks the parameters that varied by the share of the score's
// variance among COMPLETE trials each explains alone, most first. It is
// empty with fewer than 3 such trials or no variance.
func Importance(trials []Trial) []report.ParamImportance {
	var done []Trial
	names := map[string]bool{}
	for _, t := range trials {
		if t.State == StateComplete {
			done = append(done, t)
			for name := range t.Params {
				names[name] = true
			}
		}
	}
	if len(done) < 3 {
		return nil
	}
	scores := make([]float64, len(done))
	for i, t := range done {
		scores[i] = t.Score
	}
	total := sumSquares(scores, mean(scores))
	if total == 0 {
		return nil
	}
	var out []report.ParamImportance
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		groups := groupTrials(done, name)
		if len(groups) < 2 {
			continue // pinned, or the study never varied it
		}
		m, between := mean(scores), 0.0
		for _, idx := range groups {
			var g []float64
			for _, i := range idx {
				g = append(g, scores[i])
			}
			d := mean(g) - m
			between += float64(len(g)) * d * d
		}
		out = append(out, report.ParamImportance{Name: name, Explained: between / total, Bins: len(groups)})
	}
	slices.SortStableFunc(out, func(a, b report.ParamImportance) int { return cmp.Compare(b.Explained, a.Explained) })
	return out
}

// groupTrials groups trial indices by name's value: one group per value,
// or, for numbers with more than importanceBins distinct values, equal-
// count groups in value order (equal values always share a group).
func groupTrials(trials []Trial, name string) [][]int {
	byValue := map[string][]int{}
	numeric := true
	for i, t := range trials {
		v := t.Params[name]
		byValue[v] = append(byValue[v], i)
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			numeric = false
		}
	}
	values := make([]string, 0, len(byValue))
	for v := range byValue {
		values = append(values, v)
	}
	if !numeric || len(values) <= importanceBins {
		slices.Sort(values)
		groups := make([][]int, 0, len(values))
		for _, v := range values {
			groups = append(groups, byValue[v])
		}
		return groups
	}
	num := func(v string) float64 { f, _ := strconv.ParseFloat(v, 64); return f }
	slices.SortFunc(values, func(a, b string) int { return cmp.Compare(num(a), num(b)) })
	groups := make([][]int, importanceBins)
	seen := 0
	for _, v := range values {
		// The group of a value is where its first trial falls in rank order.
		g := seen * importanceBins / len(trials)
		groups[g] = append(groups[g], byValue[v]...)
		seen += len(byValue[v])
	}
	return slices.DeleteFunc(groups, func(g []int) bool { return len(g) == 0 })
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func sumSquares(xs []float64, m float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s
}
