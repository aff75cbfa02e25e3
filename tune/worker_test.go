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

// TUNE_TEST_POOL=STORAGE makes the test binary a `tune --worker` process:
// RunWorkers with TUNE_TEST_SLOTS slots of TUNE_TEST_GPUS_PER_TRIAL GPUs of
// its CUDA_VISIBLE_DEVICES. Each trial stores the GPUs it was given;
// TUNE_TEST_HANG as for TUNE_TEST_WORKER.
func init() {
	storage := os.Getenv("TUNE_TEST_POOL")
	if storage == "" {
		return
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	store, err := OpenStorage(ctx, storage)
	if err != nil {
		fail(err)
	}
	budget, _ := strconv.Atoi(os.Getenv("TUNE_TEST_TRIALS"))
	slotCount, _ := strconv.Atoi(os.Getenv("TUNE_TEST_SLOTS"))
	perTrial, _ := strconv.Atoi(os.Getenv("TUNE_TEST_GPUS_PER_TRIAL"))
	hang, hangSet := -1, os.Getenv("TUNE_TEST_HANG") != ""
	if hangSet {
		hang, _ = strconv.Atoi(os.Getenv("TUNE_TEST_HANG"))
	}
	devices, from := VisibleGPUs(os.Getenv)
	slots, err := SplitGPUs(devices, from, slotCount, perTrial)
	if err != nil {
		fail(err)
	}
	cfg := syntheticConfig(store, budget)
	cfg.HeartbeatEvery, cfg.StaleAfter = 20*time.Millisecond, time.Hour
	inner := cfg.Run
	cfg.Run = func(ctx context.Context, t Trial) (*Outcome, error) {
		if hang >= 0 && t.Number >= hang {
			_ = os.WriteFile(os.Getenv("TUNE_TEST_HANG_FILE"), []byte(strconv.Itoa(t.Number)), 0o644)
			<-ctx.Done()
		}
		time.Sleep(5 * time.Millisecond)
		out, err := inner(ctx, t)
		if out != nil {
			out.Result["gpus"] = strings.Join(GPUEnv(ctx), " ")
		}
		return out, err
	}
	if err := RunWorkers(ctx, cfg, slots); err != nil {
		fail(err)
	}
	os.Exit(0)
}

// poolWorker is worker() running RunWorkers instead of Optimize.
func poolWorker(t *testing.T, storage string, budget int, env ...string) *tuneWorkerProcess {
	t.Helper()
	cmd := worker(t, storage, budget, env...)
	for i, e := range cmd.Env {
		if strings.HasPrefix(e, "TUNE_TEST_WORKER=") {
			cmd.Env[i] = "TUNE_TEST_POOL=" + strings.TrimPrefix(e, "TUNE_TEST_WORKER=")
		}
	}
	return &tuneWorkerProcess{cmd}
}

func TestVisibleGPUs(t *testing.T) {
	tests := []struct {
		name, cuda, nvidia string
		want               []string
		wantFrom           string
	}{
		{"CUDA wins", "2,3", "0,1,2,3", []string{"2", "3"}, EnvCUDAVisible},
		{"pod's GPUs", "", "GPU-a1, GPU-b2", []string{"GPU-a1", "GPU-b2"}, EnvNVIDIAVisible},
		{"all is not a list", "", "all", nil, ""},
		{"none", "", "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{EnvCUDAVisible: tt.cuda, EnvNVIDIAVisible: tt.nvidia}
			got, from := VisibleGPUs(func(k string) string { return env[k] })
			if !slices.Equal(got, tt.want) || from != tt.wantFrom {
				t.Errorf("got %q from %q, want %q from %q", got, from, tt.want, tt.wantFrom)
			}
		})
	}
}

func TestSplitGPUs(t *testing.T) {
	devices := []string{"0", "1", "2", "3", "4"}
	tests := []struct {
		name            string
		slots, perTrial int
		from            string
		want            [][]string
		wantErr         string
	}{
		{name: "two trials of two", slots: 2, perTrial: 2, from: EnvCUDAVisible, want: [][]string{{"0", "1"}, {"2", "3"}}},
		{name: "CPU only", slots: 3, perTrial: 0, want: [][]string{nil, nil, nil}},
		{name: "too few", slots: 3, perTrial: 2, from: EnvCUDAVisible, wantErr: "needs 6 GPUs but $CUDA_VISIBLE_DEVICES lists 5"},
		{name: "no list", slots: 1, perTrial: 1, wantErr: "no GPUs listed"},
		{name: "no slots", slots: 0, perTrial: 1, from: EnvCUDAVisible, wantErr: "--concurrent-trials 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SplitGPUs(devices, tt.from, tt.slots, tt.perTrial)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// Two worker processes of two concurrent trials each (2 GPUs per trial
// from CUDA_VISIBLE_DEVICES=0,1,2,3) share one study; one is killed with
// SIGKILL mid-trial. The survivor stays until the study is finished,
// reaps the dead worker's trials and reruns them: every trial number is
// stored once, each ran on one slot's own GPUs, and only the killed
// worker's trials ran twice.
func TestWorkerKilledMidTrialSQLite(t *testing.T) {
	testWorkerKilledMidTrial(t, filepath.Join(t.TempDir(), "study.db"))
}

func TestWorkerKilledMidTrialPostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster (about 2 s)")
	}
	testWorkerKilledMidTrial(t, startPostgres(t))
}

func testWorkerKilledMidTrial(t *testing.T, storage string) {
	const budget = 16
	marker := filepath.Join(t.TempDir(), "hanging")
	common := []string{"CUDA_VISIBLE_DEVICES=0,1,2,3", "TUNE_TEST_SLOTS=2", "TUNE_TEST_GPUS_PER_TRIAL=2"}
	doomed := poolWorker(t, storage, budget, append(common, "TUNE_TEST_HANG=3", "TUNE_TEST_HANG_FILE="+marker)...)
	if err := doomed.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hang := doomed.waitForMarker(t, marker)
	survivor := poolWorker(t, storage, budget, common...)
	if err := survivor.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill only once the survivor has run everything else: a worker that
	// left when the budget was claimed would leave the dead worker's
	// trials RUNNING for ever.
	waitUntil(t, storage, func(trials []Trial) bool {
		if len(trials) < budget {
			return false
		}
		for _, tr := range trials {
			if _, pid, _ := parseWorkerID(tr.Worker); !tr.State.finished() && pid != doomed.cmd.Process.Pid {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond)                // the survivor's loops see the budget used
	if err := doomed.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = doomed.cmd.Wait()
	done := make(chan error, 1)
	go func() { done <- survivor.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("surviving worker: %v", err)
		}
	case <-time.After(60 * time.Second):
		_ = survivor.cmd.Process.Kill()
		t.Fatal("the surviving worker did not finish the study")
	}
	store, err := OpenStorage(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	trials := checkStudy(t, store, budget)
	if trials[hang].Attempts != 2 {
		t.Errorf("the killed worker's trial %d ran %d times, want 2 (its attempt, then the reaped rerun)", hang, trials[hang].Attempts)
	}
	rerun := 0
	for _, tr := range trials {
		if tr.Attempts > 2 || tr.Attempts < 1 {
			t.Errorf("trial %d ran %d times", tr.Number, tr.Attempts)
		}
		if tr.Attempts == 2 {
			rerun++
		}
		if tr.State != StateComplete {
			continue
		}
		gpus, _ := tr.Result["gpus"].(string)
		if gpus != "CUDA_VISIBLE_DEVICES=0,1 NVIDIA_VISIBLE_DEVICES=0,1" && gpus != "CUDA_VISIBLE_DEVICES=2,3 NVIDIA_VISIBLE_DEVICES=2,3" {
			t.Errorf("trial %d ran with %q, want one slot's two GPUs", tr.Number, gpus)
		}
	}
	// The doomed worker had two slots: at most both were mid-trial.
	if rerun < 1 || rerun > 2 {
		t.Errorf("%d trials ran twice; want the killed worker's 1 or 2", rerun)
	}
	t.Logf("killed worker's trial %d rerun; %d trials ran twice", hang, rerun)
}

type tuneWorkerProcess struct{ cmd *exec.Cmd }

func (w *tuneWorkerProcess) waitForMarker(t *testing.T, marker string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(marker); err == nil && len(data) > 0 {
			n, _ := strconv.Atoi(string(data))
			return n
		}
		if time.Now().After(deadline) {
			_ = w.cmd.Process.Kill()
			t.Fatal("the worker never reached the hanging trial")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitUntil polls the study until done holds for its trials.
func waitUntil(t *testing.T, storage string, done func([]Trial) bool) {
	t.Helper()
	store, err := OpenStorage(context.Background(), storage)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		trials, err := store.Trials(context.Background(), "shared")
		if err != nil {
			t.Fatal(err)
		}
		if done(trials) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the study never reached the expected state: %d trials", len(trials))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
