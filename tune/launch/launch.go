// Package launch starts a real inference server for one tuning trial from
// a command template, waits for it to become healthy, captures its log,
// reads vLLM's startup lines from it, and stops its whole process group
// afterwards. A server that exits at startup, never becomes healthy or
// dies mid-run becomes an error carrying its log tail; nothing here can
// hang a study.
package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one launch.
type Config struct {
	// Template is a shell command with {name} placeholders, e.g.
	// "vllm serve {model} --port {port} {flags}".
	Template string
	Vars     map[string]string
	// Host and Port are where the server listens; Host defaults to
	// 127.0.0.1.
	Host string
	Port int
	// HealthPath is polled until it answers 200 (default /health).
	HealthPath string
	// StartupTimeout bounds the wait for health (default 10 minutes:
	// large models load slowly); PollEvery is the poll period (1 s).
	StartupTimeout, PollEvery time.Duration
	// StopGrace is how long SIGTERM gets before SIGKILL (default 10 s).
	StopGrace time.Duration
	// LogPath, when set, receives the server's whole output.
	LogPath string
	// Env is added to this process's environment (e.g. the trial's GPUs).
	Env []string
}

// Render substitutes {name} placeholders; an unknown placeholder is an
// error naming it and the known ones.
func Render(template string, vars map[string]string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		known := make([]string, 0, len(vars))
		for k := range vars {
			known = append(known, "{"+k+"}")
		}
		sort.Strings(known)
		return "", fmt.Errorf("--launch: unknown placeholder {%s}; known: %s", strings.Join(missing, "}, {"), strings.Join(known, " "))
	}
	return out, nil
}

var placeholder = regexp.MustCompile(`\{[a-z_][a-z0-9_]*\}`)

// Server is a launched server.
type Server struct {
	URL     string
	Command string
	cmd     *exec.Cmd
	log     *tailBuffer
	file    *os.File
	done    chan struct{}
	waitErr error
	addr    string
	grace   time.Duration
	stopped sync.Once
}

// Start runs the template and waits until the server is healthy. On
// failure the returned error says how it failed (exit status at startup,
// or no health within the timeout) with the log tail, and the process
// group is already stopped.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	if cfg.HealthPath == "" {
		cfg.HealthPath = "/health"
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = 10 * time.Minute
	}
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	command, err := Render(cfg.Template, cfg.Vars)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	if !PortFree(addr) {
		return nil, fmt.Errorf("port %d is already in use before launch; stop what listens there or pick another --launch-port", cfg.Port)
	}
	s := &Server{URL: "http://" + addr, Command: command, log: &tailBuffer{max: 64 << 10}, done: make(chan struct{}), addr: addr, grace: cfg.StopGrace}
	var out io.Writer = s.log
	if cfg.LogPath != "" {
		if s.file, err = os.Create(cfg.LogPath); err != nil {
			return nil, fmt.Errorf("server log: %w", err)
		}
		fmt.Fprintf(s.file, "$ %s\n", command)
		out = io.MultiWriter(s.log, s.file)
	}
	// Not CommandContext: the stop must reach the whole process group,
	// which Stop does.
	s.cmd = exec.Command("/bin/sh", "-c", command)
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if len(cfg.Env) > 0 {
		s.cmd.Env = append(os.Environ(), cfg.Env...)
	}
	setProcessGroup(s.cmd)
	if err := s.cmd.Start(); err != nil {
		s.closeLog()
		return nil, fmt.Errorf("starting %q: %w", command, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitHealthy(ctx, cfg); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitHealthy(ctx context.Context, cfg Config) error {
	deadline := time.NewTimer(cfg.StartupTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(cfg.PollEvery)
	defer tick.Stop()
	client := &http.Client{Timeout: cfg.PollEvery + time.Second}
	for {
		if healthy(ctx, client, s.URL+cfg.HealthPath) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return fmt.Errorf("server exited during startup (%s): %s", exitText(s.waitErr), s.TailLine())
		case <-deadline.C:
			return fmt.Errorf("server never became healthy: no 200 from %s within %s: %s", cfg.HealthPath, cfg.StartupTimeout, s.TailLine())
		case <-tick.C:
		}
	}
}

func healthy(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func exitText(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// Exited is closed when the server process ends.
func (s *Server) Exited() <-chan struct{} { return s.done }

// ExitError describes how the process ended, once Exited is closed.
func (s *Server) ExitError() string { return exitText(s.waitErr) }

// Stop ends the whole process group (SIGTERM, then SIGKILL after the
// grace period) and waits until the port is free again.
func (s *Server) Stop() error {
	var err error
	s.stopped.Do(func() {
		select {
		case <-s.done:
		default:
			signalGroup(s.cmd, false)
			select {
			case <-s.done:
			case <-time.After(s.grace):
				signalGroup(s.cmd, true)
				<-s.done
			}
		}
		// Children that ignored the signal may still hold the port.
		signalGroup(s.cmd, true)
		s.closeLog()
		deadline := time.Now().Add(s.grace)
		for !PortFree(s.addr) {
			if time.Now().After(deadline) {
				err = fmt.Errorf("port %s still in use %s after the server stopped", s.addr, s.grace)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return err
}

func (s *Server) closeLog() {
	if s.file != nil {
		_ = s.file.Close()
	}
}

// Log is everything the server printed (its last 64 KiB).
func (s *Server) Log() string { return s.log.String() }

// TailLine is the last lines of the log on one line, for failure reasons.
func (s *Server) TailLine() string {
	lines := strings.Split(strings.TrimSpace(s.log.String()), "\n")
	lines = lines[max(0, len(lines)-5):]
	text := strings.Join(strings.Fields(strings.Join(lines, " | ")), " ")
	if text == "" {
		return "(no output)"
	}
	return "log tail: " + text
}

// PortFree reports whether nothing listens on addr.
func PortFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// FreePort asks the kernel for a free loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// Startup is what vLLM's startup log says about the KV cache.
type Startup struct {
	GPUBlocks      int
	KVCacheTokens  int
	KVCacheGiB     float64
	MaxConcurrency float64
}

var (
	gpuBlocksLine   = regexp.MustCompile(`# GPU blocks: ([\d,]+)`)
	kvTokensLine    = regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`)
	concurrencyLine = regexp.MustCompile(`Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x`)
	kvGiBLine       = regexp.MustCompile(`(?:reserved for KV Cache is|KV cache size:?|Available KV cache memory:) ([\d.]+) ?GiB`)
)

// ParseStartup reads vLLM's startup lines (V0's "# GPU blocks", V1's "GPU
// KV cache size", both's "Maximum concurrency", the memory profile's KV
// GiB); the last match of each wins, as a restarted engine logs again.
func ParseStartup(log string) Startup {
	var s Startup
	last := func(re *regexp.Regexp) string {
		m := re.FindAllStringSubmatch(log, -1)
		if len(m) == 0 {
			return ""
		}
		return strings.ReplaceAll(m[len(m)-1][1], ",", "")
	}
	s.GPUBlocks, _ = strconv.Atoi(last(gpuBlocksLine))
	s.KVCacheTokens, _ = strconv.Atoi(last(kvTokensLine))
	s.MaxConcurrency, _ = strconv.ParseFloat(last(concurrencyLine), 64)
	s.KVCacheGiB, _ = strconv.ParseFloat(last(kvGiBLine), 64)
	return s
}

// GPUMemory is nvidia-smi's memory "used / total" per GPU ("19344MiB /
// 46068MiB"), or "" when nvidia-smi is absent or fails.
func GPUMemory(ctx context.Context) string {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return ""
	}
	return ParseNvidiaSMI(string(out))
}

// ParseNvidiaSMI formats nvidia-smi's "used, total" CSV lines.
func ParseNvidiaSMI(out string) string {
	var gpus []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		used, total, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		gpus = append(gpus, strings.TrimSpace(used)+"MiB / "+strings.TrimSpace(total)+"MiB")
	}
	return strings.Join(gpus, "; ")
}
