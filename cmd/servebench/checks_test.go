package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInputFailsBeforeWork: each bad input fails at once with one line
// naming the input and the fix, and before anything is written, started
// or sent: DIR (where the command would write) stays empty and the server
// sees no request.
func TestBadInputFailsBeforeWork(t *testing.T) {
	srv, calls := sseServer(t, 2, 0)
	fixtures := t.TempDir()
	otherModel := filepath.Join(fixtures, "other-model.yaml")
	if err := os.WriteFile(otherModel, []byte("kind: servebench-calibration\nmodel: Qwen2.5-7B-Instruct\ngpu: H100-SXM\nparameters: {compute_scale: 0.8, bandwidth_scale: 0.9, sequence_overhead_us: 40}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	result := filepath.Join("testdata", "vllm-4.0qps-tiny-20261122-062813.json")
	notADir := filepath.Join(fixtures, "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	past := "2019-05-01T12:00:00Z"
	sim := []string{"--model", "Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "4"}
	tests := []struct {
		name string
		args []string
		want []string // every one in the error; DIR is the case's directory
		not  string   // never in the error
	}{
		{"tune: unknown SLA key", append([]string{"tune", "--dir", "DIR/study", "--sla", "p99_foo_ms<=300", "--param", "max_num_seqs=8,16", "--"}, sim...),
			[]string{"--sla term p99_foo_ms<=300", `no numeric "p99_foo_ms"`, "p99_ttft_ms"}, ""},
		{"tune: unknown objective", append([]string{"tune", "--dir", "DIR/study", "--objective", "request_goodput", "--param", "max_num_seqs=8,16", "--"}, sim...),
			[]string{"--objective request_goodput", "it needs --goodput"}, ""},
		{"sweep: unknown SLA key", append([]string{"sweep", "--target", "sim", "--dir", "DIR/sweep", "--sla", "p99_ttft<300", "--"}, sim...),
			[]string{"--sla term p99_ttft<300", `no numeric "p99_ttft"`}, ""},
		{"sweep: unknown SLA key per grid point", []string{"sweep", "--target", "sim", "--dir", "DIR/sweep", "--sla", "p99_ttft<300", "--", "--model", "Qwen2-0.5B", "--num-prompts", "4,8"},
			[]string{`no numeric "p99_ttft"`}, ""},
		{"tune: no trials", append([]string{"tune", "--dir", "DIR/study", "--trials", "0", "--"}, sim...),
			[]string{"--trials 0: a study needs at least 1 trial"}, ""},
		{"tune: no valid point", append([]string{"tune", "--dir", "DIR/study", "--param", "block_size=64", "--param", "max_num_seqs=8,16", "--", "--vllm-version", "0.6.3"}, sim...),
			[]string{"holds no point vLLM accepts", "invalid choice: 64 (choose from 8, 16, 32)", "widen --param"}, ""},
		{"calibrate: -o in no writable place", []string{"calibrate", "--model", "Qwen2-0.5B", "--gpu", "H100", "-o", filepath.Join(notADir, "cal.yaml"), result},
			[]string{"--output: cannot create directory", "nothing was fitted"}, ""},
		{"k8s bench: misspelt flag", []string{"k8s", "bench", "--", "--base-url", srv.URL, "--num-promptz", "10"},
			[]string{"bench has no flag --num-promptz: did you mean --num-prompts?"}, ""},
		{"k8s bench: no target", []string{"k8s", "bench", "--", "--num-prompts", "10"},
			[]string{"give the server with --base-url"}, ""},
		{"k8s bench: start in the past", []string{"k8s", "bench", "--start-at", past, "--", "--base-url", srv.URL},
			[]string{"--start-at " + past + " is", "in the past", "give a future instant"}, ""},
		{"k8s tune: misspelt tune flag", []string{"k8s", "tune", "--storage", "postgresql://u@pg/db", "--", "--trialz", "3"},
			[]string{"tune has no flag --trialz: did you mean --trials?"}, ""},
		{"k8s tune: misspelt engine flag", []string{"k8s", "tune", "--storage", "postgresql://u@pg/db", "--", "--trials", "3", "--", "--max-num-seq", "8"},
			[]string{"has no flag --max-num-seq: did you mean --max-num-seqs?"}, ""},
		{"bench: start in the past", []string{"bench", "--base-url", srv.URL, "--model", "m", "--shard", "0/2", "--result-dir", "DIR", "--start-at", past},
			[]string{"--start-at " + past + " is", "in the past"}, ""},
		{"sim: calibration of another model", append([]string{"sim", "--calibration", otherModel, "--result-dir", "DIR"}, sim...),
			[]string{"was fitted on model Qwen2.5-7B-Instruct, not Qwen2-0.5B", "--model Qwen2.5-7B-Instruct"}, ""},
		{"sim: a result as calibration", append([]string{"sim", "--calibration", result, "--result-dir", "DIR"}, sim...),
			[]string{"is a benchmark result, not a calibration", "servebench calibrate"}, "yaml:"},
		{"sim: unknown release", append([]string{"sim", "--vllm-version", "9.9", "--result-dir", "DIR"}, sim...),
			[]string{"--vllm-version: vLLM version 9.9.0 is not modelled; known release lines: 0.4, 0.5, 0.6, 0.7-0.10, 0.11+"}, ""},
		{"bench: ramp-up without rates", []string{"bench", "--base-url", srv.URL, "--model", "m", "--result-dir", "DIR", "--ramp-up-strategy", "linear"},
			[]string{"--ramp-up-strategy linear needs --ramp-up-start-rps and --ramp-up-end-rps"}, "--ramp-up-start-rps 0"},
		{"bench: ramp-up without its end", []string{"bench", "--base-url", srv.URL, "--model", "m", "--result-dir", "DIR", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1"},
			[]string{"needs --ramp-up-end-rps"}, "--ramp-up-start-rps and"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "DIR", dir)
			}
			start := time.Now()
			_, stderr, err := runCLI(t, args...)
			if err == nil {
				t.Fatalf("%q accepted", args)
			}
			msg := err.Error()
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") || tc.not != "" && strings.Contains(msg, tc.not) {
				t.Errorf("error %q: want one line without %q", msg, tc.not)
			}
			if names := listDir(t, dir); len(names) != 0 {
				t.Errorf("a refused command wrote %v", names)
			}
			if n := calls.Load(); n != 0 {
				t.Errorf("%d requests sent before the refusal", n)
			}
			if strings.Contains(stderr, "calibrate: ") {
				t.Errorf("calibrate started fitting before the refusal:\n%s", stderr)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the refusal took %v: it should come before any work", took)
			}
		})
	}
}

// TestTuneSaysWhyNoTrialIsBest: without an SLO, a study whose trials all
// failed says none completed, not that none met an SLO it never had.
func TestTuneSaysWhyNoTrialIsBest(t *testing.T) {
	out, _, trials, err := runTuneCmd(t, "--launch", "exit 1", "--trials", "1", "--param", "max_num_seqs=8,16", "--startup-timeout", "5s",
		"--", "--model", "Qwen2-0.5B", "--gpu", "H100", "--num-prompts", "4")
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 1 || !strings.Contains(out, "best: no trial completed") || strings.Contains(out, "met the SLO") {
		t.Fatalf("%d trials; output:\n%s", len(trials), out)
	}
}

// TestHelpText: the help shows flags' value names, merge's own wording,
// no sentinel for "unset", and --seed as an int everywhere.
func TestHelpText(t *testing.T) {
	help := func(cmd ...string) string {
		t.Helper()
		out, _, err := runCLI(t, append(cmd, "--help")...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	bench, merge, serve, sim := help("bench"), help("merge"), help("serve"), help("sim")
	for _, bad := range []string{"--shard servebench merge", "(default NaN)", "(default -2)", "(default -1)"} {
		if strings.Contains(bench, bad) {
			t.Errorf("bench --help shows %q", bad)
		}
	}
	for _, want := range []string{"--shard I/N", "--top-k int", "--temperature float"} {
		if !strings.Contains(bench, want) {
			t.Errorf("bench --help lacks %q", want)
		}
	}
	for _, want := range []string{"merged per-request JSONL records file", "directory for the merged result JSON"} {
		if !strings.Contains(merge, want) {
			t.Errorf("merge --help lacks %q:\n%s", want, merge)
		}
	}
	if strings.Contains(merge, "as it finishes") {
		t.Errorf("merge --help describes bench's records:\n%s", merge)
	}
	for name, text := range map[string]string{"bench": bench, "serve": serve, "sim": sim} {
		if !strings.Contains(text, "--seed int") {
			t.Errorf("%s --help: --seed is not an int", name)
		}
	}
}
