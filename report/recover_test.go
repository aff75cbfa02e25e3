package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/metrics"
)

// recordLines is n whole record lines as bench streams them.
func recordLines(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		rec := metrics.Record{Index: i, Start: time.Duration(i) * 100 * time.Millisecond, TTFT: 20 * time.Millisecond,
			Latency: 200 * time.Millisecond, ITL: []time.Duration{60 * time.Millisecond, 60 * time.Millisecond, 60 * time.Millisecond},
			PromptLen: 128, OutputLen: 4, MaxTokens: 4, Success: true}
		line, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	return b.Bytes()
}

// TestRecoveredFromRecords: a run killed before it wrote its result left
// whole record lines and maybe a line cut mid-write; report, compare and
// merge read it back as a run, marked, and never as blank rows.
func TestRecoveredFromRecords(t *testing.T) {
	whole := recordLines(t, 3)
	cut := append(bytes.Clone(whole), recordLines(t, 1)[:40]...)
	tests := []struct {
		name      string
		records   []byte
		result    bool // a result file beside the records
		byName    bool // the records file given by name, not its directory
		completed float64
		recovered bool
		wantErr   string
	}{
		{"directory, whole lines", whole, false, false, 3, true, ""},
		{"directory, last line cut mid-write", cut, false, false, 3, true, ""},
		{"by name, cut", cut, false, true, 3, true, ""},
		{"by name with its result beside: the result", whole, true, true, 7, false, ""},
		{"directory with the result beside: the result alone", whole, true, false, 7, false, ""},
		{"no whole line", recordLines(t, 1)[:30], false, true, 0, false, "no record: the run stopped before any request finished"},
		{"a bad line inside", append(append([]byte("{\"latency_ns\": oops}\n"), whole...), '\n'), false, true, 0, false, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			records := filepath.Join(dir, "run"+recordsSuffix)
			if err := os.WriteFile(records, tt.records, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.result {
				writeResultFixture(t, dir, "run.json", `{"completed": 7, "duration": 2, "request_throughput": 3.5}`)
			}
			arg := dir
			if tt.byName {
				arg = records
			}
			got, warnings, err := LoadResultsWith(LoadOptions{}, arg)
			if tt.wantErr != "" {
				var msgs []string
				if err != nil {
					msgs = append(msgs, err.Error())
				}
				for _, w := range warnings {
					msgs = append(msgs, w.Err.Error())
				}
				if !strings.Contains(strings.Join(msgs, "\n"), tt.wantErr) {
					t.Fatalf("errors %q, want one with %q", msgs, tt.wantErr)
				}
				return
			}
			if err != nil || len(warnings) > 0 {
				t.Fatalf("err %v, warnings %v", err, warnings)
			}
			if len(got) != 1 {
				t.Fatalf("%d runs loaded, want 1", len(got))
			}
			r := got[0]
			if completed, _ := r.Number("completed"); r.Recovered != tt.recovered || completed != tt.completed {
				t.Errorf("recovered %v completed %v, want %v and %v", r.Recovered, completed, tt.recovered, tt.completed)
			}
			if tt.recovered {
				if _, ok := r.Fields["request_rate"]; ok {
					t.Error("a recovered run shows a request rate its records cannot tell")
				}
				if ttft, _ := r.Number("mean_ttft_ms"); ttft != 20 {
					t.Errorf("mean TTFT %v ms, want 20 from the records", ttft)
				}
			}
		})
	}
}

// FuzzReadRecordsLenient: any bytes in a records file give records or one
// error, never a panic.
func FuzzReadRecordsLenient(f *testing.F) {
	f.Add(recordLines(f, 2))
	f.Add(append(recordLines(f, 2), []byte(`{"index": 3, "latency`)...))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f"+recordsSuffix)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		recs, cut, err := ReadRecordsLenient(path)
		if err != nil && (recs != nil || strings.Contains(err.Error(), "\n")) {
			t.Fatalf("error %q with %d records", err, len(recs))
		}
		if cut < 0 || cut > 1 {
			t.Fatalf("cut %d", cut)
		}
	})
}
