package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sweep"
)

// sweepArgValue reads --name=value or --name value from args (last wins).
func sweepArgValue(args []string, name string) (string, bool) {
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

// fakeBench answers like bench would for a server of capacity 40 req/s:
// its numbers follow from --num-prompts and --request-rate, so tables and
// SLA searches have something real to work on.
type fakeBench struct {
	runs    atomic.Int32
	targets []sweepTarget
	fail    func(args []string) error
}

func (b *fakeBench) factory(target sweepTarget) sweep.Runner {
	b.targets = append(b.targets, target)
	return func(ctx context.Context, spec *runspec.Spec, path string) (map[string]any, error) {
		args := spec.Args()
		b.runs.Add(1)
		if b.fail != nil {
			if err := b.fail(args); err != nil {
				return nil, err
			}
		}
		n := 100
		if v, ok := sweepArgValue(args, "num-prompts"); ok {
			var err error
			if n, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("--num-prompts %q", v)
			}
		}
		rate := math.Inf(1)
		if v, ok := sweepArgValue(args, "request-rate"); ok && v != "inf" {
			var err error
			if rate, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("--request-rate %q", v)
			}
		}
		const capacity = 40.0
		ttft, throughput := 50+100*50.0, 0.98*capacity
		if rate < capacity {
			ttft, throughput = 50+100*rate/(capacity-rate), rate
		}
		result := map[string]any{
			"completed": n, "failed": 0, "num_prompts": n, "duration": float64(n) / throughput,
			"total_input_tokens": 128 * n, "total_output_tokens": 64 * n,
			"request_throughput": throughput, "output_throughput": 64 * throughput, "total_token_throughput": 192 * throughput,
			"mean_ttft_ms": ttft * 0.6, "median_ttft_ms": ttft * 0.5, "p99_ttft_ms": ttft,
			"mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "p99_tpot_ms": 12.0,
			"mean_itl_ms": 10.0, "median_itl_ms": 9.5, "p99_itl_ms": 20.0,
		}
		if math.IsInf(rate, 1) {
			result["request_rate"] = "inf"
		} else {
			result["request_rate"] = rate
		}
		data, err := json.Marshal(result)
		if err != nil {
			return nil, err
		}
		return nil, os.WriteFile(path, data, 0o644)
	}
}

func executeForTest(t *testing.T, cmd *cobra.Command, ctx context.Context, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	speakFlags(cmd) // as newRootCmd does for every command
	err = cmd.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func TestSweepGridPrintsMarkdownTableAndProgress(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prompts")
	b := &fakeBench{}
	stdout, stderr, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(),
		"--dir", dir, "--format", "md", "--label", "A", "--", "--num-prompts", "1,2,4", "--model", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if b.runs.Load() != 3 || len(b.targets) != 1 || b.targets[0].kind != runspec.Bench || b.targets[0].url != "" {
		t.Fatalf("%d runs, targets %+v", b.runs.Load(), b.targets)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "| Label | num-prompts | Successful requests |") {
		t.Fatalf("table:\n%s", stdout)
	}
	for i, n := range []string{"1", "2", "4"} {
		if !strings.HasPrefix(lines[2+i], "| A: num-prompts="+n+" | "+n+" | "+n+" |") {
			t.Errorf("row %d: %s", i, lines[2+i])
		}
	}
	for _, want := range []string{"[1/3] num-prompts=1: running · 2 left after this · ETA unknown", "[3/3] num-prompts=4: done in", "results in " + dir} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestSweepResumeRunsOnlyMissingPoints(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	b := &fakeBench{}
	b.fail = func([]string) error {
		if b.runs.Load() == 4 {
			cancel()
			return context.Canceled
		}
		return nil
	}
	args := []string{"--dir", dir, "--", "--num-prompts", "1,2,4,8,16"}
	if _, _, err := executeForTest(t, newSweepCmdWith(b.factory), ctx, args...); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "3 of 5") {
		t.Fatalf("interrupted sweep: %v", err)
	}
	if _, _, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(), args...); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("rerun without --resume: %v", err)
	}
	resumed := &fakeBench{}
	stdout, stderr, err := executeForTest(t, newSweepCmdWith(resumed.factory), t.Context(), append([]string{"--resume"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.runs.Load() != 2 || strings.Count(stderr, "already done, skipped") != 3 {
		t.Errorf("resume ran %d points; stderr:\n%s", resumed.runs.Load(), stderr)
	}
	if strings.Count(stdout, "num-prompts=") != 5 {
		t.Errorf("table does not list all 5 points:\n%s", stdout)
	}
}

func TestSweepFailedPointStillPrintsTheRest(t *testing.T) {
	b := &fakeBench{fail: func(args []string) error {
		if v, _ := sweepArgValue(args, "num-prompts"); v == "2" {
			return errors.New("connection refused")
		}
		return nil
	}}
	stdout, _, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(), "--dir", t.TempDir(), "--", "--num-prompts", "1,2,4")
	if err == nil || !strings.Contains(err.Error(), "1 of 3 sweep points failed") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(stdout, "num-prompts=1") || !strings.Contains(stdout, "num-prompts=4") || strings.Contains(stdout, "num-prompts=2 ") {
		t.Errorf("table:\n%s", stdout)
	}
}

func TestSweepSLASearch(t *testing.T) {
	b := &fakeBench{}
	dir := t.TempDir()
	stdout, stderr, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(),
		"--dir", dir, "--target", "sim", "--sla", "p99_ttft_ms<=500", "--", "--num-prompts", "200")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if b.targets[0].kind != runspec.Sim {
		t.Errorf("target %+v", b.targets[0])
	}
	if !strings.Contains(stderr, "[1/~5] request-rate=inf: running") {
		t.Errorf("search progress should mark its total as an estimate:\n%s", stderr)
	}
	// The fake's boundary: 50 + 100·r/(40−r) <= 500 → r <= 32.73.
	for _, want := range []string{
		"SLA p99_ttft_ms<=500 over request-rate:",
		"highest request-rate meeting it: 32.",
		"p99_ttft_ms",
		"runs: ",
		"step-down from the inf probe's 39.20 req/s needs at least",
		"stopped: boundary bracketed",
		"request_rate",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if int(b.runs.Load()) > 8 {
		t.Errorf("search took %d runs", b.runs.Load())
	}
	m, err := sweep.ReadManifest(dir)
	if err != nil || m.Search == nil || m.Search.Best == nil {
		t.Fatalf("manifest: %+v, %v", m, err)
	}
}

func TestSweepSLAPerGridPoint(t *testing.T) {
	b := &fakeBench{}
	dir := t.TempDir()
	stdout, _, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(),
		"--dir", dir, "--sla", "p99_ttft_ms<=500", "--", "--num-prompts", "100,200")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(stdout, "highest request-rate meeting it") != 2 || !strings.Contains(stdout, "at num-prompts=200:") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, sub := range []string{"000-num-prompts=100", "001-num-prompts=200"} {
		if _, err := sweep.ReadManifest(filepath.Join(dir, sub)); err != nil {
			t.Errorf("no search manifest in %s: %v", sub, err)
		}
	}
}

func TestSweepCommandRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"flags before --", []string{"--num-prompts", "1,2"}, "go after --"},
		{"positional before --", []string{"oops", "--", "--num-prompts", "1,2"}, `unexpected argument "oops"`},
		{"bad target", []string{"--target", "ftp://x", "--", "--num-prompts", "1,2"}, "use a server URL"},
		{"owned flag", []string{"--", "--num-prompts", "1,2", "--result-dir", "x"}, "--result-dir is set by sweep"},
		{"base-url twice", []string{"--target", "http://127.0.0.1:9", "--", "--base-url", "http://h:1", "--num-prompts", "1,2"}, "given twice"},
		{"nothing to sweep", []string{"--", "--num-prompts", "5"}, "nothing to sweep"},
		{"bad format", []string{"--format", "xml", "--", "--num-prompts", "1,2"}, "use term, md, csv or json"},
		{"bad sla", []string{"--sla", "p99_ttft_ms=5", "--", "--num-prompts", "5"}, "needs KEY<=N"},
		{"sla variable swept", []string{"--sla", "p99_ttft_ms<=5", "--", "--request-rate", "1,2"}, "what --sla searches"},
		{"zero repeat", []string{"--repeat", "0", "--", "--num-prompts", "1,2"}, "--repeat 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &fakeBench{}
			args := append([]string{"--dir", t.TempDir()}, tt.args...)
			_, _, err := executeForTest(t, newSweepCmdWith(b.factory), t.Context(), args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if b.runs.Load() != 0 {
				t.Errorf("%d points ran on bad input", b.runs.Load())
			}
		})
	}
}

func TestParseSweepTarget(t *testing.T) {
	tests := []struct {
		in   string
		kind runspec.Kind
		url  string
	}{
		{"embedded", runspec.Bench, ""},
		{"sim", runspec.Sim, ""},
		{"http://127.0.0.1:8000", runspec.Bench, "http://127.0.0.1:8000"},
		{"https://example.test/v1", runspec.Bench, "https://example.test/v1"},
	}
	for _, tt := range tests {
		got, err := parseSweepTarget(tt.in)
		if err != nil || got.kind != tt.kind || got.url != tt.url {
			t.Errorf("parseSweepTarget(%q) = %+v, %v", tt.in, got, err)
		}
	}
	for _, bad := range []string{"simulator", "127.0.0.1:8000", "http://"} {
		if _, err := parseSweepTarget(bad); err == nil {
			t.Errorf("parseSweepTarget(%q) accepted", bad)
		}
	}
}
