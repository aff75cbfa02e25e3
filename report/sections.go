package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WritePreamble writes the lines vLLM prints before its result block: the
// traffic rate, the burstiness and the concurrency cap.
func WritePreamble(w io.Writer, in *RunInfo) error {
	dist := "Gamma distribution"
	if in.Burstiness == 1 {
		dist = "Poisson process"
	}
	conc := "None"
	if in.MaxConcurrency > 0 {
		conc = fmt.Sprint(in.MaxConcurrency)
	}
	// A ramp-up run prints its ramp, as vLLM does, instead of the "inf"
	// its base rate holds.
	rate := fmt.Sprintf("Traffic request rate: %s\n", pythonFloat(in.RequestRate))
	if r := in.RampUp; r != nil {
		rate = fmt.Sprintf("Traffic ramp-up strategy: %s.\nWill increase RPS from %s to %s RPS over the duration of the benchmark.\n",
			r.Strategy, strconv.FormatFloat(r.StartRPS, 'f', -1, 64), strconv.FormatFloat(r.EndRPS, 'f', -1, 64))
	}
	_, err := fmt.Fprintf(w, "%sBurstiness factor: %s (%s)\nMaximum request concurrency: %s\n",
		rate, pythonFloat(in.Burstiness), dist, conc)
	return err
}

// WriteSection writes an extra block in the result block's layout: a
// dashed title, one "{:<40} {:<10}" row per label and value, and a closing
// rule (the server-metrics and simulated-engine sections).
func WriteSection(w io.Writer, title string, rows [][2]string) error {
	var b bytes.Buffer
	b.WriteString(centered(title, '-', 50) + "\n")
	for _, r := range rows {
		b.WriteString(row(r[0], r[1]))
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	_, err := w.Write(b.Bytes())
	return err
}
