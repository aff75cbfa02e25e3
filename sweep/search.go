package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

// Search variables.
const (
	VariableRequestRate    = "request-rate"
	VariableMaxConcurrency = "max-concurrency"
)

// SearchConfig is an SLA search: the highest request rate (or
// concurrency) whose run meets every SLA term.
type SearchConfig struct {
	Dir string
	// Base is the run each step starts from (nil: bench with vLLM's
	// defaults); the step sets Variable on a copy.
	Base *runspec.Spec
	// Variable is VariableRequestRate (default) or VariableMaxConcurrency.
	Variable string
	SLA      SLA
	// Min and Max bound the search; 0 leaves them open. Without Max, a
	// request-rate search first probes --request-rate inf and runs at the
	// achieved request_throughput, where vLLM's auto_tune starts, as the
	// upper bound; a concurrency search doubles from Min (default 1) until
	// the SLA fails.
	Min, Max float64
	// The search stops when the bracket [met, violated] is narrower than
	// max(AbsTolerance, Tolerance × upper). Defaults: 5%, and 0.25 req/s or
	// 1 concurrent request.
	Tolerance, AbsTolerance float64
	// MaxRuns caps the benchmark runs (default 20).
	MaxRuns int
	// Resume reuses the runs of an interrupted search in Dir.
	Resume        bool
	Label, Target string
	Run           Runner
	Progress      func(Progress)
	Now           func() time.Time
	Logger        *slog.Logger
}

// Trial is one run of the search.
type Trial struct {
	// Value is the variable's value; +Inf for the all-at-once probe.
	Value   float64        `json:"-"`
	Text    string         `json:"value"`
	Point   string         `json:"point"` // directory name in the run directory
	Met     bool           `json:"met"`
	Margins []TermMargin   `json:"margins"`
	Metrics map[string]any `json:"-"`
	// Reused marks a run taken from an interrupted search being resumed.
	Reused bool `json:"reused,omitempty"`
}

// SearchResult is the outcome, also stored in the manifest.
type SearchResult struct {
	Variable string `json:"variable"`
	SLA      SLA    `json:"sla"`
	// Best is the highest value tried that met the SLA; nil when none did.
	Best *Trial `json:"best,omitempty"`
	// Upper is the lowest value known to violate the SLA (tried, or the
	// probe's throughput bound); 0 when nothing violated it.
	Upper  float64 `json:"upper,omitempty"`
	Trials []Trial `json:"trials"`
	// Runs is how many benchmark runs the search took, resumed ones
	// included.
	Runs int `json:"runs"`
	// ProbeThroughput is the request_throughput of the --request-rate inf
	// probe, when one ran.
	ProbeThroughput float64 `json:"probe_throughput,omitempty"`
	// StepDownRuns is a lower bound on the runs vLLM's auto_tune procedure
	// (the inf probe, then 1 req/s steps down from int(throughput)+1 until
	// the SLA holds) needs on the same target, assuming latency grows with
	// rate; 0 when not comparable.
	StepDownRuns int `json:"step_down_runs,omitempty"`
	// Stopped says why the search ended.
	Stopped string `json:"stopped"`
}

type searcher struct {
	cfg      SearchConfig
	ex       *executor
	reusable map[string]Point
	result   *SearchResult
}

// Search runs an SLA search and returns its result and manifest. A run
// that fails, or a result without an SLA key, ends the search with an
// error; the manifest keeps every run so far for --resume.
func Search(ctx context.Context, cfg SearchConfig) (*SearchResult, *Manifest, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, nil, err
	}
	ex, err := newExecutor(cfg.Dir, cfg.Resume, cfg.Now, cfg.Logger, cfg.Run, cfg.Progress, cfg.Base)
	if err != nil {
		return nil, nil, err
	}
	ex.estimatedTotal = true
	s := &searcher{cfg: cfg, ex: ex, reusable: map[string]Point{}, result: &SearchResult{Variable: cfg.Variable, SLA: cfg.SLA}}
	if prev := ex.previous; prev != nil {
		if err := s.checkResumable(prev); err != nil {
			return nil, nil, err
		}
		for _, p := range prev.Points {
			if ex.hasResult(p) && len(p.Params) == 1 {
				s.reusable[p.Params[0].Value] = p
			}
		}
	}
	ex.manifest = ex.newManifest(cfg.Label, cfg.Target, cfg.Base.RedactedArgs(), nil, 1)
	ex.manifest.Points = []Point{}
	ex.manifest.Search = s.result
	if prev := ex.previous; prev != nil {
		ex.manifest.Created = prev.Created
	}
	if err := ex.save(); err != nil {
		return nil, nil, err
	}
	err = s.search(ctx)
	if s.result.Best != nil && s.result.ProbeThroughput > 0 && cfg.Variable == VariableRequestRate {
		s.result.StepDownRuns = stepDownRuns(s.result.ProbeThroughput, s.result.Upper)
	}
	if serr := ex.save(); serr != nil {
		err = errors.Join(err, serr)
	}
	return s.result, ex.manifest, err
}

func (cfg *SearchConfig) setDefaults() error {
	if cfg.Run == nil {
		return errors.New("sweep: no Runner given")
	}
	if cfg.Dir == "" {
		return option.New("no run directory given: pass {dir}")
	}
	if len(cfg.SLA) == 0 {
		return option.New("no SLA given: pass {sla} 'p99_ttft_ms<=500,...'")
	}
	if cfg.Variable == "" {
		cfg.Variable = VariableRequestRate
	}
	if cfg.Variable != VariableRequestRate && cfg.Variable != VariableMaxConcurrency {
		return option.Errorf("{sla_variable} %q: use %s or %s", cfg.Variable, VariableRequestRate, VariableMaxConcurrency)
	}
	if cfg.Base == nil {
		cfg.Base = runspec.New(runspec.Bench)
	}
	if cfg.Base.Changed(cfg.Variable) {
		return fmt.Errorf("--%s is what the SLA search varies; remove it from the benchmark flags", cfg.Variable)
	}
	if err := checkOwned(cfg.Base); err != nil {
		return err
	}
	if err := cfg.Base.Validate(); err != nil {
		return err
	}
	if err := CheckSLA(cfg.Base, cfg.SLA); err != nil {
		return err
	}
	if cfg.Min < 0 || cfg.Max < 0 || cfg.Max > 0 && cfg.Min >= cfg.Max {
		return option.Errorf("{sla_min} %g and {sla_max} %g: need 0 <= min < max", cfg.Min, cfg.Max)
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = 0.05
	}
	if cfg.AbsTolerance <= 0 {
		cfg.AbsTolerance = 0.25
		if cfg.Variable == VariableMaxConcurrency {
			cfg.AbsTolerance = 1
		}
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 20
	}
	return nil
}

func (s *searcher) checkResumable(prev *Manifest) error {
	switch {
	case prev.Search == nil:
		return option.Errorf("cannot resume in %s: it holds a grid sweep, not an SLA search; use another {dir}", s.cfg.Dir)
	case prev.Search.Variable != s.cfg.Variable || prev.Search.SLA.String() != s.cfg.SLA.String():
		return option.Errorf("cannot resume in %s: it searched %s for %s, now %s for %s; use another {dir}", s.cfg.Dir, prev.Search.Variable, prev.Search.SLA, s.cfg.Variable, s.cfg.SLA)
	case !slices.Equal(prev.BaseArgs, s.cfg.Base.RedactedArgs()) && !(len(prev.BaseArgs) == 0 && len(s.cfg.Base.RedactedArgs()) == 0):
		return option.Errorf("cannot resume in %s: its benchmark flags were %q, now %q; use another {dir}", s.cfg.Dir, prev.BaseArgs, s.cfg.Base.RedactedArgs())
	}
	return nil
}

// errBudget ends the search when MaxRuns is spent.
var errBudget = errors.New("run budget spent")

// bracket is the interval the search narrows: lo met the SLA and hi
// violated it. dLo and dHi are their distances from the SLA boundary, which
// the refinement interpolates between.
type bracket struct {
	lo, hi, dLo, dHi float64
	// met says whether lo holds a value that met the SLA; until one does,
	// only hi bounds the search.
	met bool
}

// search brackets the boundary from above, then from below unless the
// upper bound's search already found a value that meets the SLA, and
// narrows the bracket. A step that settles the search sets Stopped and
// reports done.
func (s *searcher) search(ctx context.Context) error {
	var b bracket
	var done bool
	var err error
	switch {
	case s.cfg.Max > 0:
		b, done, err = s.boundAtMax(ctx)
	case s.cfg.Variable != VariableMaxConcurrency:
		b, done, err = s.boundByProbe(ctx)
	default:
		b, done, err = s.boundByDoubling(ctx)
	}
	if err != nil || done {
		return s.stop(err)
	}
	if !b.met {
		if b, done, err = s.findLowerBound(ctx, b); err != nil || done {
			return s.stop(err)
		}
	}
	return s.stop(s.refine(ctx, b))
}

// stopAt ends the search at a trial that met the SLA, saying why no
// higher value is worth trying.
func (s *searcher) stopAt(t *Trial, why string) (bracket, bool, error) {
	s.result.Best = t
	s.result.Stopped = why
	return bracket{}, true, nil
}

// boundAtMax tries the user's upper bound.
func (s *searcher) boundAtMax(ctx context.Context) (bracket, bool, error) {
	return s.tryUpperBound(ctx, s.cfg.Max, "the SLA holds at the upper bound %s; raise --sla-max to search higher")
}

// tryUpperBound runs value as the top of the bracket: the search's answer
// if it meets the SLA (whyMet, given the value's text, says why nothing
// higher is tried), else the bracket's upper end.
func (s *searcher) tryUpperBound(ctx context.Context, value float64, whyMet string) (bracket, bool, error) {
	t, err := s.evaluate(ctx, value)
	if err != nil {
		return bracket{}, false, err
	}
	if t.Met {
		return s.stopAt(t, fmt.Sprintf(whyMet, t.Text))
	}
	return bracket{hi: t.Value, dHi: distance(t.Margins)}, false, nil
}

// boundByProbe sends every request at once and takes the throughput the
// server sustained as the upper bound.
func (s *searcher) boundByProbe(ctx context.Context) (bracket, bool, error) {
	t, err := s.evaluate(ctx, math.Inf(1))
	if err != nil {
		return bracket{}, false, err
	}
	if t.Met {
		return s.stopAt(t, "the SLA holds even with every request sent at once (--request-rate inf)")
	}
	throughput, ok := report.LoadedResult{Fields: t.Metrics}.Number("request_throughput")
	if !ok || !(throughput > 0) || math.IsInf(throughput, 0) {
		return bracket{}, false, option.New("the {request_rate} inf probe reported no request_throughput to bound the search; pass {sla_max}")
	}
	s.result.ProbeThroughput = throughput
	// The saturated throughput is where vLLM's auto_tune starts its
	// step-down; a short run can still meet the SLA there, so try it
	// rather than assume it fails.
	return s.tryUpperBound(ctx, s.round(throughput),
		"the SLA holds at %s req/s, the throughput the server sustained with every request sent at once; higher rates only queue")
}

// boundByDoubling doubles the concurrency from Min until the SLA fails;
// the last value that met it is the lower bound.
func (s *searcher) boundByDoubling(ctx context.Context) (bracket, bool, error) {
	var b bracket
	x := max(s.cfg.Min, 1)
	for {
		t, err := s.evaluate(ctx, x)
		if err != nil {
			return bracket{}, false, err
		}
		if !t.Met {
			b.hi, b.dHi = x, distance(t.Margins)
			break
		}
		b.met, b.lo, b.dLo = true, x, distance(t.Margins)
		s.result.Best = t
		if x >= maxConcurrencyBound {
			s.result.Stopped = fmt.Sprintf("the SLA holds up to concurrency %g; pass --sla-max to search higher", x)
			return bracket{}, true, nil
		}
		x = min(x*2, maxConcurrencyBound)
	}
	if !b.met {
		s.result.Upper = b.hi
		s.result.Stopped = fmt.Sprintf("the SLA fails even at %s %s", s.cfg.Variable, formatValue(b.hi))
		return bracket{}, true, nil
	}
	return b, false, nil
}

// findLowerBound looks below the upper bound for a value that meets the
// SLA. Latency climbs steeply only near capacity, so the boundary usually
// sits in the upper part of the range: try 70% of the bound first, then
// halve.
func (s *searcher) findLowerBound(ctx context.Context, b bracket) (bracket, bool, error) {
	x := s.cfg.Min
	if x == 0 {
		x = s.round(b.hi * firstGuess)
	}
	floor := s.floor(b.hi)
	for {
		t, err := s.evaluate(ctx, x)
		if err != nil {
			return bracket{}, false, err
		}
		if t.Met {
			b.met, b.lo, b.dLo = true, x, distance(t.Margins)
			s.result.Best = t
			return b, false, nil
		}
		b.hi, b.dHi = x, distance(t.Margins)
		next := s.round(x / 2)
		if s.cfg.Min > 0 || next < floor || next >= x {
			s.result.Upper = b.hi
			s.result.Stopped = fmt.Sprintf("the SLA fails even at %s %s", s.cfg.Variable, formatValue(x))
			return bracket{}, true, nil
		}
		x = next
	}
}

// refine narrows the bracket by regula falsi (Illinois variant) on the
// distance, after one bisection: the bracket's ends are often far apart in
// latency (one at saturation), and halving first keeps the interpolation
// from crawling along the lower end.
func (s *searcher) refine(ctx context.Context, b bracket) error {
	integer := s.cfg.Variable == VariableMaxConcurrency
	lo, hi, dLo, dHi := b.lo, b.hi, b.dLo, b.dHi
	side := 0
	for step := 0; ; step++ {
		s.result.Upper = hi
		if hi-lo <= max(s.cfg.AbsTolerance, s.cfg.Tolerance*hi) {
			s.result.Stopped = fmt.Sprintf("boundary bracketed within tolerance: meets at %s, fails at %s", formatValue(lo), formatValue(hi))
			return nil
		}
		w := hi - lo
		x := lo + w/2
		if step > 0 {
			x = lo + w*dLo/(dLo-dHi)
			if math.IsNaN(x) || math.IsInf(x, 0) {
				x = lo + w/2
			}
			x = min(max(x, lo+0.1*w), hi-0.1*w)
		}
		x = s.round(x)
		if integer {
			x = min(max(x, lo+1), hi-1)
		}
		if x <= lo || x >= hi {
			s.result.Stopped = fmt.Sprintf("no %s left between %s (meets) and %s (fails)", s.cfg.Variable, formatValue(lo), formatValue(hi))
			return nil
		}
		t, err := s.evaluate(ctx, x)
		if err != nil {
			return err
		}
		if t.Met {
			lo, dLo = x, distance(t.Margins)
			s.result.Best = t
			if side == 1 {
				dHi /= 2
			}
			side = 1
		} else {
			hi, dHi = x, distance(t.Margins)
			if side == -1 {
				dLo /= 2
			}
			side = -1
		}
	}
}

// firstGuess is where, as a fraction of the upper bound, the search first
// looks for a rate that meets the SLA.
const firstGuess = 0.7

// maxConcurrencyBound stops a concurrency search that never fails.
const maxConcurrencyBound = 4096

// stop turns the budget error into a normal end.
func (s *searcher) stop(err error) error {
	if errors.Is(err, errBudget) {
		s.result.Stopped = fmt.Sprintf("run budget of %d spent", s.cfg.MaxRuns)
		return nil
	}
	return err
}

func (s *searcher) round(x float64) float64 {
	if s.cfg.Variable == VariableMaxConcurrency {
		return math.Max(1, math.Round(x))
	}
	return math.Max(0.01, math.Round(x*100)/100)
}

// floor is the lowest value worth trying before declaring the SLA
// unreachable.
func (s *searcher) floor(hi float64) float64 {
	if s.cfg.Variable == VariableMaxConcurrency {
		return 1
	}
	return max(0.01, hi/64)
}

// evaluate runs the benchmark at value (or reuses a resumed run of it) and
// judges the SLA.
func (s *searcher) evaluate(ctx context.Context, value float64) (*Trial, error) {
	text := formatValue(value)
	ex := s.ex
	var metrics map[string]any
	var point Point
	reused := false
	if prev, ok := s.reusable[text]; ok {
		data, err := os.ReadFile(ex.resultPath(prev))
		if err == nil {
			metrics, err = readResultMap(ex.resultPath(prev), data)
		}
		if err != nil {
			return nil, err
		}
		point, reused = prev, true
		point.Index = len(ex.manifest.Points)
		ex.manifest.Points = append(ex.manifest.Points, point)
		ex.done++
		ex.total = len(ex.manifest.Points) + s.estimateLeft()
		ex.report("skipped", point.Index, 0)
	} else {
		if s.result.Runs >= s.cfg.MaxRuns {
			return nil, errBudget
		}
		i := len(ex.manifest.Points)
		name := fmt.Sprintf("sla-%02d-%s=%s", i, s.cfg.Variable, text)
		params := []Param{{Flag: s.cfg.Variable, Value: text}}
		spec, err := PointSpec(s.cfg.Base, params)
		if err != nil {
			return nil, err
		}
		point = Point{
			Index: i, Name: name, Params: params, Repeat: 1,
			Args:   spec.RedactedArgs(),
			Status: StatusPending, Result: name + "/result.json",
		}
		ex.manifest.Points = append(ex.manifest.Points, point)
		ex.specs[i] = spec
		ex.total = len(ex.manifest.Points) + s.estimateLeft()
		ex.remaining = ex.total - i
		metrics, err = ex.runPoint(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				return nil, option.Errorf("SLA search interrupted after %d runs; rerun with {resume} to continue: %w", s.result.Runs, ctx.Err())
			}
			return nil, fmt.Errorf("run at %s %s failed: %w", s.cfg.Variable, text, err)
		}
		point = ex.manifest.Points[i]
	}
	s.result.Runs++
	margins, err := s.cfg.SLA.Evaluate(metrics)
	if err != nil {
		return nil, fmt.Errorf("run at %s %s (%s): %w", s.cfg.Variable, text, ex.resultPath(point), err)
	}
	t := Trial{Value: value, Text: text, Point: point.Name, Met: allMet(margins), Margins: margins, Metrics: metrics, Reused: reused}
	s.result.Trials = append(s.result.Trials, t)
	return &s.result.Trials[len(s.result.Trials)-1], nil
}

// estimateLeft guesses the runs still to come, for progress: the
// bisection steps the current bracket needs, or a few while bracketing.
func (s *searcher) estimateLeft() int {
	best, upper := s.result.Best, s.result.Upper
	if best == nil || upper <= 0 {
		return 4
	}
	w := upper - best.Value
	tol := max(s.cfg.AbsTolerance, s.cfg.Tolerance*upper)
	if w <= tol {
		return 0
	}
	return int(math.Ceil(math.Log2(w / tol)))
}

// stepDownRuns counts vLLM auto_tune's runs: the inf probe, then rates
// int(throughput)+1, int(throughput), ... down to the first that meets the
// SLA. With latency rising with rate, every integer rate at or above upper
// fails, so the first to meet is at most the largest integer below upper
// (and with nothing seen failing, could be the very first step); counting
// to there gives the fewest runs the step-down could need, so the
// comparison never flatters the search.
func stepDownRuns(throughput, upper float64) int {
	start := math.Floor(throughput) + 1
	first := start
	if upper > 0 {
		first = math.Min(start, math.Ceil(upper)-1)
	}
	return 1 + int(start-first) + 1
}

// formatValue writes a rate or concurrency as a flag value.
func formatValue(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// SearchGrid runs one SLA search per point of axes over cfg.Base, as
// vLLM's serve_sla does per server setup, each in its point's directory
// under cfg.Dir and labelled with it; every point's run is checked
// before the first search starts. Each search's summary goes to out.
func SearchGrid(ctx context.Context, cfg SearchConfig, axes []Axis, out io.Writer) error {
	if cfg.Base == nil {
		cfg.Base = runspec.New(runspec.Bench)
	}
	for _, a := range axes {
		if a.Flag == cfg.Variable || cfg.Variable == "" && a.Flag == VariableRequestRate {
			return option.Errorf("--%s is what {sla} searches; do not list values for it", a.Flag)
		}
	}
	points := Grid(cfg.Base.RedactedArgs(), axes, 1)
	specs := make([]*runspec.Spec, len(points))
	for i, p := range points {
		var err error
		if specs[i], err = PointSpec(cfg.Base, p.Params); err != nil {
			return err
		}
		if err := CheckSLA(specs[i], cfg.SLA); err != nil {
			return err
		}
	}
	var failures []error
	for i, p := range points {
		pc := cfg
		pc.Dir, pc.Base = filepath.Join(cfg.Dir, p.Name), specs[i]
		pc.Label = strings.TrimSpace(cfg.Label + " " + p.Describe())
		res, _, err := Search(ctx, pc)
		if res != nil {
			res.WriteSummary(out, p.Describe())
		}
		if err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", p.Describe(), err))
		}
	}
	return errors.Join(failures...)
}

// WriteSummary prints the boundary, its margins and the run count; point
// names the grid point, "" for a lone search.
func (res *SearchResult) WriteSummary(w io.Writer, point string) {
	title := fmt.Sprintf("SLA %s over %s", res.SLA, res.Variable)
	if point != "" {
		title += " at " + point
	}
	fmt.Fprintln(w, title+":")
	if res.Best == nil {
		fmt.Fprintf(w, "  no %s met the SLA\n", res.Variable)
	} else {
		fmt.Fprintf(w, "  highest %s meeting it: %s (run %s)\n", res.Variable, res.Best.Text, res.Best.Point)
		for _, m := range res.Best.Margins {
			fmt.Fprintf(w, "    %-22s %10.2f  (limit %s%s, margin %+.1f%%)\n", m.Term.Key, m.Value, m.Term.Op, formatValue(m.Term.Limit), 100*m.Margin)
		}
	}
	if res.Upper > 0 {
		fmt.Fprintf(w, "  lowest %s failing it: %s\n", res.Variable, formatValue(res.Upper))
	}
	runs := fmt.Sprintf("  runs: %d", res.Runs)
	if res.StepDownRuns > 0 {
		runs += fmt.Sprintf(" (a 1 req/s step-down from the inf probe's %.2f req/s needs at least %d)", res.ProbeThroughput, res.StepDownRuns)
	}
	fmt.Fprintln(w, runs)
	fmt.Fprintf(w, "  stopped: %s\n", res.Stopped)
}
