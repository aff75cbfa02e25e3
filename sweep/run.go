package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/internal/textline"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

// Runner runs one benchmark or simulation of spec and leaves its result
// JSON at resultPath (whose directory exists). It returns the result's
// top-level keys; when it returns a map but wrote no file, the sweep
// writes the map there itself. RunSpec runs bench and sim in this
// process.
type Runner func(ctx context.Context, spec *runspec.Spec, resultPath string) (map[string]any, error)

// Config is a grid sweep.
type Config struct {
	// Dir is the run directory: manifest.json plus one directory per point.
	Dir string
	// Base is the run every point starts from (nil: bench with vLLM's
	// defaults); each point sets its axes' flags on a copy.
	Base   *runspec.Spec
	Axes   []Axis
	Repeat int // runs per grid point; default 1
	// Resume continues the sweep in Dir, skipping points whose result is
	// already there; without it an existing sweep in Dir is an error.
	Resume bool
	// Label and Target are recorded in the manifest (report uses Label to
	// name this sweep's curves).
	Label, Target string
	Run           Runner
	// Progress, when set, hears about every point as it starts and ends.
	Progress func(Progress)
	// StopOnError ends the sweep at the first failed point instead of
	// running the rest.
	StopOnError bool
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Progress reports a point starting or ending.
type Progress struct {
	// Event is "start", "done", "failed" or "skipped" (resumed, result
	// already present).
	Event string
	Point Point
	// Position is the point's 1-based place among Total.
	Position, Total int
	// Estimated marks Total as a guess: an SLA search does not know in
	// advance how many runs it needs.
	Estimated bool
	// Done and Failed count finished points, skipped ones included in Done.
	Done, Failed int
	// Remaining is how many points are still to run after this one ends.
	Remaining int
	// Took is this point's run time (done and failed events).
	Took time.Duration
	// Elapsed is the time since this sweep started; ETA estimates the
	// time left from the run times so far, following their trend, since
	// points usually take longer as the load grows (0 until a point
	// finished).
	Elapsed, ETA time.Duration
}

// String is the one-line progress message the CLI prints.
func (p Progress) String() string {
	total := strconv.Itoa(p.Total)
	if p.Estimated {
		total = "~" + total
	}
	head := fmt.Sprintf("[%d/%s] %s", p.Position, total, p.Point.Describe())
	switch p.Event {
	case "start":
		eta := "ETA unknown"
		if p.ETA > 0 {
			eta = "ETA " + roundDuration(p.ETA).String()
		}
		return fmt.Sprintf("%s: running · %d left after this · %s", head, p.Remaining, eta)
	case "skipped":
		return fmt.Sprintf("%s: already done, skipped", head)
	case "failed":
		return fmt.Sprintf("%s: FAILED after %s: %s · %d left", head, roundDuration(p.Took), p.Point.Error, p.Remaining)
	}
	eta := ""
	if p.Remaining > 0 && p.ETA > 0 {
		eta = " · ETA " + roundDuration(p.ETA).String()
	}
	return fmt.Sprintf("%s: done in %s · %d left%s", head, roundDuration(p.Took), p.Remaining, eta)
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// Run executes the grid, or resumes it, and returns the final manifest.
// Failed points do not stop the sweep (unless StopOnError); they are
// recorded and summarised in the returned error. Cancelling ctx stops
// after marking the running point pending again, so --resume reruns it.
func Run(ctx context.Context, cfg Config) (*Manifest, error) {
	if cfg.Run == nil {
		return nil, errors.New("sweep: no Runner given")
	}
	if cfg.Dir == "" {
		return nil, option.New("no run directory given: pass {dir}")
	}
	if cfg.Base == nil {
		cfg.Base = runspec.New(runspec.Bench)
	}
	// Every point is checked before the first one starts, so a bad value
	// on an axis fails the sweep at once, not after the points before it.
	grid := Grid(cfg.Base.RedactedArgs(), cfg.Axes, cfg.Repeat)
	specs := make([]*runspec.Spec, len(grid))
	for i, p := range grid {
		var err error
		if specs[i], err = PointSpec(cfg.Base, p.Params); err != nil {
			return nil, err
		}
	}
	ex, err := newExecutor(cfg.Dir, cfg.Resume, cfg.Now, cfg.Logger, cfg.Run, cfg.Progress, cfg.Base)
	if err != nil {
		return nil, err
	}
	m := ex.previous
	if m != nil {
		if diff := m.sameSweep(cfg.Base.RedactedArgs(), cfg.Axes, cfg.Repeat); diff != "" {
			return nil, option.Errorf("cannot resume the sweep in %s: %s; use a new {dir} or repeat the original command", cfg.Dir, diff)
		}
	} else {
		m = ex.newManifest(cfg.Label, cfg.Target, cfg.Base.RedactedArgs(), cfg.Axes, cfg.Repeat)
		m.Points = grid
	}
	// The manifest keeps masked flags; the runs get the real spec, rebuilt
	// from the command line on --resume.
	for i := range m.Points {
		ex.specs[i] = specs[i]
		m.Points[i].Args = grid[i].Args
	}
	ex.manifest = m
	if err := m.write(cfg.Dir); err != nil {
		return nil, err
	}

	todo := 0
	for _, p := range m.Points {
		if !ex.hasResult(p) {
			todo++
		}
	}
	ex.total, ex.remaining = len(m.Points), todo
	var failures []string
	for i := range m.Points {
		if ex.hasResult(m.Points[i]) {
			ex.done++
			ex.report("skipped", i, 0)
			continue
		}
		_, err := ex.runPoint(ctx, i)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return m, option.Errorf("sweep interrupted with %d of %d points done; rerun with {resume} to finish: %w", ex.done, ex.total, ctxErr)
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", m.Points[i].Describe(), err))
			if cfg.StopOnError {
				return m, fmt.Errorf("point %s failed: %w", m.Points[i].Describe(), err)
			}
		}
	}
	if len(failures) > 0 {
		return m, option.Errorf("%d of %d sweep points failed (first: %s); rerun with {resume} to retry them", len(failures), len(m.Points), failures[0])
	}
	return m, nil
}

// executor runs points of a manifest, keeps it on disk and reports
// progress; the grid and the SLA search share it.
type executor struct {
	dir      string
	now      func() time.Time
	logger   *slog.Logger
	run      Runner
	progress func(Progress)

	previous *Manifest // the manifest found when resuming
	manifest *Manifest

	// specs are each point's run, by index; the manifest holds their
	// flags with credentials masked, and secrets are what to mask in free
	// text.
	specs   map[int]*runspec.Spec
	secrets []string

	started           time.Time
	total, remaining  int
	done, failed, ran int
	// took holds each finished run's duration by its point index, for the
	// ETA's trend.
	took           []pointTime
	estimatedTotal bool
}

func newExecutor(dir string, resume bool, now func() time.Time, logger *slog.Logger, run Runner, progress func(Progress), base *runspec.Spec) (*executor, error) {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ex := &executor{dir: dir, now: now, logger: logger, run: run, progress: progress, started: now(), secrets: base.Secrets(), specs: map[int]*runspec.Spec{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	exists, err := manifestExists(dir)
	if err != nil {
		return nil, err
	}
	if exists {
		if !resume {
			return nil, option.Errorf("%s already holds a sweep (%s); pass {resume} to continue it, or choose another {dir}", dir, ManifestName)
		}
		if ex.previous, err = ReadManifest(dir); err != nil {
			return nil, err
		}
	}
	return ex, nil
}

func (ex *executor) newManifest(label, target string, base []string, axes []Axis, repeat int) *Manifest {
	stamp := ex.now().UTC().Format(time.RFC3339)
	if base == nil {
		base = []string{}
	}
	if axes == nil {
		axes = []Axis{}
	}
	return &Manifest{
		Kind: ManifestKind, Version: 1, Label: label, Target: redact.URL(target),
		BaseArgs: base, Axes: axes, Repeat: max(repeat, 1), Created: stamp, Updated: stamp,
	}
}

func (ex *executor) resultPath(p Point) string {
	return filepath.Join(ex.dir, filepath.FromSlash(p.Result))
}

// hasResult is true for a point recorded done whose result file is there.
func (ex *executor) hasResult(p Point) bool {
	if p.Status != StatusDone {
		return false
	}
	_, err := os.Stat(ex.resultPath(p))
	return err == nil
}

func (ex *executor) save() error {
	ex.manifest.Updated = ex.now().UTC().Format(time.RFC3339)
	return ex.manifest.write(ex.dir)
}

func (ex *executor) report(event string, i int, took time.Duration) {
	if ex.progress == nil {
		return
	}
	p := Progress{
		Event: event, Point: ex.manifest.Points[i], Position: i + 1, Total: ex.total, Estimated: ex.estimatedTotal,
		Done: ex.done, Failed: ex.failed, Remaining: ex.remaining, Took: took,
		Elapsed: ex.now().Sub(ex.started),
	}
	if event == "start" {
		p.Remaining = max(ex.remaining-1, 0)
	}
	if ex.ran > 0 {
		first := i + 1
		left := p.Remaining
		if event == "start" {
			first, left = i, left+1 // this one is still to finish
		}
		p.ETA = estimateRemaining(ex.took, first, left)
	}
	ex.progress(p)
}

// runPoint runs point i and returns its result map. Errors from the
// runner mark the point failed; a cancelled context marks it pending.
func (ex *executor) runPoint(ctx context.Context, i int) (map[string]any, error) {
	p := &ex.manifest.Points[i]
	path := ex.resultPath(*p)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating point directory: %w", err)
	}
	// A result left by an interrupted run may be partial: never trust it.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removing stale result: %w", err)
	}
	start := ex.now()
	p.Status, p.Started, p.Finished, p.DurationS, p.Error = StatusRunning, start.UTC().Format(time.RFC3339), "", 0, ""
	if err := ex.save(); err != nil {
		return nil, err
	}
	ex.report("start", i, 0)
	ex.logger.Info("sweep point starting", "point", p.Name, "args", strings.Join(p.Args, " "))

	if err := WriteSpec(filepath.Dir(path), ex.specs[i]); err != nil {
		return nil, err
	}
	result, err := ex.run(ctx, ex.specs[i], path)
	if err == nil {
		result, err = ensureResult(path, result)
	}
	err = redact.Error(err, ex.secrets)
	took := ex.now().Sub(start)
	if ctx.Err() != nil {
		p.Status, p.Started = StatusPending, ""
		return nil, errors.Join(err, ex.save())
	}
	p.Finished, p.DurationS = ex.now().UTC().Format(time.RFC3339), took.Seconds()
	ex.ran++
	ex.took = append(ex.took, pointTime{index: i, took: took})
	ex.remaining = max(ex.remaining-1, 0)
	if err != nil {
		p.Status, p.Error = StatusFailed, textline.OneLine(err.Error(), 0)
		ex.failed++
		if serr := ex.save(); serr != nil {
			return nil, serr
		}
		ex.report("failed", i, took)
		return nil, err
	}
	p.Status = StatusDone
	ex.done++
	if err := ex.save(); err != nil {
		return nil, err
	}
	ex.report("done", i, took)
	return result, nil
}

// ensureResult makes sure the point left a result file, writing the
// runner's map when it only returned one, and returns the result's keys.
func ensureResult(path string, result map[string]any) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if result == nil {
			return nil, fmt.Errorf("the run wrote no result at %s", path)
		}
		out, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("encoding the run's result: %w", err)
		}
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			return nil, fmt.Errorf("writing the run's result: %w", err)
		}
		return result, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the run's result: %w", err)
	}
	if result != nil {
		return result, nil
	}
	return readResultMap(path, data)
}

func readResultMap(path string, data []byte) (map[string]any, error) {
	objects, err := report.DecodeResultObjects(data)
	if err != nil {
		return nil, fmt.Errorf("the run's result %s: %w", path, err)
	}
	return objects[len(objects)-1], nil
}

// pointTime is how long the run of the point at index took.
type pointTime struct {
	index int
	took  time.Duration
}

// estimateRemaining predicts the time the left points from index first on
// take. With two or more runs measured it fits a least-squares line of run
// time over point index and sums its values there: a sweep over rising
// load (num-prompts 100..1600, request-rate 1..32) has points that grow,
// and the mean of the early, short points would promise the end far too
// soon. A line bending down is floored at half the shortest run measured,
// since a run never takes nothing.
func estimateRemaining(measured []pointTime, first, left int) time.Duration {
	if len(measured) == 0 || left <= 0 {
		return 0
	}
	var sumX, sumY float64
	shortest := measured[0].took
	for _, m := range measured {
		sumX += float64(m.index)
		sumY += m.took.Seconds()
		shortest = min(shortest, m.took)
	}
	n := float64(len(measured))
	meanX, meanY := sumX/n, sumY/n
	var sxx, sxy float64
	for _, m := range measured {
		dx := float64(m.index) - meanX
		sxx += dx * dx
		sxy += dx * (m.took.Seconds() - meanY)
	}
	slope := 0.0
	if sxx > 0 {
		slope = sxy / sxx
	}
	floor := shortest.Seconds() / 2
	total := 0.0
	for k := range left {
		total += max(meanY+slope*(float64(first+k)-meanX), floor)
	}
	return time.Duration(total * float64(time.Second))
}

// PointSpec is base with a point's swept flags set, checked.
func PointSpec(base *runspec.Spec, params []Param) (*runspec.Spec, error) {
	s := base.Clone()
	for _, p := range params {
		if err := s.Set(p.Flag, p.Value); err != nil {
			return nil, err
		}
	}
	if err := checkOwned(base); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// OwnedFlags are set by the sweep for every point: where its result goes.
var ownedFlags = []string{"result-dir", "result-filename", "append-result", "save-result", "disable-tqdm"}

// checkOwned refuses a base that sets what the sweep sets per point.
func checkOwned(base *runspec.Spec) error {
	for _, flag := range ownedFlags {
		if base.HasFlag(flag) && base.Changed(flag) {
			return option.Errorf("--%s is set by sweep for every point; remove it (results go to {dir})", flag)
		}
	}
	return nil
}

// SpecFile is the name of the run spec a point ran, beside its result.
const SpecFile = "spec.yaml"

// WriteSpec records a run spec in dir as SpecFile, secrets masked: what
// ran, readable by people and by --spec.
func WriteSpec(dir string, s *runspec.Spec) error {
	data, err := s.YAML(false)
	if err != nil {
		return err
	}
	return report.WriteAtomic(filepath.Join(dir, SpecFile), data, true)
}
