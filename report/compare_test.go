package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/golden"
)

// compareGolden compares got with testdata/compare/name, rewriting it
// under -update.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.CheckFile(t, filepath.Join("testdata", "compare", name), got)
}

// goldenInputs are real vLLM and SGLang outputs, a servebench result
// written by this package's JSON writer, an infinite-rate run, and a file
// from an unknown tool with most keys missing.
func goldenInputs(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join("testdata", "compare")
	if golden.Updating() {
		syntheticRun{label: "servebench-8qps", rate: 8, capacity: 12, requests: 120, outputLen: 16, seed: 11}.write(t, dir)
	}
	return []string{
		filepath.Join(dir, "servebench-8qps.json"),
		vllmCapture,
		sglangCapture,
		filepath.Join(dir, "inf-rate.json"),
		filepath.Join(dir, "other-tool.json"),
	}
}

func TestCompareTableGolden(t *testing.T) {
	results, err := LoadResults(goldenInputs(t)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, groupBy := range []string{"", "request_rate"} {
		table := NewCompareTable(results, CompareOptions{GroupBy: groupBy})
		for _, format := range []string{"term", "md", "csv", "json"} {
			name := "table"
			if groupBy != "" {
				name += "-by-" + groupBy
			}
			t.Run(name+"."+format, func(t *testing.T) {
				report, err := table.Reporter(format)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := report(&b); err != nil {
					t.Fatal(err)
				}
				compareGolden(t, name+"."+format+".golden", b.Bytes())
			})
		}
	}
}

func TestCompareFormatsAreWellFormed(t *testing.T) {
	results, err := LoadResults(goldenInputs(t)...)
	if err != nil {
		t.Fatal(err)
	}
	table := NewCompareTable(results, CompareOptions{GroupBy: "request_rate"})

	var csvOut bytes.Buffer
	if err := table.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	if len(records) != len(results)+1 {
		t.Errorf("CSV has %d records, want header + %d", len(records), len(results))
	}

	var jsonOut bytes.Buffer
	if err := table.WriteJSON(&jsonOut); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(jsonOut.Bytes(), &rows); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	byLabel := map[string]map[string]any{}
	for _, r := range rows {
		byLabel[r["label"].(string)] = r
	}
	other := byLabel["other-tool"]
	if other == nil || other["median_ttft_ms"] != nil || other["completed"] != float64(7) {
		t.Errorf("missing keys must be null and present ones kept: %v", other)
	}
	if other["mean_ttft_ms"] != float64(120) || other["duration"] != 4.2 {
		t.Errorf("mean_ttft_s and duration_ms must be converted to ms and s: %v, %v", other["mean_ttft_ms"], other["duration"])
	}
	if byLabel["inf-rate"]["request_rate"] != "inf" {
		t.Errorf("infinite rate written as %v, want \"inf\"", byLabel["inf-rate"]["request_rate"])
	}

	var md bytes.Buffer
	if err := table.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	wantPipes := strings.Count(lines[0], "|") - strings.Count(lines[0], `\|`)
	for i, l := range lines {
		if got := strings.Count(l, "|") - strings.Count(l, `\|`); got != wantPipes {
			t.Errorf("markdown line %d has %d cell separators, want %d: %s", i, got, wantPipes, l)
		}
	}
}

func TestGroupBySortsNumericallyWithInfAndMissingLast(t *testing.T) {
	mk := func(label string, rate any) LoadedResult {
		f := map[string]any{"completed": json.Number("1")}
		if rate != nil {
			f["request_rate"] = rate
		}
		return LoadedResult{Label: label, Fields: f}
	}
	tests := []struct {
		name    string
		results []LoadedResult
		want    string
	}{
		{"numbers not text", []LoadedResult{mk("a", json.Number("10")), mk("b", json.Number("2")), mk("c", "inf"), mk("d", nil), mk("e", json.Number("2"))}, "b e a c d"},
		{"text when any is text", []LoadedResult{mk("a", "fast"), mk("b", json.Number("2")), mk("c", "big")}, "b c a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := NewCompareTable(tt.results, CompareOptions{GroupBy: "request_rate"})
			var got []string
			for _, r := range table.Rows {
				got = append(got, r.Label)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("order %v, want %s", got, tt.want)
			}
		})
	}
}

func TestLabelsOverrideInOrder(t *testing.T) {
	results := []LoadedResult{{Label: "x", Fields: map[string]any{}}, {Label: "y", Fields: map[string]any{}}}
	table := NewCompareTable(results, CompareOptions{Labels: []string{"A"}})
	if table.Rows[0].Label != "A" || table.Rows[1].Label != "y" {
		t.Errorf("labels %q, %q", table.Rows[0].Label, table.Rows[1].Label)
	}
}

func TestOptionalColumnsAppearOnlyWhenPresent(t *testing.T) {
	has := func(table *CompareTable, key string) bool {
		for _, c := range table.Columns {
			if c.Key == key {
				return true
			}
		}
		return false
	}
	plain := NewCompareTable([]LoadedResult{{Fields: map[string]any{"completed": json.Number("1")}}}, CompareOptions{})
	for _, key := range []string{"failed", "request_goodput", "mean_e2el_ms", "p95_itl_ms"} {
		if has(plain, key) {
			t.Errorf("column %s shown with no run having it", key)
		}
	}
	for _, key := range []string{"completed", "duration", "mean_ttft_ms", "median_tpot_ms", "p99_itl_ms"} {
		if !has(plain, key) {
			t.Errorf("core column %s missing", key)
		}
	}
	rich := NewCompareTable([]LoadedResult{{Fields: map[string]any{
		"failed": json.Number("0"), "request_goodput": json.Number("1"), "mean_e2el_ms": json.Number("5"), "p99.9_ttft_ms": json.Number("9"),
	}}}, CompareOptions{})
	for _, key := range []string{"failed", "request_goodput", "mean_e2el_ms", "p99.9_ttft_ms"} {
		if !has(rich, key) {
			t.Errorf("column %s missing although a run has it", key)
		}
	}
}

func TestParseCompareFormat(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"term", "term", ""}, {"", "term", ""}, {"Markdown", "md", ""}, {"md", "md", ""},
		{"csv", "csv", ""}, {"json", "json", ""}, {"xml", "", "use term, md, csv or json"},
	}
	for _, tt := range tests {
		got, err := ParseCompareFormat(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseCompareFormat(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestWrapHeader(t *testing.T) {
	tests := []struct {
		header string
		width  int
		lines  []string
	}{
		{"Mean TTFT (ms)", 6, []string{"Mean", "TTFT", "(ms)"}},
		{"Output token throughput (tok/s)", 6, []string{"Output token", "throughput", "(tok/s)"}},
		{"Label", 20, []string{"Label"}},
	}
	for _, tt := range tests {
		lines, width := wrapHeader(tt.header, tt.width, 3)
		if strings.Join(lines, "|") != strings.Join(tt.lines, "|") {
			t.Errorf("wrapHeader(%q) = %q", tt.header, lines)
		}
		for _, l := range lines {
			if len(l) > width {
				t.Errorf("line %q wider than %d", l, width)
			}
		}
	}
}

func TestFormatCell(t *testing.T) {
	tests := []struct {
		cell    CompareCell
		integer bool
		want    string
	}{
		{CompareCell{}, false, ""},
		{CompareCell{Value: 4.277664, Present: true}, false, "4.28"},
		{CompareCell{Value: 50, Present: true}, true, "50"},
		{CompareCell{Value: 50.5, Present: true}, true, "50.50"},
		{CompareCell{Value: math.Inf(1), Present: true}, false, "inf"},
	}
	for _, tt := range tests {
		if got := formatCell(tt.cell, tt.integer, 2); got != tt.want {
			t.Errorf("formatCell(%+v) = %q, want %q", tt.cell, got, tt.want)
		}
	}
}

func TestTerminalTableFitsTheWidth(t *testing.T) {
	results, err := LoadResults(goldenInputs(t)...)
	if err != nil {
		t.Fatal(err)
	}
	long := results[0]
	long.Label = strings.Repeat("a-very-long-run-label-", 5)
	results = append(results, long)
	tests := []struct {
		name    string
		opts    CompareOptions
		width   int
		headers []string // must all appear somewhere
	}{
		{"default columns", CompareOptions{GroupBy: "request_rate"}, 120, []string{"P99", "TTFT", "throughput"}},
		{"all columns wrap into blocks", CompareOptions{GroupBy: "request_rate", AllColumns: true}, 120, []string{"E2EL", "P95", "Total", "Benchmark"}},
		{"narrow terminal", CompareOptions{AllColumns: true, Width: 80}, 80, []string{"E2EL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := NewCompareTable(results, tt.opts).WriteTerminal(&b); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(b.String(), "\n") {
				if n := len([]rune(line)); n > tt.width {
					t.Errorf("line %d is %d columns wide, over %d: %q", i+1, n, tt.width, line)
				}
			}
			for _, h := range tt.headers {
				if !strings.Contains(b.String(), h) {
					t.Errorf("table lacks %q:\n%s", h, b.String())
				}
			}
		})
	}
}

func TestAllColumnsShowEveryValueOnce(t *testing.T) {
	results, err := LoadResults(goldenInputs(t)...)
	if err != nil {
		t.Fatal(err)
	}
	table := NewCompareTable(results, CompareOptions{AllColumns: true})
	var b bytes.Buffer
	if err := table.WriteTerminal(&b); err != nil {
		t.Fatal(err)
	}
	// Every metric column's rule appears once across the blocks, plus the
	// label column's once per block.
	blocks := strings.Count(b.String(), "\n\n") + 1
	rules := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "---") {
			rules += len(strings.Fields(line))
		}
	}
	if want := len(table.Columns) + blocks; rules != want {
		t.Errorf("%d column rules in %d blocks, want %d:\n%s", rules, blocks, want, b.String())
	}
}

func TestTerminalOutputEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	hostile := "run\x1b[2J\x1b]0;pwned\x07\r\u202ereversed\u009b"
	path := filepath.Join(dir, "run.json")
	data, err := json.Marshal(map[string]any{"completed": 1, "label": hostile, "request_rate": "x\x1b[31m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	results, err := LoadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	table := NewCompareTable(results, CompareOptions{GroupBy: "request_rate"})
	for _, format := range []string{"term", "md"} {
		t.Run(format, func(t *testing.T) {
			write, err := table.Reporter(format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, bad := range []string{"\x1b", "\x07", "\r", "\u202e", "\u009b"} {
				if strings.Contains(out, bad) {
					t.Errorf("output holds raw %q:\n%q", bad, out)
				}
			}
			for _, want := range []string{`run\x1b[2J\x1b]0;pwned\a\r\u202ereversed`, `x\x1b[31m`} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks the escaped text %s:\n%s", want, out)
				}
			}
		})
	}
}

// TestCompareRowsSortBySweptValuesNumerically: a sweep given its rates
// out of order (--request-rate 10,20,4,14) lists its rows 4, 10, 14, 20,
// with or without a group, and within a group by the other swept key.
func TestCompareRowsSortBySweptValuesNumerically(t *testing.T) {
	dir := t.TempDir()
	sweepFixture{label: "s", capacity: 30, axes: []sweepAxis{
		{"max-num-seqs", []string{"64", "8"}}, {"request-rate", []string{"10", "20", "4", "14"}},
	}}.write(t, dir)
	results := loadOrFail(t, dir)
	tests := []struct {
		groupBy string
		want    string
	}{
		{"", "8/4 8/10 8/14 8/20 64/4 64/10 64/14 64/20"}, // by its swept values in axis order
		{"request_rate", "8/4 64/4 8/10 64/10 8/14 64/14 8/20 64/20"},
		{"max-num-seqs", "8/4 8/10 8/14 8/20 64/4 64/10 64/14 64/20"},
	}
	for _, tt := range tests {
		t.Run("group by "+cmp.Or(tt.groupBy, "nothing"), func(t *testing.T) {
			table := NewCompareTable(results, CompareOptions{GroupBy: tt.groupBy})
			var got []string
			for _, r := range table.Rows {
				var seqs, rate string
				for _, p := range results[slices.IndexFunc(results, func(x LoadedResult) bool { return x.Label == r.Label })].Params {
					if p.Flag == "max-num-seqs" {
						seqs = p.Value
					} else {
						rate = p.Value
					}
				}
				got = append(got, seqs+"/"+rate)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("rows %s\nwant %s", strings.Join(got, " "), tt.want)
			}
		})
	}
}

// TestCompareTableNeverMergesRunsThatDiffer: grouped by request rate, the
// P/D example (docs/topologies.md) keeps every run a row of its own, with the input
// length beside the rate, and each row holds its own run's numbers.
func TestCompareTableNeverMergesRunsThatDiffer(t *testing.T) {
	results := loadOrFail(t, twoKeyDirs...)
	table := NewCompareTable(results, CompareOptions{GroupBy: "request_rate"})
	if len(table.Rows) != len(results) {
		t.Fatalf("%d rows for %d runs", len(table.Rows), len(results))
	}
	if fmt.Sprint(table.KeyColumns) != "[random-input-len]" {
		t.Errorf("key columns %v, want the other swept key", table.KeyColumns)
	}
	p99 := slices.IndexFunc(table.Columns, func(c CompareColumn) bool { return c.Key == "p99_itl_ms" })
	for _, row := range table.Rows {
		src := results[slices.IndexFunc(results, func(r LoadedResult) bool { return r.Label == row.Label })]
		want, _ := src.Number("p99_itl_ms")
		inputLen, _ := src.Text("random-input-len")
		if row.Cells[p99].Value != want || row.Keys[0].Text != inputLen {
			t.Errorf("row %q: P99 ITL %v at input length %s, want its run's %v at %s", row.Label, row.Cells[p99].Value, row.Keys[0].Text, want, inputLen)
		}
	}
	for _, format := range []string{"term", "md", "csv", "json"} {
		t.Run(format, func(t *testing.T) {
			write, err := table.Reporter(format)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := write(&b); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, "twokeys-by-request_rate."+format+".golden", b.Bytes())
		})
	}
}
