package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// manifestKind marks a sweep manifest (written by package sweep, which
// report must not import, so the few fields read here are duplicated).
const manifestKind = "servebench-sweep"

func isManifestName(path string) bool { return filepath.Base(path) == "manifest.json" }

// sweepManifest is the part of package sweep's manifest.json that reports need.
type sweepManifest struct {
	Kind   string `json:"kind"`
	Label  string `json:"label"`
	Points []struct {
		Name   string  `json:"name"`
		Params []Param `json:"params"`
		Status string  `json:"status"`
		Result string  `json:"result"`
	} `json:"points"`
}

func readManifest(path string) (sweepManifest, bool, error) {
	var m sweepManifest
	data, err := os.ReadFile(path)
	if err != nil {
		return m, false, fmt.Errorf("reading sweep manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, false, fmt.Errorf("%s: %w", path, describeJSONError(data, err))
	}
	return m, m.Kind == manifestKind, nil
}

// loadManifest returns the completed points of a sweep in point order.
// Points still pending or failed have no result to show and are skipped.
func loadManifest(path string, m sweepManifest) ([]LoadedResult, error) {
	dir := filepath.Dir(path)
	series := m.Label
	if series == "" {
		series = filepath.Base(dir)
	}
	var results []LoadedResult
	for _, p := range m.Points {
		if p.Status != "done" || p.Result == "" {
			continue
		}
		resultPath := p.Result
		if !filepath.IsAbs(resultPath) {
			resultPath = filepath.Join(dir, resultPath)
		}
		got, err := ReadResultFile(resultPath)
		if err != nil {
			return nil, fmt.Errorf("sweep %s, point %s: %w", dir, p.Name, err)
		}
		for i := range got {
			got[i].Params = slices.Clone(p.Params)
			got[i].Series = series
			// A --label shared by every point of a sweep names the setup;
			// the swept values still tell its points apart.
			prefix := m.Label
			if got[i].explicitLabel() {
				prefix = got[i].Label
			}
			got[i].Label = pointLabel(prefix, p.Name, p.Params)
		}
		results = append(results, got...)
	}
	return results, nil
}

// pointLabel names a sweep point by its swept values, prefixed with the
// sweep's label so points of two setups stay apart in one table.
func pointLabel(sweepLabel, name string, params []Param) string {
	label := name
	if len(params) > 0 {
		parts := make([]string, len(params))
		for i, p := range params {
			parts[i] = p.Flag + "=" + p.Value
		}
		label = strings.Join(parts, " ")
	}
	if sweepLabel != "" {
		label = sweepLabel + ": " + label
	}
	return label
}
