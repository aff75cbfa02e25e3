package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// RequestTiming is one request of a run, in the units reports print.
type RequestTiming struct {
	// Start is seconds since the earliest request of the run started; NaN
	// when the file has no start times (older vLLM without start_times).
	Start   float64
	TTFT    float64   // ms
	Latency float64   // ms, start to last token (E2EL)
	ITL     []float64 // ms, gaps between token chunks
	// PromptLen is the request's input tokens; 0 when the file does not
	// say (vLLM writes input_lens only with --save-detailed).
	PromptLen int
	OutputLen int
	Success   bool
}

// TPOT is vLLM's time per output token after the first, in ms, defined
// for successful requests with more than one output token.
func (t RequestTiming) TPOT() (float64, bool) {
	if !t.Success || t.OutputLen <= 1 {
		return 0, false
	}
	return (t.Latency - t.TTFT) / float64(t.OutputLen-1), true
}

// Requests returns the run's per-request timings, from the records file
// beside the result when there is one, else from the --save-detailed
// arrays (ttfts, latencies, itls, start_times, input_lens, output_lens,
// errors; times in seconds, as vLLM writes them). It returns nil when the
// run holds neither.
// Start times are rebased to the earliest start, since vLLM writes
// perf_counter instants whose origin means nothing.
func (r LoadedResult) Requests() ([]RequestTiming, error) {
	var timings []RequestTiming
	var err error
	if r.RecordsPath != "" {
		timings, err = readRecordsFile(r.RecordsPath)
	} else {
		timings, err = r.detailedTimings()
	}
	if err != nil || len(timings) == 0 {
		return nil, err
	}
	earliest := math.Inf(1)
	for _, t := range timings {
		if !math.IsNaN(t.Start) {
			earliest = min(earliest, t.Start)
		}
	}
	if !math.IsInf(earliest, 1) {
		for i := range timings {
			timings[i].Start -= earliest
		}
	}
	return timings, nil
}

// maxRecordLine bounds one records.jsonl line; generated texts can be long.
const maxRecordLine = 64 << 20

func readRecordsFile(path string) ([]RequestTiming, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading per-request records: %w", err)
	}
	defer f.Close()
	return decodeRecords(f, path)
}

// recordTiming is the part of metrics.Record (same JSON names) reports
// draw; decoding only these fields skips generated texts and the rest.
type recordTiming struct {
	Start     int64   `json:"start_ns"`
	TTFT      int64   `json:"ttft_ns"`
	Latency   int64   `json:"latency_ns"`
	ITL       []int64 `json:"itl_ns"`
	PromptLen int     `json:"prompt_len"`
	OutputLen int     `json:"output_len"`
	Success   bool    `json:"success"`
	Warmup    bool    `json:"warmup"`
}

func decodeRecords(r io.Reader, name string) ([]RequestTiming, error) {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64<<10), maxRecordLine)
	var timings []RequestTiming
	for line := 1; scanner.Scan(); line++ {
		text := bytes.TrimSpace(scanner.Bytes())
		if len(text) == 0 {
			continue
		}
		var rec recordTiming
		if err := json.Unmarshal(text, &rec); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, describeJSONError(text, err))
		}
		if rec.Warmup {
			continue
		}
		t := RequestTiming{
			Start:     float64(rec.Start) / 1e9,
			TTFT:      durationMS(rec.TTFT),
			Latency:   durationMS(rec.Latency),
			PromptLen: rec.PromptLen,
			OutputLen: rec.OutputLen,
			Success:   rec.Success,
		}
		if len(rec.ITL) > 0 {
			t.ITL = make([]float64, len(rec.ITL))
			for i, gap := range rec.ITL {
				t.ITL[i] = durationMS(gap)
			}
		}
		timings = append(timings, t)
	}
	if err := scanner.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d MiB; is this a records.jsonl file?", name, maxRecordLine>>20)
		}
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return timings, nil
}

func durationMS[D ~int64](d D) float64 { return float64(d) / 1e6 }

func (r LoadedResult) detailedTimings() ([]RequestTiming, error) {
	ttfts := r.floatList("ttfts")
	latencies := r.floatList("latencies")
	n := max(len(ttfts), len(latencies))
	if n == 0 {
		return nil, nil
	}
	starts := r.floatList("start_times")
	inputLens := r.floatList("input_lens")
	outputLens := r.floatList("output_lens")
	itls, _ := r.Fields["itls"].([]any)
	errs, _ := r.Fields["errors"].([]any)
	at := func(xs []float64, i int) float64 {
		if i < len(xs) {
			return xs[i]
		}
		return math.NaN()
	}
	timings := make([]RequestTiming, n)
	for i := range timings {
		t := RequestTiming{
			Start:   at(starts, i),
			TTFT:    at(ttfts, i) * 1e3,
			Latency: at(latencies, i) * 1e3,
			Success: true,
		}
		if i < len(errs) {
			if msg, ok := errs[i].(string); ok && msg != "" {
				t.Success = false
			}
		}
		if v := at(inputLens, i); v > 0 && v < math.MaxInt32 {
			t.PromptLen = int(v)
		}
		if v := at(outputLens, i); !math.IsNaN(v) {
			t.OutputLen = int(v)
		}
		if i < len(itls) {
			for _, gap := range anyFloats(itls[i]) {
				t.ITL = append(t.ITL, gap*1e3)
			}
		}
		timings[i] = t
	}
	return timings, nil
}

// floatList returns a numeric array key; non-numeric entries become NaN.
func (r LoadedResult) floatList(key string) []float64 {
	return anyFloats(r.Fields[key])
}

func anyFloats(v any) []float64 {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]float64, len(list))
	for i, x := range list {
		f, ok := anyToFloat(x)
		if !ok {
			f = math.NaN()
		}
		out[i] = f
	}
	return out
}

// sortedFinite returns the finite values of xs, sorted.
func sortedFinite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
