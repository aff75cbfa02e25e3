package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LoadedResult is one benchmark run read back from a result file: servebench's own
// results, vLLM's --save-result / --append-result JSON, or SGLang's
// bench_serving JSONL. Keys are kept as decoded (numbers as json.Number) so
// files from other tools or versions with missing or extra keys still load;
// Number and Text apply the normalisations documented on them.
type LoadedResult struct {
	// Path is the file the run was read from.
	Path string
	// Index is the run's position in a file holding several (an
	// --append-result file or JSONL); 0 for a single-object file.
	Index int
	// Label names the run in tables: the file's "label" key, else
	// metadata.label, else the sweep point name, else the file name.
	Label string
	// Tool guesses which program wrote the file: "servebench", "vllm",
	// "sglang" or "unknown".
	Tool string
	// Params are the swept flag values when the run was found through a
	// sweep manifest, in axis order.
	Params []Param
	// Series groups runs that belong to one sweep (its label, else the run
	// directory's name; lengthened to the directory's path when two sweeps
	// share a name), so curves of two setups are drawn separately. Empty
	// for loose files.
	Series string
	// Repeat is the 1-based run of a sweep point repeated with --repeat;
	// 0 outside a sweep. Runs of one point that differ only in Repeat are
	// the only runs a chart may average.
	Repeat int
	// sweepDir is the sweep directory a run was read from, to tell two
	// sweeps with the same label apart.
	sweepDir string
	// labelIsFileName marks a Label taken from the file name, which
	// LoadResultsWith lengthens into a path when two runs share it.
	labelIsFileName bool
	// RecordsPath is the per-request records file beside the result
	// (<name>.records.jsonl) when it exists.
	RecordsPath string
	// Recovered marks a run summarised from its records alone: it died
	// before writing its result (RecoveredNote).
	Recovered bool
	// Fields holds every top-level key as decoded.
	Fields map[string]any
}

// Param is one swept flag and its value, e.g. {"request-rate", "8"}.
type Param struct {
	Flag  string `json:"flag"`
	Value string `json:"value"`
}

// manifestKind marks a sweep manifest (written by package sweep, which
// report must not import, so the few fields read here are duplicated).

// LoadOptions shapes LoadResultsWith.
type LoadOptions struct {
	// Strict fails on the first result file or manifest that cannot be
	// read, as LoadResults does. Without it such a file is skipped with a
	// warning, so one run killed mid-write does not hide every other run.
	Strict bool
}

// LoadWarning names a file LoadResultsWith skipped and why.
type LoadWarning struct {
	Path string
	Err  error
}

// String is the one-line warning a CLI prints.
func (w LoadWarning) String() string {
	// Err names the file already.
	return "warning: skipped " + w.Err.Error()
}

// LoadResults reads result files and directories and fails on the first
// file that cannot be read; LoadResultsWith can skip such files instead.
func LoadResults(paths ...string) ([]LoadedResult, error) {
	results, _, err := LoadResultsWith(LoadOptions{Strict: true}, paths...)
	return results, err
}

// LoadResultsWith reads result files and directories. A directory is
// walked for *.json and *.jsonl results; a directory holding a sweep
// manifest.json is read through the manifest instead, in point order with
// the swept parameters attached. Per-request *.records.jsonl and vLLM's
// *.pytorch.json traces are not results and are skipped, as are JSON files
// in walked directories that carry no benchmark keys. A named file is
// always read, even with no known keys (its cells are then blank). A path
// that does not exist is always an error; a file that exists but cannot be
// decoded is a warning unless opts.Strict.
func LoadResultsWith(opts LoadOptions, paths ...string) ([]LoadedResult, []LoadWarning, error) {
	if len(paths) == 0 {
		return nil, nil, errors.New("no result files or directories given: pass at least one *.json file or a run directory")
	}
	l := &loader{strict: opts.Strict}
	var results []LoadedResult
	type loaded struct {
		path  string
		index int
	}
	seen := map[loaded]bool{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, l.warnings, fmt.Errorf("result path %s: %w", p, err)
		}
		var got []LoadedResult
		if info.IsDir() {
			got, err = l.loadDir(p)
		} else {
			got, err = l.loadExplicitFile(p)
		}
		if err != nil {
			return nil, l.warnings, err
		}
		for _, r := range got {
			// A result given twice (its records file and itself, by a
			// glob) is one run.
			key := loaded{path: r.Path, index: r.Index}
			if !seen[key] {
				seen[key] = true
				results = append(results, r)
			}
		}
	}
	disambiguateFileLabels(results)
	disambiguateSeries(results)
	return results, l.warnings, nil
}

// disambiguateFileLabels lengthens labels taken from file names that
// several runs share (every sweep point's result.json is "result") into
// the shortest trailing part of their paths that tells them apart:
// "rate-2/result", "rate-4/result".
func disambiguateFileLabels(results []LoadedResult) {
	count := map[string]int{}
	for _, r := range results {
		count[r.Label]++
	}
	clashes := map[string][]int{}
	for i, r := range results {
		if r.labelIsFileName && count[r.Label] > 1 {
			clashes[r.Label] = append(clashes[r.Label], i)
		}
	}
	for _, idx := range clashes {
		parts := make([][]string, len(idx))
		longest := 0
		for k, i := range idx {
			p := filepath.ToSlash(filepath.Clean(results[i].Path))
			p = strings.TrimSuffix(strings.TrimSuffix(p, ".jsonl"), ".json")
			parts[k] = strings.Split(p, "/")
			longest = max(longest, len(parts[k]))
		}
		for n := 2; n <= longest; n++ {
			labels := make([]string, len(idx))
			seen := map[string]bool{}
			unique := true
			for k, comps := range parts {
				tail := comps[max(len(comps)-n, 0):]
				// Keep the "#N" of a run in a multi-run file.
				suffix := strings.TrimPrefix(results[idx[k]].Label, comps[len(comps)-1])
				labels[k] = strings.Join(tail, "/") + suffix
				unique = unique && !seen[labels[k]]
				seen[labels[k]] = true
			}
			if unique || n == longest {
				for k, i := range idx {
					results[i].Label = labels[k]
				}
				break
			}
		}
	}
}

// disambiguateSeries renames series that two sweep directories share (two
// unlabelled sweeps in directories both named "run") to their directories'
// paths, so their runs are never drawn, or averaged, as one setup.
func disambiguateSeries(results []LoadedResult) {
	dirs := map[string]map[string]bool{}
	for _, r := range results {
		if r.Series == "" {
			continue
		}
		if dirs[r.Series] == nil {
			dirs[r.Series] = map[string]bool{}
		}
		dirs[r.Series][r.sweepDir] = true
	}
	for i, r := range results {
		if r.Series != "" && len(dirs[r.Series]) > 1 {
			results[i].Series = r.Series + " (" + filepath.ToSlash(r.sweepDir) + ")"
		}
	}
}

// loader carries the strictness and the warnings of one LoadResultsWith.
type loader struct {
	strict   bool
	warnings []LoadWarning
}

// skip turns an unreadable file into a warning, or returns err when strict.
func (l *loader) skip(path string, err error) error {
	if l.strict {
		return err
	}
	l.warnings = append(l.warnings, LoadWarning{Path: path, Err: err})
	return nil
}

func (l *loader) loadExplicitFile(path string) ([]LoadedResult, error) {
	if isManifestName(path) {
		if m, ok, err := readManifest(path); err != nil {
			return nil, l.skip(path, err)
		} else if ok {
			return l.loadManifest(path, m)
		}
	}
	if records, err := isRecordsFile(path); err != nil {
		return nil, l.skip(path, err)
	} else if records {
		// A records file given by name: its result when there is one,
		// else what it recorded.
		if result, ok := resultBeside(path); ok && IsRecordsFileName(path) {
			return l.loadExplicitFile(result)
		}
		r, err := loadRecovered(path)
		if err != nil {
			return nil, l.skip(path, err)
		}
		return []LoadedResult{r}, nil
	}
	got, err := ReadResultFile(path)
	if err != nil {
		return nil, l.skip(path, err)
	}
	return got, nil
}

func (l *loader) loadDir(root string) ([]LoadedResult, error) {
	var results []LoadedResult
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking %s: %w", root, err)
		}
		if d.IsDir() {
			manifest := filepath.Join(path, "manifest.json")
			if _, statErr := os.Stat(manifest); statErr != nil {
				return nil
			}
			m, ok, err := readManifest(manifest)
			if err != nil {
				// Unreadable manifest: warn and walk the directory as loose files.
				return l.skip(manifest, err)
			}
			if !ok {
				return nil
			}
			got, err := l.loadManifest(manifest, m)
			if err != nil {
				return err
			}
			results = append(results, got...)
			return fs.SkipDir
		}
		if IsRecordsFileName(path) && orphanRecords(path) {
			// A run killed before it wrote its result left only these.
			r, err := loadRecovered(path)
			if err != nil {
				return l.skip(path, err)
			}
			results = append(results, r)
			return nil
		}
		if !isResultFileName(path) {
			return nil
		}
		got, err := ReadResultFile(path)
		if err != nil {
			return l.skip(path, err)
		}
		for _, r := range got {
			if r.hasBenchmarkKeys() {
				results = append(results, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func isResultFileName(path string) bool {
	name := filepath.Base(path)
	switch {
	case strings.HasSuffix(name, ".records.jsonl"), strings.HasSuffix(name, ".pytorch.json"):
		return false
	case name == "manifest.json":
		return false
	}
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl")
}

// benchmarkKeys are keys every benchmark tool we read writes at least one of.
var benchmarkKeys = []string{"completed", "duration", "request_throughput", "output_throughput", "mean_ttft_ms", "total_input_tokens"}

func (r LoadedResult) hasBenchmarkKeys() bool {
	for _, k := range benchmarkKeys {
		if _, ok := r.Fields[k]; ok {
			return true
		}
	}
	return false
}

// ReadResultFile reads one result file: a single JSON object, a JSON array
// of objects, or a stream of objects one per line (--append-result files,
// SGLang's JSONL). Python's non-standard NaN and Infinity literals are
// accepted (as null and "inf"). Corrupt JSON is reported with the file name
// and byte offset.
func ReadResultFile(path string) ([]LoadedResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading result file: %w", err)
	}
	return decodeResultFile(path, data, func(records string) bool {
		_, err := os.Stat(records)
		return err == nil
	})
}

// decodeResultFile builds the runs of one file's bytes; exists reports
// whether the per-request records file beside it is there.
func decodeResultFile(path string, data []byte, exists func(string) bool) ([]LoadedResult, error) {
	objects, err := DecodeResultObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	records := recordsPathFor(path)
	if !exists(records) {
		records = ""
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".jsonl"), ".json")
	results := make([]LoadedResult, len(objects))
	for i, fields := range objects {
		_, recovered := fields[recoveredKey].(string)
		r := LoadedResult{Path: path, Index: i, Fields: fields, Tool: detectTool(fields), Recovered: recovered}
		if len(objects) == 1 {
			r.RecordsPath = records
		}
		r.Label = r.labelFromFields()
		if r.Label == "" {
			r.Label, r.labelIsFileName = base, true
			if len(objects) > 1 {
				r.Label = fmt.Sprintf("%s#%d", base, i+1)
			}
		}
		results[i] = r
	}
	return results, nil
}

func recordsPathFor(resultPath string) string {
	return RecordsFilename(strings.TrimSuffix(resultPath, ".jsonl"))
}

func detectTool(fields map[string]any) string {
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := fields[k]; ok {
				return true
			}
		}
		return false
	}
	switch {
	case has("server_metrics", "send_lag_ms", "interrupted", "engine", "servebench_version"):
		return "servebench"
	case has("total_output_tokens_retokenized", "mean_e2e_latency_ms", "accept_length"):
		return "sglang"
	case has("request_goodput:", "model_id", "endpoint_type"):
		return "vllm"
	}
	return "unknown"
}

func (r LoadedResult) explicitLabel() bool { return r.labelFromFields() != "" }

func (r LoadedResult) labelFromFields() string {
	if s, ok := r.Fields["label"].(string); ok && s != "" {
		return s
	}
	if meta, ok := r.Fields["metadata"].(map[string]any); ok {
		if s, ok := meta["label"].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Lookup finds key in the run: a top-level key, then a metadata entry, then
// a swept parameter, then an engine setting. Dashes and underscores are
// interchangeable so a swept flag (--max-num-seqs) matches its key
