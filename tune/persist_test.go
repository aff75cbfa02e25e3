package tune

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a tune worker: TUNE_TEST_WORKER=STORAGE
// runs Optimize on a synthetic objective. TUNE_TEST_HANG=N makes the
// first run trial numbered N or more block after writing its number to
// TUNE_TEST_HANG_FILE, so the parent can kill -9 it mid-trial.
func init() {
	storage := os.Getenv("TUNE_TEST_WORKER")
	if storage == "" {
		return
	}
	ctx := context.Background()
	store, err := OpenStorage(ctx, storage)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	hang, _ := strconv.Atoi(os.Getenv("TUNE_TEST_HANG"))
	if os.Getenv("TUNE_TEST_HANG") == "" {
		hang = -1
	}
	budget, _ := strconv.Atoi(os.Getenv("TUNE_TEST_TRIALS"))
	cfg := syntheticConfig(store, budget)
	cfg.Seed = int64(os.Getpid()) // workers sharing a study sample different points
	cfg.Sampler = SamplerTPE
	cfg.StartupTrials = 3
	inner := cfg.Run
	cfg.Run = func(ctx context.Context, t Trial) (*Outcome, error) {
		// The first trial from number hang on that passes validation.
		if hang >= 0 && t.Number >= hang {
			_ = os.WriteFile(os.Getenv("TUNE_TEST_HANG_FILE"), []byte(strconv.Itoa(t.Number)), 0o644)
			<-ctx.Done()
		}
		time.Sleep(5 * time.Millisecond) // let two workers interleave
		return inner(ctx, t)
	}
	if err := Optimize(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// syntheticConfig maximises -(x-30)² over x in [1, 64], with x < 4
// rejected by validation.
func syntheticConfig(store *Storage, budget int) Config {
	return Config{Study: "shared", Storage: store, Trials: budget, Sampler: SamplerRandom, Seed: 1,
		Space: &Space{Params: []Param{{Name: "max_num_seqs", Kind: KindInt, Low: 1, High: 64}}},
		Validate: func(_ context.Context, p Point) (*Capacity, error) {
			if x, _ := strconv.Atoi(p["max_num_seqs"]); x < 4 {
				return nil, fmt.Errorf("max_num_seqs (%d) is too small for this test", x)
			}
			return &Capacity{GPUBlocks: 100}, nil
		},
		Run: func(_ context.Context, t Trial) (*Outcome, error) {
			x, _ := strconv.Atoi(t.Params["max_num_seqs"])
			return &Outcome{Result: map[string]any{"request_throughput": 1000 - float64((x-30)*(x-30))}}, nil
		}}
}

func worker(t *testing.T, storage string, budget int, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, "TUNE_TEST_WORKER="+storage, "TUNE_TEST_TRIALS="+strconv.Itoa(budget))...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("worker stderr: %s", stderr.String())
		}
	})
	return cmd
}

// checkStudy asserts the study holds trials 0..budget-1, each finished
// exactly once.
func checkStudy(t *testing.T, store *Storage, budget int) []Trial {
	t.Helper()
	trials, err := store.Trials(context.Background(), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != budget {
		t.Fatalf("%d trials stored, want %d", len(trials), budget)
	}
	for i, tr := range trials {
		if tr.Number != i || !tr.State.finished() {
			t.Errorf("trial %d: number %d state %s", i, tr.Number, tr.State)
		}
	}
	return trials
}

func TestResumeAfterSIGKILLLosesAndDuplicatesNothing(t *testing.T) {
	dir := t.TempDir()
	storage := filepath.Join(dir, "study.db")
	marker := filepath.Join(dir, "hanging")
	const budget = 10
	child := worker(t, storage, budget, "TUNE_TEST_HANG=4", "TUNE_TEST_HANG_FILE="+marker)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	hang := -1
	for {
		if data, err := os.ReadFile(marker); err == nil && len(data) > 0 {
			hang, _ = strconv.Atoi(string(data))
			break
		}
		if time.Now().After(deadline) {
			_ = child.Process.Kill()
			t.Fatal("the worker never reached the hanging trial")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: no cleanup runs
		t.Fatal(err)
	}
	_ = child.Wait()

	store, err := OpenStorage(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	before, _ := store.Trials(context.Background(), "shared")
	if len(before) != hang+1 || before[hang].State != StateRunning {
		t.Fatalf("after the kill: %d trials, last %s; want %d with the last RUNNING", len(before), before[len(before)-1].State, hang+1)
	}
	// Resume in this process: the dead worker's trial is reclaimed at once
	// (same host, process gone), not after the stale timeout.
	cfg := syntheticConfig(store, budget)
	cfg.StaleAfter = time.Hour
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	trials := checkStudy(t, store, budget)
	if trials[hang].Attempts != 2 || trials[hang].Params["max_num_seqs"] != before[hang].Params["max_num_seqs"] {
		t.Errorf("trial %d rerun: attempts %d, params %v (was %v)", hang, trials[hang].Attempts, trials[hang].Params, before[hang].Params)
	}
	for i := range hang {
		if trials[i].Attempts != 1 || trials[i].Finished != before[i].Finished {
			t.Errorf("finished trial %d was run again", i)
		}
	}
}

func TestTwoWorkersShareOneSQLiteStudy(t *testing.T) {
	storage := filepath.Join(t.TempDir(), "study.db")
	testTwoWorkers(t, storage)
}

func testTwoWorkers(t *testing.T, storage string) {
	const budget = 24
	a, b := worker(t, storage, budget), worker(t, storage, budget)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("worker a: %v", err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("worker b: %v", err)
	}
	store, err := OpenStorage(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	trials := checkStudy(t, store, budget)
	workers := map[string]int{}
	invalid := 0
	for _, tr := range trials {
		workers[tr.Worker]++
		if tr.Attempts != 1 {
			t.Errorf("trial %d ran %d times", tr.Number, tr.Attempts)
		}
		if tr.State == StateInvalid {
			invalid++
		}
	}
	if len(workers) != 2 {
		t.Errorf("trials by worker: %v; want both workers to contribute", workers)
	}
	t.Logf("trials by worker: %v, invalid %d", workers, invalid)
}

func TestStaleRunningTrialIsReaped(t *testing.T) {
	store := openTestStorage(t)
	ctx := context.Background()
	if _, err := store.EnsureStudy(ctx, "shared", "x"); err != nil {
		t.Fatal(err)
	}
	// A worker on another machine that stopped heartbeating.
	if _, ok, err := store.ClaimNew(ctx, "shared", workerID("elsewhere", 1, 1), Point{"max_num_seqs": "8"}, 5); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if reaped, err := store.Reap(ctx, "shared", time.Hour, nil); err != nil || len(reaped) != 0 {
		t.Fatalf("a fresh trial was reaped: %v %v", reaped, err)
	}
	reaped, err := store.Reap(ctx, "shared", -time.Second, nil)
	if err != nil || len(reaped) != 1 || reaped[0] != 0 {
		t.Fatalf("reaped %v, %v", reaped, err)
	}
	tr, ok, err := store.ClaimWaiting(ctx, "shared", "me:1:1")
	if err != nil || !ok || tr.Params["max_num_seqs"] != "8" || tr.Attempts != 2 {
		t.Fatalf("claim after reap: %+v %v %v", tr, ok, err)
	}
}

func TestResumeRefusesAnotherSpace(t *testing.T) {
	store := openTestStorage(t)
	cfg := syntheticConfig(store, 2)
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Space = &Space{Params: []Param{{Name: "max_num_seqs", Kind: KindInt, Low: 1, High: 128}}}
	if err := Optimize(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "another search space") {
		t.Fatalf("err = %v", err)
	}
}

func TestInterruptedTrialGoesBackToWaiting(t *testing.T) {
	store := openTestStorage(t)
	cfg := syntheticConfig(store, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Run = func(ctx context.Context, tr Trial) (*Outcome, error) {
		cancel() // Ctrl-C while the first trial runs
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err := Optimize(ctx, cfg); err == nil {
		t.Fatal("no error after an interrupt")
	}
	trials, _ := store.Trials(context.Background(), "shared")
	// Invalid points never run, so they may come before the interrupted one.
	last := trials[len(trials)-1]
	if last.State != StateWaiting || slices.ContainsFunc(trials[:len(trials)-1], func(tr Trial) bool { return tr.State != StateInvalid }) {
		t.Fatalf("after the interrupt: %+v", trials)
	}
	cfg = syntheticConfig(store, 3)
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got := checkStudy(t, store, 3)
	if got[last.Number].Params["max_num_seqs"] != last.Params["max_num_seqs"] {
		t.Errorf("the interrupted trial was resampled: %v then %v", last.Params, got[last.Number].Params)
	}
}

// A worker whose trial was given away while it ran (it looked dead) must
// drop its result: the trial runs once more elsewhere and is stored once.
func TestTrialGivenAwayMidRunIsNotStoredTwice(t *testing.T) {
	store := openTestStorage(t)
	cfg := syntheticConfig(store, 2)
	cfg.Validate = func(context.Context, Point) (*Capacity, error) { return nil, nil }
	cfg.HeartbeatEvery = 10 * time.Millisecond
	inner := cfg.Run
	calls := 0
	cfg.Run = func(ctx context.Context, tr Trial) (*Outcome, error) {
		calls++
		if calls == 1 {
			if _, err := store.Reap(ctx, "shared", -time.Second, nil); err != nil {
				return nil, err
			}
			<-ctx.Done() // the heartbeat finds the trial gone and cancels
			return nil, ctx.Err()
		}
		return inner(ctx, tr)
	}
	reported := map[int]int{}
	cfg.OnTrial = func(tr Trial) { reported[tr.Number]++ }
	if err := Optimize(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	trials := checkStudy(t, store, 2)
	if trials[0].Attempts != 2 || reported[0] != 1 || calls != 3 {
		t.Errorf("attempts %d, reported %v, runner calls %d", trials[0].Attempts, reported, calls)
	}
}
