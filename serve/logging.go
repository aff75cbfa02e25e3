package serve

import (
	"context"
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
