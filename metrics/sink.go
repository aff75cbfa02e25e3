package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Sink receives each finished request's record, one at a time, in
// completion order; bench and sim both emit into one. Add must not keep
// rec or its slices past its return (sim recycles them): a sink that keeps
// records copies them. An error from Add tells the producer to stop
// producing (bench stops sending and lets in-flight requests finish); Close
// is called once after the last Add.
type Sink interface {
	Add(rec *Record) error
	Close() error
}

// Tee fans every record out to all sinks (nil ones skipped), in order. A
// failing sink does not starve the others: each gets every record, and the
// errors are joined.
func Tee(sinks ...Sink) Sink {
	out := make(tee, 0, len(sinks))
	for _, s := range sinks {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

type tee []Sink

func (t tee) Add(rec *Record) error {
	var errs []error
	for _, s := range t {
		if err := s.Add(rec); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (t tee) Close() error {
	var errs []error
	for _, s := range t {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// JSONLWriter writes each record as one JSON line. Unbuffered, each line
// is one Write, so a crash or Ctrl-C keeps every line already written;
// buffered, whole lines are written in batches. It stops at the first write
// error (a full disk does not heal mid-run) and returns that error from
// every later Add; when the failed write left part of a line and the
// destination can be truncated (a file), the partial line is cut off so the
// file stays valid JSONL.
type JSONLWriter struct {
	w       io.Writer
	start   int64 // destination offset when the writer was made, if seekable
	written int64
	pending []byte
	flushAt int // 0: write every line at once
	err     error
	// lines counts the whole lines the destination holds.
	lines int
}

// NewJSONLWriter returns a writer of records to w, one Write per record.
func NewJSONLWriter(w io.Writer) *JSONLWriter { return NewBufferedJSONLWriter(w, 0) }

// NewBufferedJSONLWriter returns a writer of records to w that writes whole
// lines in batches of about size bytes; Close writes the rest.
func NewBufferedJSONLWriter(w io.Writer, size int) *JSONLWriter {
	j := &JSONLWriter{w: w, start: -1, flushAt: size}
	if s, ok := w.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			j.start = off
		}
	}
	return j
}

// Add writes rec as one line.
func (j *JSONLWriter) Add(rec *Record) error {
	if j.err != nil {
		return j.err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		j.err = fmt.Errorf("write records: encode record %d: %w", rec.Index, err)
		return j.err
	}
	j.pending = append(append(j.pending, b...), '\n')
	if len(j.pending) >= j.flushAt {
		return j.flush()
	}
	return nil
}

func (j *JSONLWriter) flush() error {
	if j.err != nil || len(j.pending) == 0 {
		return j.err
	}
	n, err := j.w.Write(j.pending)
	if err == nil && n < len(j.pending) {
		err = io.ErrShortWrite
	}
	if err != nil {
		j.err = fmt.Errorf("write records: %w", err)
		if n > 0 && n < len(j.pending) {
			// Keep the whole lines that made it; cut the partial one.
			whole := bytes.LastIndexByte(j.pending[:n], '\n') + 1
			j.lines += bytes.Count(j.pending[:whole], []byte{'\n'})
			j.cutPartialLine(j.written + int64(whole))
		}
		return j.err
	}
	j.written += int64(n)
	j.lines += bytes.Count(j.pending, []byte{'\n'})
	j.pending = j.pending[:0]
	return nil
}

// Lines is how many records the destination holds as whole lines.
func (j *JSONLWriter) Lines() int { return j.lines }

func (j *JSONLWriter) cutPartialLine(size int64) {
	t, ok := j.w.(interface{ Truncate(size int64) error })
	if !ok || j.start < 0 {
		return
	}
	end := j.start + size
	if t.Truncate(end) == nil {
		if s, ok := j.w.(io.Seeker); ok {
			_, _ = s.Seek(end, io.SeekStart)
		}
	}
}

// Err is the write error that stopped the writer, if any.
func (j *JSONLWriter) Err() error { return j.err }

// Close writes any buffered lines and reports the write error, if any; it
// does not close the destination, which its opener owns.
func (j *JSONLWriter) Close() error { return j.flush() }

// KeepMode says which copies of records a Recorder keeps.
type KeepMode int

const (
	// KeepNone keeps no records: the summary needs none.
	KeepNone KeepMode = iota
	// KeepLight keeps each record without its ITL and generated text.
	KeepLight
	// KeepFull keeps each record whole (for --save-detailed).
	KeepFull
)

// Recorder is the record pipeline bench and sim share: it writes each
// record to an optional JSONL destination, folds it into the summary and
// keeps a copy as KeepMode says. A records write error never loses a
// record from the summary; Add reports it so the producer can stop.
type Recorder struct {
	jsonl   *JSONLWriter
	acc     *Accumulator
	keep    KeepMode
	records []Record
	lastEnd time.Duration
}

// NewRecorder returns a Recorder summarising with opts; records writes the
// JSONL lines (nil: none are written).
func NewRecorder(opts Options, records *JSONLWriter, keep KeepMode) *Recorder {
	return &Recorder{acc: NewAccumulator(opts), keep: keep, jsonl: records}
}

// Add writes, accumulates and keeps rec.
func (r *Recorder) Add(rec *Record) error {
	var err error
	if r.jsonl != nil {
		err = r.jsonl.Add(rec)
	}
	r.acc.Add(rec)
	r.lastEnd = max(r.lastEnd, rec.End())
	switch r.keep {
	case KeepLight:
		light := *rec
		light.ITL, light.GeneratedText = nil, ""
		r.records = append(r.records, light)
	case KeepFull:
		full := *rec
		full.ITL = slices.Clone(rec.ITL)
		r.records = append(r.records, full)
	}
	return err
}

// Close writes buffered records and reports a records write error, if any.
func (r *Recorder) Close() error {
	if r.jsonl == nil {
		return nil
	}
	return r.jsonl.Close()
}

// RecordsKept is how many records the JSONL destination holds; -1 when
// there is none.
func (r *Recorder) RecordsKept() int {
	if r.jsonl == nil {
		return -1
	}
	return r.jsonl.Lines()
}

// RecordsErr is the error that stopped the records file, if any.
func (r *Recorder) RecordsErr() error {
	if r.jsonl == nil {
		return nil
	}
	return r.jsonl.Err()
}

// Summary summarises every record added so far over a run of duration.
func (r *Recorder) Summary(duration time.Duration) Summary { return r.acc.Summary(duration) }

// Records returns the kept records in the order added.
func (r *Recorder) Records() []Record { return r.records }

// LastEnd is the latest End() of any record added: the duration of a run
// whose zero is the first arrival, measured as bench measures it.
func (r *Recorder) LastEnd() time.Duration { return r.lastEnd }
