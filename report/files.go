package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/option"
)

// OutputOptions is what a run asks to write. As in vLLM, nothing is
// written unless asked for: SaveResult, Records or ResultDir.
type OutputOptions struct {
	SaveResult, SaveDetailed, AppendResult bool
	ResultDir, ResultFilename              string
	// Records is the per-request JSONL file: "" beside the result (when
	// one is saved or ResultDir is given), RecordsNone for none.
	Records     string
	SummaryJSON string
}

// RecordsNone as OutputOptions.Records writes no records file.
const RecordsNone = "none"

func (o *OutputOptions) wantRecords() bool {
	return o.Records != RecordsNone && (o.Records != "" || o.SaveResult || o.ResultDir != "")
}

// Files are the files one run writes, chosen and checked before anything
// is sent, so an unwritable path fails at once instead of after the run.
type Files struct {
	opts OutputOptions
	// resultPath is where the result JSON goes ("" when not saved);
	// defaultName is true when servebench chose it, so a name taken by a
	// concurrent run may be replaced by the next free one.
	resultPath  string
	defaultName bool
	// baseResultPath is resultPath before any -N disambiguator.
	baseResultPath string
	// RecordsPath and records are the per-request JSONL file, created
	// exclusively; both empty when no records are written.
	RecordsPath string
	records     *os.File
}

// MaxNameAttempts bounds the search for a free default file name.
const MaxNameAttempts = 1000

// OpenFiles decides where the result and the records go, creates the
// records file exclusively (never appending to or truncating another
// run's), and checks that the result and summary destinations are
// writable.
func OpenFiles(o OutputOptions, info *RunInfo) (*Files, error) {
	out := &Files{opts: o, defaultName: o.ResultFilename == ""}
	wantRecords := o.wantRecords()
	name := o.ResultFilename
	if name == "" {
		name = ResultFilename(info)
	}
	full := filepath.Join(o.ResultDir, name)
	// Check everything before creating the records file, so a failed
	// check leaves nothing behind.
	if o.SaveResult && !o.AppendResult && !out.defaultName && exists(full) {
		return nil, option.Errorf("{result_filename} %q: %s already exists; remove it, choose another name, or pass {append_result}", o.ResultFilename, full)
	}
	if err := CheckOutputDirs(o); err != nil {
		return nil, err
	}
	if o.SaveResult || wantRecords {
		if err := out.claim(full, wantRecords); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CheckOutputDirs checks that the result, records and summary
// directories can take a file; cheap, so runs call it first, before any
// slow setup.
func CheckOutputDirs(o OutputOptions) error {
	wantRecords := o.wantRecords()
	if o.SaveResult || (wantRecords && o.Records == "") {
		if err := CheckWritableDir("result_dir", filepath.Join(o.ResultDir, filepath.Dir(o.ResultFilename))); err != nil {
			return err
		}
	}
	if wantRecords && o.Records != "" {
		if st, err := os.Stat(o.Records); err != nil || st.Mode().IsRegular() {
			if err := CheckWritableDir("records", filepath.Dir(o.Records)); err != nil {
				return err
			}
		}
	}
	if o.SummaryJSON != "" && o.SummaryJSON != "-" {
		if err := CheckWritableDir("summary_json", filepath.Dir(o.SummaryJSON)); err != nil {
			return err
		}
	}
	return nil
}

// claim settles the result path and creates the records file. A result
// name already used by another run, or whose records file another run
// left (one killed before it wrote its result), gets a -2, -3...
// disambiguator with its records beside it under the same one, so two
// runs never share files and a result is always read with its own
// records. With --append-result the result keeps its name and the
// records alone get the disambiguator; an explicit --records path that
// exists is an error.
func (out *Files) claim(full string, wantRecords bool) error {
	o := &out.opts
	out.baseResultPath = full
	paired := wantRecords && o.Records == ""
	for attempt := 1; attempt <= MaxNameAttempts; attempt++ {
		candidate := numberedName(full, attempt)
		resultPath := full
		if (out.defaultName || paired) && !o.AppendResult {
			resultPath = candidate
			if o.SaveResult && exists(candidate) {
				continue
			}
		}
		if !wantRecords {
			out.resultPath = resultPath
			return nil
		}
		recordsPath := o.Records
		if recordsPath == "" {
			recordsPath = RecordsFilename(candidate)
		}
		fh, err := createExclusive(recordsPath)
		if errors.Is(err, fs.ErrExist) && o.Records == "" {
			continue
		}
		if err != nil {
			flag := "{records}"
			if o.Records == "" {
				flag = "{result_dir}"
			}
			if errors.Is(err, fs.ErrExist) {
				return option.Errorf(flag+": records file %q already exists; remove it or choose another path (records are never appended to another run's)", recordsPath)
			}
			return option.Errorf(flag+": records file %q: %w", recordsPath, err)
		}
		out.resultPath, out.RecordsPath, out.records = resultPath, recordsPath, fh
		return nil
	}
	return option.Errorf("{result_dir} %q: no free result name after %d attempts beside %s; pass {result_filename}", o.ResultDir, MaxNameAttempts, full)
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

// CheckWritableDir creates dir if needed and proves a file can be
// created in it; option names the option the directory came from.
func CheckWritableDir(option, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return optionErr(option, fmt.Sprintf(": cannot create directory %q", dir), err)
	}
	probe, err := os.CreateTemp(dir, ".servebench-write-check-*")
	if err != nil {
		return optionErr(option, fmt.Sprintf(": cannot write in %q", dir), err)
	}
	name := probe.Name()
	probe.Close()
	return os.Remove(name)
}

// Close closes the records file.
func (out *Files) Close() {
	if out.records != nil {
		_ = out.records.Close()
	}
}

// DiscardEmptyRecords closes the records file and removes it when nothing
// was written to it (the run stopped before it started).
func (out *Files) DiscardEmptyRecords() {
	if out.records == nil {
		return
	}
	if st, err := out.records.Stat(); err == nil && st.Size() == 0 {
		_ = out.records.Close()
		_ = os.Remove(out.RecordsPath)
		out.records, out.RecordsPath = nil, ""
	}
}

// RecordsWriter is the records destination, nil when none (never a typed
// nil inside the interface).
func (out *Files) RecordsWriter() io.Writer {
	if out.records == nil {
		return nil
	}
	return out.records
}

// SavedPaths describes what was saved, for the final message; the records
// file counts only if writing it never failed.
func (out *Files) SavedPaths(recordsOK bool) []string {
	var paths []string
	if out.resultPath != "" && out.opts.SaveResult {
		paths = append(paths, out.resultPath)
	}
	if out.RecordsPath != "" && recordsOK {
		paths = append(paths, out.RecordsPath)
	}
	if s := out.opts.SummaryJSON; s != "" && s != "-" {
		paths = append(paths, s)
	}
	return paths
}

// Write saves the result JSON and the summary JSON as the options ask,
// each atomically: a reader sees the old file or the whole new one, never
// half.
func (out *Files) Write(stdout, errw io.Writer, result *Result) error {
	o := &out.opts
	if o.SaveResult {
		path, err := out.saveResult(result)
		if err != nil {
			return err
		}
		out.resultPath = path
		fmt.Fprintf(errw, "Saved result to %s\n", path)
	}
	if o.SummaryJSON == "" {
		return nil
	}
	js, err := SummaryJSON(result)
	if err != nil {
		return err
	}
	js = append(js, '\n')
	if o.SummaryJSON == "-" {
		_, err = stdout.Write(js)
	} else {
		err = WriteAtomic(o.SummaryJSON, js, true)
	}
	if err != nil {
		return option.Errorf("{summary_json}: %w", err)
	}
	return nil
}

func (out *Files) saveResult(r *Result) (string, error) {
	o := &out.opts
	js, err := JSON(r, o.SaveDetailed)
	if err != nil {
		return "", err
	}
	path := out.resultPath
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create result directory: %w", err)
		}
	}
	if o.AppendResult {
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
	err = WriteAtomic(path, js, false)
	paired := out.RecordsPath != "" && out.RecordsPath == RecordsFilename(path)
	for attempt := 2; errors.Is(err, fs.ErrExist) && attempt <= MaxNameAttempts; attempt++ {
		// Another run took the name during this one: keep the result under
		// the next free name rather than lose it (the message says where).
		// A name whose records file exists belongs to another run too; this
		// run's records move along, so result and records stay a pair.
		candidate := numberedName(out.baseResultPath, attempt)
		if exists(candidate) || exists(RecordsFilename(candidate)) {
			continue
		}
		if paired {
			if moveErr := moveExclusive(out.RecordsPath, RecordsFilename(candidate)); moveErr != nil {
				continue
			}
			out.RecordsPath = RecordsFilename(candidate)
		}
		path = candidate
		err = WriteAtomic(path, js, false)
	}
	if err != nil {
		return "", fmt.Errorf("save result: %w", err)
	}
	return path, nil
}

// moveExclusive renames from to to, failing if to exists.
func moveExclusive(from, to string) error {
	if err := os.Link(from, to); err != nil {
		return err
	}
	return os.Remove(from)
}

// WriteAtomic writes data to a temporary file beside path and moves it into
// place, so a kill mid-write never leaves a truncated file. Without
// replace, an existing path is left alone and fs.ErrExist returned.
func WriteAtomic(path string, data []byte, replace bool) error {
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

// optionErr is "{option}<what>: err" as an option error.
func optionErr(name, what string, err error) error {
	return option.Errorf("{"+name+"}%s: %w", what, err)
}
