package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/servebench/servebench/metrics"
)

// RecoveredNote marks a run summarised from its records alone: bench
// streams each record to disk as the request finishes and writes the
// result at the end, so a run killed on the way (kill -9, a crash, a
// lost node) leaves whole record lines and no result.
const RecoveredNote = "recovered from records: the run did not finish"

// recoveredKey is the result key that carries RecoveredNote, so a saved
// recovered result (merge --save-result) is still marked when read back.
const recoveredKey = "recovered"

// recordsSuffix ends the name of a records file written beside a result.
const recordsSuffix = ".records.jsonl"

// IsRecordsFileName reports whether path is named as a records file.
func IsRecordsFileName(path string) bool {
	return strings.HasSuffix(filepath.Base(path), recordsSuffix)
}

// resultBeside is the result file a records file belongs to, when one
// exists: NAME.json or NAME.jsonl for NAME.records.jsonl.
func resultBeside(recordsPath string) (string, bool) {
	base := strings.TrimSuffix(recordsPath, recordsSuffix)
	for _, ext := range []string{".json", ".jsonl"} {
		if _, err := os.Stat(base + ext); err == nil {
			return base + ext, true
		}
	}
	return "", false
}

// orphanRecords reports whether a records file found in a directory is a
// run's only trace: no result beside it, and no shard manifest (a
// finished shard, which merge reads).
func orphanRecords(path string) bool {
	if _, ok := resultBeside(path); ok {
		return false
	}
	_, err := os.Stat(ShardManifestPath(path))
	return err != nil
}

// looksLikeRecords reports whether r's first JSON value is a
// per-request record (it has a record's timing keys and none of a
// result's).
func looksLikeRecords(r io.Reader) bool {
	var probe map[string]json.RawMessage
	if json.NewDecoder(r).Decode(&probe) != nil {
		return false
	}
	_, latency := probe["latency_ns"]
	_, start := probe["start_ns"]
	_, completed := probe["completed"]
	return latency && start && !completed
}

// ReadRecordsLenient reads a records file as a killed run left it: every
// whole line; a last line cut short mid-write is dropped and counted.
func ReadRecordsLenient(path string) (recs []metrics.Record, cut int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("reading records: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		b, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var rec metrics.Record
			if jerr := json.Unmarshal(b, &rec); jerr != nil {
				if rerr == io.EOF {
					return recs, 1, nil // the writer stopped mid-line
				}
				return nil, 0, fmt.Errorf("records %q line %d: %w", path, line, jerr)
			}
			recs = append(recs, rec)
		}
		if rerr == io.EOF {
			return recs, 0, nil
		}
		if rerr != nil {
			return nil, 0, fmt.Errorf("records %q: %w", path, rerr)
		}
	}
}

// RecoveredResult summarises the records of a run that never wrote its
// result: every measured record, over the time from the run's zero to the
// last request's end, marked interrupted and recovered. What only the
// result held (model, backend, request rate, goodput SLOs) is unknown.
func RecoveredResult(label string, date time.Time, recs []metrics.Record) *Result {
	opts := metrics.Options{Percentiles: []float64{50, 90, 99}}
	acc := metrics.NewAccumulator(opts)
	var end time.Duration
	var measured []metrics.Record
	for i := range recs {
		if recs[i].Warmup {
			continue
		}
		acc.Add(&recs[i])
		end = max(end, recs[i].End())
		measured = append(measured, recs[i])
	}
	info := RunInfo{
		Date: date, Label: label, NumPrompts: len(measured), Interrupted: true, Recovered: true,
		PercentileMetrics: []string{"ttft", "tpot", "itl", "e2el"}, Percentiles: opts.Percentiles,
	}
	return &Result{Info: info, Summary: acc.Summary(end), Records: measured}
}

// unknownInRecovered are result keys a records file cannot tell: left out
// of a recovered run rather than shown as zero or empty.
var unknownInRecovered = []string{"endpoint_type", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate",
	"burstiness", "max_concurrency", "request_goodput"}

// loadRecovered reads a records file with no result as a run.
func loadRecovered(path string) (LoadedResult, error) {
	recs, _, err := ReadRecordsLenient(path)
	if err != nil {
		return LoadedResult{}, err
	}
	if len(recs) == 0 {
		return LoadedResult{}, fmt.Errorf("records %s: no record: the run stopped before any request finished", path)
	}
	var date time.Time
	if st, err := os.Stat(path); err == nil {
		date = st.ModTime()
	}
	label := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), recordsSuffix), ".jsonl")
	data, err := JSON(RecoveredResult("", date, recs), false)
	if err != nil {
		return LoadedResult{}, err
	}
	objects, err := DecodeResultObjects(data)
	if err != nil {
		return LoadedResult{}, err
	}
	fields := objects[0]
	for _, k := range unknownInRecovered {
		delete(fields, k)
	}
	return LoadedResult{Path: path, Label: label, labelIsFileName: true, Tool: "servebench", RecordsPath: path, Recovered: true, Fields: fields}, nil
}

// isRecordsFile reports whether a file given by name holds records: its
// name says so, or it is JSONL whose first line is a record (a --records
// path of the user's choosing).
func isRecordsFile(path string) (bool, error) {
	if IsRecordsFileName(path) {
		return true, nil
	}
	if !strings.HasSuffix(path, ".jsonl") {
		return false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading result file: %w", err)
	}
	defer f.Close()
	return looksLikeRecords(io.LimitReader(f, maxRecordLine)), nil
}
