package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
)

// Options selects what a Summary reports beyond the fixed totals.
type Options struct {
	// Percentiles are the --metric-percentiles, in percent (default 99).
	Percentiles []float64
	// Goodput holds the --goodput SLOs in milliseconds, keyed "ttft",
	// "tpot", "e2el". A request is good iff every given SLO holds.
	Goodput map[string]float64
}

// Summary is the run-level result, with vLLM's definitions.
type Summary struct {
	Completed int
	Failed    int
	// Duration is the benchmark duration: for bench, from just before the
	// first dispatch until every request returned (failures and stragglers
	// included); for sim, the virtual time span.
	Duration    time.Duration
	TotalInput  int64 // Σ prompt_len over successful requests
	TotalOutput int64 // Σ output_len over successful requests

	RequestThroughput    float64
	OutputThroughput     float64
	TotalTokenThroughput float64
	// RequestGoodput is nil when no --goodput SLO was given.
	RequestGoodput *float64
	GoodRequests   int

	// MaxOutputTokensPerS is the busiest one-second bin of output tokens
	// (bins counted from the earliest successful start). Tokens, not
	// chunks: a chunk carrying k tokens counts k.
	MaxOutputTokensPerS float64
	// MaxConcurrentRequests is the most successful requests in flight at
	// once, by a sweep over [start, start+latency) with departures before
	// arrivals on ties.
	MaxConcurrentRequests int

	TTFT          Distribution
	TPOT          Distribution
	ITL           Distribution
	E2EL          Distribution
	ClientQueue   Distribution // vLLM's client_queue_time
	E2ELWithQueue Distribution // vLLM's e2el_including_client_queue
	// SendLag is how late requests left against the open-loop schedule,
	// over every request sent (so a slow client can never hide).
	SendLag Distribution
	// TokensPerSecond is each successful request's output_len / E2EL, the
	// per-user speed load-test scripts report.
	TokensPerSecond Distribution

	// OutputLenSources counts where output token counts came from
	// ("usage", "tokenizer", "chunks").
	OutputLenSources map[string]int
	// Errors counts failed requests by reason.
	Errors map[string]int
	// ConnReused counts requests answered on a kept-alive connection, and
	// Retries the resends after a reused connection failed before any
	// response byte (bench only; both over every request sent).
	ConnReused int
	Retries    int
}

// Accumulator builds a Summary from records streamed one at a time, so a
// long run or simulation never has to hold every record.
type Accumulator struct {
	opts Options

	// requests holds, per successful request, what the distributions need
	// (start, as the gap from the previous row's; TTFT; latency; queue
	// time; output length), about 10 bytes a request in a 50 req/s
	// simulation where seven float64 samples and an interval took 72;
	// lags holds every request's send lag.
	requests   packedColumns
	prevStart  int64
	lags       packedColumns
	itl        multiset // ns, pooled per token
	tokenTimes multiset // ns offsets of each output token
	// sortBudget bounds the keys the summary sorts at once (tests lower it).
	sortBudget int

	// queued: some request waited for a concurrency slot.
	queued bool

	completed, failed, good int
	connReused, retries     int
	totalIn, totalOut       int64
	minStart                int64
	sources, errors         map[string]int
}

// NewAccumulator returns an empty Accumulator for opts. With no
// percentiles given it uses vLLM's default, 99.
func NewAccumulator(opts Options) *Accumulator {
	if len(opts.Percentiles) == 0 {
		opts.Percentiles = []float64{99}
	}
	return &Accumulator{
		requests:   newPackedColumns(requestFields),
		lags:       newPackedColumns(1),
		sortBudget: sortBudget,
		opts:       opts,
		minStart:   math.MaxInt64,
		sources:    map[string]int{},
		errors:     map[string]int{},
	}
}

// Add folds one record into the summary. Warmup records are ignored.
func (a *Accumulator) Add(r *Record) {
	if r.Warmup {
		return
	}
	a.lags.add(int64(r.SendLag()))
	a.retries += r.Retries
	if r.ConnReused {
		a.connReused++
	}
	if !r.Success {
		a.failed++
		reason := r.Error
		if reason == "" {
			reason = "unknown error"
		}
		a.errors[reason]++
		return
	}
	a.completed++
	a.totalIn += int64(r.PromptLen)
	a.totalOut += int64(r.OutputLen)
	if r.OutputLenSource != "" {
		a.sources[r.OutputLenSource]++
	}
	start := int64(r.Start)
	a.queued = a.queued || r.QueueTime() != 0
	a.requests.add(start-a.prevStart, int64(r.TTFT), int64(r.Latency), int64(r.QueueTime()), int64(r.OutputLen))
	a.prevStart = start
	tpot, _ := r.TPOT()
	for _, gap := range r.ITL {
		a.itl.add(int64(gap))
	}

	a.minStart = min(a.minStart, start)
	t := start + int64(r.TTFT)
	a.tokenTimes.addN(t, int64(max(r.FirstChunkTokens, 1)))
	for _, gap := range r.ITL {
		t += int64(gap)
		a.tokenTimes.add(t)
	}

	if len(a.opts.Goodput) > 0 && a.isGood(r, tpot) {
		a.good++
	}
}

func (a *Accumulator) isGood(r *Record, tpot time.Duration) bool {
	// vLLM counts TPOT as 0 for requests with at most one output token,
	// which is what tpot holds for them.
	for key, slo := range a.opts.Goodput {
		var v float64
		switch key {
		case "ttft":
			v = ms(r.TTFT)
		case "tpot":
			v = ms(tpot)
		case "e2el":
			v = ms(r.Latency)
		}
		if v > slo {
			return false
		}
	}
	return true
}

// Summary computes the summary for a run of the given duration.
func (a *Accumulator) Summary(duration time.Duration) Summary {
	p := a.opts.Percentiles
	s := Summary{
		Completed:        a.completed,
		Failed:           a.failed,
		Duration:         duration,
		TotalInput:       a.totalIn,
		TotalOutput:      a.totalOut,
		ITL:              a.itl.distribution(p, 1e-6),
		OutputLenSources: a.sources,
		Errors:           a.errors,
		GoodRequests:     a.good,
		ConnReused:       a.connReused,
		Retries:          a.retries,
	}
	if secs := duration.Seconds(); secs > 0 {
		s.RequestThroughput = float64(a.completed) / secs
		s.OutputThroughput = float64(a.totalOut) / secs
		s.TotalTokenThroughput = float64(a.totalIn+a.totalOut) / secs
		if len(a.opts.Goodput) > 0 {
			g := float64(a.good) / secs
			s.RequestGoodput = &g
		}
	} else if len(a.opts.Goodput) > 0 {
		g := 0.0
		s.RequestGoodput = &g
	}
	s.MaxOutputTokensPerS = a.peakTokensPerSecond()
	a.requestDistributions(&s)
	return s
}

// The fields of Accumulator.requests' rows.
const (
	fieldStart = iota
	fieldTTFT
	fieldLatency
	fieldQueue
	fieldOutputLen
	requestFields
)

// requestDistributions fills the per-request distributions and the peak
// concurrency from the columns, one metric at a time, sorting at most
// sortBudget keys at once.
func (a *Accumulator) requestDistributions(s *Summary) {
	p := a.opts.Percentiles
	var buf, buf2, scratch []int64
	block := new(rowBlock)
	dist := func(fields []int, keys func(b *rowBlock, out []int64) []int64, value func(int64) float64) Distribution {
		return keyDistribution(newOrderedKeys(a.requests.rows, a.sortBudget, &buf, &scratch, a.column(block, fields, keys)), p, value)
	}
	field := func(f int) func(b *rowBlock, out []int64) []int64 {
		return func(b *rowBlock, out []int64) []int64 { return append(out, b.field[f][:b.n]...) }
	}
	s.TTFT = dist([]int{fieldTTFT}, field(fieldTTFT), nsToMS)
	s.TPOT = dist([]int{fieldTTFT, fieldLatency, fieldOutputLen}, func(b *rowBlock, out []int64) []int64 {
		for i, n := range b.field[fieldOutputLen][:b.n] {
			// Record.TPOT of a successful request.
			if n > 1 {
				out = append(out, int64(time.Duration(b.field[fieldLatency][i]-b.field[fieldTTFT][i])/time.Duration(n-1)))
			}
		}
		return out
	}, nsToMS)
	s.E2EL = dist([]int{fieldLatency}, field(fieldLatency), nsToMS)
	s.ClientQueue = dist([]int{fieldQueue}, field(fieldQueue), nsToMS)
	if a.queued {
		s.E2ELWithQueue = dist([]int{fieldQueue, fieldLatency}, func(b *rowBlock, out []int64) []int64 {
			for i, q := range b.field[fieldQueue][:b.n] {
				out = append(out, q+b.field[fieldLatency][i])
			}
			return out
		}, nsToMS)
	} else {
		// No request waited, so E2EL is the same with the queue time as
		// without.
		s.E2ELWithQueue = s.E2EL
		s.E2ELWithQueue.Percentiles = slices.Clone(s.E2EL.Percentiles)
	}
	s.TokensPerSecond = dist([]int{fieldLatency, fieldOutputLen}, func(b *rowBlock, out []int64) []int64 {
		for i, lat := range b.field[fieldLatency][:b.n] {
			if lat > 0 {
				out = append(out, floatKey(float64(b.field[fieldOutputLen][i])/time.Duration(lat).Seconds()))
			}
		}
		return out
	}, keyFloat)

	lags := newOrderedKeys(a.lags.rows, a.sortBudget, &buf, &scratch, func(yield func([]int64)) {
		r := a.lags.streams[0].reader()
		keys := block.field[0][:]
		for done := 0; done < a.lags.rows; done += len(keys) {
			keys = keys[:min(len(keys), a.lags.rows-done)]
			r.read(keys)
			yield(keys)
		}
	})
	s.SendLag = keyDistribution(lags, uniquePercentiles(append([]float64{50, 99}, p...)), nsToMS)

	// Peak concurrency reads the starts and the ends sorted side by side,
	// each in half the budget.
	half := max(a.sortBudget/2, 1)
	starts := newOrderedKeys(a.requests.rows, half, &buf, &scratch, a.column(block, []int{fieldStart}, field(fieldStart)))
	ends := newOrderedKeys(a.requests.rows, half, &buf2, &scratch, a.column(block, []int{fieldStart, fieldLatency}, func(b *rowBlock, out []int64) []int64 {
		for i, start := range b.field[fieldStart][:b.n] {
			out = append(out, start+b.field[fieldLatency][i])
		}
		return out
	}))
	s.MaxConcurrentRequests = peakConcurrencySorted(starts.cursor(), ends.cursor())
}

// rowBlock holds a block of the requests' rows, decoded field by field,
// and the keys computed from them; one is reused by every pass.
type rowBlock struct {
	n     int
	field [requestFields][scanBlock]int64
	keys  [scanBlock]int64
}

const scanBlock = 1024

// column returns a scan of the requests' rows, a block at a time through
// b, that decodes only fields (the start as the running sum of its gaps)
// and yields the keys that keys appends for each block.
func (a *Accumulator) column(b *rowBlock, fields []int, keys func(b *rowBlock, out []int64) []int64) func(yield func([]int64)) {
	return func(yield func([]int64)) {
		readers := make([]packedReader, len(fields))
		for i, f := range fields {
			readers[i] = a.requests.streams[f].reader()
		}
		var start int64
		for done := 0; done < a.requests.rows; done += b.n {
			b.n = min(scanBlock, a.requests.rows-done)
			for i, f := range fields {
				col := b.field[f][:b.n]
				readers[i].read(col)
				if f == fieldStart {
					for j, gap := range col {
						start += gap
						col[j] = start
					}
				}
			}
			yield(keys(b, b.keys[:0]))
		}
	}
}

func (a *Accumulator) peakTokensPerSecond() float64 {
	if a.completed == 0 {
		return 0
	}
	var peak, count, bin int64 = 0, 0, -1
	a.tokenTimes.each(func(t, n int64) {
		b := (t - a.minStart) / int64(time.Second)
		if b != bin {
			bin, count = b, 0
		}
		count += n
		peak = max(peak, count)
	})
	return float64(peak)
}

// peakConcurrency is the most intervals [start, end) that overlap.
func peakConcurrency(intervals [][2]int64) int {
	sorted := func(i int) *orderedKeys {
		keys := make([]int64, len(intervals))
		for j, iv := range intervals {
			keys[j] = iv[i]
		}
		return newOrderedKeys(len(keys), len(keys), new([]int64), new([]int64), func(yield func([]int64)) { yield(keys) })
	}
	return peakConcurrencySorted(sorted(0).cursor(), sorted(1).cursor())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func uniquePercentiles(ps []float64) []float64 {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

// GoodputKeys are the SLO names vLLM's --goodput accepts.
var GoodputKeys = []string{"ttft", "tpot", "e2el"}

// ParseGoodput parses vLLM's --goodput arguments ("ttft:500", "tpot:50"),
// values in milliseconds.
func ParseGoodput(args []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, arg := range args {
		for _, item := range strings.Fields(strings.ReplaceAll(arg, ",", " ")) {
			key, val, ok := strings.Cut(item, ":")
			if !ok {
				return nil, option.Errorf("{goodput} %q: expected KEY:VALUE_MS with KEY one of %s", item, strings.Join(GoodputKeys, ", "))
			}
			if !slices.Contains(GoodputKeys, key) {
				return nil, option.Errorf("{goodput} %q: invalid metric name %q; the service level objective name should be one of %s", item, key, strings.Join(GoodputKeys, ", "))
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, option.Errorf("{goodput} %q: invalid value %q; the service level objective value should be a non-negative number of milliseconds", item, val)
			}
			out[key] = v
		}
	}
	return out, nil
}

// ParsePercentiles parses --metric-percentiles ("25,50,99").
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p > 100 || math.IsNaN(p) {
			return nil, option.Errorf("{metric_percentiles} %q: %q is not a percentile between 0 and 100", s, f)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, option.Errorf("{metric_percentiles} %q: give at least one percentile, e.g. 50,90,99", s)
	}
	return out, nil
}

// PercentileMetrics are the names --percentile-metrics accepts.
var PercentileMetrics = []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"}

// ParsePercentileMetrics parses --percentile-metrics ("ttft,tpot,itl").
func ParsePercentileMetrics(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(PercentileMetrics, f) {
			return nil, option.Errorf("{percentile_metrics} %q: unknown metric %q; choose from %s", s, f, strings.Join(PercentileMetrics, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, option.Errorf("{percentile_metrics} %q: give at least one of %s", s, strings.Join(PercentileMetrics, ", "))
	}
	return out, nil
}
