package serve

import (
	"bytes"
	"log/slog"
	"regexp"
	"testing"
	"time"
)

func TestCommaInt(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 749568: "749,568", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := commaInt(n); got != want {
			t.Errorf("commaInt(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestStartupLines(t *testing.T) {
	v1 := startupLines(true, 46848, 0, 16, 32768)
	want := []string{"GPU KV cache size: 749,568 tokens", "Maximum concurrency for 32,768 tokens per request: 22.88x"}
	if len(v1) != 2 || v1[0] != want[0] || v1[1] != want[1] {
		t.Errorf("v1 lines %q, want %q", v1, want)
	}
	v0 := startupLines(false, 27000, 2048, 16, 4096)
	want0 := []string{"# GPU blocks: 27000, # CPU blocks: 2048", "Maximum concurrency for 4096 tokens per request: 105.47x"}
	if len(v0) != 2 || v0[0] != want0[0] || v0[1] != want0[1] {
		t.Errorf("v0 lines %q, want %q", v0, want0)
	}
}

func TestStatsLines(t *testing.T) {
	s := statsLine{v1: true, elapsed: 10 * time.Second, promptTokens: 12345, genTokens: 6789,
		running: 12, waiting: 3, gpuUsage: 0.4567, prefixHitRate: 0.25}
	want := "Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 678.9 tokens/s, Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 45.7%, Prefix cache hit rate: 25.0%"
	if got := s.lines(); len(got) != 1 || got[0] != want {
		t.Errorf("v1 line\n got %q\nwant %q", got, want)
	}
	s0 := statsLine{elapsed: 5 * time.Second, promptTokens: 500, genTokens: 1000, running: 4, swapped: 1, waiting: 2,
		gpuUsage: 0.9, cpuUsage: 0.125, prefixCaching: true, cumPrefixHitRate: 0.5}
	want0 := []string{
		"Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 200.0 tokens/s, Running: 4 reqs, Swapped: 1 reqs, Pending: 2 reqs, GPU KV cache usage: 90.0%, CPU KV cache usage: 12.5%.",
		"Prefix cache hit rate: GPU: 50.00%, CPU: 0.00%",
	}
	got0 := s0.lines()
	if len(got0) != 2 || got0[0] != want0[0] || got0[1] != want0[1] {
		t.Errorf("v0 lines\n got %q\nwant %q", got0, want0)
	}
	if s.idle() || !(statsLine{v1: true, elapsed: time.Second}).idle() {
		t.Error("idle() wrong")
	}
}

func TestStatsWindow(t *testing.T) {
	var w statsWindow
	for range 1000 {
		w.add(100, 0)
	}
	for range 500 {
		w.add(100, 100) // the window keeps the last 1,000 requests
	}
	if got := w.hitRate(); got != 0.5 {
		t.Errorf("hit rate %v, want 0.5", got)
	}
	w.reset()
	if w.hitRate() != 0 {
		t.Error("reset kept data")
	}
}

func TestLogHandlerFormat(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(&buf, slog.LevelInfo)).With("replica", 2)
	log.Info("GPU KV cache size: 1,000 tokens", "path", "a b")
	log.Debug("hidden")
	log.Warn("careful")
	re := regexp.MustCompile(`^INFO \d\d-\d\d \d\d:\d\d:\d\d \[serve\] GPU KV cache size: 1,000 tokens replica=2 path="a b"\nWARNING \d\d-\d\d \d\d:\d\d:\d\d \[serve\] careful replica=2\n$`)
	if !re.Match(buf.Bytes()) {
		t.Errorf("log output %q", buf.String())
	}
}
