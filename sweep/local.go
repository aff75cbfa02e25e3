package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/internal/redact"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/runspec"
	"github.com/servebench/servebench/sim"
)

// LogFile is where RunSpec keeps a point's output, beside its result.
const LogFile = "output.log"

// RunSpec is the Runner that runs bench and sim specs in this process:
// each point saves its result at resultPath, and its output (the result
// block, warnings) goes to output.log beside it, under the command line
// that reproduces it. Credentials (header values, URL passwords, API
// keys) are masked in the log, which only its owner may read, and in the
// returned error.
func RunSpec(ctx context.Context, spec *runspec.Spec, resultPath string) (map[string]any, error) {
	dir := filepath.Dir(resultPath)
	logPath := filepath.Join(dir, LogFile)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the point's log: %w", err)
	}
	s := spec.Clone()
	for _, kv := range [][2]string{{"save-result", "true"}, {"result-dir", dir}, {"result-filename", filepath.Base(resultPath)}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			return nil, errors.Join(err, logFile.Close())
		}
	}
	// Only bench draws a progress bar.
	if s.HasFlag("disable-tqdm") {
		if err := s.Set("disable-tqdm", "true"); err != nil {
			return nil, errors.Join(err, logFile.Close())
		}
	}
	secrets := s.Secrets()
	log := redact.NewWriter(logFile, secrets)
	fmt.Fprintf(log, "$ servebench %s %s\n", s.Kind, strings.Join(s.RedactedArgs(), " "))
	rio := runspec.IO{Out: log, Err: log}
	switch s.Kind {
	case runspec.Bench:
		err = bench.RunSpec(ctx, s, rio)
	case runspec.Sim:
		err = sim.RunSpec(ctx, s, rio)
	default:
		err = fmt.Errorf("sweep runs bench or sim, not %s", s.Kind)
	}
	err = runspec.FlagNames(err)
	if cerr := errors.Join(log.Close(), logFile.Close()); cerr != nil && err == nil {
		err = fmt.Errorf("writing %s: %w", logPath, cerr)
	}
	if err != nil {
		return nil, redact.Error(fmt.Errorf("%s: %w (command and output in %s)", s.Kind, err, logPath), secrets)
	}
	return nil, nil
}

// ResultSample is a result of spec's run with every key its result JSON
// will hold (zero values), for checking SLA terms and objectives before
// running anything.
func ResultSample(spec *runspec.Spec) (map[string]any, error) {
	w, err := spec.ResolveWorkload()
	if err != nil {
		return nil, err
	}
	info, err := spec.RunInfo(string(spec.Kind), "", "", w)
	if err != nil {
		return nil, err
	}
	r := &report.Result{Info: info}
	if spec.Kind == runspec.Sim {
		r.Extra = append(r.Extra, report.Section{Key: "engine", Value: sim.SampleEngineSection()})
	}
	data, err := report.JSON(r, false)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	if len(w.Summary.Goodput) > 0 {
		m["request_goodput"] = 0.0
	}
	return m, nil
}
