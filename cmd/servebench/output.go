package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/report"
)

// outputFlags are the result, records and summary flags bench and sim share.
// As in vLLM, nothing is written unless asked for: --save-result,
// --records or --result-dir.
type outputFlags struct {
	saveResult, saveDetailed, appendResult bool
	metadata                               []string
	resultDir, resultFilename, label       string
	recordsPath                            string
	summaryJSON                            string
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&o.saveResult, "save-result", false, "save the result JSON (vLLM's keys, in vLLM's order)")
	fs.BoolVar(&o.saveDetailed, "save-detailed", false, "include per-request lists (ttfts, itls, texts, errors) in the result JSON")
	fs.BoolVar(&o.appendResult, "append-result", false, "append the result as one JSON line to the result file")
	fs.StringArrayVar(&o.metadata, "metadata", nil, "KEY=VALUE pairs stored in the result JSON (repeatable)")
	fs.StringVar(&o.resultDir, "result-dir", "", "directory for the result JSON and records; giving it also streams the records there (default: current directory)")
	fs.StringVar(&o.resultFilename, "result-filename", "", "result file name (default: vLLM's {label|backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json, with -2, -3... if taken)")
	fs.StringVar(&o.label, "label", "", "label for the run (result file prefix and comparisons)")
	fs.StringVar(&o.recordsPath, "records", "", `per-request JSONL records file, one line per request as it finishes (default: beside the result file with --save-result or --result-dir; "none" disables)`)
	fs.StringVar(&o.summaryJSON, "summary-json", "", `write a load-test style summary JSON to this path ("-" for stdout)`)
}

// validate checks the flags against each other and parses --metadata.
func (o *outputFlags) validate() ([][2]string, error) {
	if o.saveDetailed && !o.saveResult {
		return nil, errors.New("--save-detailed needs --save-result")
	}
	if o.appendResult && !o.saveResult {
		return nil, errors.New("--append-result needs --save-result")
	}
	return parseKeyValues("--metadata", o.metadata)
}

// outputs are the files one run writes, chosen and checked before anything
// is sent, so an unwritable path fails at once instead of after the run.
type outputs struct {
	flags *outputFlags
	// resultPath is where the result JSON goes ("" when not saved);
	// defaultName is true when servebench chose it, so a name taken by a
	// concurrent run may be replaced by the next free one.
	resultPath  string
	defaultName bool
	// baseResultPath is resultPath before any -N disambiguator.
	baseResultPath string
	// recordsPath and records are the per-request JSONL file, created
	// exclusively; both empty when no records are written.
	recordsPath string
	records     *os.File
}

// maxNameAttempts bounds the search for a free default file name.
const maxNameAttempts = 1000

// open decides where the result and the records go, creates the records
// file exclusively (never appending to or truncating another run's), and
// checks that the result and summary destinations are writable.
func (o *outputFlags) open(info *report.RunInfo) (*outputs, error) {
	out := &outputs{flags: o, defaultName: o.resultFilename == ""}
	wantRecords := o.recordsPath != "none" && (o.recordsPath != "" || o.saveResult || o.resultDir != "")
	name := o.resultFilename
	if name == "" {
		name = report.ResultFilename(info)
	}
	full := filepath.Join(o.resultDir, name)
	// Check everything before creating the records file, so a failed
	// check leaves nothing behind.
	if o.saveResult && !o.appendResult && !out.defaultName && exists(full) {
		return nil, fmt.Errorf("--result-filename %q: %s already exists; remove it, choose another name, or pass --append-result", o.resultFilename, full)
	}
	if err := o.checkDirs(); err != nil {
		return nil, err
	}
	if o.saveResult || wantRecords {
		if err := out.claim(full, wantRecords); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkDirs checks that the result, records and summary directories can
// take a file; cheap, so commands call it first, before any slow setup.
func (o *outputFlags) checkDirs() error {
	wantRecords := o.recordsPath != "none" && (o.recordsPath != "" || o.saveResult || o.resultDir != "")
	if o.saveResult || (wantRecords && o.recordsPath == "") {
		if err := checkWritableDir("--result-dir", filepath.Join(o.resultDir, filepath.Dir(o.resultFilename))); err != nil {
			return err
		}
	}
	if wantRecords && o.recordsPath != "" {
		if st, err := os.Stat(o.recordsPath); err != nil || st.Mode().IsRegular() {
			if err := checkWritableDir("--records", filepath.Dir(o.recordsPath)); err != nil {
				return err
			}
		}
	}
	if o.summaryJSON != "" && o.summaryJSON != "-" {
		if err := checkWritableDir("--summary-json", filepath.Dir(o.summaryJSON)); err != nil {
			return err
		}
	}
	return nil
}

// claim settles the result path and creates the records file. A default
// result name already used by another run gets a -2, -3... disambiguator
// (with its records beside it), so two runs started in the same second
// never share files. A records file beside an explicit result name that is
// taken (another run's, or one left by an interrupted run that --append-result
// or a sweep's rerun reuses the name of) gets the disambiguator alone; an
// explicit --records path that exists is an error.
func (out *outputs) claim(full string, wantRecords bool) error {
	o := out.flags
	out.baseResultPath = full
	for attempt := 1; attempt <= maxNameAttempts; attempt++ {
		candidate := numberedName(full, attempt)
		resultPath := full
		if out.defaultName && !o.appendResult {
			resultPath = candidate
			if o.saveResult && exists(candidate) {
				continue
			}
		}
		if !wantRecords {
			out.resultPath = resultPath
			return nil
		}
		recordsPath := o.recordsPath
		if recordsPath == "" {
			recordsPath = report.RecordsFilename(candidate)
		}
		fh, err := createExclusive(recordsPath)
		if errors.Is(err, fs.ErrExist) && o.recordsPath == "" {
			continue
		}
		if err != nil {
			flag := "--records"
			if o.recordsPath == "" {
				flag = "--result-dir"
			}
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: records file %q already exists; remove it or choose another path (records are never appended to another run's)", flag, recordsPath)
			}
			return fmt.Errorf("%s: records file %q: %w", flag, recordsPath, err)
		}
		out.resultPath, out.recordsPath, out.records = resultPath, recordsPath, fh
		return nil
	}
	return fmt.Errorf("--result-dir %q: no free result name after %d attempts beside %s; pass --result-filename", o.resultDir, maxNameAttempts, full)
}

// numberedName is the attempt-th candidate for a result name: the name
// itself, then name-2.json, name-3.json...
func numberedName(full string, attempt int) string {
	if attempt <= 1 {
		return full
	}
	return strings.TrimSuffix(full, ".json") + "-" + strconv.Itoa(attempt) + ".json"
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// createExclusive creates path and its directory, failing if a regular
// file is already there. An existing device or pipe (/dev/stdout, a FIFO)
// is opened for writing: it holds no other run's records.
func createExclusive(path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		if st, statErr := os.Stat(path); statErr == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return os.OpenFile(path, os.O_WRONLY, 0)
		}
	}
	return fh, err
}

// checkWritableDir creates dir if needed and proves a file can be created
// in it.
func checkWritableDir(flag, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: cannot create directory %q: %w", flag, dir, err)
	}
	probe, err := os.CreateTemp(dir, ".servebench-write-check-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in %q: %w", flag, dir, err)
	}
	name := probe.Name()
	probe.Close()
	return os.Remove(name)
}

// close closes the records file.
func (out *outputs) close() {
	if out.records != nil {
		_ = out.records.Close()
	}
}

// discardEmptyRecords closes the records file and removes it when nothing
// was written to it (the run stopped before it started).
func (out *outputs) discardEmptyRecords() {
	if out.records == nil {
		return
	}
	if st, err := out.records.Stat(); err == nil && st.Size() == 0 {
		_ = out.records.Close()
		_ = os.Remove(out.recordsPath)
		out.records, out.recordsPath = nil, ""
	}
}

// recordsWriter is the records destination, nil when none (never a typed
// nil inside the interface).
func (out *outputs) recordsWriter() io.Writer {
	if out.records == nil {
		return nil
	}
	return out.records
}

// savedPaths describes what was saved, for the final message; the records
// file counts only if writing it never failed.
func (out *outputs) savedPaths(recordsOK bool) []string {
	var paths []string
	if out.resultPath != "" && out.flags.saveResult {
		paths = append(paths, out.resultPath)
	}
	if out.recordsPath != "" && recordsOK {
		paths = append(paths, out.recordsPath)
	}
	if s := out.flags.summaryJSON; s != "" && s != "-" {
		paths = append(paths, s)
	}
	return paths
}

// write saves the result JSON and the summary JSON as the flags ask, each
// atomically: a reader sees the old file or the whole new one, never half.
func (out *outputs) write(stdout, errw io.Writer, result *report.Result) error {
	o := out.flags
	if o.saveResult {
		path, err := out.saveResult(result)
		if err != nil {
			return err
		}
		out.resultPath = path
		fmt.Fprintf(errw, "Saved result to %s\n", path)
	}
	if o.summaryJSON == "" {
		return nil
	}
	js, err := report.SummaryJSON(result)
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if o.summaryJSON == "-" {
		_, err = stdout.Write(js)
	} else {
		err = writeAtomic(o.summaryJSON, js, true)
	}
	if err != nil {
		return fmt.Errorf("--summary-json: %w", err)
	}
	return nil
}

func (out *outputs) saveResult(r *report.Result) (string, error) {
	o := out.flags
	js, err := report.JSON(r, o.saveDetailed)
	if err != nil {
		return "", err
	}
	path := out.resultPath
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create result directory: %w", err)
		}
	}
	if o.appendResult {
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return "", fmt.Errorf("append result: %w", err)
		}
		defer fh.Close()
		if _, err := fh.Write(append(js, '\n')); err != nil {
			return "", fmt.Errorf("append result: %w", err)
		}
		return path, fh.Close()
	}
	err = writeAtomic(path, js, false)
	for attempt := 2; errors.Is(err, fs.ErrExist) && attempt <= maxNameAttempts; attempt++ {
		// Another run took the name during this one: keep the result under
		// the next free name rather than lose it (the message says where).
		// A name whose records file exists belongs to another run too.
		if candidate := numberedName(out.baseResultPath, attempt); !exists(candidate) && !exists(report.RecordsFilename(candidate)) {
			path = candidate
			err = writeAtomic(path, js, false)
		}
	}
	if err != nil {
		return "", fmt.Errorf("save result: %w", err)
	}
	return path, nil
}

// writeAtomic writes data to a temporary file beside path and moves it into
// place, so a kill mid-write never leaves a truncated file. Without
// replace, an existing path is left alone and fs.ErrExist returned.
func writeAtomic(path string, data []byte, replace bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // a no-op once moved into place
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmpName, 0o644); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmpName, path)
	}
	// A hard link creates path only if it does not exist, atomically.
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
		// No hard links on this file system: check, then rename.
		if exists(path) {
			return fmt.Errorf("%s: %w", path, fs.ErrExist)
		}
		return os.Rename(tmpName, path)
	}
	return nil
}
