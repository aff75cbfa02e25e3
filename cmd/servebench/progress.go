package main

import (
	"fmt"
	"io"
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
	start time.Time
	last  time.Time
	on    bool
	unit  string // what the rate counts, e.g. "req/s"
}

func newProgress(w io.Writer, disabled bool) *progress {
	return newProgressOf(w, disabled, "req/s")
}

func newProgressOf(w io.Writer, disabled bool, unit string) *progress {
	p := &progress{w: w, start: time.Now(), unit: unit}
	if f, ok := w.(*os.File); ok && !disabled && term.IsTerminal(int(f.Fd())) {
		p.on = true
	}
	return p
}

// Update redraws the bar, at most ten times a second.
func (p *progress) Update(done, total int) {
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
	fmt.Fprintf(p.w, "\r%3.0f%%|%s%s| %d/%d [%s<%s, %.2f %s]", 100*frac,
		strings.Repeat("█", filled), strings.Repeat(" ", width-filled), done, total, fmtClock(elapsed), eta, rate, p.unit)
}

// Finish ends the bar's line.
func (p *progress) Finish() {
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
