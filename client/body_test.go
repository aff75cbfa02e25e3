package client

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/servebench/servebench/workload"
)

func TestRequestBody(t *testing.T) {
	textReq := &workload.Request{Prompt: "Hi \"there\"\n\x01é", PromptLen: 5, MaxTokens: 16}
	idsReq := &workload.Request{PromptIDs: []int32{1, 22, 333}, PromptLen: 3, MaxTokens: 7}
	tests := []struct {
		name string
		cfg  Config
		req  *workload.Request
		want string // JSON, compared as decoded values
	}{
		{
			name: "completions text",
			cfg:  Config{Model: "m"},
			req:  textReq,
			want: `{"model":"m","prompt":"Hi \"there\"\n\u0001é","max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "completions token ids, ignore_eos, continuous usage",
			cfg:  Config{Model: "m", IgnoreEOS: true, ContinuousUsage: true},
			req:  idsReq,
			want: `{"model":"m","prompt":[1,22,333],"max_tokens":7,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"ignore_eos":true}`,
		},
		{
			name: "chat sends both output limits",
			cfg:  Config{Model: "m", Endpoint: "/v1/chat/completions"},
			req:  textReq,
			want: `{"model":"m","messages":[{"role":"user","content":"Hi \"there\"\n\u0001é"}],"max_completion_tokens":16,"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{
			name: "no stream, no model",
			cfg:  Config{NoStream: true},
			req:  textReq,
			want: `{"prompt":"Hi \"there\"\n\u0001é","max_tokens":16,"stream":false}`,
		},
		{
			name: "extra body turning streaming off drops stream_options",
			cfg:  Config{ExtraBody: map[string]any{"stream": false}},
			req:  textReq,
			want: `{"prompt":"Hi \"there\"\n\u0001é","max_tokens":16,"stream":false}`,
		},
		{
			name: "extra body merged last and overrides defaults",
			cfg: Config{Model: "m", IgnoreEOS: true, ExtraBody: map[string]any{
				"temperature": 0.5, "max_tokens": 3, "ignore_eos": false, "model": "other", "stream_options": map[string]any{"include_usage": false},
			}},
			req:  textReq,
			want: `{"prompt":"Hi \"there\"\n\u0001é","stream":true,"ignore_eos":false,"max_tokens":3,"model":"other","stream_options":{"include_usage":false},"temperature":0.5}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chat := strings.HasSuffix(tc.cfg.Endpoint, "chat/completions")
			tmpl, err := newBodyTemplate(&tc.cfg, chat)
			if err != nil {
				t.Fatal(err)
			}
			body, err := tmpl.appendBody(nil, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, body)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("body (-want +got):\n%s\n%s", d, body)
			}
			if n := strings.Count(string(body), `"max_tokens"`); n > 1 {
				t.Errorf("max_tokens appears %d times: %s", n, body)
			}
		})
	}
}

func TestRequestBodyErrors(t *testing.T) {
	chat, err := newBodyTemplate(&Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chat.appendBody(nil, &workload.Request{PromptIDs: []int32{1}}); !errors.Is(err, errChatNeedsText) {
		t.Errorf("chat with token IDs only: %v, want errChatNeedsText", err)
	}
	for _, tc := range []struct {
		cfg  Config
		chat bool
		want string
	}{
		{Config{ExtraBody: map[string]any{"prompt": "x"}}, false, `extra_body key "prompt"`},
		{Config{ExtraBody: map[string]any{"messages": "x"}}, true, `extra_body key "messages"`},
		{Config{ExtraBody: map[string]any{"f": func() {}}}, false, `extra_body key "f" cannot be encoded`},
	} {
		_, err := newBodyTemplate(&tc.cfg, tc.chat)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newBodyTemplate(%v): %v, want error containing %q", tc.cfg.ExtraBody, err, tc.want)
		}
	}
}

// FuzzAppendJSONString checks the string encoder against encoding/json:
// the output decodes to what json.Marshal's output decodes to.
