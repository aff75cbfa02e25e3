package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func sinkRecords() []Record {
	return []Record{
		{Index: 0, Success: true, Start: time.Millisecond, TTFT: 5 * time.Millisecond, Latency: 20 * time.Millisecond,
			ITL: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond}, PromptLen: 8, OutputLen: 3, GeneratedText: "a<b>&"},
		{Index: 1, Error: "HTTP 503: busy", Status: 503, Start: 2 * time.Millisecond, Latency: time.Millisecond},
	}
}

// The JSONL lines are exactly what json.Encoder wrote before the sink
// existed, so records files stay byte-identical.
func TestJSONLWriterMatchesEncoder(t *testing.T) {
	var want, got bytes.Buffer
	enc := json.NewEncoder(&want)
	w := NewJSONLWriter(&got)
	for _, r := range sinkRecords() {
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
		if err := w.Add(&r); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("got\n%s\nwant\n%s", got.Bytes(), want.Bytes())
	}
}

// shortFile stores at most room more bytes, then fails like a full disk.
type shortFile struct {
	*os.File
	room int
}

func (f *shortFile) Write(p []byte) (int, error) {
	if len(p) <= f.room {
		f.room -= len(p)
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:f.room])
	f.room = 0
	return n, syscall.ENOSPC
}

func TestJSONLWriterCutsAPartialLineAndStops(t *testing.T) {
	for _, bufSize := range []int{0, 1 << 20} {
		fh, err := os.Create(filepath.Join(t.TempDir(), "r.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		recs := sinkRecords()
		first, _ := json.Marshal(&recs[0])
		w := NewBufferedJSONLWriter(&shortFile{File: fh, room: len(first) + 1 + 10}, bufSize)
		if err := w.Add(&recs[0]); err != nil {
			t.Fatal(err)
		}
		err = w.Add(&recs[1])
		if bufSize > 0 {
			err = w.Close()
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("buffer %d: write past the disk: %v, want ENOSPC", bufSize, err)
		}
		if err := w.Add(&recs[0]); !errors.Is(err, syscall.ENOSPC) || !errors.Is(w.Close(), syscall.ENOSPC) {
			t.Fatalf("buffer %d: a failed writer must keep failing: %v", bufSize, err)
		}
		b, _ := os.ReadFile(fh.Name())
		if want := append(first, '\n'); !bytes.Equal(b, want) {
			t.Fatalf("buffer %d: file holds %q, want only the whole first line", bufSize, b)
		}
		if w.Lines() != 1 {
			t.Errorf("buffer %d: Lines() = %d, want the 1 whole line kept", bufSize, w.Lines())
		}
	}
}

func TestDevFullFailsTheRecorderButNotTheSummary(t *testing.T) {
	fh, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer fh.Close()
	r := NewRecorder(Options{}, NewJSONLWriter(fh), KeepNone)
	recs := sinkRecords()
	if err := r.Add(&recs[0]); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Add to /dev/full: %v, want ENOSPC", err)
	}
	if s := r.Summary(time.Second); s.Completed != 1 || !errors.Is(r.RecordsErr(), syscall.ENOSPC) || r.RecordsKept() != 0 {
		t.Fatalf("completed %d, records err %v, kept %d", s.Completed, r.RecordsErr(), r.RecordsKept())
	}
}

func TestRecorderKeepModes(t *testing.T) {
	tests := []struct {
		mode    KeepMode
		n       int
		itl     int
		text    string
		lastEnd time.Duration
	}{
		{KeepNone, 0, 0, "", 21 * time.Millisecond},
		{KeepLight, 2, 0, "", 21 * time.Millisecond},
		{KeepFull, 2, 2, "a<b>&", 21 * time.Millisecond},
	}
	for _, tt := range tests {
		r := NewRecorder(Options{}, nil, tt.mode)
		for _, rec := range sinkRecords() {
			// Reuse the record the way sim recycles them: the kept copy
			// must not change.
			if err := r.Add(&rec); err != nil {
				t.Fatal(err)
			}
			for i := range rec.ITL {
				rec.ITL[i] = -1
			}
		}
		got := r.Records()
		if len(got) != tt.n || r.LastEnd() != tt.lastEnd {
			t.Fatalf("mode %d: kept %d, last end %v", tt.mode, len(got), r.LastEnd())
		}
		if tt.n > 0 && (len(got[0].ITL) != tt.itl || got[0].GeneratedText != tt.text || (tt.itl > 0 && got[0].ITL[0] != 5*time.Millisecond)) {
			t.Fatalf("mode %d: kept %+v", tt.mode, got[0])
		}
		if s := r.Summary(time.Second); s.Completed != 1 || s.Failed != 1 {
			t.Fatalf("mode %d: summary %d/%d", tt.mode, s.Completed, s.Failed)
		}
	}
}

type countSink struct {
	n   int
	err error
}

func (c *countSink) Add(*Record) error { c.n++; return c.err }
func (c *countSink) Close() error      { return c.err }

func TestTeeFeedsEverySinkAndJoinsErrors(t *testing.T) {
	bad, good := &countSink{err: syscall.ENOSPC}, &countSink{}
	s := Tee(bad, nil, good)
	recs := sinkRecords()
	for i := range recs {
		if err := s.Add(&recs[i]); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Add: %v", err)
		}
	}
	if bad.n != 2 || good.n != 2 || !errors.Is(s.Close(), syscall.ENOSPC) {
		t.Fatalf("bad %d good %d", bad.n, good.n)
	}
}
