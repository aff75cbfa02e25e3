package report

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Lookup finds key in the run: a top-level key, then a metadata entry, then
// a swept parameter, then an engine setting. Dashes and underscores are
// interchangeable so a swept flag (--max-num-seqs) matches its key
// (max_num_seqs).
func (r LoadedResult) Lookup(key string) (any, bool) {
	if v, ok := r.Fields[key]; ok && v != nil {
		return v, true
	}
	canon := canonicalKey(key)
	if v, ok := lookupCanonical(r.Fields, canon); ok {
		return v, true
	}
	if meta, ok := r.Fields["metadata"].(map[string]any); ok {
		if v, ok := lookupCanonical(meta, canon); ok {
			return v, true
		}
	}
	for _, p := range r.Params {
		if canonicalKey(p.Flag) == canon {
			return p.Value, true
		}
	}
	if engine, ok := r.Fields["engine"].(map[string]any); ok {
		if v, ok := lookupCanonical(engine, canon); ok {
			return v, true
		}
	}
	return nil, false
}

// lookupCanonical scans m for a key equal to canon after canonicalKey; it
// walks keys in sorted order so a file with both spellings resolves the
// same way every time.
func lookupCanonical(m map[string]any, canon string) (any, bool) {
	if v, ok := m[canon]; ok && v != nil {
		return v, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v := m[k]; v != nil && canonicalKey(k) == canon {
			return v, true
		}
	}
	return nil, false
}

func canonicalKey(k string) string {
	return strings.ReplaceAll(strings.TrimLeft(strings.ToLower(k), "-"), "-", "_")
}

// Number returns a numeric key in its canonical unit, normalising what
// different tools and versions write:
//   - numbers may be JSON numbers or numeric strings; "inf"/"Infinity"
//     (vLLM writes request_rate "inf") give +Inf; null is missing;
//   - vLLM 0.8's "request_goodput:" key (trailing colon) stands for
//     request_goodput;
//   - SGLang's *_e2e_latency_ms stand for *_e2el_ms;
//   - median_* falls back to p50_* (the same statistic);
//   - a *_ms key missing but written in seconds (*_s) or microseconds
//     (*_us) is converted to milliseconds; duration is in seconds and a
//     duration_ms is converted;
//   - servebench's --summary-json keys (successful_requests,
//     requests_per_second, ttft_ms.p99, latency_ms.average, ...) stand for
//     the vLLM keys they summarise;
//   - total_token_throughput, when missing, is (total_input_tokens +
//     total_output_tokens) / duration, its definition.
func (r LoadedResult) Number(key string) (float64, bool) {
	if v, ok := r.Lookup(key); ok {
		return anyToFloat(v)
	}
	for _, alt := range numberAliases(key) {
		if v, ok := r.lookupAlias(alt.key); ok {
			if f, ok := anyToFloat(v); ok {
				return f * alt.scale, true
			}
		}
	}
	if key == "total_token_throughput" {
		in, okIn := r.Number("total_input_tokens")
		out, okOut := r.Number("total_output_tokens")
		dur, okDur := r.Number("duration")
		if okIn && okOut && okDur && dur > 0 {
			return (in + out) / dur, true
		}
	}
	return 0, false
}

type keyAlias struct {
	key   string // "a.b" reaches into a nested object
	scale float64
}

func (r LoadedResult) lookupAlias(key string) (any, bool) {
	outer, inner, nested := strings.Cut(key, ".")
	if !nested {
		return r.Lookup(key)
	}
	m, ok := r.Fields[outer].(map[string]any)
	if !ok || m[inner] == nil {
		return nil, false
	}
	return m[inner], true
}

// summaryJSONKeys maps vLLM keys to the load-test style --summary-json keys.
var summaryJSONKeys = map[string]string{
	"completed":              "successful_requests",
	"failed":                 "failed_requests",
	"request_throughput":     "requests_per_second",
	"output_throughput":      "output_tokens_per_second",
	"total_token_throughput": "total_tokens_per_second",
}

// summaryJSONStats maps a vLLM statistic prefix to the --summary-json
// distribution field.
var summaryJSONStats = map[string]string{"mean": "average", "median": "p50", "p50": "p50", "p95": "p95", "p99": "p99"}

// summaryJSONMetrics maps a vLLM metric to the --summary-json section.
var summaryJSONMetrics = map[string]string{"ttft": "ttft_ms", "tpot": "tpot_ms", "e2el": "latency_ms"}

func numberAliases(key string) []keyAlias {
	var out []keyAlias
	switch key {
	case "request_goodput":
		out = append(out, keyAlias{"request_goodput:", 1})
	case "duration":
		out = append(out, keyAlias{"duration_s", 1}, keyAlias{"duration_ms", 1e-3})
	}
	if rest, ok := strings.CutPrefix(key, "median_"); ok {
		out = append(out, keyAlias{"p50_" + rest, 1})
	}
	if k, ok := summaryJSONKeys[key]; ok {
		out = append(out, keyAlias{k, 1})
	}
	if stat, rest, ok := strings.Cut(key, "_"); ok {
		if metric, ok := strings.CutSuffix(rest, "_ms"); ok && summaryJSONStats[stat] != "" && summaryJSONMetrics[metric] != "" {
			out = append(out, keyAlias{summaryJSONMetrics[metric] + "." + summaryJSONStats[stat], 1})
		}
	}
	if strings.Contains(key, "_e2el_") {
		out = append(out, keyAlias{strings.Replace(key, "_e2el_", "_e2e_latency_", 1), 1})
	}
	if stem, ok := strings.CutSuffix(key, "_ms"); ok {
		out = append(out, keyAlias{stem + "_s", 1e3}, keyAlias{stem + "_us", 1e-3})
		if strings.Contains(stem, "_e2el") {
			sg := strings.Replace(stem, "_e2el", "_e2e_latency", 1)
			out = append(out, keyAlias{sg + "_s", 1e3}, keyAlias{sg + "_us", 1e-3})
		}
	}
	return out
}

func anyToFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	case float64:
		return v, true
	case int:
		return float64(v), true
	case string:
		s := strings.TrimSpace(strings.ToLower(v))
		switch s {
		case "inf", "+inf", "infinity", "+infinity":
			return math.Inf(1), true
		case "-inf", "-infinity":
			return math.Inf(-1), true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// Text returns key as display text: strings as written, numbers in their
// shortest form, +Inf as "inf".
func (r LoadedResult) Text(key string) (string, bool) {
	v, ok := r.Lookup(key)
	if !ok {
		if f, ok := r.Number(key); ok {
			return formatShortest(f), true
		}
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		if f, ok := anyToFloat(v); ok {
			return formatShortest(f), true
		}
		return string(v), true
	case bool:
		return strconv.FormatBool(v), true
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
}

func formatShortest(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
