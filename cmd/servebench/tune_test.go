package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/tune"
)

// The test binary doubles as the servebench binary for launch
// templates: SERVEBENCH_TUNE_TEST_MAIN=1 runs main with its arguments.
func init() {
	if os.Getenv("SERVEBENCH_TUNE_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
}

// runTuneCmd runs `servebench tune ARGS` in-process and returns stdout,
// stderr, the stored trials and the error.
func runTuneCmd(t *testing.T, args ...string) (string, string, []tune.Trial, error) {
	t.Helper()
	return runTuneCmdIn(t, t.TempDir(), args...)
}

func runTuneCmdIn(t *testing.T, dir string, args ...string) (string, string, []tune.Trial, error) {
	t.Helper()
	root := newRootCmd()
	var out, errw bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(cliArgs(append([]string{"tune", "--dir", dir}, args...)))
	err := root.ExecuteContext(context.Background())
	var trials []tune.Trial
	if data, rerr := os.ReadFile(filepath.Join(dir, "trials.json")); rerr == nil {
		if jerr := json.Unmarshal(data, &trials); jerr != nil {
			t.Fatalf("trials.json: %v", jerr)
		}
		if _, serr := os.Stat(filepath.Join(dir, "trials.csv")); serr != nil {
			t.Errorf("no trials.csv beside trials.json: %v", serr)
		}
	}
	return out.String(), errw.String(), trials, err
}

// simStudy is a V0 study on sim whose block size 64 does not exist in
// 0.6.3 and whose chunked-prefill-off points below max_model_len are
// vLLM's classic startup failure.
var simStudy = []string{"--trials", "10", "--sampler-seed", "2",
	"--param", "max_num_seqs=int:8:128:log", "--param", "max_num_batched_tokens=int:512:8192:log",
	"--param", "block_size=16,64", "--param", "enable_chunked_prefill=bool", "--sla", "p99_tpot_ms<=60",
	"--", "--model", "Qwen2.5-7B-Instruct", "--gpu", "L40S", "--vllm-version", "0.6.3", "--max-model-len", "4096",
	"--num-prompts", "40", "--random-input-len", "512", "--random-output-len", "64", "--request-rate", "inf"}

func TestTuneOnSimRecordsInvalidPointsAndPrintsTheBest(t *testing.T) {
	out, _, trials, err := runTuneCmd(t, simStudy...)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 10 {
		t.Fatalf("%d trials", len(trials))
	}
	invalid := 0
	for _, tr := range trials {
		if tr.State == tune.StateInvalid {
			invalid++
			if !strings.Contains(tr.Reason, "invalid choice: 64 (choose from 8, 16, 32)") && !strings.Contains(tr.Reason, "is smaller than max_model_len (4096)") {
				t.Errorf("trial %d rejected for %q, not one of vLLM's texts", tr.Number, tr.Reason)
			}
		}
	}
	if invalid == 0 {
		t.Error("no invalid trial: the seed no longer exercises validation")
	}
	for _, want := range []string{"trial state", "INVALID", "best: trial", "vllm serve Qwen2.5-7B-Instruct --max-num-seqs", "Pareto front"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTuneOnTheEmbeddedServer(t *testing.T) {
	args := []string{"--target", "embedded", "--trials", "2", "--sampler", "random",
		"--param", "max_num_seqs=8,64", "--", "--model", "Qwen2-0.5B", "--gpu", "H100",
		"--num-prompts", "12", "--random-input-len", "64", "--random-output-len", "8", "--request-rate", "inf"}
	_, stderr, trials, err := runTuneCmd(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, tr := range trials {
		if tr.State != tune.StateComplete || tr.Result["completed"] != 12.0 {
			t.Errorf("trial %d: %s %s, result %v", tr.Number, tr.State, tr.Reason, tr.Result["completed"])
		}
	}
}

func TestTuneLaunchFailuresNeverHangTheStudy(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serveCmd := "SERVEBENCH_TUNE_TEST_MAIN=1 exec " + exe + " serve --model Qwen2-0.5B --gpu H100 --port {port} --max-num-seqs {max_num_seqs}"
	waitReady := "SERVEBENCH_TUNE_TEST_MAIN=1 " + exe + " bench --base-url http://127.0.0.1:{port} --model Qwen2-0.5B --num-prompts 1" +
		" --random-input-len 8 --random-output-len 2 --ready-check-timeout-sec 60 --disable-tqdm >/dev/null 2>&1"
	tests := []struct {
		name     string
		template string
		extra    []string
		state    tune.State
		reason   []string
	}{
		{"exits at startup", `echo "ValueError: max_num_batched_tokens (535) is smaller than max_model_len (32768)"; exit 1`, nil,
			tune.StateFailed, []string{"exited during startup", "exit status 1", "is smaller than max_model_len (32768)"}},
		{"never healthy", `echo "Loading safetensors checkpoint shards"; sleep 30`, []string{"--startup-timeout", "500ms"},
			tune.StateFailed, []string{"never became healthy", "within 500ms", "Loading safetensors"}},
		// The killer waits until the server answers (a one-request bench
		// with a ready check), then past tune's 1 s health poll, so the
		// death lands inside the 4 s load run even on a loaded machine.
		{"dies mid-run", `(` + waitReady + `; sleep 2; echo "RuntimeError: CUDA error: an illegal memory access"; kill -9 $$) & ` + serveCmd,
			[]string{"--", "--num-prompts", "40", "--request-rate", "10", "--random-input-len", "32", "--random-output-len", "8"},
			tune.StateFailed, []string{"server died mid-run", "signal: killed", "illegal memory access"}},
		{"healthy", `echo "INFO: # GPU blocks: 2184, # CPU blocks: 512"; ` + serveCmd,
			[]string{"--", "--num-prompts", "8", "--random-input-len", "32", "--random-output-len", "8"},
			tune.StateComplete, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--launch", tc.template, "--trials", "1", "--param", "max_num_seqs=8,16"}, tc.extra...)
			if !slices.Contains(tc.extra, "--") {
				args = append(args, "--", "--model", "Qwen2-0.5B", "--gpu", "H100")
			} else {
				args = append(args, "--model", "Qwen2-0.5B", "--gpu", "H100")
			}
			_, stderr, trials, err := runTuneCmd(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if len(trials) != 1 {
				t.Fatalf("%d trials", len(trials))
			}
			tr := trials[0]
			if tr.State != tc.state {
				t.Fatalf("state %s (%s), want %s", tr.State, tr.Reason, tc.state)
			}
			for _, want := range tc.reason {
				if !strings.Contains(tr.Reason, want) {
					t.Errorf("reason %q lacks %q", tr.Reason, want)
				}
			}
			if tc.state == tune.StateComplete && (tr.Observed == nil || tr.Observed.GPUBlocks != 2184) {
				t.Errorf("observed capacity %+v, want the logged 2184 GPU blocks", tr.Observed)
			}
		})
	}
}

func TestTuneFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--param", "max_num_seqs"}, "NAME=int:LOW:HIGH"},
		{[]string{"--param", "enable_lora=bool"}, "only a --launch target can vary it"},
		{[]string{"--sla-search"}, "--sla-search needs --sla"},
		{[]string{"--sampler", "grid", "--param", "max_num_seqs=8,16"}, `--sampler "grid"`},
		{[]string{"--target", "ftp://x"}, "--target"},
		{[]string{"--storage", "mysql://x/y", "--param", "max_num_seqs=8,16"}, "use FILE.db, sqlite:///FILE, postgresql://"},
		{[]string{"--launch", "vllm serve {modle}", "--trials", "1", "--param", "max_num_seqs=8,16"}, ""},
	}
	for _, tc := range tests {
		_, _, trials, err := runTuneCmd(t, tc.args...)
		if tc.want == "" {
			// An unknown placeholder fails the trial, naming it.
			if err != nil || len(trials) != 1 || !strings.Contains(trials[0].Reason, "unknown placeholder {modle}") {
				t.Errorf("%v: err %v, trials %+v", tc.args, err, trials)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A trial interrupted mid-run left a partial result in its directory;
// when it runs again (resume), that must not make bench refuse to start.
func TestTuneRerunTrialReplacesItsPartialResult(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "trial-0000")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "result.json"), []byte(`{"request_throughput": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--trials", "1", "--param", "max_num_seqs=8,16", "--", "--model", "Qwen2.5-7B-Instruct", "--gpu", "L40S",
		"--num-prompts", "10", "--random-input-len", "64", "--random-output-len", "8"}
	_, _, trials, err := runTuneCmdIn(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 1 || trials[0].State != tune.StateComplete || *trials[0].Objective == 99 {
		t.Fatalf("trials %+v", trials)
	}
}

// TestTuneNeverStartsOverUnasked: a zero-byte study file (the study's
// trials are gone) stops tune before it writes anything, unless
// --new-study; then the study runs in it.
func TestTuneNeverStartsOverUnasked(t *testing.T) {
	dir := t.TempDir()
	storage := filepath.Join(dir, "study.db")
	if err := os.WriteFile(storage, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--trials", "1", "--param", "max_num_seqs=8,16", "--", "--model", "Qwen2.5-7B-Instruct", "--gpu", "L40S",
		"--num-prompts", "10", "--random-input-len", "64", "--random-output-len", "8"}
	_, _, trials, err := runTuneCmdIn(t, dir, args...)
	if err == nil || !strings.Contains(err.Error(), "is empty (0 bytes)") || !strings.Contains(err.Error(), "--new-study") {
		t.Fatalf("zero-byte study file: err %v, want a refusal naming --new-study", err)
	}
	if st, serr := os.Stat(storage); serr != nil || st.Size() != 0 || len(trials) != 0 {
		t.Fatalf("refused, yet the study file or trials changed: %v %v, %d trials", st, serr, len(trials))
	}
	if _, _, trials, err = runTuneCmdIn(t, dir, append([]string{"--new-study"}, args...)...); err != nil || len(trials) != 1 {
		t.Fatalf("--new-study: err %v, %d trials", err, len(trials))
	}
	// Resuming the study needs no flag; --new-study over it is refused.
	if _, _, _, err = runTuneCmdIn(t, dir, args...); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if _, _, _, err = runTuneCmdIn(t, dir, append([]string{"--new-study"}, args...)...); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("--new-study over the study: %v", err)
	}
}

// TestTuneKeywordValueStorageIsPostgreSQL: a key=value connection string
// is PostgreSQL, and its password never reaches a message.
func TestTuneKeywordValueStorageIsPostgreSQL(t *testing.T) {
	dir := t.TempDir()
	spec := "host=127.0.0.1 port=1 user=tune password=pw-PLANTED dbname=tune connect_timeout=1 sslmode=disable"
	_, errw, _, err := runTuneCmdIn(t, dir, "--storage", spec, "--trials", "1", "--param", "max_num_seqs=8,16", "--",
		"--model", "Qwen2.5-7B-Instruct", "--gpu", "L40S", "--num-prompts", "10")
	if err == nil {
		t.Fatal("no error from a PostgreSQL server on a closed port")
	}
	if strings.Contains(err.Error()+errw, "PLANTED") || !strings.Contains(err.Error(), "password=[REDACTED]") {
		t.Errorf("error %q, stderr %q: want the password masked", err, errw)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "host=") || strings.Contains(e.Name(), "PLANTED") {
			t.Errorf("the connection string became a file: %s", e.Name())
		}
	}
}
