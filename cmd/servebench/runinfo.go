package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/servebench/servebench/metrics"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/workload"
)

// newRunInfo describes a bench or sim run for the result block and JSON;
// both commands build it here so their results compare key for key.
func newRunInfo(backend, modelID, tokenizerID string, w *workloadFlags, spec workload.Spec, arrivals workload.Arrivals,
	o *outputFlags, metadata [][2]string, opts metrics.Options, pctMetrics []string, pcts []float64) report.RunInfo {
	info := report.RunInfo{
		Date: time.Now(), Backend: backend, EndpointType: backend, Label: o.label, ModelID: modelID, TokenizerID: tokenizerID,
		NumPrompts: spec.NumPrompts, RequestRate: arrivals.Rate, Burstiness: arrivals.Burstiness,
		MaxConcurrency: w.maxConcurrency, Metadata: metadata, PercentileMetrics: pctMetrics, Percentiles: pcts,
		Goodput: len(opts.Goodput) > 0,
	}
	if arrivals.RampUp != "" {
		info.RampUp = &report.RampUp{Strategy: arrivals.RampUp, StartRPS: arrivals.RampStart, EndRPS: arrivals.RampEnd}
	}
	return info
}

// writePreamble writes vLLM's lines before the run. A ramp-up run prints
// its ramp, as vLLM does, instead of the "inf" its base rate holds.
func writePreamble(w io.Writer, info *report.RunInfo) error {
	if info.RampUp == nil {
		return report.WritePreamble(w, info)
	}
	var b bytes.Buffer
	if err := report.WritePreamble(&b, info); err != nil {
		return err
	}
	_, rest, _ := strings.Cut(b.String(), "\n") // the "Traffic request rate" line
	_, err := fmt.Fprintf(w, "Traffic ramp-up strategy: %s.\nWill increase RPS from %s to %s RPS over the duration of the benchmark.\n%s",
		info.RampUp.Strategy, strconv.FormatFloat(info.RampUp.StartRPS, 'f', -1, 64), strconv.FormatFloat(info.RampUp.EndRPS, 'f', -1, 64), rest)
	return err
}

// maxErrorRows bounds the error breakdown; the rest are summed in one row.
const maxErrorRows = 10

// writeErrorSection prints the failed requests by reason (the HTTP status
// is part of the reason) with their counts, most frequent first, for any
// run with failures.
func writeErrorSection(w io.Writer, s *metrics.Summary) error {
	if s.Failed == 0 || len(s.Errors) == 0 {
		return nil
	}
	reasons := sortedReasons(s.Errors)
	var rows [][2]string
	other := 0
	for i, r := range reasons {
		if i >= maxErrorRows {
			other += s.Errors[r]
			continue
		}
		rows = append(rows, [2]string{r, strconv.Itoa(s.Errors[r])})
	}
	if other > 0 {
		rows = append(rows, [2]string{fmt.Sprintf("(%d other reasons)", len(reasons)-maxErrorRows), strconv.Itoa(other)})
	}
	return report.WriteSection(w, "Failed Requests by Reason", rows)
}

func sortedReasons(errs map[string]int) []string {
	reasons := make([]string, 0, len(errs))
	for r := range errs {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		return cmp.Or(cmp.Compare(errs[b], errs[a]), strings.Compare(a, b))
	})
	return reasons
}

// runOutcome maps how a run ended to the command's error and exit code,
// after everything measured was printed and saved: interrupted (130), a
// records write error (1), or no request succeeded (1).
func runOutcome(s *metrics.Summary, interrupted bool, notSent int, sinkErr error, saved []string) error {
	where := "printed"
	if len(saved) > 0 {
		where = "printed and saved to " + strings.Join(saved, ", ")
	}
	switch {
	case interrupted:
		return exitCodeError{code: 130, err: fmt.Errorf("interrupted: partial results %s (%d requests never sent)", where, notSent)}
	case sinkErr != nil:
		return fmt.Errorf("the run stopped early because a record could not be written (%w): results of the %d requests measured %s; free space or choose another --records path",
			sinkErr, s.Completed+s.Failed, where)
	case s.Completed == 0 && s.Failed > 0:
		top := sortedReasons(s.Errors)
		return fmt.Errorf("no request succeeded: %d failed, most with %q", s.Failed, top[0])
	}
	return nil
}

// interruptKey carries the channel a second interrupt closes.
type interruptKey struct{}

// withInterrupts returns a context canceled by the first call of interrupt
// (Ctrl-C) that carries an abort channel closed by the second: the first
// lets in-flight requests finish, the second cuts them off at once.
func withInterrupts(parent context.Context) (ctx context.Context, interrupt func(), stop context.CancelFunc) {
	abort := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(parent, interruptKey{}, (<-chan struct{})(abort)))
	var count atomic.Int32
	interrupt = func() {
		switch count.Add(1) {
		case 1:
			cancel()
		case 2:
			close(abort)
		}
	}
	return ctx, interrupt, cancel
}

// abortChannel is the channel a second interrupt closes; nil (never
// closed) when ctx has none.
func abortChannel(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(interruptKey{}).(<-chan struct{})
	return ch
}
