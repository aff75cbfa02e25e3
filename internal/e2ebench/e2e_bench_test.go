// Package e2ebench measures what the bench command costs as a user pays
// for it: the servebench binary in its own process against a streaming
// server in another one, over loopback, with the CPU, memory and context
// switches of the bench process read from the kernel (rusage of the child).
package e2ebench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const serverEnv = "SERVEBENCH_E2E_STREAM_SERVER"

// rawReaderEnv makes the test binary the reference client of
// BenchmarkRawReaderCPUPerChunk instead of running tests.
const rawReaderEnv = "SERVEBENCH_E2E_RAW_READER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) != "" {
		runStepServer()
		return
	}
	if spec := os.Getenv(floorEnv); spec != "" {
		if err := runFloorSide(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(rawReaderEnv) != "" {
		if err := runRawReader(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// stepClock releases every stream's next token together, every step, as an
// engine's decode step does, so each stream's chunk arrives on its own
// (one token per chunk, one read per chunk) rather than all at once.
type stepClock struct {
	mu   sync.Mutex
	tick chan struct{}
}

func (c *stepClock) next() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tick
}

func (c *stepClock) run(step time.Duration) {
	for range time.Tick(step) {
		c.mu.Lock()
		close(c.tick)
		c.tick = make(chan struct{})
		c.mu.Unlock()
	}
}

// runStepServer is the body of the server process: it prints its address,
// streams max_tokens one-token chunks per request in vLLM's completion
// format, one per step, and exits when its stdin closes.
func runStepServer() {
	step, _ := time.ParseDuration(os.Getenv(serverEnv))
	clock := &stepClock{tick: make(chan struct{})}
	go clock.run(step)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		tokens := maxTokens(body)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range tokens {
			<-clock.next()
			finish := "null"
			if i == tokens-1 {
				finish = `"length"`
			}
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" tok\",\"logprobs\":null,\"finish_reason\":%s,\"stop_reason\":null}],\"usage\":null}\n\n", finish)
			if rc.Flush() != nil {
				return
			}
		}
		fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":200,\"total_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", 200+tokens, tokens)
	})}
	go func() { _ = srv.Serve(ln) }()
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = srv.Close()
}

// maxTokens reads "max_tokens":N from the request body without a JSON
// decoder: the server's cost is not what is measured, but it shares the
// machine.
func maxTokens(body []byte) int {
	s := string(body)
	i := strings.Index(s, `"max_tokens":`)
	if i < 0 {
		return 16
	}
	s = s[i+len(`"max_tokens":`):]
	end := strings.IndexAny(s, ",}")
	n, err := strconv.Atoi(strings.TrimSpace(s[:end]))
	if err != nil || n < 1 {
		return 16
	}
	return n
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkBenchProcessCPUPerChunk runs `servebench bench` (built into a
// temporary directory) against the step server over loopback: by default
// 2,000 requests, 200 in / 400 out, rate inf, one token per chunk, a 10 ms
// step. It reports the bench process's user+sys CPU per chunk received,
// its peak RSS and its voluntary context switches. Sizes:
// SERVEBENCH_E2E_REQUESTS, SERVEBENCH_E2E_OUTPUT, SERVEBENCH_E2E_STEP_MS,
// extra bench flags in SERVEBENCH_E2E_FLAGS, and SERVEBENCH_E2E_BIN for a
// prebuilt binary. Run with -benchtime 1x.
func BenchmarkBenchProcessCPUPerChunk(b *testing.B) {
	if testing.Short() {
		b.Skip("builds the binary and runs a multi-second load: not in -short")
	}
	bin := buildServebench(b)
	measureClientProcess(b, func(args []string) *exec.Cmd {
		return exec.Command(bin, append(args, strings.Fields(os.Getenv("SERVEBENCH_E2E_FLAGS"))...)...)
	})
}

// BenchmarkRawReaderCPUPerChunk is the floor under the figure above: the
// same load read by the least a Go client can do (one goroutine and one
// plain TCP connection per stream, a hand-written request, one clock read
// per read, counting events instead of parsing them). What servebench
// costs above this is its own; what this costs is the kernel's loopback
// TCP path and the Go scheduler's one wake-up per arriving chunk.
func BenchmarkRawReaderCPUPerChunk(b *testing.B) {
	if testing.Short() {
		b.Skip("runs a multi-second load: not in -short")
	}
	measureClientProcess(b, func(args []string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), rawReaderEnv+"=1")
		return cmd
	})
}

// measureClientProcess starts the step server, runs the client command
// built from bench's arguments once per iteration and reports the client
// process's CPU per chunk, peak RSS and context switches from its rusage.
func measureClientProcess(b *testing.B, clientCmd func(args []string) *exec.Cmd) {
	requests := envInt("SERVEBENCH_E2E_REQUESTS", 2000)
	output := envInt("SERVEBENCH_E2E_OUTPUT", 400)
	step := time.Duration(envInt("SERVEBENCH_E2E_STEP_MS", 10)) * time.Millisecond

	server := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	server.Env = append(os.Environ(), serverEnv+"="+step.String())
	stdin, err := server.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := server.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = server.Wait() }()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("step server: %v", err)
	}

	args := []string{"bench", "--base-url", "http://" + strings.TrimSpace(addr), "--model", "m",
		"--dataset-name", "random", "--random-input-len", "200", "--random-output-len", strconv.Itoa(output),
		"--num-prompts", strconv.Itoa(requests), "--request-rate", "inf", "--skip-tokenizer-init",
		"--server-metrics-interval", "0", "--disable-tqdm", "--records", "none"}
	for b.Loop() {
		cmd := clientCmd(args)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s: %v\n%s", cmd.Path, err, out.String())
		}
		wall := time.Since(start)
		want := fmt.Sprintf("Successful requests:                     %-10d", requests)
		if !strings.Contains(out.String(), want) {
			b.Fatalf("not every request succeeded:\n%s", out.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		user := time.Duration(ru.Utime.Nano())
		sys := time.Duration(ru.Stime.Nano())
		chunks := float64(requests * output)
		b.ReportMetric(float64(user+sys)/1e3/chunks, "cpu-µs/chunk")
		b.ReportMetric(float64(user)/1e3/chunks, "user-µs/chunk")
		b.ReportMetric(float64(sys)/1e3/chunks, "sys-µs/chunk")
		b.ReportMetric(float64(ru.Maxrss)/1024, "RSS-MB")
		b.ReportMetric(float64(ru.Nvcsw), "vol-ctxsw")
		b.ReportMetric(float64(ru.Nvcsw)/chunks, "vol-ctxsw/chunk")
		b.ReportMetric(wall.Seconds(), "wall-s")
	}
}
