package e2ebench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
)

// emulatorRun is one fixed-latency load: Streams requests sent at once with
// --max-concurrency Streams, each asking for Output tokens, against a server
// whose first token takes TTFT and every later one ITL.
type emulatorRun struct {
	Streams, Output int
	TTFT, ITL       time.Duration
}

// idealThroughput is the output rate a perfect emulator gives this load:
// every request starts at once and runs exactly on the model's timeline, so
// all Streams·Output tokens are out after TTFT + (Output−1)·ITL.
func (r emulatorRun) idealThroughput() float64 {
	d := r.TTFT + time.Duration(r.Output-1)*r.ITL
	return float64(r.Streams*r.Output) / d.Seconds()
}

// benchResult is what the figures need from bench's --save-detailed result
// JSON (vLLM's keys; durations in seconds).
type benchResult struct {
	Completed        int         `json:"completed"`
	Duration         float64     `json:"duration"`
	OutputThroughput float64     `json:"output_throughput"`
	MeanTPOTms       float64     `json:"mean_tpot_ms"`
	MedianTTFTms     float64     `json:"median_ttft_ms"`
	OutputLens       []int       `json:"output_lens"`
	ITLs             [][]float64 `json:"itls"`
	ServerMetrics    *struct {
		Summary struct {
			EmulatorLag *struct {
				P99Seconds    float64 `json:"p99_seconds"`
				BehindSeconds float64 `json:"behind_seconds"`
			} `json:"emulator_lag"`
		} `json:"summary"`
	} `json:"server_metrics"`
}

// emulatorFigures are what a user of the emulator sees, side by side.
type emulatorFigures struct {
	IdealShare      float64 // measured output throughput / idealThroughput
	ITLp50, ITLp99  time.Duration
	ITLmax          time.Duration
	TPOTvsModel     float64 // mean TPOT / ITL − 1
	ChunksPerToken  float64 // token-bearing chunks received / output tokens
	TTFTp50         time.Duration
	StepLagP99      time.Duration // serve's own figure, -1 when the target is not serve
	BehindTheModel  time.Duration
	OutputPerSecond float64
}

// figures computes the run's figures from bench's result. ITL percentiles
// are over every gap between two token-bearing chunks of a stream (vLLM's
// ITL: one entry per chunk, so tokens merged into one chunk show as fewer,
// longer gaps and as chunks per token below 1).
func (r emulatorRun) figures(res *benchResult) (emulatorFigures, error) {
	if res.Completed != r.Streams || len(res.ITLs) != len(res.OutputLens) {
		return emulatorFigures{}, fmt.Errorf("%d of %d requests completed (%d ITL lists, %d output lengths)", res.Completed, r.Streams, len(res.ITLs), len(res.OutputLens))
	}
	var gaps []float64
	chunks, tokens := 0, 0
	for i, itl := range res.ITLs {
		if res.OutputLens[i] == 0 {
			continue
		}
		gaps = append(gaps, itl...)
		chunks += len(itl) + 1
		tokens += res.OutputLens[i]
	}
	if len(gaps) == 0 || tokens == 0 {
		return emulatorFigures{}, fmt.Errorf("no inter-token gaps in the result: did the server stream?")
	}
	slices.Sort(gaps)
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	f := emulatorFigures{
		IdealShare:      res.OutputThroughput / r.idealThroughput(),
		ITLp50:          sec(metrics.Percentile(gaps, 50)),
		ITLp99:          sec(metrics.Percentile(gaps, 99)),
		ITLmax:          sec(gaps[len(gaps)-1]),
		TPOTvsModel:     res.MeanTPOTms/(float64(r.ITL)/float64(time.Millisecond)) - 1,
		ChunksPerToken:  float64(chunks) / float64(tokens),
		TTFTp50:         sec(res.MedianTTFTms / 1000),
		StepLagP99:      -1,
		OutputPerSecond: res.OutputThroughput,
	}
	if sm := res.ServerMetrics; sm != nil && sm.Summary.EmulatorLag != nil {
		f.StepLagP99 = sec(sm.Summary.EmulatorLag.P99Seconds)
		f.BehindTheModel = sec(sm.Summary.EmulatorLag.BehindSeconds)
	}
	return f, nil
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v >= 0 {
		return time.Duration(v * float64(time.Millisecond))
	}
	return def
}

// buildServebench builds the servebench binary into a temporary directory,
// or returns SERVEBENCH_E2E_BIN (an older build, for a before/after figure).
func buildServebench(b *testing.B) string {
	if bin := os.Getenv("SERVEBENCH_E2E_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(b.TempDir(), "servebench")
	build := exec.Command("go", "build", "-o", bin, "github.com/servebench/servebench/cmd/servebench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var serveURL = regexp.MustCompile(`Starting vLLM API server on (http://\S+)`)

// startServe runs `servebench serve` in fixed-latency mode on a free
// loopback port and returns its URL and a stop function that ends it and
// returns its CPU time.
func startServe(b *testing.B, bin string, run emulatorRun) (string, func() time.Duration) {
	args := []string{"serve", "--port", "0", "--max-num-seqs", strconv.Itoa(max(run.Streams, 1)),
		"--max-num-batched-tokens", strconv.Itoa(max(run.Streams*32, 8192)),
		"--time-to-first-token", run.TTFT.String(), "--inter-token-latency", run.ITL.String(), "--disable-log-stats"}
	cmd := exec.Command(bin, append(args, strings.Fields(os.Getenv("SERVEBENCH_E2E_SERVE_FLAGS"))...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var log strings.Builder
	url := ""
	for url == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := serveURL.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		b.Fatalf("servebench serve did not start:\n%s", log.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return url, func() time.Duration {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
}

func loadAverage() float64 {
	raw, _ := os.ReadFile("/proc/loadavg")
	v, _ := strconv.ParseFloat(strings.Fields(string(raw) + " 0")[0], 64)
	return v
}

// BenchmarkEmulatorStreams measures serve as an emulator the way a user
// sees it: `servebench serve` in fixed-latency mode in one process,
// `servebench bench` in another, over loopback. By default 1,000 requests
// of 16 random tokens in / 1,000 out, all at once with --max-concurrency
// 1000, --time-to-first-token 10ms --inter-token-latency 10ms. It reports
// output throughput as a share of the ideal (idealThroughput), ITL
// p50/p99/max, mean TPOT against the model's ITL, chunks per token and TTFT,
// plus serve's step-loop lag and the CPU each process spent per token.
// Sizes: SERVEBENCH_E2E_STREAMS, SERVEBENCH_E2E_OUTPUT,
// SERVEBENCH_E2E_TTFT_MS, SERVEBENCH_E2E_ITL_MS; extra flags for serve in
// SERVEBENCH_E2E_SERVE_FLAGS and for bench in SERVEBENCH_E2E_FLAGS;
// SERVEBENCH_E2E_BASE_URL benchmarks a server already running there (a
// peer started with the same latencies) instead of starting serve. Run with
// -benchtime 1x.
func BenchmarkEmulatorStreams(b *testing.B) {
	if testing.Short() {
		b.Skip("builds the binary and runs a multi-second load: not in -short")
	}
	run := emulatorRun{
		Streams: envInt("SERVEBENCH_E2E_STREAMS", 1000),
		Output:  envInt("SERVEBENCH_E2E_OUTPUT", 1000),
		TTFT:    envDuration("SERVEBENCH_E2E_TTFT_MS", 10*time.Millisecond),
		ITL:     envDuration("SERVEBENCH_E2E_ITL_MS", 10*time.Millisecond),
	}
	bin := buildServebench(b)
	for b.Loop() {
		load := loadAverage()
		url, stop := os.Getenv("SERVEBENCH_E2E_BASE_URL"), func() time.Duration { return 0 }
		if url == "" {
			url, stop = startServe(b, bin, run)
		}
		dir := b.TempDir()
		args := []string{"bench", "--base-url", url, "--dataset-name", "random", "--random-input-len", "16",
			"--random-output-len", strconv.Itoa(run.Output), "--num-prompts", strconv.Itoa(run.Streams),
			"--max-concurrency", strconv.Itoa(run.Streams), "--request-rate", "inf", "--skip-tokenizer-init",
			"--skip-test-request", "--disable-tqdm", "--save-result", "--save-detailed", "--result-dir", dir,
			"--result-filename", "result.json", "--records", "none", "--server-metrics-interval", "1s"}
		cmd := exec.Command(bin, append(args, strings.Fields(os.Getenv("SERVEBENCH_E2E_FLAGS"))...)...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		serveCPU := stop()
		if err != nil {
			b.Fatalf("servebench bench: %v\n%s", err, out.String())
		}
		raw, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil {
			b.Fatal(err)
		}
		var res benchResult
		if err := json.Unmarshal(raw, &res); err != nil {
			b.Fatalf("result JSON: %v", err)
		}
		f, err := run.figures(&res)
		if err != nil {
			b.Fatalf("%v\n%s", err, out.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		tokens := float64(run.Streams * run.Output)
		msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		b.ReportMetric(100*f.IdealShare, "%-of-ideal")
		b.ReportMetric(f.OutputPerSecond, "out-tok/s")
		b.ReportMetric(msOf(f.ITLp50), "itl-p50-ms")
		b.ReportMetric(msOf(f.ITLp99), "itl-p99-ms")
		b.ReportMetric(msOf(f.ITLmax), "itl-max-ms")
		b.ReportMetric(100*f.TPOTvsModel, "tpot-vs-model-%")
		b.ReportMetric(f.ChunksPerToken, "chunks/token")
		b.ReportMetric(msOf(f.TTFTp50), "ttft-p50-ms")
		if f.StepLagP99 >= 0 {
			b.ReportMetric(msOf(f.StepLagP99), "step-lag-p99-ms")
			b.ReportMetric(msOf(f.BehindTheModel), "behind-ms")
		}
		if serveCPU > 0 {
			b.ReportMetric(float64(serveCPU)/1e3/tokens, "serve-cpu-µs/tok")
		}
		b.ReportMetric(float64(ru.Utime.Nano()+ru.Stime.Nano())/1e3/tokens, "bench-cpu-µs/tok")
		b.ReportMetric(load, "load1-before")
		b.ReportMetric(loadAverage(), "load1-after")
	}
}

func TestEmulatorFigures(t *testing.T) {
	run := emulatorRun{Streams: 2, Output: 3, TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond}
	// Ideal: 6 tokens in 20 ms + 2·10 ms = 40 ms, 150 tok/s.
	if got := run.idealThroughput(); got != 150 {
		t.Fatalf("ideal throughput %v, want 150", got)
	}
	tests := []struct {
		name string
		res  benchResult
		want emulatorFigures
	}{
		{"on the model", benchResult{Completed: 2, OutputThroughput: 150, MeanTPOTms: 10, MedianTTFTms: 20,
			OutputLens: []int{3, 3}, ITLs: [][]float64{{0.01, 0.01}, {0.01, 0.01}}},
			emulatorFigures{IdealShare: 1, ITLp50: 10 * time.Millisecond, ITLp99: 10 * time.Millisecond, ITLmax: 10 * time.Millisecond,
				ChunksPerToken: 1, TTFTp50: 20 * time.Millisecond, StepLagP99: -1, OutputPerSecond: 150}},
		{"second stream's last two tokens merged into one late chunk", benchResult{Completed: 2, OutputThroughput: 120, MeanTPOTms: 11,
			MedianTTFTms: 20, OutputLens: []int{3, 3}, ITLs: [][]float64{{0.01, 0.01}, {0.022}}},
			emulatorFigures{IdealShare: 0.8, ITLp50: 10 * time.Millisecond, ITLp99: 21760 * time.Microsecond, ITLmax: 22 * time.Millisecond,
				TPOTvsModel: 0.1, ChunksPerToken: 5.0 / 6, TTFTp50: 20 * time.Millisecond, StepLagP99: -1, OutputPerSecond: 120}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run.figures(&tt.res)
			if err != nil {
				t.Fatal(err)
			}
			if !closeFigures(got, tt.want) {
				t.Errorf("figures\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if _, err := run.figures(&benchResult{Completed: 1, OutputLens: []int{3}, ITLs: [][]float64{{0.01, 0.01}}}); err == nil {
		t.Error("a run where a request failed gave figures")
	}
}

func closeFigures(a, b emulatorFigures) bool {
	near := func(x, y float64) bool { return x-y < 1e-9 && y-x < 1e-9 }
	nearD := func(x, y time.Duration) bool { d := x - y; return d < time.Microsecond && d > -time.Microsecond }
	return near(a.IdealShare, b.IdealShare) && nearD(a.ITLp50, b.ITLp50) && nearD(a.ITLp99, b.ITLp99) && nearD(a.ITLmax, b.ITLmax) &&
		near(a.TPOTvsModel, b.TPOTvsModel) && near(a.ChunksPerToken, b.ChunksPerToken) && nearD(a.TTFTp50, b.TTFTp50) &&
		a.StepLagP99 == b.StepLagP99 && near(a.OutputPerSecond, b.OutputPerSecond)
}
