package tune

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/servebench/servebench/report"
)

// StudyPage is a study's HTML page: objective vs trial, the TTFT vs
// objective Pareto front, parameter importance and every trial.
func StudyPage(study string, trials []Trial, objective, ttftKey string) *report.StudyReport {
	rep := &report.StudyReport{
		Title:          fmt.Sprintf("servebench tune study %q", study),
		Importance:     Importance(trials),
		ImportanceNote: ImportanceNote,
	}
	counts := map[State]int{}
	for _, t := range trials {
		counts[t.State]++
	}
	rep.Summary = append(rep.Summary, fmt.Sprintf("%d trials: %d complete, %d failed, %d invalid (never run); objective %s, maximised",
		len(trials), counts[StateComplete], counts[StateFailed], counts[StateInvalid], objective))
	if best := Best(trials); best != nil {
		rep.Summary = append(rep.Summary, fmt.Sprintf("best: trial %d, %s %.2f (%s)", best.Number, objective, *best.Objective, pointText(best.Params)))
	} else {
		rep.Notes = append(rep.Notes, "No trial met the SLO.")
	}
	if len(rep.Importance) == 0 {
		rep.Notes = append(rep.Notes, "Parameter importance needs at least 3 completed trials whose scores differ.")
	}
	rep.Charts = append(rep.Charts, historyChart(trials, objective))
	if c, ok := paretoChart(trials, objective, ttftKey); ok {
		rep.Charts = append(rep.Charts, c)
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("No completed trial has %s: no Pareto front.", ttftKey))
	}
	rep.Trials = trialsTable(trials, objective, ttftKey)
	return rep
}

func pointText(p Point) string {
	s := ""
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range p {
			if !yield(k) {
				return
			}
		}
	}) {
		if s != "" {
			s += " "
		}
		s += k + "=" + p[k]
	}
	return s
}

func feasible(t Trial) bool {
	return t.State == StateComplete && t.Objective != nil && (t.SLOMet == nil || *t.SLOMet)
}

// historyChart is the objective of every trial in order: SLO met, SLO
// missed, failed or invalid (drawn at 0), and the best feasible so far.
func historyChart(trials []Trial, objective string) report.StudyChart {
	n := len(trials)
	x := make([]float64, n)
	met, missed, failed, best := nans(n), nans(n), nans(n), nans(n)
	bestSoFar := math.NaN()
	for i, t := range trials {
		x[i] = float64(t.Number)
		switch {
		case feasible(t):
			met[i] = *t.Objective
			if math.IsNaN(bestSoFar) || *t.Objective > bestSoFar {
				bestSoFar = *t.Objective
			}
		case t.State == StateComplete && t.Objective != nil:
			missed[i] = *t.Objective
		case t.State == StateFailed || t.State == StateInvalid:
			failed[i] = 0
		}
		best[i] = bestSoFar
	}
	return report.StudyChart{ID: "history", Title: objective + " by trial", XLabel: "trial", YLabel: objective, X: x,
		Series: []report.StudySeries{
			{Label: "SLO met", Color: report.StudyColor(0), Values: met, Points: true},
			{Label: "SLO missed", Color: report.StudyColor(1), Values: missed, Points: true},
			{Label: "failed or invalid", Color: report.StudyColor(9), Values: failed, Points: true},
			{Label: "best so far", Color: report.StudyColor(4), Values: best, Line: true, Step: true},
		}}
}

// paretoChart is objective against TTFT for every completed trial, with
// the front (Pareto) drawn as a line through its trials.
func paretoChart(trials []Trial, objective, ttftKey string) (report.StudyChart, bool) {
	type pt struct{ ttft, obj float64 }
	var all []pt
	for _, t := range trials {
		if t.State != StateComplete || t.Objective == nil {
			continue
		}
		if ttft, ok := (report.LoadedResult{Fields: t.Result}).Number(ttftKey); ok && !math.IsNaN(ttft) {
			all = append(all, pt{ttft, *t.Objective})
		}
	}
	if len(all) == 0 {
		return report.StudyChart{}, false
	}
	slices.SortFunc(all, func(a, b pt) int {
		if a.ttft != b.ttft {
			return cmp.Compare(a.ttft, b.ttft)
		}
		return cmp.Compare(b.obj, a.obj)
	})
	// One x per distinct TTFT: the highest objective stands for ties.
	all = slices.CompactFunc(all, func(a, b pt) bool { return a.ttft == b.ttft })
	front := map[float64]float64{}
	for _, p := range Pareto(trials, ttftKey) {
		front[p.TTFTMillis] = p.Objective
	}
	x, others, onFront := make([]float64, len(all)), nans(len(all)), nans(len(all))
	for i, p := range all {
		x[i] = p.ttft
		if obj, ok := front[p.ttft]; ok && obj == p.obj {
			onFront[i] = p.obj
		} else {
			others[i] = p.obj
		}
	}
	return report.StudyChart{ID: "pareto", Title: fmt.Sprintf("Pareto front: %s vs %s (completed trials)", objective, ttftKey),
		XLabel: ttftKey + " (log scale)", YLabel: objective, X: x, XLog: x[0] > 0,
		Series: []report.StudySeries{
			{Label: "dominated", Color: report.StudyColor(9), Values: others, Points: true},
			{Label: "Pareto front", Color: report.StudyColor(2), Values: onFront, Points: true, Line: true},
		}}, true
}

func nans(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.NaN()
	}
	return xs
}

func trialsTable(trials []Trial, objective, ttftKey string) report.StudyTable {
	names := map[string]bool{}
	for _, t := range trials {
		for k := range t.Params {
			names[k] = true
		}
	}
	params := slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	})
	tab := report.StudyTable{Header: append(append([]string{"trial", "state", objective, ttftKey, "SLO"}, params...), "reason")}
	for _, t := range trials {
		obj, ttft, slo := "", "", ""
		if t.Objective != nil {
			obj = strconv.FormatFloat(*t.Objective, 'f', 2, 64)
		}
		if v, ok := (report.LoadedResult{Fields: t.Result}).Number(ttftKey); ok && !math.IsNaN(v) {
			ttft = strconv.FormatFloat(v, 'f', 2, 64)
		}
		if t.SLOMet != nil {
			slo = map[bool]string{true: "met", false: "missed"}[*t.SLOMet]
		}
		row := []string{strconv.Itoa(t.Number), string(t.State), obj, ttft, slo}
		for _, p := range params {
			row = append(row, t.Params[p])
		}
		tab.Rows = append(tab.Rows, append(row, t.Reason))
	}
	return tab
}
