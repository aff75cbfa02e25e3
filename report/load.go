package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	// Series groups runs that belong to one sweep (the run directory's
	// name), so curves of two setups are drawn separately. Empty for loose
	// files.
	Series string
	// RecordsPath is the per-request records file beside the result
	// (<name>.records.jsonl) when it exists.
	RecordsPath string
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
const manifestKind = "servebench-sweep"

// LoadResults reads result files and directories. A directory is walked for
// *.json and *.jsonl results; a directory holding a sweep manifest.json is
// read through the manifest instead, in point order with the swept
// parameters attached. Per-request *.records.jsonl and vLLM's
// *.pytorch.json traces are not results and are skipped, as are JSON files
// in walked directories that carry no benchmark keys. A named file is
// always read, even with no known keys (its cells are then blank).
func LoadResults(paths ...string) ([]LoadedResult, error) {
	if len(paths) == 0 {
		return nil, errors.New("no result files or directories given: pass at least one *.json file or a run directory")
	}
	var results []LoadedResult
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("result path %s: %w", p, err)
		}
		var got []LoadedResult
		if info.IsDir() {
			got, err = loadDir(p)
		} else {
			got, err = loadExplicitFile(p)
		}
		if err != nil {
			return nil, err
		}
		results = append(results, got...)
	}
	return results, nil
}

func loadExplicitFile(path string) ([]LoadedResult, error) {
	if isManifestName(path) {
		if m, ok, err := readManifest(path); err != nil {
			return nil, err
		} else if ok {
			return loadManifest(path, m)
		}
	}
	return ReadResultFile(path)
}

func isManifestName(path string) bool { return filepath.Base(path) == "manifest.json" }

func loadDir(root string) ([]LoadedResult, error) {
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
				return err
			}
			if !ok {
				return nil
			}
			got, err := loadManifest(manifest, m)
			if err != nil {
				return err
			}
			results = append(results, got...)
			return fs.SkipDir
		}
		if !isResultFileName(path) {
			return nil
		}
		got, err := ReadResultFile(path)
		if err != nil {
			return err
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

// sweepManifest is the part of package sweep's manifest.json that reports need.
type sweepManifest struct {
	Kind   string `json:"kind"`
	Label  string `json:"label"`
	Points []struct {
		Name   string  `json:"name"`
		Params []Param `json:"params"`
		Status string  `json:"status"`
		Result string  `json:"result"`
	} `json:"points"`
}

func readManifest(path string) (sweepManifest, bool, error) {
	var m sweepManifest
	data, err := os.ReadFile(path)
	if err != nil {
		return m, false, fmt.Errorf("reading sweep manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, false, fmt.Errorf("%s: %w", path, describeJSONError(data, err))
	}
	return m, m.Kind == manifestKind, nil
}

// loadManifest returns the completed points of a sweep in point order.
// Points still pending or failed have no result to show and are skipped.
func loadManifest(path string, m sweepManifest) ([]LoadedResult, error) {
	dir := filepath.Dir(path)
	series := m.Label
	if series == "" {
		series = filepath.Base(dir)
	}
	var results []LoadedResult
	for _, p := range m.Points {
		if p.Status != "done" || p.Result == "" {
			continue
		}
		resultPath := p.Result
		if !filepath.IsAbs(resultPath) {
			resultPath = filepath.Join(dir, resultPath)
		}
		got, err := ReadResultFile(resultPath)
		if err != nil {
			return nil, fmt.Errorf("sweep %s, point %s: %w", dir, p.Name, err)
		}
		for i := range got {
			got[i].Params = slices.Clone(p.Params)
			got[i].Series = series
			// A --label shared by every point of a sweep names the setup;
			// the swept values still tell its points apart.
			prefix := m.Label
			if got[i].explicitLabel() {
				prefix = got[i].Label
			}
			got[i].Label = pointLabel(prefix, p.Name, p.Params)
		}
		results = append(results, got...)
	}
	return results, nil
}

// pointLabel names a sweep point by its swept values, prefixed with the
// sweep's label so points of two setups stay apart in one table.
func pointLabel(sweepLabel, name string, params []Param) string {
	label := name
	if len(params) > 0 {
		parts := make([]string, len(params))
		for i, p := range params {
			parts[i] = p.Flag + "=" + p.Value
		}
		label = strings.Join(parts, " ")
	}
	if sweepLabel != "" {
		label = sweepLabel + ": " + label
	}
	return label
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
	objects, err := DecodeResultObjects(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	records := recordsPathFor(path)
	if _, err := os.Stat(records); err != nil {
		records = ""
	}
	base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".jsonl"), ".json")
	results := make([]LoadedResult, len(objects))
	for i, fields := range objects {
		r := LoadedResult{Path: path, Index: i, Fields: fields, Tool: detectTool(fields)}
		if len(objects) == 1 {
			r.RecordsPath = records
		}
		r.Label = r.labelFromFields()
		if r.Label == "" {
			r.Label = base
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

// DecodeResultObjects decodes every top-level JSON value of data into a
// generic object. Arrays contribute their elements. Anything that is not an
// object is an error naming its byte offset.
func DecodeResultObjects(data []byte) ([]map[string]any, error) {
	clean, shifts := replacePythonLiterals(data)
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.UseNumber()
	var objects []map[string]any
	for {
		start := dec.InputOffset()
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, describeJSONError(data, remapOffsets(err, shifts))
		}
		offset := originalOffset(skipSpace(clean, start), shifts)
		switch v := v.(type) {
		case map[string]any:
			objects = append(objects, v)
		case []any:
			for i, elem := range v {
				obj, ok := elem.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("element %d of the array at byte offset %d is %s, want a result object", i, offset, jsonKind(elem))
				}
				objects = append(objects, obj)
			}
		default:
			return nil, fmt.Errorf("value at byte offset %d is %s, want a result object ({...})", offset, jsonKind(v))
		}
	}
	if len(objects) == 0 {
		return nil, errors.New("no result object found (the file is empty); point at a --save-result JSON file")
	}
	return objects, nil
}

func skipSpace(b []byte, from int64) int64 {
	for from < int64(len(b)) && isJSONSpace(b[from]) {
		from++
	}
	return from
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// offsetShift records that the byte at Clean in the cleaned input came from
// Original in the file, after a replaced Python literal.
type offsetShift struct{ clean, original int64 }

// replacePythonLiterals turns Python json.dumps' NaN, Infinity and
// -Infinity (invalid JSON) outside strings into null, "inf" and "-inf", and
// returns where offsets moved so errors can name the file's real offset.
func replacePythonLiterals(data []byte) ([]byte, []offsetShift) {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data, nil
	}
	out := make([]byte, 0, len(data)+16)
	var shifts []offsetShift
	inString, escaped := false, false
	for i := 0; i < len(data); {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			i++
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			i++
			continue
		}
		replaced := false
		for _, lit := range pythonLiterals {
			if bytes.HasPrefix(data[i:], lit.from) && !isIdentByte(data, i+len(lit.from)) && (i == 0 || !isIdentByteAt(data[i-1])) {
				out = append(out, lit.to...)
				i += len(lit.from)
				shifts = append(shifts, offsetShift{clean: int64(len(out)), original: int64(i)})
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, c)
			i++
		}
	}
	return out, shifts
}

var pythonLiterals = []struct{ from, to []byte }{
	{[]byte("-Infinity"), []byte(`"-inf"`)},
	{[]byte("Infinity"), []byte(`"inf"`)},
	{[]byte("NaN"), []byte("null")},
}

func isIdentByte(b []byte, i int) bool { return i < len(b) && isIdentByteAt(b[i]) }

func isIdentByteAt(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func originalOffset(clean int64, shifts []offsetShift) int64 {
	delta := int64(0)
	for _, s := range shifts {
		if s.clean > clean {
			break
		}
		delta = s.original - s.clean
	}
	return clean + delta
}

func remapOffsets(err error, shifts []offsetShift) error {
	if len(shifts) == 0 {
		return err
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		copied := *syntax
		copied.Offset = originalOffset(syntax.Offset, shifts)
		return &copied
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		copied := *typeErr
		copied.Offset = originalOffset(typeErr.Offset, shifts)
		return &copied
	}
	return err
}

// describeJSONError names the byte offset (and line:column) of a JSON error.
func describeJSONError(data []byte, err error) error {
	var offset int64 = -1
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		offset = syntax.Offset
		// encoding/json counts the offending byte as read; name its position.
		if strings.HasPrefix(syntax.Error(), "invalid character") && offset > 0 {
			offset--
		}
	case errors.As(err, &typeErr):
		offset = typeErr.Offset
	case errors.Is(err, io.ErrUnexpectedEOF):
		offset = int64(len(data))
	}
	if offset < 0 {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	line, col := lineColumn(data, offset)
	return fmt.Errorf("invalid JSON at byte offset %d (line %d, column %d): %w; fix or remove the file", offset, line, col, err)
}

func lineColumn(data []byte, offset int64) (line, col int) {
	offset = min(offset, int64(len(data)))
	line = 1 + bytes.Count(data[:offset], []byte("\n"))
	col = int(offset) - (bytes.LastIndexByte(data[:offset], '\n') + 1) + 1
	return line, col
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
// (max_num_seqs).
func (r LoadedResult) Lookup(key string) (any, bool) {
	if v, ok := r.Fields[key]; ok && v != nil {
		return v, true
	}
	canon := canonicalKey(key)
	if v, ok := lookupCanonical(r.Fields, canon); ok {
		return v, true
	}
	if meta, ok := r.Fields["metadata"].(map[string]any); ok {
		if v, ok := lookupCanonical(meta, canon); ok {
			return v, true
		}
	}
	for _, p := range r.Params {
		if canonicalKey(p.Flag) == canon {
			return p.Value, true
		}
	}
	if engine, ok := r.Fields["engine"].(map[string]any); ok {
		if v, ok := lookupCanonical(engine, canon); ok {
			return v, true
		}
	}
	return nil, false
}

// lookupCanonical scans m for a key equal to canon after canonicalKey; it
// walks keys in sorted order so a file with both spellings resolves the
// same way every time.
func lookupCanonical(m map[string]any, canon string) (any, bool) {
	if v, ok := m[canon]; ok && v != nil {
		return v, true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v := m[k]; v != nil && canonicalKey(k) == canon {
			return v, true
		}
	}
	return nil, false
}

func canonicalKey(k string) string {
	return strings.ReplaceAll(strings.TrimLeft(strings.ToLower(k), "-"), "-", "_")
}

// Number returns a numeric key in its canonical unit, normalising what
// different tools and versions write:
//   - numbers may be JSON numbers or numeric strings; "inf"/"Infinity"
//     (vLLM writes request_rate "inf") give +Inf; null is missing;
//   - vLLM 0.8's "request_goodput:" key (trailing colon) stands for
//     request_goodput;
//   - SGLang's *_e2e_latency_ms stand for *_e2el_ms;
//   - median_* falls back to p50_* (the same statistic);
//   - a *_ms key missing but written in seconds (*_s) or microseconds
//     (*_us) is converted to milliseconds; duration is in seconds and a
//     duration_ms is converted;
//   - servebench's --summary-json keys (successful_requests,
//     requests_per_second, ttft_ms.p99, latency_ms.average, ...) stand for
//     the vLLM keys they summarise;
//   - total_token_throughput, when missing, is (total_input_tokens +
//     total_output_tokens) / duration, its definition.
func (r LoadedResult) Number(key string) (float64, bool) {
	if v, ok := r.Lookup(key); ok {
		return anyToFloat(v)
	}
	for _, alt := range numberAliases(key) {
		if v, ok := r.lookupAlias(alt.key); ok {
			if f, ok := anyToFloat(v); ok {
				return f * alt.scale, true
			}
		}
	}
	if key == "total_token_throughput" {
		in, okIn := r.Number("total_input_tokens")
		out, okOut := r.Number("total_output_tokens")
		dur, okDur := r.Number("duration")
		if okIn && okOut && okDur && dur > 0 {
			return (in + out) / dur, true
		}
	}
	return 0, false
}

type keyAlias struct {
	key   string // "a.b" reaches into a nested object
	scale float64
}

func (r LoadedResult) lookupAlias(key string) (any, bool) {
	outer, inner, nested := strings.Cut(key, ".")
	if !nested {
		return r.Lookup(key)
	}
	m, ok := r.Fields[outer].(map[string]any)
	if !ok || m[inner] == nil {
		return nil, false
	}
	return m[inner], true
}

// summaryJSONKeys maps vLLM keys to the load-test style --summary-json keys.
var summaryJSONKeys = map[string]string{
	"completed":              "successful_requests",
	"failed":                 "failed_requests",
	"request_throughput":     "requests_per_second",
	"output_throughput":      "output_tokens_per_second",
	"total_token_throughput": "total_tokens_per_second",
}

// summaryJSONStats maps a vLLM statistic prefix to the --summary-json
// distribution field.
var summaryJSONStats = map[string]string{"mean": "average", "median": "p50", "p50": "p50", "p95": "p95", "p99": "p99"}

// summaryJSONMetrics maps a vLLM metric to the --summary-json section.
var summaryJSONMetrics = map[string]string{"ttft": "ttft_ms", "tpot": "tpot_ms", "e2el": "latency_ms"}

func numberAliases(key string) []keyAlias {
	var out []keyAlias
	switch key {
	case "request_goodput":
		out = append(out, keyAlias{"request_goodput:", 1})
	case "duration":
		out = append(out, keyAlias{"duration_s", 1}, keyAlias{"duration_ms", 1e-3})
	}
	if rest, ok := strings.CutPrefix(key, "median_"); ok {
		out = append(out, keyAlias{"p50_" + rest, 1})
	}
	if k, ok := summaryJSONKeys[key]; ok {
		out = append(out, keyAlias{k, 1})
	}
	if stat, rest, ok := strings.Cut(key, "_"); ok {
		if metric, ok := strings.CutSuffix(rest, "_ms"); ok && summaryJSONStats[stat] != "" && summaryJSONMetrics[metric] != "" {
			out = append(out, keyAlias{summaryJSONMetrics[metric] + "." + summaryJSONStats[stat], 1})
		}
	}
	if strings.Contains(key, "_e2el_") {
		out = append(out, keyAlias{strings.Replace(key, "_e2el_", "_e2e_latency_", 1), 1})
	}
	if stem, ok := strings.CutSuffix(key, "_ms"); ok {
		out = append(out, keyAlias{stem + "_s", 1e3}, keyAlias{stem + "_us", 1e-3})
		if strings.Contains(stem, "_e2el") {
			sg := strings.Replace(stem, "_e2el", "_e2e_latency", 1)
			out = append(out, keyAlias{sg + "_s", 1e3}, keyAlias{sg + "_us", 1e-3})
		}
	}
	return out
}

func anyToFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		return f, err == nil
	case float64:
		return v, true
	case int:
		return float64(v), true
	case string:
		s := strings.TrimSpace(strings.ToLower(v))
		switch s {
		case "inf", "+inf", "infinity", "+infinity":
			return math.Inf(1), true
		case "-inf", "-infinity":
			return math.Inf(-1), true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// Text returns key as display text: strings as written, numbers in their
// shortest form, +Inf as "inf".
func (r LoadedResult) Text(key string) (string, bool) {
	v, ok := r.Lookup(key)
	if !ok {
		if f, ok := r.Number(key); ok {
			return formatShortest(f), true
		}
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		if f, ok := anyToFloat(v); ok {
			return formatShortest(f), true
		}
		return string(v), true
	case bool:
		return strconv.FormatBool(v), true
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
}

func formatShortest(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
