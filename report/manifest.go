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
		Repeat int     `json:"repeat"`
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

// loadManifest returns the completed points of a sweep in point order,
// and the points killed mid-run that left records (recovered). Points
// still pending or failed have no result to show and are skipped.
// A manifest is data, not trust: result paths that leave the run directory
// (absolute, "..", or a symlink pointing out) are refused, so a crafted
// manifest cannot make report read or publish files elsewhere.
func (l *loader) loadManifest(path string, m sweepManifest) ([]LoadedResult, error) {
	dir := filepath.Dir(path)
	series := m.Label
	if series == "" {
		series = filepath.Base(dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening sweep directory: %w", err)
	}
	defer root.Close()
	exists := func(records string) bool {
		rel, err := filepath.Rel(dir, records)
		if err != nil {
			return false
		}
		_, err = root.Stat(rel)
		return err == nil
	}
	var results []LoadedResult
	for _, p := range m.Points {
		var got []LoadedResult
		var err error
		switch {
		case p.Status == "done" && p.Result != "":
			got, err = readPointResult(root, dir, p.Result, exists)
		case p.Result != "":
			// A point killed mid-run (the sweep with it) may have left
			// its records and no result.
			got, err = recoverPoint(root, dir, p.Result)
		}
		if err != nil {
			if err := l.skip(path, fmt.Errorf("sweep %s, point %s: %w", dir, p.Name, err)); err != nil {
				return nil, err
			}
			continue
		}
		for i := range got {
			got[i].Params = slices.Clone(p.Params)
			got[i].Series = series
			got[i].Repeat = p.Repeat
			got[i].sweepDir = dir
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

// recoverPoint reads the records of a point that has no result, through
// root as readPointResult does; none when it left no records either.
func recoverPoint(root *os.Root, dir, result string) ([]LoadedResult, error) {
	rel := filepath.FromSlash(result)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("result path %q leaves the run directory; report only reads files inside it", result)
	}
	records := RecordsFilename(rel)
	if _, err := root.Stat(rel); err == nil {
		return nil, nil // a result of a point not marked done: not ours to judge
	}
	if _, err := root.Stat(records); err != nil {
		return nil, nil
	}
	r, err := loadRecovered(filepath.Join(dir, records))
	if err != nil {
		return nil, err
	}
	return []LoadedResult{r}, nil
}

// readPointResult reads a point's result through root, which refuses
// paths and symlinks that resolve outside the run directory.
func readPointResult(root *os.Root, dir, result string, exists func(string) bool) ([]LoadedResult, error) {
	rel := filepath.FromSlash(result)
	if !filepath.IsLocal(rel) {
		return nil, fmt.Errorf("result path %q leaves the run directory; report only reads files inside it", result)
	}
	data, err := root.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("reading result file: %w", err)
	}
	return decodeResultFile(filepath.Join(dir, rel), data, exists)
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
