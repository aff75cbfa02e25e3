package report

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CompareOptions shapes a side-by-side table.
type CompareOptions struct {
	// GroupBy is a key put in the first column and sorted on: any result
	// key (request_rate, num_prompts), a --metadata key, a swept flag
	// (max-num-seqs) or an engine setting. The other keys the runs of one
	// setup differ in follow it as columns, and rows that share a group
	// value sort by them. Empty keeps the input order, but for the points
	// of a sweep, which sort by their swept values.
	GroupBy string
	// Labels replace the runs' labels in order (from --label); runs past
	// the end keep theirs.
	Labels []string
	// AllColumns makes the terminal table show every column instead of
	// TerminalColumns. Markdown, CSV and JSON always hold every column.
	AllColumns bool
	// Width is the terminal width the table is wrapped to (default
	// DefaultTerminalWidth): columns that do not fit continue in a further
	// block that repeats the label and group columns.
	Width int
}

// DefaultTerminalWidth is the width terminal tables fit by default.
const DefaultTerminalWidth = 120

// TerminalColumns are the keys a terminal table shows by default, when the
// runs have them: counts, throughput and the headline latencies, which fit
// one 120-column screen beside a label.
var TerminalColumns = []string{
	"completed", "failed", "request_throughput", "request_goodput", "output_throughput",
	"median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms",
}

// CompareColumn is one metric column, named as vLLM's result block names it.
type CompareColumn struct {
	Key    string // result JSON key, e.g. "p99_ttft_ms"
	Header string // e.g. "P99 TTFT (ms)"
	// Integer columns (request and token counts) print without decimals.
	Integer bool
}

// CompareCell is one value; Present is false for a key the file lacks,
// which prints blank.
type CompareCell struct {
	Value   float64
	Text    string // non-numeric group values
	Present bool
}

// CompareRow is one run.
type CompareRow struct {
	Label  string
	Source string // file, with "#N" for the Nth run of a multi-run file
	Group  CompareCell
	Keys   []CompareCell // parallel to CompareTable.KeyColumns
	Cells  []CompareCell // parallel to CompareTable.Columns
	// setup is the label without the swept values the key columns show
	// ("colocated 1 GPU" for "colocated 1 GPU: random-input-len=256
	// request-rate=4"), for the HTML table; "" keeps Label.
	setup string
}

// CompareTable is the side-by-side model every format renders.
type CompareTable struct {
	GroupBy string
	// KeyColumns are, with GroupBy set, the other keys the runs of one
	// setup differ in (swept flags, --metadata keys, request rate,
	// concurrency, burstiness, model): rows that share a group value are
	// told apart by them, never merged.
	KeyColumns []string
	Columns    []CompareColumn
	Rows       []CompareRow
	// AllColumns and Width shape WriteTerminal (see CompareOptions).
	AllColumns bool
	Width      int
}

var percentileKey = regexp.MustCompile(`^p(\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms$`)

// latencyMetrics are vLLM's percentile metrics in its print order.
var latencyMetrics = []struct{ key, abbrev string }{
	{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"},
}

// NewCompareTable builds one row per run with vLLM's result-block columns.
// Optional columns (failed requests, goodput, E2EL, extra percentiles)
// appear when at least one run has them; the core columns always appear
// and are blank where a file lacks the key. Every run is a row of its own:
// runs are never merged, whatever they share.
func NewCompareTable(results []LoadedResult, opts CompareOptions) *CompareTable {
	t := &CompareTable{GroupBy: opts.GroupBy, Columns: compareColumns(results), AllColumns: opts.AllColumns, Width: opts.Width}
	var keys []runKey
	if opts.GroupBy != "" {
		keys = differingKeys(results, canonicalKey(opts.GroupBy))
		for _, k := range keys {
			t.KeyColumns = append(t.KeyColumns, k.name)
		}
	}
	runsPerFile := map[string]int{}
	for _, r := range results {
		runsPerFile[r.Path]++
	}
	for _, i := range compareOrder(results, opts.GroupBy, keys) {
		r := results[i]
		row := CompareRow{Label: r.Label, Source: r.Path}
		if i < len(opts.Labels) && opts.Labels[i] != "" {
			row.Label = opts.Labels[i]
		}
		if r.Index > 0 || runsPerFile[r.Path] > 1 {
			row.Source = fmt.Sprintf("%s#%d", r.Path, r.Index+1)
		}
		if opts.GroupBy != "" {
			row.Group = groupCell(r, opts.GroupBy)
		}
		for _, k := range keys {
			row.Keys = append(row.Keys, groupCell(r, k.name))
		}
		if row.Label == r.Label && opts.GroupBy != "" {
			row.setup = setupLabel(r, append([]string{canonicalKey(opts.GroupBy)}, canonicals(keys)...))
		}
		if r.Recovered {
			row.Label += " (" + RecoveredNote + ")"
		}
		row.Cells = make([]CompareCell, len(t.Columns))
		for j, c := range t.Columns {
			if v, ok := r.Number(c.Key); ok {
				row.Cells[j] = CompareCell{Value: v, Present: true}
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// setupLabel is a sweep point's label without its swept values, when the
// label is the one the manifest reader made and every swept flag is among
// shown; "" otherwise.
func setupLabel(r LoadedResult, shown []string) string {
	if len(r.Params) == 0 {
		return ""
	}
	for _, p := range r.Params {
		if !slices.Contains(shown, canonicalKey(p.Flag)) {
			return ""
		}
	}
	values := pointLabel("", "", r.Params)
	if prefix, ok := strings.CutSuffix(r.Label, ": "+values); ok && prefix != "" {
		return prefix
	}
	if r.Label == values {
		return seriesLabel(r.Series)
	}
	return ""
}

func canonicals(keys []runKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.canon
	}
	return out
}

func groupCell(r LoadedResult, key string) CompareCell {
	text, ok := r.Text(key)
	if !ok {
		return CompareCell{}
	}
	cell := CompareCell{Text: text, Present: true}
	if v, ok := anyToFloat(text); ok {
		cell.Value = v
	} else {
		cell.Value = math.NaN()
	}
	return cell
}

// compareOrder sorts the runs: by the group value when there is one
// (numerically when every present value is a number, "inf" last; runs
// without the key last), then by setup in order of appearance, then by the
// other keys its runs differ in, numerically (4, 10, 14, 20). Without a
// group only a sweep's points move, sorted by their swept values; loose
// files keep the order they were given in.
func compareOrder(results []LoadedResult, groupBy string, keys []runKey) []int {
	order := make([]int, len(results))
	for i := range order {
		order[i] = i
	}
	if groupBy == "" {
		for _, k := range differingKeys(results) {
			if isSweptFlag(results, k) {
				keys = append(keys, k)
			}
		}
	}
	groups := make([]CompareCell, len(results))
	numeric := true
	for i, r := range results {
		if groupBy != "" {
			groups[i] = groupCell(r, groupBy)
		}
		numeric = numeric && !(groups[i].Present && math.IsNaN(groups[i].Value))
	}
	ranks := seriesRanks(results)
	values := make([][]string, len(results))
	for i, r := range results {
		values[i] = keyValues(keys, r)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ga, gb := groups[a], groups[b]
		if ga.Present != gb.Present {
			if ga.Present {
				return -1
			}
			return 1
		}
		var c int
		if numeric {
			c = cmp.Compare(ga.Value, gb.Value)
		} else {
			c = strings.Compare(ga.Text, gb.Text)
		}
		if c != 0 {
			return c
		}
		if c := cmp.Compare(ranks[results[a].Series], ranks[results[b].Series]); c != 0 {
			return c
		}
		if groupBy == "" && len(results[a].Params) == 0 {
			return 0 // loose files keep their order
		}
		return compareValueLists(values[a], values[b])
	})
	return order
}

func compareColumns(results []LoadedResult) []CompareColumn {
	any := func(key string) bool {
		for _, r := range results {
			if _, ok := r.Number(key); ok {
				return true
			}
		}
		return false
	}
	cols := []CompareColumn{{Key: "completed", Header: "Successful requests", Integer: true}}
	if any("failed") {
		cols = append(cols, CompareColumn{Key: "failed", Header: "Failed requests", Integer: true})
	}
	cols = append(cols,
		CompareColumn{Key: "duration", Header: "Benchmark duration (s)"},
		CompareColumn{Key: "total_input_tokens", Header: "Total input tokens", Integer: true},
		CompareColumn{Key: "total_output_tokens", Header: "Total generated tokens", Integer: true},
		CompareColumn{Key: "request_throughput", Header: "Request throughput (req/s)"},
	)
	if any("request_goodput") {
		cols = append(cols, CompareColumn{Key: "request_goodput", Header: "Request goodput (req/s)"})
	}
	cols = append(cols,
		CompareColumn{Key: "output_throughput", Header: "Output token throughput (tok/s)"},
		CompareColumn{Key: "total_token_throughput", Header: "Total token throughput (tok/s)"},
	)
	percentiles := discoverPercentiles(results)
	for _, m := range latencyMetrics {
		if m.key == "e2el" && !any("mean_e2el_ms") && !any("median_e2el_ms") {
			continue
		}
		cols = append(cols,
			CompareColumn{Key: "mean_" + m.key + "_ms", Header: "Mean " + m.abbrev + " (ms)"},
			CompareColumn{Key: "median_" + m.key + "_ms", Header: "Median " + m.abbrev + " (ms)"},
		)
		for _, p := range percentiles[m.key] {
			cols = append(cols, CompareColumn{
				Key:    "p" + strconv.FormatFloat(p, 'f', -1, 64) + "_" + m.key + "_ms",
				Header: PercentileLabel(p) + " " + m.abbrev + " (ms)",
			})
		}
	}
	return cols
}

// discoverPercentiles lists, per metric, every percentile some run reports
// (vLLM's --metric-percentiles), always including vLLM's default 99.
func discoverPercentiles(results []LoadedResult) map[string][]float64 {
	found := map[string][]float64{}
	for _, m := range latencyMetrics {
		found[m.key] = []float64{99}
	}
	add := func(metric string, p float64) {
		if p == 50 {
			return // the median column shows it
		}
		if metric == "e2e_latency" {
			metric = "e2el"
		}
		if !slices.Contains(found[metric], p) {
			found[metric] = append(found[metric], p)
		}
	}
	for _, r := range results {
		for k := range r.Fields {
			if m := percentileKey.FindStringSubmatch(k); m != nil {
				if p, err := strconv.ParseFloat(m[1], 64); err == nil {
					add(m[2], p)
				}
			}
		}
		for metric, section := range summaryJSONMetrics {
			nested, _ := r.Fields[section].(map[string]any)
			for k := range nested {
				if p, err := strconv.ParseFloat(strings.TrimPrefix(k, "p"), 64); err == nil && strings.HasPrefix(k, "p") {
					add(metric, p)
				}
			}
		}
	}
	for k := range found {
		slices.Sort(found[k])
	}
	return found
}

// keyHeaders are the columns that name a run: the label, the group
// column when set, and the key columns.
func (t *CompareTable) keyHeaders() []string {
	h := []string{"Label"}
	if t.GroupBy != "" {
		h = append(h, t.GroupBy)
	}
	return append(h, t.KeyColumns...)
}

// keyCells are a row's values under keyHeaders, as text; bySetup names
// a sweep point by its setup when the key columns show its swept values.
func (t *CompareTable) keyCells(r CompareRow, bySetup bool) []string {
	out := []string{r.Label}
	if bySetup && r.setup != "" {
		out[0] = r.setup
	}
	if t.GroupBy != "" {
		out = append(out, r.Group.Text)
	}
	for _, k := range r.Keys {
		out = append(out, k.Text)
	}
	return out
}

// numericKey tells whether key column i (after the label) holds only
// numbers, so it is right-aligned.
func (t *CompareTable) numericKey(i int) bool {
	for _, r := range t.Rows {
		c := r.Group
		switch {
		case t.GroupBy == "":
			c = r.Keys[i-1]
		case i > 1:
			c = r.Keys[i-2]
		}
		if c.Present && math.IsNaN(c.Value) {
			return false
		}
	}
	return true
}

// headers returns the key columns, then the metric columns.
func (t *CompareTable) headers() []string {
	h := t.keyHeaders()
	for _, c := range t.Columns {
		h = append(h, c.Header)
	}
	return h
}

// displayRow formats a row for people: counts as integers, the rest with
// two decimals as vLLM prints them, missing values blank; bySetup names a
// sweep point by its setup where the key columns show its swept values.
func (t *CompareTable) displayRow(r CompareRow, bySetup bool) []string {
	out := t.keyCells(r, bySetup)
	for i, c := range t.Columns {
		out = append(out, formatCell(r.Cells[i], c.Integer, 2))
	}
	return out
}

func formatCell(c CompareCell, integer bool, decimals int) string {
	switch {
	case !c.Present:
		return ""
	case math.IsInf(c.Value, 1):
		return "inf"
	case math.IsInf(c.Value, -1):
		return "-inf"
	case integer && c.Value == math.Trunc(c.Value):
		return strconv.FormatFloat(c.Value, 'f', 0, 64)
	case decimals < 0:
		return strconv.FormatFloat(c.Value, 'f', -1, 64)
	}
	return strconv.FormatFloat(c.Value, 'f', decimals, 64)
}

// ParseCompareFormat accepts term (terminal), md (markdown), csv and json.
func ParseCompareFormat(name string) (string, error) {
	switch strings.ToLower(name) {
	case "term", "terminal", "text", "":
		return "term", nil
	case "md", "markdown":
		return "md", nil
	case "csv":
		return "csv", nil
	case "json":
		return "json", nil
	}
	return "", fmt.Errorf("unknown table format %q: use term, md, csv or json", name)
}

// Reporter returns the writer for a format accepted by ParseCompareFormat.
func (t *CompareTable) Reporter(format string) (func(io.Writer) error, error) {
	f, err := ParseCompareFormat(format)
	if err != nil {
		return nil, err
	}
	switch f {
	case "md":
		return t.WriteMarkdown, nil
	case "csv":
		return t.WriteCSV, nil
	case "json":
		return t.WriteJSON, nil
	}
	return t.WriteTerminal, nil
}

// WriteTerminal writes an aligned plain-text table: text left-aligned,
// numbers right-aligned, long headers wrapped over up to three lines so the
// table stays about as wide as its values. It shows TerminalColumns unless
// AllColumns; columns that do not fit Width continue in further blocks.
// Labels are escaped so a label cannot send control sequences to the
// terminal, and cut to maxTerminalLabel runes.
func (t *CompareTable) WriteTerminal(w io.Writer) error {
	fixed := t.keyHeaders()
	shown := t.terminalColumns()
	header := slices.Clone(fixed)
	for _, c := range shown {
		header = append(header, t.Columns[c].Header)
	}
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		full := t.displayRow(r, false)
		row := []string{TerminalSafe(shortenLabel(full[0], maxTerminalLabel))}
		for _, k := range full[1:len(fixed)] {
			row = append(row, TerminalSafe(k))
		}
		for _, c := range shown {
			row = append(row, full[len(fixed)+c])
		}
		rows[i] = row
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	headerLines := make([][]string, len(header))
	for i, h := range header {
		headerLines[i], widths[i] = wrapHeader(TerminalSafe(h), widths[i], maxHeaderLines)
	}
	numericKeys := make([]bool, len(fixed))
	for i := 1; i < len(fixed); i++ {
		numericKeys[i] = t.numericKey(i)
	}
	rightAligned := func(col int) bool {
		if col < len(fixed) {
			return numericKeys[col]
		}
		return true
	}
	var b bytes.Buffer
	for i, block := range splitColumns(widths, len(fixed), cmp.Or(t.Width, DefaultTerminalWidth)) {
		if i > 0 {
			b.WriteString("\n")
		}
		writeTerminalBlock(&b, block, widths, headerLines, rows, rightAligned)
	}
	if hidden := len(t.Columns) - len(shown); hidden > 0 {
		fmt.Fprintf(&b, "(%d more columns: --all-columns shows them; --format md, csv and json hold them all)\n", hidden)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// maxTerminalLabel keeps one long file name from pushing every metric off
// the screen.
const maxTerminalLabel = 40

// terminalColumns returns the indices of the columns the terminal shows.
func (t *CompareTable) terminalColumns() []int {
	var out []int
	for i, c := range t.Columns {
		if t.AllColumns || slices.Contains(TerminalColumns, c.Key) && (c.Key != "failed" || t.anyNonZero(i)) {
			out = append(out, i)
		}
	}
	return out
}

// anyNonZero tells whether some run has a non-zero value in column i: a
// column of zero failures says nothing on a crowded screen.
func (t *CompareTable) anyNonZero(i int) bool {
	for _, r := range t.Rows {
		if r.Cells[i].Present && r.Cells[i].Value != 0 {
			return true
		}
	}
	return false
}

// splitColumns groups column indices into blocks no wider than width, each
// starting with the first fixed columns; a block always takes at least one
// metric column, so a very narrow width still makes progress.
func splitColumns(widths []int, fixed, width int) [][]int {
	base := make([]int, fixed)
	used := -2
	for i := range fixed {
		base[i] = i
		used += widths[i] + 2
	}
	var blocks [][]int
	block, blockWidth := slices.Clone(base), used
	for c := fixed; c < len(widths); c++ {
		if len(block) > fixed && blockWidth+2+widths[c] > width {
			blocks = append(blocks, block)
			block, blockWidth = slices.Clone(base), used
		}
		block = append(block, c)
		blockWidth += 2 + widths[c]
	}
	return append(blocks, block)
}

func writeTerminalBlock(b *bytes.Buffer, block, widths []int, headerLines [][]string, rows [][]string, rightAligned func(int) bool) {
	writeLine := func(cell func(col int) string) {
		var line strings.Builder
		for i, col := range block {
			if i > 0 {
				line.WriteString("  ")
			}
			text := cell(col)
			pad := strings.Repeat(" ", widths[col]-utf8.RuneCountInString(text))
			if rightAligned(col) {
				line.WriteString(pad + text)
			} else {
				line.WriteString(text + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	height := 1
	for _, col := range block {
		height = max(height, len(headerLines[col]))
	}
	// Headers sit on the bottom lines so each one touches its rule.
	for l := range height {
		writeLine(func(col int) string {
			lines := headerLines[col]
			if k := l - (height - len(lines)); k >= 0 {
				return lines[k]
			}
			return ""
		})
	}
	writeLine(func(col int) string { return strings.Repeat("-", widths[col]) })
	for _, r := range rows {
		writeLine(func(col int) string { return r[col] })
	}
}

// TerminalSafe escapes control characters (ESC, CR, BEL, C1 codes) and
// Unicode bidirectional overrides in s, Go-quoted (\x1b, \u202e), so text
// from a result file cannot move the cursor, recolour or rewrite what a
// terminal shows.
func TerminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Bidi_Control, r)
}

// shortenLabel cuts s to n runes, keeping its start and end (where file
// names differ) around an ellipsis.
func shortenLabel(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(runes[:head]) + "…" + string(runes[len(runes)-(n-1-head):])
}

const maxHeaderLines = 3

// wrapHeader breaks h at spaces into lines no wider than the column,
// widening the column until it fits in maxLines lines; it returns the lines
// and the final width.
func wrapHeader(h string, width, maxLines int) ([]string, int) {
	words := strings.Fields(h)
	for _, word := range words {
		width = max(width, utf8.RuneCountInString(word))
	}
	for {
		var lines []string
		current := ""
		for _, word := range words {
			switch {
			case current == "":
				current = word
			case utf8.RuneCountInString(current)+1+utf8.RuneCountInString(word) <= width:
				current += " " + word
			default:
				lines = append(lines, current)
				current = word
			}
		}
		lines = append(lines, current)
		if len(lines) <= maxLines {
			return lines, width
		}
		width++
	}
}

// WriteMarkdown writes a GitHub-flavoured Markdown table.
func (t *CompareTable) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	escape := func(s string) string { return strings.ReplaceAll(TerminalSafe(s), "|", `\|`) }
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + escape(c) + " |")
		}
		b.WriteString("\n")
	}
	header := t.headers()
	line(header)
	b.WriteString("|")
	keyColumns := len(t.keyHeaders())
	for i := range header {
		if i == 0 || i < keyColumns && !t.numericKey(i) {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(t.displayRow(r, false))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteCSV writes the table with full-precision values for spreadsheets,
// plus a source column naming each run's file.
func (t *CompareTable) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := append(t.headers(), "Source")
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	for _, r := range t.Rows {
		rec := t.keyCells(r, false)
		for i, c := range t.Columns {
			rec = append(rec, formatCell(r.Cells[i], c.Integer, -1))
		}
		rec = append(rec, r.Source)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("writing CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// WriteJSON writes an array with one object per run, keyed by the result
// JSON keys (label, source, the group key, then the metric keys); missing
// values are null and infinite ones the string "inf", as vLLM writes
// request_rate.
func (t *CompareTable) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, r := range t.Rows {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		fields := 0
		add := func(key string, v any) error {
			k, err := json.Marshal(key)
			if err != nil {
				return fmt.Errorf("encoding column %q: %w", key, err)
			}
			val, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("encoding column %q: %w", key, err)
			}
			if fields > 0 {
				b.WriteString(", ")
			}
			fields++
			b.Write(k)
			b.WriteString(": ")
			b.Write(val)
			return nil
		}
		if err := add("label", r.Label); err != nil {
			return err
		}
		if err := add("source", r.Source); err != nil {
			return err
		}
		if t.GroupBy != "" {
			if err := add(t.GroupBy, groupJSON(r.Group)); err != nil {
				return err
			}
		}
		for j, k := range t.KeyColumns {
			if err := add(k, groupJSON(r.Keys[j])); err != nil {
				return err
			}
		}
		for j, c := range t.Columns {
			if err := add(c.Key, cellJSON(r.Cells[j])); err != nil {
				return err
			}
		}
		b.WriteString("}")
	}
	if len(t.Rows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

func cellJSON(c CompareCell) any {
	switch {
	case !c.Present || math.IsNaN(c.Value):
		return nil
	case math.IsInf(c.Value, 1):
		return "inf"
	case math.IsInf(c.Value, -1):
		return "-inf"
	}
	return c.Value
}

func groupJSON(c CompareCell) any {
	if c.Present && math.IsNaN(c.Value) {
		return c.Text
	}
	return cellJSON(c)
}
