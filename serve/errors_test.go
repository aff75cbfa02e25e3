package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"testing"
)

// TestUnknownModelMatchesCapture: the nested error body is byte for byte
// what llm-d-inference-sim (imitating current vLLM) sent for an unknown
// model, captured in testdata.
func TestUnknownModelMatchesCapture(t *testing.T) {
	capture, err := os.ReadFile("testdata/llmd-vllm-emulated-error-unknown-model.txt")
	if err != nil {
		t.Fatal(err)
	}
	wantBody, _, _ := bytes.Cut(capture, []byte("\n"))
	s, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := postHandler(t, s.Handler(), "/v1/completions", `{"model":"nope","prompt":"hi"}`)
	if rec.Code != http.StatusNotFound || !bytes.Contains(capture, []byte("HTTP 404")) {
		t.Fatalf("status %d, want 404", rec.Code)
	}
	if got := rec.Body.Bytes(); !bytes.Equal(got, wantBody) {
		t.Errorf("body\n got %s\nwant %s", got, wantBody)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestErrorStyles(t *testing.T) {
	e := &apiError{Status: 400, Type: "BadRequestError", Message: `bad "x"`}
	tests := []struct {
		style       ErrorStyle
		body, event string
	}{
		{ErrorStyleNested,
			`{"error":{"message":"bad \"x\"","type":"BadRequestError","param":null,"code":400}}`,
			"data: {\"error\":{\"message\":\"bad \\\"x\\\"\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}\n\n"},
		{ErrorStyleLegacy,
			`{"object":"error","message":"bad \"x\"","type":"BadRequestError","param":null,"code":400}`,
			"data: {\"error\":{\"object\":\"error\",\"message\":\"bad \\\"x\\\"\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}\n\n"},
	}
	for _, tc := range tests {
		if got := string(errorBody(e, tc.style)); got != tc.body {
			t.Errorf("%s body\n got %s\nwant %s", tc.style, got, tc.body)
		}
		if got := string(streamErrorEvent(e, tc.style)); got != tc.event {
			t.Errorf("%s event\n got %q\nwant %q", tc.style, got, tc.event)
		}
	}
	withParam := badParam("n", "no")
	var v map[string]map[string]any
	if err := json.Unmarshal(errorBody(withParam, ErrorStyleNested), &v); err != nil || v["error"]["param"] != "n" {
		t.Errorf("param not reported: %v %v", v, err)
	}
	for _, bad := range []string{"flat", "NESTED"} {
		if _, err := ParseErrorStyle(bad); err == nil {
			t.Errorf("ParseErrorStyle(%q) accepted", bad)
		}
	}
}
