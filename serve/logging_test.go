package serve

import (
	"bytes"
	"log/slog"
	"regexp"
	"testing"
)

// The startup lines come from perf.Capacity.LogLines, tested there; this
// checks serve hands it the engine configuration it runs.
func TestStartupLinesFromEngineConfig(t *testing.T) {
	s := &Server{cfg: Config{}}
	s.cfg.Engine.Version, s.cfg.Engine.NumGPUBlocks, s.cfg.Engine.BlockSize, s.cfg.Engine.MaxModelLen = "v1", 46848, 16, 32768
	want := []string{"GPU KV cache size: 749,568 tokens", "Maximum concurrency for 32,768 tokens per request: 22.88x"}
	if got := s.StartupLines(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("v1 lines %q, want %q", got, want)
	}
	s.cfg.Engine.Version, s.cfg.Engine.NumGPUBlocks, s.cfg.Engine.NumCPUBlocks, s.cfg.Engine.MaxModelLen = "v0", 27000, 2048, 4096
	want0 := []string{"# GPU blocks: 27000, # CPU blocks: 2048", "Maximum concurrency for 4096 tokens per request: 105.47x"}
	if got := s.StartupLines(); len(got) != 2 || got[0] != want0[0] || got[1] != want0[1] {
		t.Errorf("v0 lines %q, want %q", got, want0)
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
