package tune

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/servebench/servebench/report"
)

// Best is the COMPLETE trial with the highest objective among those
// meeting the SLO (all of them without one); nil when none.
func Best(trials []Trial) *Trial {
	var best *Trial
	for i := range trials {
		t := &trials[i]
		if t.State != StateComplete || t.Objective == nil || (t.SLOMet != nil && !*t.SLOMet) {
			continue
		}
		if best == nil || *t.Objective > *best.Objective {
			best = t
		}
	}
	return best
}

// Top returns up to n feasible trials, best first.
func Top(trials []Trial, n int) []Trial {
	var ok []Trial
	for _, t := range trials {
		if t.State == StateComplete && t.Objective != nil && (t.SLOMet == nil || *t.SLOMet) {
			ok = append(ok, t)
		}
	}
	sort.SliceStable(ok, func(i, j int) bool { return *ok[i].Objective > *ok[j].Objective })
	return ok[:min(n, len(ok))]
}

// ParetoPoint is one trial on the TTFT-vs-throughput front.
type ParetoPoint struct {
	Number     int     `json:"number"`
	Objective  float64 `json:"objective"`
	TTFTMillis float64 `json:"ttft_ms"`
}

// Pareto returns the COMPLETE trials no other trial beats on both a
// higher objective and a lower ttftKey (e.g. p99_ttft_ms), by objective.
func Pareto(trials []Trial, ttftKey string) []ParetoPoint {
	var pts []ParetoPoint
	for _, t := range trials {
		if t.State != StateComplete || t.Objective == nil {
			continue
		}
		ttft, ok := report.LoadedResult{Fields: t.Result}.Number(ttftKey)
		if !ok || math.IsNaN(ttft) {
			continue
		}
		p := ParetoPoint{Number: t.Number, Objective: *t.Objective, TTFTMillis: ttft}
		if !slices.ContainsFunc(pts, func(q ParetoPoint) bool { return q.Objective == p.Objective && q.TTFTMillis == p.TTFTMillis }) {
			pts = append(pts, p) // equal results: the first trial stands for them
		}
	}
	var front []ParetoPoint
	for _, p := range pts {
		dominated := false
		for _, q := range pts {
			if q.Objective >= p.Objective && q.TTFTMillis <= p.TTFTMillis && (q.Objective > p.Objective || q.TTFTMillis < p.TTFTMillis) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, p)
		}
	}
	slices.SortFunc(front, func(a, b ParetoPoint) int {
		if a.Objective != b.Objective {
			if a.Objective < b.Objective {
				return -1
			}
			return 1
		}
		return a.Number - b.Number
	})
	return front
}

// ServeCommand is p as a ready-to-paste `vllm serve` command line.
func ServeCommand(model string, s *Space, p Point, fixed []string) string {
	args := append([]string{"vllm", "serve", model}, fixed...)
	args = append(args, p.VLLMArgs(s)...)
	return strings.Join(args, " ")
}

// TableHeader is the live trials table's header for s.
func TableHeader(s *Space, objective string) string {
	return fmt.Sprintf("%-5s %-8s %12s %-4s %-20s %s", "trial", "state", shortKey(objective), "SLO", "KV cache / memory", "config · reason")
}

// TableRow is one trial in the live table.
func TableRow(s *Space, t Trial) string {
	obj, slo := "-", "-"
	if t.Objective != nil {
		obj = strconv.FormatFloat(*t.Objective, 'f', 2, 64)
	}
	if t.SLOMet != nil {
		slo = map[bool]string{true: "pass", false: "FAIL"}[*t.SLOMet]
	}
	mem := "-"
	if c := t.Observed; c != nil && (c.GPUBlocks > 0 || c.KVCacheTokens > 0 || c.GPUMemory != "") {
		mem = capacityCell(c) + " (seen)"
	} else if c := t.Predicted; c != nil {
		mem = capacityCell(c)
	}
	reason := t.Reason
	if t.State == StateComplete && t.SLOMet != nil && !*t.SLOMet {
		reason = failedTerms(t.Margins)
	}
	line := fmt.Sprintf("%-5d %-8s %12s %-4s %-20s %s", t.Number, t.State, obj, slo, mem, t.Params.String(s))
	if rate, ok := t.RateSearch["best_rate"]; ok {
		line += fmt.Sprintf(" · at request rate %v", rate)
	}
	if reason = oneLine(reason); reason != "" {
		line += " · " + reason
	}
	return line
}

func capacityCell(c *Capacity) string {
	switch {
	case c.GPUMemory != "":
		return c.GPUMemory
	case c.KVCacheGiB > 0:
		return fmt.Sprintf("%dk tok %.1fGiB", c.KVCacheTokens/1000, c.KVCacheGiB)
	case c.KVCacheTokens > 0:
		return fmt.Sprintf("%dk tok", c.KVCacheTokens/1000)
	}
	return fmt.Sprintf("%d blocks", c.GPUBlocks)
}

func failedTerms(ms []MarginJSON) string {
	var parts []string
	for _, m := range ms {
		if !m.Met {
			parts = append(parts, fmt.Sprintf("%s (was %.1f)", m.Term, m.Value))
		}
	}
	return "SLO missed: " + strings.Join(parts, ", ")
}

func shortKey(k string) string {
	if len(k) > 12 {
		return k[:12]
	}
	return k
}

// WriteJSON writes every trial as a JSON array.
func WriteJSON(w io.Writer, trials []Trial) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if trials == nil {
		trials = []Trial{}
	}
	return enc.Encode(trials)
}

// csvMetrics are the result keys the CSV carries besides the objective.
var csvMetrics = []string{"request_throughput", "output_throughput", "request_goodput", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms", "p99_itl_ms"}

// WriteCSV writes one row per trial: number, state, each parameter,
// objective, score, SLO verdict, predicted capacity, key metrics, reason.
func WriteCSV(w io.Writer, s *Space, trials []Trial) error {
	cw := csv.NewWriter(w)
	header := []string{"number", "state"}
	for _, p := range s.Params {
		header = append(header, p.Name)
	}
	header = append(header, "objective", "score", "slo_met", "predicted_gpu_blocks", "predicted_kv_cache_gib", "observed_gpu_memory")
	header = append(header, csvMetrics...)
	header = append(header, "reason")
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, t := range trials {
		row := []string{strconv.Itoa(t.Number), string(t.State)}
		for _, p := range s.Params {
			row = append(row, t.Params[p.Name])
		}
		row = append(row, optFloat(t.Objective), strconv.FormatFloat(t.Score, 'g', -1, 64))
		slo := ""
		if t.SLOMet != nil {
			slo = strconv.FormatBool(*t.SLOMet)
		}
		blocks, kv, seen := "", "", ""
		if t.Predicted != nil {
			blocks, kv = strconv.Itoa(t.Predicted.GPUBlocks), strconv.FormatFloat(t.Predicted.KVCacheGiB, 'f', 2, 64)
		}
		if t.Observed != nil {
			seen = t.Observed.GPUMemory
		}
		row = append(row, slo, blocks, kv, seen)
		r := report.LoadedResult{Fields: t.Result}
		for _, k := range csvMetrics {
			if v, ok := r.Number(k); ok && !math.IsNaN(v) {
				row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
			} else {
				row = append(row, "")
			}
		}
		row = append(row, oneLine(t.Reason))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func optFloat(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}
