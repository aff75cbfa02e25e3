// Package report writes results in every output format: vLLM's text block
// and --save-result JSON, a load-test style summary JSON, and (compare*,
// html*) side-by-side tables and an offline HTML report. It formats; it
// never computes metrics (that is package metrics).
package report

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/metrics"
)

// RunInfo describes how a run was configured, for the result block and JSON.
type RunInfo struct {
	Date         time.Time
	Backend      string
	EndpointType string
	Label        string
	ModelID      string
	TokenizerID  string
	NumPrompts   int
	// RequestRate is in req/s; +Inf means all at once.
	RequestRate    float64
	Burstiness     float64
	MaxConcurrency int // 0 means no cap
	RampUp         *RampUp
	// Metadata holds the --metadata KEY=VALUE pairs in the order given.
	Metadata [][2]string

	// PercentileMetrics and Percentiles select the latency sections, as
	// vLLM's --percentile-metrics and --metric-percentiles.
	PercentileMetrics []string
	Percentiles       []float64
	// Goodput is true when --goodput SLOs were given.
	Goodput bool
	// Interrupted marks a run stopped early (Ctrl-C): the numbers cover what
	// was measured until then.
	Interrupted bool
	// Recovered marks a run summarised from its records alone, after it
	// died without writing its result (RecoveredNote).
	Recovered bool
}

// RampUp is vLLM's --ramp-up-strategy with its start and end rates.
type RampUp struct {
	Strategy string
	StartRPS float64
	EndRPS   float64
}

// Result is everything one run produced that the writers format.
type Result struct {
	Info    RunInfo
	Summary metrics.Summary
	// Records are the per-request records, needed only for --save-detailed.
	Records []metrics.Record
	// Extra holds additional top-level JSON sections (server metrics,
	// engine statistics), written after vLLM's keys in the given order.
	Extra []Section
}

// Section is one extra top-level JSON key.
type Section struct {
	Key   string
	Value any
}

var metricTitles = map[string]struct{ header, abbrev string }{
	"ttft":                        {"Time to First Token", "TTFT"},
	"tpot":                        {"Time per Output Token (excl. 1st token)", "TPOT"},
	"itl":                         {"Inter-token Latency", "ITL"},
	"e2el":                        {"End-to-end Latency", "E2EL"},
	"client_queue_time":           {"Client-side Queueing", "Client Queue Time"},
	"e2el_including_client_queue": {"Queue-inclusive End-to-end Latency", "E2EL incl. Queue"},
}

// Distribution returns the summary's distribution for a percentile-metric
// name.
func Distribution(s *metrics.Summary, metric string) (metrics.Distribution, bool) {
	switch metric {
	case "ttft":
		return s.TTFT, true
	case "tpot":
		return s.TPOT, true
	case "itl":
		return s.ITL, true
	case "e2el":
		return s.E2EL, true
	case "client_queue_time":
		return s.ClientQueue, true
	case "e2el_including_client_queue":
		return s.E2ELWithQueue, true
	}
	return metrics.Distribution{}, false
}

// centered formats s centred in width n with fill c, extra fill on the
// right, like Python's "{s:{c}^{n}}".
func centered(s string, c byte, n int) string {
	pad := n - len(s)
	if pad <= 0 {
		return s
	}
	left := pad / 2
	return strings.Repeat(string(c), left) + s + strings.Repeat(string(c), pad-left)
}

// row formats one line like vLLM's "{:<40} {:<10}".
func row(label string, value string) string {
	return fmt.Sprintf("%-40s %-10s\n", label, value)
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// PercentileLabel is vLLM's label for a percentile: P99, P99.9.
func PercentileLabel(p float64) string { return "P" + percentileString(p) }

func percentileString(p float64) string {
	if p == math.Trunc(p) {
		return strconv.Itoa(int(p))
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// WriteText writes vLLM's "Serving Benchmark Result" block, label for label,
// followed by servebench's extra lines (send lag, interruption).
func WriteText(w io.Writer, r *Result) error {
	var b bytes.Buffer
	s := &r.Summary
	in := &r.Info
	b.WriteString(centered(" Serving Benchmark Result ", '=', 50) + "\n")
	b.WriteString(row("Successful requests:", strconv.Itoa(s.Completed)))
	b.WriteString(row("Failed requests:", strconv.Itoa(s.Failed)))
	if in.MaxConcurrency > 0 {
		b.WriteString(row("Maximum request concurrency:", strconv.Itoa(in.MaxConcurrency)))
	}
	if !math.IsInf(in.RequestRate, 1) && in.RequestRate > 0 {
		b.WriteString(row("Request rate configured (RPS):", f2(in.RequestRate)))
	}
	b.WriteString(row("Benchmark duration (s):", f2(s.Duration.Seconds())))
	b.WriteString(row("Total input tokens:", strconv.FormatInt(s.TotalInput, 10)))
	b.WriteString(row("Total generated tokens:", strconv.FormatInt(s.TotalOutput, 10)))
	b.WriteString(row("Request throughput (req/s):", f2(s.RequestThroughput)))
	if s.RequestGoodput != nil {
		b.WriteString(row("Request goodput (req/s):", f2(*s.RequestGoodput)))
	}
	b.WriteString(row("Output token throughput (tok/s):", f2(s.OutputThroughput)))
	b.WriteString(row("Peak output token throughput (tok/s):", f2(s.MaxOutputTokensPerS)))
	b.WriteString(row("Peak concurrent requests:", f2(float64(s.MaxConcurrentRequests))))
	b.WriteString(row("Total token throughput (tok/s):", f2(s.TotalTokenThroughput)))
	for _, m := range in.metrics() {
		d, ok := Distribution(s, m)
		t, known := metricTitles[m]
		if !ok || !known {
			continue
		}
		b.WriteString(centered(t.header, '-', 50) + "\n")
		b.WriteString(row(fmt.Sprintf("Mean %s (ms):", t.abbrev), f2(d.Mean)))
		b.WriteString(row(fmt.Sprintf("Median %s (ms):", t.abbrev), f2(d.Median)))
		for _, p := range in.percentiles() {
			v, _ := d.At(p)
			b.WriteString(row(fmt.Sprintf("%s %s (ms):", PercentileLabel(p), t.abbrev), f2(v)))
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	if lagP99, ok := s.SendLag.At(99); ok && s.SendLag.Max > 0 {
		lagP50, _ := s.SendLag.At(50)
		b.WriteString(row("Send lag P50/P99/max (ms):", fmt.Sprintf("%.3f / %.3f / %.3f", lagP50, lagP99, s.SendLag.Max)))
	}
	if s.Retries > 0 {
		// Two rows, each naming what it counts: a request can be resent
		// more than once, and one resent may be answered on a new
		// connection, so neither number is part of the other.
		b.WriteString(row("Resends (reused connection had closed):", strconv.Itoa(s.Retries)))
		b.WriteString(row("Requests answered on reused connections:", strconv.Itoa(s.ConnReused)))
	}
	switch {
	case in.Recovered:
		b.WriteString("Run " + RecoveredNote + "; the numbers above cover the requests it recorded.\n")
	case in.Interrupted:
		b.WriteString("Run interrupted: the numbers above cover the requests measured before the stop.\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (in *RunInfo) metrics() []string {
	if len(in.PercentileMetrics) == 0 {
		return []string{"ttft", "tpot", "itl"}
	}
	return in.PercentileMetrics
}

func (in *RunInfo) percentiles() []float64 {
	if len(in.Percentiles) == 0 {
		return []float64{99}
	}
	return in.Percentiles
}

// orderedJSON writes a JSON object with keys in insertion order, as Python's
// json.dump of a dict does.
type orderedJSON struct {
	buf   bytes.Buffer
	count int
	err   error
}

func (o *orderedJSON) add(key string, v any) {
	if o.err != nil {
		return
	}
	if o.count == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteString(", ")
	}
	o.count++
	k, _ := json.Marshal(key)
	o.buf.Write(k)
	o.buf.WriteString(": ")
	val, err := json.Marshal(v)
	if err != nil {
		o.err = fmt.Errorf("encode result key %q: %w", key, err)
		return
	}
	o.buf.Write(val)
}

func (o *orderedJSON) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.count == 0 {
		return []byte("{}"), nil
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// JSON returns the --save-result document with vLLM's keys in vLLM's order.
// Without detailed it drops the per-request lists vLLM drops without
// --save-detailed.
func JSON(r *Result, detailed bool) ([]byte, error) {
	var o orderedJSON
	in := &r.Info
	s := &r.Summary
	o.add("date", in.Date.Format("20060102-150405"))
	o.add("endpoint_type", in.EndpointType)
	o.add("backend", in.Backend)
	o.add("label", nilIfEmpty(in.Label))
	o.add("model_id", in.ModelID)
	o.add("tokenizer_id", in.TokenizerID)
	o.add("num_prompts", in.NumPrompts)
	for _, kv := range in.Metadata {
		o.add(kv[0], kv[1])
	}
	o.add("request_rate", pythonFloatJSON(in.RequestRate))
	o.add("burstiness", pythonFloatJSON(in.Burstiness))
	if in.MaxConcurrency > 0 {
		o.add("max_concurrency", in.MaxConcurrency)
	} else {
		o.add("max_concurrency", nil)
	}
	if in.RampUp != nil {
		o.add("ramp_up_strategy", in.RampUp.Strategy)
		o.add("ramp_up_start_rps", in.RampUp.StartRPS)
		o.add("ramp_up_end_rps", in.RampUp.EndRPS)
	}
	o.add("duration", s.Duration.Seconds())
	o.add("completed", s.Completed)
	o.add("failed", s.Failed)
	o.add("total_input_tokens", s.TotalInput)
	o.add("total_output_tokens", s.TotalOutput)
	o.add("request_throughput", s.RequestThroughput)
	if s.RequestGoodput != nil {
		o.add("request_goodput", *s.RequestGoodput)
	} else {
		o.add("request_goodput", nil)
	}
	o.add("output_throughput", s.OutputThroughput)
	o.add("total_token_throughput", s.TotalTokenThroughput)

	if detailed {
		addDetailed(&o, r.Records)
	}
	o.add("max_output_tokens_per_s", s.MaxOutputTokensPerS)
	o.add("max_concurrent_requests", s.MaxConcurrentRequests)
	for _, m := range in.metrics() {
		d, ok := Distribution(s, m)
		if !ok {
			continue
		}
		o.add("mean_"+m+"_ms", d.Mean)
		o.add("median_"+m+"_ms", d.Median)
		o.add("std_"+m+"_ms", d.Std)
		for _, p := range in.percentiles() {
			v, _ := d.At(p)
			o.add("p"+percentileString(p)+"_"+m+"_ms", v)
		}
	}
	addServebenchKeys(&o, r)
	return o.bytes()
}

// addServebenchKeys adds servebench's own keys, after every vLLM key so
// vLLM readers are unaffected.
func addServebenchKeys(o *orderedJSON, r *Result) {
	in, s := &r.Info, &r.Summary
	if s.SendLag.Count > 0 {
		p50, _ := s.SendLag.At(50)
		p99, _ := s.SendLag.At(99)
		o.add("send_lag_ms", map[string]any{"p50": p50, "p99": p99, "max": s.SendLag.Max})
	}
	if len(s.OutputLenSources) > 0 {
		o.add("output_len_sources", s.OutputLenSources)
	}
	if len(s.Errors) > 0 {
		o.add("error_counts", s.Errors)
	}
	if s.ConnReused > 0 || s.Retries > 0 {
		o.add("connections_reused", s.ConnReused)
		o.add("retries", s.Retries)
	}
	o.add("interrupted", in.Interrupted)
	if in.Recovered {
		o.add(recoveredKey, RecoveredNote)
	}
	for _, sec := range r.Extra {
		o.add(sec.Key, sec.Value)
	}
}

// addDetailed adds --save-detailed's per-request lists.
func addDetailed(o *orderedJSON, records []metrics.Record) {
	recs := measured(records)
	o.add("input_lens", mapRecords(recs, func(r *metrics.Record) any { return r.PromptLen }))
	o.add("output_lens", mapRecords(recs, func(r *metrics.Record) any { return outputLen(r) }))
	o.add("ttfts", mapRecords(recs, func(r *metrics.Record) any { return r.TTFT.Seconds() }))
	o.add("itls", mapRecords(recs, func(r *metrics.Record) any { return seconds(r.ITL) }))
	o.add("latencies", mapRecords(recs, func(r *metrics.Record) any { return r.Latency.Seconds() }))
	o.add("start_times", mapRecords(recs, func(r *metrics.Record) any { return r.Start.Seconds() }))
	o.add("queue_times", mapRecords(recs, func(r *metrics.Record) any { return r.QueueTime().Seconds() }))
	o.add("generated_texts", mapRecords(recs, func(r *metrics.Record) any { return r.GeneratedText }))
	o.add("errors", mapRecords(recs, func(r *metrics.Record) any { return r.Error }))
}

// measured drops warmup records, which vLLM never reports, and puts the
// rest in request order: vLLM's client gathers its outputs in the order it
// sent the requests, so its per-request arrays are in that order whatever
// order the replies finished in (records are kept as they finish).
func measured(recs []metrics.Record) []*metrics.Record {
	out := make([]*metrics.Record, 0, len(recs))
	for i := range recs {
		if !recs[i].Warmup {
			out = append(out, &recs[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *metrics.Record) int { return cmp.Compare(a.Index, b.Index) })
	return out
}

func mapRecords(recs []*metrics.Record, f func(*metrics.Record) any) []any {
	out := make([]any, len(recs))
	for i, r := range recs {
		out[i] = f(r)
	}
	return out
}

// outputLen is what vLLM reports per request: 0 for failures.
func outputLen(r *metrics.Record) int {
	if !r.Success {
		return 0
	}
	return r.OutputLen
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ResultFilename builds vLLM's default result file name:
// {label|backend}-{rate}qps[-concurrency{N}]-{model_basename}-{date}.json.
func ResultFilename(in *RunInfo) string {
	prefix := in.Label
	if prefix == "" {
		prefix = in.Backend
	}
	name := prefix + "-" + pythonFloat(in.RequestRate) + "qps"
	if in.MaxConcurrency > 0 {
		name += "-concurrency" + strconv.Itoa(in.MaxConcurrency)
	}
	model := filepath.Base(strings.TrimRight(in.ModelID, "/"))
	return name + "-" + model + "-" + in.Date.Format("20060102-150405") + ".json"
}

// pythonFloat formats v as Python's str(float) does: 4 → "4.0",
// 0.25 → "0.25", +Inf → "inf".
func pythonFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pythonFloatJSON is v as Python's json.dump writes a float: 4.0 rather
// than Go's 4, and the string "inf" that vLLM stores for an infinite rate.
func pythonFloatJSON(v float64) any {
	if math.IsInf(v, 1) {
		return "inf"
	}
	if math.IsNaN(v) || math.IsInf(v, -1) {
		return v // json.Marshal reports these as the error they are
	}
	return json.RawMessage(pythonFloat(v))
}

// RecordsFilename is where per-request records stream beside a result file.
func RecordsFilename(resultPath string) string {
	return strings.TrimSuffix(resultPath, ".json") + ".records.jsonl"
}

// SummaryJSON returns the load-test style summary (--summary-json): totals,
// requests_per_second, and average/p50/p95/p99 of latency, TTFT, TPOT and
// per-request output tokens/s. Latencies are in milliseconds.
func SummaryJSON(r *Result) ([]byte, error) {
	s := &r.Summary
	dist := func(d metrics.Distribution) map[string]any {
		out := map[string]any{"average": d.Mean}
		for _, p := range []float64{50, 95, 99} {
			v, ok := d.At(p)
			if !ok {
				out["p"+percentileString(p)] = nil
				continue
			}
			out["p"+percentileString(p)] = v
		}
		return out
	}
	var o orderedJSON
	o.add("total_requests", s.Completed+s.Failed)
	o.add("successful_requests", s.Completed)
	o.add("failed_requests", s.Failed)
	o.add("duration_s", s.Duration.Seconds())
	o.add("total_input_tokens", s.TotalInput)
	o.add("total_output_tokens", s.TotalOutput)
	o.add("requests_per_second", s.RequestThroughput)
	o.add("output_tokens_per_second", s.OutputThroughput)
	o.add("total_tokens_per_second", s.TotalTokenThroughput)
	o.add("latency_ms", dist(s.E2EL))
	o.add("ttft_ms", dist(s.TTFT))
	o.add("tpot_ms", dist(s.TPOT))
	o.add("tokens_per_second_per_request", dist(s.TokensPerSecond))
	o.add("interrupted", r.Info.Interrupted)
	return o.bytes()
}
