package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
)

// flagValue reads --name=value or --name value from args (last wins).
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			value, found = v, true
		} else if a == "--"+name && i+1 < len(args) {
			value, found = args[i+1], true
		}
	}
	return value, found
}

// promptRunner stands in for bench: it writes a vLLM-style result whose
// numbers follow from --num-prompts, like a real run's would.
func promptRunner(calls *atomic.Int32) argsFunc {
	return func(ctx context.Context, args []string, resultPath string) (map[string]any, error) {
		calls.Add(1)
		v, _ := flagValue(args, "num-prompts")
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, errors.New("bad --num-prompts")
		}
		result := map[string]any{
			"num_prompts": n, "completed": n, "duration": float64(n) / 4, "request_rate": "inf",
			"request_throughput": 4.0, "mean_ttft_ms": 20 + float64(n), "p99_ttft_ms": 30 + 2*float64(n),
		}
		data, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		return result, os.WriteFile(resultPath, data, 0o644)
	}
}

func TestRunWritesOneResultPerPointAndAManifest(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	base, axes, err := ParseArgs([]string{"--model", "tiny", "--num-prompts", "1,2,4"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Run(t.Context(), Config{Dir: dir, Base: baseSpec(t, base), Axes: axes, Label: "A", Run: specRunner(promptRunner(&calls))})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 || len(m.Points) != 3 {
		t.Fatalf("%d runs, %d points; want 3", calls.Load(), len(m.Points))
	}
	for _, p := range m.Points {
		if p.Status != StatusDone || p.Started == "" || p.Finished == "" {
			t.Errorf("point %s: %+v", p.Name, p)
		}
		if _, err := os.Stat(filepath.Join(dir, p.Result)); err != nil {
			t.Errorf("point %s has no result: %v", p.Name, err)
		}
	}
	onDisk, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Kind != ManifestKind || onDisk.Label != "A" || len(onDisk.Points) != 3 {
		t.Fatalf("manifest on disk: %+v", onDisk)
	}

	// Package report reads the sweep back through its manifest.
	results, err := report.LoadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	table := report.NewCompareTable(results, report.CompareOptions{GroupBy: "num-prompts"})
	var got []string
	for _, r := range table.Rows {
		got = append(got, r.Label+"="+r.Group.Text)
	}
	if strings.Join(got, " ") != "A: num-prompts=1=1 A: num-prompts=2=2 A: num-prompts=4=4" {
		t.Errorf("report read %v", got)
	}
}

func TestRunRefusesToOverwriteASweep(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	cfg := Config{Dir: dir, Axes: []Axis{{"num-prompts", []string{"1", "2"}}}, Run: specRunner(promptRunner(&calls))}
	if _, err := Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "pass resume") {
		t.Errorf("second run without --resume: %v", err)
	}
	cfg.Resume = true
	cfg.Axes = []Axis{{"num-prompts", []string{"1", "3"}}}
	if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "axes were") {
		t.Errorf("resume with other axes: %v", err)
	}
}

// TestInterruptedSweepResumes is the brief's case: a 5-point sweep stopped
// during its fourth point has 3 done; --resume runs the other 2 only.
func TestInterruptedSweepResumes(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	inner := promptRunner(&calls)
	ctx, cancel := context.WithCancel(t.Context())
	interrupting := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		if calls.Load() == 3 {
			// Leave a partial file behind, as a killed run might.
			if err := os.WriteFile(path, []byte(`{"completed": `), 0o644); err != nil {
				return nil, err
			}
			cancel()
			return nil, ctx.Err()
		}
		return inner(ctx, args, path)
	}
	cfg := Config{Dir: dir, Axes: []Axis{{"num-prompts", []string{"1", "2", "4", "8", "16"}}}, Run: specRunner(interrupting)}
	_, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "3 of 5 points done") || !strings.Contains(err.Error(), "rerun with resume") {
		t.Fatalf("interrupted sweep returned %v", err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, p := range m.Points {
		statuses = append(statuses, p.Status)
	}
	if strings.Join(statuses, ",") != "done,done,done,pending,pending" {
		t.Fatalf("statuses after interrupt: %v", statuses)
	}

	calls.Store(0)
	var events []string
	cfg.Resume = true
	cfg.Run = specRunner(inner)
	cfg.Progress = func(p Progress) { events = append(events, p.Event+":"+p.Point.Name) }
	m, err = Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("resume ran %d points, want 2", calls.Load())
	}
	want := "skipped:000-num-prompts=1 skipped:001-num-prompts=2 skipped:002-num-prompts=4 start:003-num-prompts=8 done:003-num-prompts=8 start:004-num-prompts=16 done:004-num-prompts=16"
	if strings.Join(events, " ") != want {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(events, " "), want)
	}
	results, err := report.LoadResults(dir)
	if err != nil {
		t.Fatalf("the partial file was not replaced: %v", err)
	}
	if len(results) != 5 {
		t.Errorf("report sees %d results, want 5", len(results))
	}
	for _, p := range m.Points {
		if p.Status != StatusDone {
			t.Errorf("%s is %s", p.Name, p.Status)
		}
	}
}

func TestDoneButMissingResultIsRerun(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	cfg := Config{Dir: dir, Axes: []Axis{{"num-prompts", []string{"1", "2"}}}, Run: specRunner(promptRunner(&calls))}
	m, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, m.Points[1].Result)); err != nil {
		t.Fatal(err)
	}
	calls.Store(0)
	cfg.Resume = true
	if _, err := Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("reran %d points, want the one whose result vanished", calls.Load())
	}
}

func TestFailedPointsAreRecordedAndRetriedOnResume(t *testing.T) {
	dir := t.TempDir()
	var calls atomic.Int32
	inner := promptRunner(&calls)
	failing := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		if v, _ := flagValue(args, "num-prompts"); v == "2" {
			calls.Add(1)
			return nil, errors.New("server returned 500\ntraceback follows")
		}
		return inner(ctx, args, path)
	}
	cfg := Config{Dir: dir, Axes: []Axis{{"num-prompts", []string{"1", "2", "4"}}}, Run: specRunner(failing)}
	m, err := Run(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 sweep points failed") {
		t.Fatalf("err = %v", err)
	}
	if m.Points[1].Status != StatusFailed || m.Points[1].Error != "server returned 500 traceback follows" || m.Points[2].Status != StatusDone {
		t.Fatalf("points: %+v", m.Points)
	}
	calls.Store(0)
	cfg.Resume, cfg.Run = true, specRunner(inner)
	if _, err := Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 {
		t.Errorf("resume ran %d points, want only the failed one", calls.Load())
	}

	stopDir := t.TempDir()
	calls.Store(0)
	_, err = Run(t.Context(), Config{Dir: stopDir, Axes: cfg.Axes, Run: specRunner(failing), StopOnError: true})
	if err == nil || calls.Load() != 2 {
		t.Errorf("StopOnError: err %v after %d runs, want a stop at the second", err, calls.Load())
	}
}

func TestRunnerResultMapIsSavedWhenNoFileWritten(t *testing.T) {
	dir := t.TempDir()
	mapOnly := func(ctx context.Context, args []string, path string) (map[string]any, error) {
		return map[string]any{"completed": 3}, nil
	}
	m, err := Run(t.Context(), Config{Dir: dir, Run: specRunner(mapOnly)})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, m.Points[0].Result))
	if err != nil || strings.TrimSpace(string(data)) != `{"completed":3}` {
		t.Fatalf("saved %q, %v", data, err)
	}
	nothing := func(ctx context.Context, args []string, path string) (map[string]any, error) { return nil, nil }
	_, err = Run(t.Context(), Config{Dir: t.TempDir(), Run: specRunner(nothing)})
	if err == nil || !strings.Contains(err.Error(), "wrote no result") {
		t.Errorf("runner without result: %v", err)
	}
}

// TestProgressReportsPositionRemainingAndETA runs in a synctest bubble, so
// the runner's sleeps take no real time and the ETA is exact.
func TestProgressReportsPositionRemainingAndETA(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var calls atomic.Int32
		inner := promptRunner(&calls)
		slow := func(ctx context.Context, args []string, path string) (map[string]any, error) {
			time.Sleep(10 * time.Second)
			return inner(ctx, args, path)
		}
		var lines []string
		cfg := Config{
			Dir: dir, Axes: []Axis{{"num-prompts", []string{"1", "2", "4"}}}, Run: specRunner(slow),
			Progress: func(p Progress) { lines = append(lines, p.String()) },
		}
		if _, err := Run(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"[1/3] num-prompts=1: running · 2 left after this · ETA unknown",
			"[1/3] num-prompts=1: done in 10s · 2 left · ETA 20s",
			"[2/3] num-prompts=2: running · 1 left after this · ETA 20s",
			"[2/3] num-prompts=2: done in 10s · 1 left · ETA 10s",
			"[3/3] num-prompts=4: running · 0 left after this · ETA 10s",
			"[3/3] num-prompts=4: done in 10s · 0 left",
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	})
}

func TestRunConfigErrors(t *testing.T) {
	if _, err := Run(t.Context(), Config{Dir: t.TempDir()}); err == nil {
		t.Error("no runner accepted")
	}
	var calls atomic.Int32
	if _, err := Run(t.Context(), Config{Run: specRunner(promptRunner(&calls))}); err == nil || !strings.Contains(err.Error(), "pass dir") {
		t.Errorf("no dir: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"kind": "something-else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), Config{Dir: dir, Resume: true, Run: specRunner(promptRunner(&calls))}); err == nil || !strings.Contains(err.Error(), "not a servebench sweep manifest") {
		t.Errorf("foreign manifest: %v", err)
	}
}

// TestCredentialsReachTheRunButNotTheManifest checks that the manifest
// and failure messages hold masked header values while every run, resumed
// ones included, gets the real ones.
func TestCredentialsReachTheRunButNotTheManifest(t *testing.T) {
	const secret = "sk-PLANTED-secret"
	dir := t.TempDir()
	base, axes, err := ParseArgs([]string{"--header", "Authorization: Bearer " + secret, "--num-prompts", "1,2,3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	var sawSecret atomic.Int32
	var interrupted atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	run := func(ctx context.Context, args []string, resultPath string) (map[string]any, error) {
		if h, _ := flagValue(args, "header"); h == "Authorization: Bearer "+secret {
			sawSecret.Add(1)
		}
		if n, _ := flagValue(args, "num-prompts"); n == "2" && calls.Load() == 1 {
			calls.Add(1)
			return nil, errors.New("server said: bad header Authorization: Bearer " + secret)
		}
		if n, _ := flagValue(args, "num-prompts"); n == "3" && interrupted.CompareAndSwap(false, true) {
			cancel()
			return nil, ctx.Err()
		}
		return promptRunner(&calls)(ctx, args, resultPath)
	}
	_, err = Run(ctx, Config{Dir: dir, Base: baseSpec(t, base), Axes: axes, Target: "http://user:pw-PLANTED@127.0.0.1:1", Run: specRunner(run)})
	if err == nil || strings.Contains(err.Error(), "PLANTED") {
		t.Fatalf("interrupted sweep error %v", err)
	}
	check := func() {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, ManifestName))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "PLANTED") {
			t.Errorf("manifest holds a secret:\n%s", data)
		}
		if !strings.Contains(string(data), "Authorization: [REDACTED]") {
			t.Errorf("manifest lost the masked header:\n%s", data)
		}
	}
	check()
	m, err := Run(t.Context(), Config{Dir: dir, Base: baseSpec(t, base), Axes: axes, Resume: true, Run: specRunner(run)})
	if err != nil {
		t.Fatal(err)
	}
	check()
	if sawSecret.Load() != 5 || m.Points[1].Status != StatusDone {
		t.Errorf("runs saw the real header %d times, want 5 (3 first, 2 resumed); points %+v", sawSecret.Load(), m.Points)
	}
}

// TestETAFollowsGrowingRunTimes: runs that take 10 s per prompt make a
// sweep over num-prompts 1..6 back-loaded; the ETA must add up the longer
// runs still to come, not repeat the mean of the short ones behind.
func TestETAFollowsGrowingRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		inner := promptRunner(&calls)
		growing := func(ctx context.Context, args []string, path string) (map[string]any, error) {
			v, _ := flagValue(args, "num-prompts")
			n, _ := strconv.Atoi(v)
			time.Sleep(time.Duration(n) * 10 * time.Second)
			return inner(ctx, args, path)
		}
		etaAtStart := map[string]time.Duration{}
		cfg := Config{
			Dir: t.TempDir(), Axes: []Axis{{"num-prompts", []string{"1", "2", "3", "4", "5", "6"}}}, Run: specRunner(growing),
			Progress: func(p Progress) {
				if p.Event == "start" {
					etaAtStart[p.Point.Params[0].Value] = p.ETA
				}
			},
		}
		if _, err := Run(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			point string
			want  time.Duration // the time the sweep really took from then on
		}{
			{"3", (30 + 40 + 50 + 60) * time.Second},
			{"4", (40 + 50 + 60) * time.Second},
			{"5", (50 + 60) * time.Second},
			{"6", 60 * time.Second},
		}
		for _, tt := range tests {
			if got := etaAtStart[tt.point]; got != tt.want {
				t.Errorf("ETA at the start of num-prompts=%s: %s, want %s", tt.point, got, tt.want)
			}
		}
	})
}

func TestEstimateRemaining(t *testing.T) {
	s := func(d ...int) []pointTime {
		out := make([]pointTime, len(d))
		for i, v := range d {
			out[i] = pointTime{index: i, took: time.Duration(v) * time.Second}
		}
		return out
	}
	tests := []struct {
		name        string
		measured    []pointTime
		first, left int
		want        time.Duration
	}{
		{"nothing measured", nil, 0, 3, 0},
		{"nothing left", s(10, 20), 2, 0, 0},
		{"one run: repeat it", s(10), 1, 3, 30 * time.Second},
		{"flat", s(10, 10, 10), 3, 2, 20 * time.Second},
		{"linear growth", s(10, 20), 2, 2, 70 * time.Second},
		{"shrinking runs floor at half the shortest", s(40, 20), 2, 3, (10 + 10 + 10) * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := estimateRemaining(tt.measured, tt.first, tt.left); got != tt.want {
				t.Errorf("estimateRemaining = %s, want %s", got, tt.want)
			}
		})
	}
}

// argsFunc is a stand-in for bench that reads its run as a command line.
type argsFunc func(ctx context.Context, args []string, resultPath string) (map[string]any, error)

// specRunner runs f with the spec written back as arguments.
func specRunner(f argsFunc) Runner {
	return func(ctx context.Context, spec *runspec.Spec, resultPath string) (map[string]any, error) {
		return f(ctx, spec.Args(), resultPath)
	}
}

// baseSpec is the bench spec of args.
func baseSpec(t testing.TB, args []string) *runspec.Spec {
	t.Helper()
	s, err := runspec.Parse(runspec.Bench, args)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
