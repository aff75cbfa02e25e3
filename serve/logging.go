package serve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// NewLogHandler returns a slog.Handler that writes vLLM-style lines,
// "INFO 11-22 06:47:00 [serve] GPU KV cache size: 749,568 tokens", so tools
// that grep vLLM's logs work on servebench's. Attributes follow the message
// as key=value.
func NewLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &vllmLogHandler{out: &lockedWriter{w: w}, level: level}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

type vllmLogHandler struct {
	out   *lockedWriter
	level slog.Leveler
	attrs string
}

func (h *vllmLogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *vllmLogHandler) Handle(_ context.Context, r slog.Record) error {
	var b []byte
	b = append(b, levelName(r.Level)...)
	b = append(b, ' ')
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b = t.AppendFormat(b, "01-02 15:04:05")
	b = append(b, " [serve] "...)
	b = append(b, r.Message...)
	b = append(b, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		b = appendAttr(b, a)
		return true
	})
	b = append(b, '\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := h.out.w.Write(b)
	return err
}

func (h *vllmLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b []byte
	for _, a := range as {
		b = appendAttr(b, a)
	}
	return &vllmLogHandler{out: h.out, level: h.level, attrs: h.attrs + string(b)}
}

// WithGroup is accepted but flattens groups: the vLLM format has none.
func (h *vllmLogHandler) WithGroup(string) slog.Handler { return h }

func appendAttr(b []byte, a slog.Attr) []byte {
	if a.Equal(slog.Attr{}) {
		return b
	}
	b = append(b, ' ')
	b = append(b, a.Key...)
	b = append(b, '=')
	v := a.Value.Resolve().String()
	if strings.ContainsAny(v, " \"=") {
		return strconv.AppendQuote(b, v)
	}
	return append(b, v...)
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	}
	return "DEBUG"
}

// commaInt formats n with thousands separators, as Python's f"{n:,}".
func commaInt(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// startupLines are the KV-cache lines vLLM logs once the cache is sized
// (the same as perf.Capacity.LogLines, from the engine configuration).
func startupLines(v1 bool, gpuBlocks, cpuBlocks, blockSize, maxModelLen int) []string {
	tokens := gpuBlocks * blockSize
	conc := 0.0
	if maxModelLen > 0 {
		conc = float64(tokens) / float64(maxModelLen)
	}
	if !v1 {
		// 0.6's GPU executor added the concurrency line, unformatted.
		return []string{
			fmt.Sprintf("# GPU blocks: %d, # CPU blocks: %d", gpuBlocks, cpuBlocks),
			fmt.Sprintf("Maximum concurrency for %d tokens per request: %.2fx", maxModelLen, conc),
		}
	}
	return []string{
		fmt.Sprintf("GPU KV cache size: %s tokens", commaInt(tokens)),
		fmt.Sprintf("Maximum concurrency for %s tokens per request: %.2fx", commaInt(maxModelLen), conc),
	}
}

// statsWindow is vLLM V1's PrefixCachingMetrics: the hit rate over the most
// recent 1,000 requests.
type statsWindow struct {
	queries, hits [1000]int64
	n, next       int
	sumQ, sumH    int64
}

func (w *statsWindow) add(queries, hits int64) {
	if w.n == len(w.queries) {
		w.sumQ -= w.queries[w.next]
		w.sumH -= w.hits[w.next]
	} else {
		w.n++
	}
	w.queries[w.next], w.hits[w.next] = queries, hits
	w.sumQ += queries
	w.sumH += hits
	w.next = (w.next + 1) % len(w.queries)
}

func (w *statsWindow) reset() { *w = statsWindow{} }

func (w *statsWindow) hitRate() float64 {
	if w.sumQ == 0 {
		return 0
	}
	return float64(w.sumH) / float64(w.sumQ)
}

// statsLine is vLLM's periodic throughput line. The V0 line (5 s cadence in
// LLMEngine.step) and the V1 line (10 s, API server do_log_stats) differ.
type statsLine struct {
	v1                                bool
	elapsed                           time.Duration
	promptTokens, genTokens           int64
	running, waiting, swapped         int
	gpuUsage, cpuUsage, prefixHitRate float64
	prefixCaching                     bool
	cumPrefixHitRate                  float64
}

func (s statsLine) throughputs() (prompt, gen float64) {
	secs := s.elapsed.Seconds()
	if secs <= 0 {
		return 0, 0
	}
	return float64(s.promptTokens) / secs, float64(s.genTokens) / secs
}

// lines renders the line (and V0's separate prefix-cache line).
func (s statsLine) lines() []string {
	pt, gt := s.throughputs()
	if s.v1 {
		return []string{fmt.Sprintf("Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: %.1f%%",
			pt, gt, s.running, s.waiting, s.gpuUsage*100, s.prefixHitRate*100)}
	}
	out := []string{fmt.Sprintf("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.",
		pt, gt, s.running, s.swapped, s.waiting, s.gpuUsage*100, s.cpuUsage*100)}
	if s.prefixCaching {
		out = append(out, fmt.Sprintf("Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%", s.cumPrefixHitRate*100, 0.0))
	}
	return out
}

// idle reports an all-zero line, which vLLM ≥0.8 logs at debug level only.
func (s statsLine) idle() bool {
	return s.promptTokens == 0 && s.genTokens == 0 && s.running == 0 && s.waiting == 0 && s.swapped == 0
}
