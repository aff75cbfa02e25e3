package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

// Term is one SLA condition on a numeric key of the result JSON, e.g.
// p99_ttft_ms <= 500.
type Term struct {
	Key   string  `json:"key"`
	Op    string  `json:"op"` // <=, <, >=, >
	Limit float64 `json:"limit"`
}

func (t Term) String() string {
	return t.Key + t.Op + strconv.FormatFloat(t.Limit, 'f', -1, 64)
}

// SLA is a conjunction of terms.
type SLA []Term

func (s SLA) String() string {
	parts := make([]string, len(s))
	for i, t := range s {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// ParseSLA reads "p99_ttft_ms<=500,p99_tpot_ms<=50": comma-separated
// terms, each a result key, an operator (<=, <, >=, >) and a number.
func ParseSLA(s string) (SLA, error) {
	var sla SLA
	for _, raw := range strings.Split(s, ",") {
		term := strings.TrimSpace(raw)
		if term == "" {
			continue
		}
		t, err := parseTerm(term)
		if err != nil {
			return nil, option.Errorf("{sla} %q: %w", s, err)
		}
		sla = append(sla, t)
	}
	if len(sla) == 0 {
		return nil, option.Errorf("{sla} %q has no terms; write e.g. 'p99_ttft_ms<=500,p99_tpot_ms<=50'", s)
	}
	return sla, nil
}

func parseTerm(term string) (Term, error) {
	i := strings.IndexAny(term, "<>")
	if i <= 0 {
		return Term{}, fmt.Errorf("term %q needs KEY<=N, KEY<N, KEY>=N or KEY>N", term)
	}
	op := term[i : i+1]
	if i+1 < len(term) && term[i+1] == '=' {
		op += "="
	}
	key := strings.TrimSpace(term[:i])
	value := strings.TrimSpace(term[i+len(op):])
	limit, err := strconv.ParseFloat(value, 64)
	if err != nil || math.IsNaN(limit) || math.IsInf(limit, 0) {
		return Term{}, fmt.Errorf("term %q: limit %q is not a finite number", term, value)
	}
	if strings.ContainsAny(key, " <>=") {
		return Term{}, fmt.Errorf("term %q: key %q is not a result key", term, key)
	}
	return Term{Key: key, Op: op, Limit: limit}, nil
}

// TermMargin is how one term fared in one run. Margin is the headroom as
// a fraction of the limit: +0.2 means 20% better than required, negative
// means violated.
type TermMargin struct {
	Term   Term    `json:"term"`
	Value  float64 `json:"value"`
	Margin float64 `json:"margin"`
	Met    bool    `json:"met"`
}

// MarshalJSON writes non-finite values, which JSON cannot hold, as null.
func (m TermMargin) MarshalJSON() ([]byte, error) {
	finite := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	return json.Marshal(struct {
		Term   Term `json:"term"`
		Value  any  `json:"value"`
		Margin any  `json:"margin"`
		Met    bool `json:"met"`
	}{m.Term, finite(m.Value), finite(m.Margin), m.Met})
}

// Evaluate checks result against every term. Keys are read the way
// report reads result files, so spellings such as vLLM's
// "request_goodput:" work. A missing key is an error: the SLA cannot be
// judged.
func (s SLA) Evaluate(result map[string]any) ([]TermMargin, error) {
	r := report.LoadedResult{Fields: result}
	out := make([]TermMargin, len(s))
	for i, t := range s {
		v, ok := r.Number(t.Key)
		if !ok || math.IsNaN(v) {
			return nil, fmt.Errorf("the result has no numeric %q for the SLA; use a key of the result JSON such as p99_ttft_ms, mean_tpot_ms or request_throughput", t.Key)
		}
		out[i] = TermMargin{Term: t, Value: v, Margin: t.margin(v), Met: t.met(v)}
	}
	return out, nil
}

func (t Term) met(v float64) bool {
	switch t.Op {
	case "<=":
		return v <= t.Limit
	case "<":
		return v < t.Limit
	case ">=":
		return v >= t.Limit
	}
	return v > t.Limit
}

func (t Term) margin(v float64) float64 {
	diff := t.Limit - v
	if t.Op == ">=" || t.Op == ">" {
		diff = -diff
	}
	if t.Limit == 0 {
		return diff
	}
	return diff / math.Abs(t.Limit)
}

// distance is the search's signed closeness to the SLA boundary, positive
// inside it: for the worst term, limit/value − 1 (value/limit − 1 for a
// lower bound). Latency near capacity grows like 1/(capacity − load), so
// limit/latency is close to linear in load there, and it stays above −1
// however far a saturated run overshoots, which keeps interpolation from
// being dragged to one end of the bracket.
func distance(margins []TermMargin) float64 {
	worst := math.Inf(1)
	for _, m := range margins {
		d := m.Margin
		if m.Value > 0 && m.Term.Limit > 0 {
			d = m.Term.Limit/m.Value - 1
			if m.Term.Op == ">=" || m.Term.Op == ">" {
				d = m.Value/m.Term.Limit - 1
			}
		}
		worst = min(worst, d)
	}
	return worst
}

// allMet is true when every term holds.
func allMet(margins []TermMargin) bool {
	for _, m := range margins {
		if !m.Met {
			return false
		}
	}
	return true
}

// CheckKeys refuses a term whose key no result of the run will hold, so
// a misspelt SLA fails before the first run rather than after every one;
// sample is a result of the run's kind (ResultSample).
func (s SLA) CheckKeys(sample map[string]any) error {
	for _, t := range s {
		if err := CheckResultKey(sample, t.Key); err != nil {
			return option.Errorf("{sla} term %s: %w", t, err)
		}
	}
	return nil
}

// CheckResultKey says why key is not a numeric key of results like
// sample, naming the keys it could mean; nil when it is one.
func CheckResultKey(sample map[string]any, key string) error {
	if _, ok := (report.LoadedResult{Fields: sample}).Number(key); ok {
		return nil
	}
	var keys []string
	for k, v := range sample {
		switch v.(type) {
		case float64, int, int64:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	hint := ""
	if strings.HasPrefix(key, "p") && strings.HasSuffix(key, "_ms") {
		hint = " (percentile keys follow --metric-percentiles and --percentile-metrics)"
	}
	if key == "request_goodput" {
		hint = " (it needs --goodput)"
	}
	return fmt.Errorf("the result has no numeric %q%s; use one of %s", key, hint, strings.Join(keys, ", "))
}

// CheckSLA refuses an SLA term no result of spec's run will hold, before
// anything runs.
func CheckSLA(spec *runspec.Spec, sla SLA) error {
	sample, err := ResultSample(spec)
	if err != nil {
		return err
	}
	return sla.CheckKeys(sample)
}
