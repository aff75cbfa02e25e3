package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/report"
)

// outputFlags are the result, records and summary flags bench and sim share.
type outputFlags struct {
	saveResult, saveDetailed, appendResult bool
	metadata                               []string
	resultDir, resultFilename, label       string
	recordsPath                            string
	summaryJSON                            string
	// recordsByDefault streams records beside the result file even without
	// --save-result: a long benchmark never loses what it measured.
	recordsByDefault bool
}

func (o *outputFlags) register(fs *pflag.FlagSet, recordsByDefault bool) {
	o.recordsByDefault = recordsByDefault
	recordsHelp := `per-request JSONL records file, one line per request as it finishes (default: beside the result file with --save-result; "none" disables)`
	if recordsByDefault {
		recordsHelp = `per-request JSONL records file, one line per request as it finishes (default: beside the result file, always; "none" disables)`
	}
	fs.BoolVar(&o.saveResult, "save-result", false, "save the result JSON (vLLM's keys, in vLLM's order)")
	fs.BoolVar(&o.saveDetailed, "save-detailed", false, "include per-request lists (ttfts, itls, texts, errors) in the result JSON")
	fs.BoolVar(&o.appendResult, "append-result", false, "append the result as one JSON line to the result file")
	fs.StringArrayVar(&o.metadata, "metadata", nil, "KEY=VALUE pairs stored in the result JSON (repeatable)")
	fs.StringVar(&o.resultDir, "result-dir", "", "directory for the result JSON and records (default: current directory)")
	fs.StringVar(&o.resultFilename, "result-filename", "", "result file name (default: vLLM's {label|backend}-{rate}qps[-concurrency{N}]-{model}-{date}.json)")
	fs.StringVar(&o.label, "label", "", "label for the run (result file prefix and comparisons)")
	fs.StringVar(&o.recordsPath, "records", "", recordsHelp)
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

// paths returns where the result JSON and the records go; either may be ""
// (not written).
func (o *outputFlags) paths(info *report.RunInfo) (resultPath, recordsPath string) {
	recordsPath = o.recordsPath
	if recordsPath == "none" {
		recordsPath = ""
	} else if recordsPath == "" && !o.saveResult && !o.recordsByDefault {
		return "", ""
	}
	name := o.resultFilename
	if name == "" {
		name = report.ResultFilename(info)
	}
	full := filepath.Join(o.resultDir, name)
	if o.saveResult {
		resultPath = full
	}
	if o.recordsPath == "" {
		recordsPath = report.RecordsFilename(full)
	}
	return resultPath, recordsPath
}

// createFile creates path and its directory.
func createFile(flag, path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%s %q: %w", flag, path, err)
		}
	}
	fh, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, path, err)
	}
	return fh, nil
}

// write saves the result JSON and the summary JSON as the flags ask.
func (o *outputFlags) write(out, errw io.Writer, resultPath string, result *report.Result) error {
	if resultPath != "" {
		if err := saveResult(resultPath, result, o.saveDetailed, o.appendResult); err != nil {
			return err
		}
		fmt.Fprintf(errw, "Saved result to %s\n", resultPath)
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
		_, err = out.Write(js)
	} else {
		err = os.WriteFile(o.summaryJSON, js, 0o644)
	}
	if err != nil {
		return fmt.Errorf("--summary-json: %w", err)
	}
	return nil
}

func saveResult(path string, r *report.Result, detailed, appendMode bool) error {
	js, err := report.JSON(r, detailed)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create result directory: %w", err)
		}
	}
	if appendMode {
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("append result: %w", err)
		}
		defer fh.Close()
		if _, err := fh.Write(append(js, '\n')); err != nil {
			return fmt.Errorf("append result: %w", err)
		}
		return fh.Close()
	}
	if err := os.WriteFile(path, js, 0o644); err != nil {
		return fmt.Errorf("save result: %w", err)
	}
	return nil
}
