package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress draws a tqdm-like bar on stderr, at most ten times a second, and
// only when stderr is a terminal (so logs and CI output stay clean).
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	start time.Time
	last  time.Time
	on    bool
}

func newProgress(w io.Writer, total int, disabled bool) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok && !disabled && term.IsTerminal(int(f.Fd())) {
		p.on = true
	}
	return p
}

func (p *progress) update(done, total int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	p.draw(done, total, now)
}

func (p *progress) draw(done, total int, now time.Time) {
	const width = 30
	frac := float64(done) / float64(max(total, 1))
	filled := int(frac * width)
	elapsed := now.Sub(p.start)
	rate := float64(done) / elapsed.Seconds()
	eta := "?"
	if rate > 0 {
		eta = fmtClock(time.Duration(float64(total-done) / rate * float64(time.Second)))
	}
	fmt.Fprintf(p.w, "\r%3.0f%%|%s%s| %d/%d [%s<%s, %.2f req/s]", 100*frac,
		strings.Repeat("█", filled), strings.Repeat(" ", width-filled), done, total, fmtClock(elapsed), eta, rate)
}

func (p *progress) finish() {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w)
}

func fmtClock(d time.Duration) string {
	s := int(d.Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

func insecureTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// A benchmark holds many connections to one host: the default of two
	// idle connections per host would reconnect constantly.
	t.MaxIdleConns = 0
	t.MaxIdleConnsPerHost = 1 << 16
	t.DisableCompression = true
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the user asked for --insecure
	return t
}
