package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flatFields is chunkFields with strings, comparable with cmp and built
// independently by the encoding/json oracle.
type flatFields struct {
	HasChoices                                          bool
	Text                                                string
	DeltaContent, DeltaReasoningContent, DeltaReasoning string
	MsgContent, MsgReasoningContent, MsgReasoning       string
	HasFinishReason, HasUsage                           bool
	PromptTokens, CompletionTokens, CachedTokens        intField
	HasError                                            bool
	ErrorMessage                                        string
	ObjectIsError                                       bool
	TopMessage                                          string
}

func flatten(f *chunkFields) flatFields {
	return flatFields{
		HasChoices: f.HasChoices, Text: string(f.Text),
		DeltaContent: string(f.Delta.Content), DeltaReasoningContent: string(f.Delta.ReasoningContent), DeltaReasoning: string(f.Delta.Reasoning),
		MsgContent: string(f.Message.Content), MsgReasoningContent: string(f.Message.ReasoningContent), MsgReasoning: string(f.Message.Reasoning),
		HasFinishReason: f.HasFinishReason, HasUsage: f.HasUsage,
		PromptTokens: f.PromptTokens, CompletionTokens: f.CompletionTokens, CachedTokens: f.CachedTokens,
		HasError: f.HasError, ErrorMessage: string(f.ErrorMessage),
		ObjectIsError: f.ObjectIsError, TopMessage: string(f.TopMessage),
	}
}

// oracleFields extracts the same fields with encoding/json decoding into
// map[string]any: the reference semantics the scanner must match.
func oracleFields(data []byte) (flatFields, error) {
	var out flatFields
	if !json.Valid(data) {
		return out, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return out, errors.New("not an object")
	}
	str := func(v any) string { s, _ := v.(string); return s }
	num := func(v any) intField {
		n, ok := v.(json.Number)
		if !ok {
			return intField{}
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return intField{}
		}
		return intField{Value: i, OK: true}
	}
	if arr, ok := m["choices"].([]any); ok && len(arr) > 0 {
		out.HasChoices = true
		if c0, ok := arr[0].(map[string]any); ok {
			out.Text = str(c0["text"])
			_, out.HasFinishReason = c0["finish_reason"].(string)
			if d, ok := c0["delta"].(map[string]any); ok {
				out.DeltaContent, out.DeltaReasoningContent, out.DeltaReasoning = str(d["content"]), str(d["reasoning_content"]), str(d["reasoning"])
			}
			if d, ok := c0["message"].(map[string]any); ok {
				out.MsgContent, out.MsgReasoningContent, out.MsgReasoning = str(d["content"]), str(d["reasoning_content"]), str(d["reasoning"])
			}
		}
	}
	if u, ok := m["usage"].(map[string]any); ok {
		out.HasUsage = true
		out.PromptTokens, out.CompletionTokens = num(u["prompt_tokens"]), num(u["completion_tokens"])
		if d, ok := u["prompt_tokens_details"].(map[string]any); ok {
			out.CachedTokens = num(d["cached_tokens"])
		}
	}
	if e, present := m["error"]; present && e != nil {
		out.HasError = true
		switch e := e.(type) {
		case string:
			out.ErrorMessage = e
		case map[string]any:
			out.ErrorMessage = str(e["message"])
		}
	}
	out.ObjectIsError = str(m["object"]) == "error"
	out.TopMessage = str(m["message"])
	return out, nil
}

// capturedDataLines returns every JSON data payload of the captured streams.
func capturedDataLines(tb testing.TB) [][]byte {
	tb.Helper()
	files, err := filepath.Glob("testdata/sse/*")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no captured streams in testdata/sse (copy them from shared/examples/sse): %v", err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimPrefix(line, "data: ")
			if strings.HasPrefix(line, "{") {
				out = append(out, []byte(line))
			}
		}
	}
	return out
}

func TestChunkParserFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want flatFields
	}{
		{
			name: "vllm completion chunk",
			in:   `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`,
			want: flatFields{HasChoices: true, Text: " word"},
		},
		{
			name: "usage-only chunk with empty choices",
			in:   `{"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":6,"total_tokens":14,"prompt_tokens_details":{"cached_tokens":3}}}`,
			want: flatFields{HasUsage: true, PromptTokens: intField{8, true}, CompletionTokens: intField{6, true}, CachedTokens: intField{3, true}},
		},
		{
			name: "llama.cpp last chunk carries usage and choices",
			in:   `{"choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"completion_tokens":8,"prompt_tokens":6,"total_tokens":14},"timings":{"prompt_n":6,"prompt_ms":3.989}}`,
			want: flatFields{HasChoices: true, HasFinishReason: true, HasUsage: true, PromptTokens: intField{6, true}, CompletionTokens: intField{8, true}},
		},
		{
			name: "role-only chat delta still has choices",
			in:   `{"choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant"}}]}`,
			want: flatFields{HasChoices: true},
		},
		{
			name: "reasoning fields",
			in:   `{"choices":[{"delta":{"reasoning_content":"think","reasoning":"think","content":null}}]}`,
			want: flatFields{HasChoices: true, DeltaReasoningContent: "think", DeltaReasoning: "think"},
		},
		{
			name: "non-streamed chat message",
			in:   `{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"completion_tokens":1}}`,
			want: flatFields{HasChoices: true, MsgContent: "hi", HasFinishReason: true, HasUsage: true, CompletionTokens: intField{1, true}},
		},
		{
			name: "escapes and surrogates",
			in:   `{"choices":[{"text":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00\ud800x"}]}`,
			want: flatFields{HasChoices: true, Text: "a\"b\\c/d\n\té😀\uFFFDx"},
		},
		{
			name: "invalid UTF-8 becomes U+FFFD",
			in:   "{\"choices\":[{\"text\":\"a\xffb\"}]}",
			want: flatFields{HasChoices: true, Text: "a\uFFFDb"},
		},
		{
			name: "escaped key still matches",
			in:   `{"ch\u006fices":[{"t\u0065xt":"x"}]}`,
			want: flatFields{HasChoices: true, Text: "x"},
		},
		{
			name: "duplicate key: last wins entirely",
			in:   `{"choices":[{"text":"a"}],"choices":[{"delta":{"content":"b"}}]}`,
			want: flatFields{HasChoices: true, DeltaContent: "b"},
		},
		{
			name: "choices null after non-empty",
			in:   `{"choices":[{"text":"a"}],"choices":null}`,
			want: flatFields{},
		},
		{
			name: "non-object first choice",
			in:   `{"choices":[1,{"text":"x"}]}`,
			want: flatFields{HasChoices: true},
		},
		{
			name: "wrong types read as absent",
			in:   `{"choices":[{"text":5,"finish_reason":null,"delta":"x"}],"usage":{"completion_tokens":1.5,"prompt_tokens":"7","prompt_tokens_details":null}}`,
			want: flatFields{HasChoices: true, HasUsage: true},
		},
		{
			name: "integer edge values",
			in:   `{"usage":{"completion_tokens":9223372036854775807,"prompt_tokens":9223372036854775808,"prompt_tokens_details":{"cached_tokens":-0}}}`,
			want: flatFields{HasUsage: true, CompletionTokens: intField{1<<63 - 1, true}, CachedTokens: intField{0, true}},
		},
		{
			name: "vllm error object mid-stream",
			in:   `{"error":{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}}`,
			want: flatFields{HasError: true, ErrorMessage: "boom"},
		},
		{
			name: "error as string",
			in:   `{"error":"overloaded"}`,
			want: flatFields{HasError: true, ErrorMessage: "overloaded"},
		},
		{
			name: "error null is no error",
			in:   `{"error":null,"choices":[{"text":"a"}]}`,
			want: flatFields{HasChoices: true, Text: "a"},
		},
		{
			name: "old vLLM error body",
			in:   `{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`,
			want: flatFields{ObjectIsError: true, TopMessage: "The model does not exist."},
		},
		{
			name: "whitespace everywhere",
			in:   " \r\n\t{ \"choices\" : [ { \"text\" : \"a\" } , [ ] ] , \"x\" : [ 1 , -2.5e+3 , true , false , null , { } ] } \n",
			want: flatFields{HasChoices: true, Text: "a"},
		},
	}
	var p chunkParser
	var got chunkFields
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.parse([]byte(tc.in), &got); err != nil {
				t.Fatalf("parse: %v", err)
			}
			if d := cmp.Diff(tc.want, flatten(&got)); d != "" {
				t.Errorf("fields (-want +got):\n%s", d)
			}
			oracle, err := oracleFields([]byte(tc.in))
			if err != nil {
				t.Fatalf("oracle: %v", err)
			}
			if d := cmp.Diff(tc.want, oracle); d != "" {
				t.Errorf("test expectation disagrees with encoding/json (-want +oracle):\n%s", d)
			}
		})
	}
}

func TestChunkParserRejectsMalformed(t *testing.T) {
	bad := []string{
		``, ` `, `[]`, `"s"`, `1`, `null`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`,
		`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`,
		`{"a":"x\q"}`, `{"a":"\u12"}`, "{\"a\":\"tab\there\"}", `{"a":"unterminated}`, `{"a":[1,]}`, `{"a":[,1]}`,
		`{"a":1}}`, `{"a":1} x`, `{"a":1}{}`, `{'a':1}`, `{"choices":[{"text":"a"]}`, "\xef\xbb\xbf{}",
		strings.Repeat(`{"a":`, maxNestingDepth+1) + `1` + strings.Repeat(`}`, maxNestingDepth+1),
	}
	var p chunkParser
	var f chunkFields
	for _, in := range bad {
		err := p.parse([]byte(in), &f)
		if err == nil {
			t.Errorf("parse(%.40q) accepted malformed JSON", in)
			continue
		}
		if json.Valid([]byte(in)) && strings.HasPrefix(strings.TrimSpace(in), "{") {
			t.Errorf("test input %.40q is valid JSON; fix the test", in)
		}
		if !strings.Contains(err.Error(), "at byte") {
			t.Errorf("parse(%.40q) error %q does not say where", in, err)
		}
	}
	deep := strings.Repeat(`[`, maxNestingDepth-1) + strings.Repeat(`]`, maxNestingDepth-1)
	if err := p.parse([]byte(`{"a":`+deep+`}`), &f); err != nil {
		t.Errorf("nesting at the encoding/json limit rejected: %v", err)
	}
}

func TestChunkParserCapturedStreams(t *testing.T) {
	var p chunkParser
	var got chunkFields
	for _, line := range capturedDataLines(t) {
		if err := p.parse(line, &got); err != nil {
			t.Fatalf("parse(%s): %v", line, err)
		}
		want, err := oracleFields(line)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, flatten(&got)); d != "" {
			t.Errorf("%s (-oracle +got):\n%s", line, d)
		}
	}
}

// FuzzChunkParser checks the scanner against encoding/json: the same inputs
// are accepted, and accepted inputs give the same fields. Each case parses
// prev then data with one parser, as consecutive chunks of a stream are, so
// the resume-after-repeated-head path is checked too.
func FuzzChunkParser(f *testing.F) {
	lines := capturedDataLines(f)
	for i, line := range lines {
		prev := []byte(`{}`)
		if i > 0 {
			prev = lines[i-1]
		}
		f.Add(prev, line)
	}
	for _, s := range []string{
		`{"choices":[{"text":"a\u00e9\ud83d\ude00","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"error":{"message":"x"}}`, `{"error":"x"}`, `{"object":"error","message":"m"}`,
		`{"choices":[{"delta":{"content":"c","reasoning_content":"r","reasoning":"q"},"message":{"content":"m"}}]}`,
		`{"usage":{"completion_tokens":-9223372036854775808}}`, "{\"choices\":[{\"text\":\"\xed\xa0\x80\"}]}",
		`{"ch\u006fices":[{"text":"\ud800\u0041"}]}`, `{"a":[[[[{}]]]],"b":-0.0e-0}`,
	} {
		f.Add([]byte(`{"id":"x","object":"error","model":"m","choices":[]}`), []byte(s))
	}
	f.Add([]byte(`{"id":"x","object":"error","model":"m","choices":[]}`), []byte(`{"id":"x","object":"error","model":"m","message":"hi"}`))
	f.Add([]byte(`{"id":"x","object":"text","created":1}`), []byte(`{"id":"x","object":"text","created":1`))
	f.Fuzz(func(t *testing.T, prev, data []byte) {
		var p chunkParser
		var got chunkFields
		_ = p.parse(prev, &got)
		err := p.parse(data, &got)
		want, werr := oracleFields(data)
		if (err == nil) != (werr == nil) {
			t.Fatalf("parse(%q) after %q: scanner error %v, encoding/json error %v", data, prev, err, werr)
		}
		if err != nil {
			return
		}
		if d := cmp.Diff(want, flatten(&got)); d != "" {
			t.Fatalf("parse(%q) after %q (-encoding/json +scanner):\n%s", data, prev, d)
		}
	})
}

func BenchmarkChunkParser(b *testing.B) {
	line := []byte(`{"id":"cmpl-3a069026-7e8a-587a-99f1-7deef1ed71f1-0","object":"text_completion","created":1795329665,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	var p chunkParser
	var f chunkFields
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if err := p.parse(line, &f); err != nil || !f.HasChoices {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
