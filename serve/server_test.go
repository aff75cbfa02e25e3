package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testClient is an HTTP client whose idle connections are closed when the
// test ends (so goleak sees no transport goroutines).
func testClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func do(t testing.TB, c *http.Client, method, url, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp.StatusCode, resp.Header, b
}

// sseEvents splits an SSE body into its data payloads.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		out = append(out, data)
	}
	return out
}

func TestInfoEndpoints(t *testing.T) {
	cfg := testConfig(t)
	cfg.ServedModelNames = []string{"alias-a", "alias-b"}
	r := startServer(t, cfg)
	c := testClient(t)

	status, _, body := do(t, c, "GET", r.URL()+"/v1/models", "")
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy, Root string
			MaxModelLen               int `json:"max_model_len"`
			Permission                []struct {
				AllowLogprobs *bool `json:"allow_logprobs"`
			} `json:"permission"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil || status != 200 {
		t.Fatalf("/v1/models %d %s: %v", status, body, err)
	}
	if models.Object != "list" || len(models.Data) != 2 || models.Data[0].ID != "alias-a" || models.Data[1].ID != "alias-b" ||
		models.Data[0].Root != "test-model" || models.Data[0].MaxModelLen != 4096 || models.Data[0].Object != "model" {
		t.Errorf("/v1/models = %s", body)
	}
	// Log probabilities are refused with a 400, so the card must not offer them.
	if p := models.Data[0].Permission; len(p) != 1 || p[0].AllowLogprobs == nil || *p[0].AllowLogprobs {
		t.Errorf("/v1/models permission = %s: want allow_logprobs false", body)
	}

	if status, _, body := do(t, c, "GET", r.URL()+"/health", ""); status != 200 || len(body) != 0 {
		t.Errorf("/health = %d %q", status, body)
	}
	if status, _, body := do(t, c, "GET", r.URL()+"/version", ""); status != 200 || string(body) != `{"version":"0.8.5"}` {
		t.Errorf("/version = %d %s", status, body)
	}
	if status, _, body := do(t, c, "GET", r.URL()+"/nope", ""); status != 404 || string(body) != `{"detail":"Not Found"}` {
		t.Errorf("unknown path = %d %s", status, body)
	}
	if status, hdr, body := do(t, c, "GET", r.URL()+"/v1/completions", ""); status != 405 || string(body) != `{"detail":"Method Not Allowed"}` || hdr.Get("Allow") != "POST" {
		t.Errorf("GET /v1/completions = %d %s", status, body)
	}
	// The served names work; the --model name no longer does.
	if status, _, body := do(t, c, "POST", r.URL()+"/v1/completions", `{"model":"alias-b","prompt":"hi","max_tokens":2}`); status != 200 {
		t.Errorf("alias-b: %d %s", status, body)
	}
	if status, _, _ := do(t, c, "POST", r.URL()+"/v1/completions", `{"model":"test-model","prompt":"hi","max_tokens":2}`); status != 404 {
		t.Errorf("test-model after --served-model-name: %d, want 404", status)
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	r := startServer(t, testConfig(t))
	c := testClient(t)
	status, _, body := do(t, c, "POST", r.URL()+"/tokenize", `{"model":"test-model","prompt":"Hello world"}`)
	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || status != 200 {
		t.Fatalf("/tokenize %d %s", status, body)
	}
	// cl100k_base: "Hello" 9906, " world" 1917.
	if tok.Count != 2 || tok.MaxModelLen != 4096 || len(tok.Tokens) != 2 || tok.Tokens[0] != 9906 || tok.Tokens[1] != 1917 {
		t.Errorf("/tokenize = %s", body)
	}
	// llama.cpp's field name is accepted too.
	if status, _, body := do(t, c, "POST", r.URL()+"/tokenize", `{"content":"Hello world"}`); status != 200 || !bytes.Contains(body, []byte(`"tokens":[9906,1917]`)) {
		t.Errorf("/tokenize with content: %d %s", status, body)
	}
	status, _, body = do(t, c, "POST", r.URL()+"/detokenize", `{"model":"test-model","tokens":[9906,1917]}`)
	if status != 200 || string(body) != `{"prompt":"Hello world"}` {
		t.Errorf("/detokenize = %d %s", status, body)
	}
	for _, tc := range []struct{ path, body string }{
		{"/detokenize", `{"tokens":[-5]}`},
		{"/detokenize", `{}`},
		{"/tokenize", `{"model":"x","prompt":"a"}`},
		{"/tokenize", `{"prompt":5}`},
	} {
		if status, _, body := do(t, c, "POST", r.URL()+tc.path, tc.body); status < 400 || status >= 500 {
			t.Errorf("%s %s: %d %s, want a 4xx", tc.path, tc.body, status, body)
		}
	}
}

// TestAPIKey: every endpoint but the probes needs the key when one is set,
// /tokenize included (issue 9: it tokenized megabytes for anyone).
func TestAPIKey(t *testing.T) {
	cfg := testConfig(t)
	cfg.APIKey = "sekret"
	r := startServer(t, cfg)
	c := testClient(t)
	completion := `{"prompt":"hi","max_tokens":1}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
	}{
		{"no key", "POST", "/v1/completions", completion, nil, 401},
		{"wrong key", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer wrong"}, 401},
		{"key prefix", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer sekre"}, 401},
		{"no scheme", "POST", "/v1/completions", completion, []string{"Authorization", "sekret"}, 401},
		{"right key", "POST", "/v1/completions", completion, []string{"Authorization", "Bearer sekret"}, 200},
		{"scheme in lower case", "POST", "/v1/completions", completion, []string{"Authorization", "bearer sekret"}, 200},
		{"tokenize without key", "POST", "/tokenize", `{"prompt":"hi"}`, nil, 401},
		{"tokenize with key", "POST", "/tokenize", `{"prompt":"hi"}`, []string{"Authorization", "Bearer sekret"}, 200},
		{"detokenize without key", "POST", "/detokenize", `{"tokens":[1]}`, nil, 401},
		{"reset_prefix_cache without key", "POST", "/reset_prefix_cache", "", nil, 401},
		{"models without key", "GET", "/v1/models", "", nil, 401},
		{"health is public", "GET", "/health", "", nil, 200},
		{"version is public", "GET", "/version", "", nil, 200},
		{"metrics are public", "GET", "/metrics", "", nil, 200},
	} {
		status, _, b := do(t, c, tc.method, r.URL()+tc.path, tc.body, tc.header...)
		if status != tc.status {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.method, tc.path, status, b, tc.status)
		}
		if status == 401 && string(b) != `{"error":"Unauthorized"}` {
			t.Errorf("%s: body %s", tc.name, b)
		}
	}
}

// TestResetPrefixCache: a repeated prompt hits the prefix cache until the
// cache is reset.
func TestResetPrefixCache(t *testing.T) {
	cfg := testConfig(t)
	cfg.EnablePromptTokensDetails = true
	r := startServer(t, cfg)
	c := testClient(t)
	prompt := strings.Repeat(" lorem ipsum dolor", 30)
	body := `{"prompt":"` + prompt + `","max_tokens":2}`
	cached := func() int {
		status, _, b := do(t, c, "POST", r.URL()+"/v1/completions", body)
		if status != 200 {
			t.Fatalf("%d %s", status, b)
		}
		var resp struct {
			Usage struct {
				Details *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Usage.Details == nil {
			return 0
		}
		return resp.Usage.Details.Cached
	}
	if got := cached(); got != 0 {
		t.Fatalf("first request cached %d tokens", got)
	}
	if got := cached(); got == 0 {
		t.Fatalf("second identical request had no prefix-cache hit")
	}
	if status, _, b := do(t, c, "POST", r.URL()+"/reset_prefix_cache", ""); status != 200 {
		t.Fatalf("/reset_prefix_cache: %d %s", status, b)
	}
	if got := cached(); got != 0 {
		t.Errorf("after reset: %d cached tokens, want 0", got)
	}
}

// TestContinuousUsage: with continuous_usage_stats every chunk carries
// cumulative usage, and chunk texts tokenize back to the counts reported.
func TestContinuousUsage(t *testing.T) {
	r := startServer(t, testConfig(t))
	c := testClient(t)
	_, hdr, body := do(t, c, "POST", r.URL()+"/v1/completions",
		`{"prompt":"Tell me a story","max_tokens":40,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	if ct := hdr.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	events := sseEvents(t, body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events[len(events)-1])
	}
	var text strings.Builder
	prev := 0
	for i, ev := range events[:len(events)-2] {
		var ch struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
				TotalTokens      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &ch); err != nil {
			t.Fatalf("chunk %d %q: %v", i, ev, err)
		}
		text.WriteString(ch.Choices[0].Text)
		ids, err := r.Tokenizer().Encode(context.Background(), text.String())
		if err != nil {
			t.Fatal(err)
		}
		if ch.Usage.CompletionTokens <= prev || len(ids) != ch.Usage.CompletionTokens ||
			ch.Usage.PromptTokens != 4 || ch.Usage.TotalTokens != 4+ch.Usage.CompletionTokens {
			t.Fatalf("chunk %d: completion_tokens %d after %d; text so far is %d tokens", i, ch.Usage.CompletionTokens, prev, len(ids))
		}
		prev = ch.Usage.CompletionTokens
		if last := i == len(events)-3; last != (ch.Choices[0].FinishReason != nil) {
			t.Errorf("chunk %d: finish_reason %v", i, ch.Choices[0].FinishReason)
		}
	}
	if prev != 40 {
		t.Errorf("generated %d tokens, want 40", prev)
	}
	usage := events[len(events)-2]
	if !strings.Contains(usage, `"choices":[],"usage":{"prompt_tokens":4,"total_tokens":44,"completion_tokens":40}`) {
		t.Errorf("usage chunk %s", usage)
	}
}

// TestStreamShapes compares the chunk layout (keys and their order) with
// the captured vLLM-format streams.
func TestStreamShapes(t *testing.T) {
	r := startServer(t, testConfig(t))
	c := testClient(t)
	tests := []struct {
		path, body string
		want       []string // a prefix and a suffix of each event, by position from the end
	}{
		{"/v1/completions", `{"prompt":"hi","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`, []string{
			`{"id":"cmpl-`, `"object":"text_completion","created":`, `"model":"test-model","choices":[{"index":0,"text":"`,
			`","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null}`,
			`"choices":[],"usage":{"prompt_tokens":1,"total_tokens":4,"completion_tokens":3}}`,
		}},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}`, []string{
			`{"id":"chatcmpl-`, `"object":"chat.completion.chunk","created":`,
			`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			`"choices":[{"index":0,"delta":{"content":"`,
			`"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
		}},
	}
	for _, tc := range tests {
		status, _, body := do(t, c, "POST", r.URL()+tc.path, tc.body)
		if status != 200 {
			t.Fatalf("%s: %d %s", tc.path, status, body)
		}
		joined := string(body)
		for _, want := range tc.want {
			if !strings.Contains(joined, want) {
				t.Errorf("%s stream lacks %s:\n%s", tc.path, want, body)
			}
		}
		events := sseEvents(t, body)
		for _, ev := range events[:len(events)-1] {
			if !json.Valid([]byte(ev)) {
				t.Errorf("invalid JSON event %s", ev)
			}
		}
	}
}

// TestV0Metrics: --engine v0 exports vLLM 0.5.4's metric set and labels.
func TestV0Metrics(t *testing.T) {
	cfg := testConfig(t)
	cfg.Engine.Version = "v0"
	cfg.Engine.EnablePrefixCaching = false
	cfg.Engine.EnableChunkedPrefill = false
	cfg.Engine.MaxNumBatchedTokens = 4096
	cfg.Engine.NumCPUBlocks = 100
	cfg.Engine.Watermark = 0.01
	r := startServer(t, cfg)
	c := testClient(t)
	if status, _, b := do(t, c, "POST", r.URL()+"/v1/completions", `{"prompt":"hi","max_tokens":5}`); status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	if _, _, b := do(t, c, "GET", r.URL()+"/version", ""); string(b) != `{"version":"0.5.4"}` {
		t.Errorf("/version %s", b)
	}
	waitIdle(t, r) // the finish is recorded just after the last token is sent
	_, _, page := do(t, c, "GET", r.URL()+"/metrics", "")
	for _, want := range []string{
		`vllm:num_requests_swapped{model_name="test-model"} 0`,
		`vllm:cpu_cache_usage_perc{model_name="test-model"} 0`,
		`vllm:generation_tokens_total{model_name="test-model"} 5`,
		`vllm:request_success_total{finished_reason="length",model_name="test-model"} 1`,
		`vllm:e2e_request_latency_seconds_bucket{model_name="test-model",le="60"} 1`,
		`vllm:time_per_output_token_seconds_bucket{model_name="test-model",le="2.5"} 4`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if bytes.Contains(page, []byte("kv_cache_usage_perc")) || bytes.Contains(page, []byte(`engine="0"`)) {
		t.Errorf("V0 page has V1 names")
	}
}

func waitIdle(t testing.TB, r *Running) Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		snap, err := r.Snapshot(ctx)
		if err != nil {
			t.Fatalf("engine did not go idle: %v (last %+v)", err, snap)
		}
		if snap.Idle && snap.Requests == 0 {
			return snap
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Two servers with the same seed (two replicas, or one restarted) give
// different response IDs: routers and log pipelines key on them.
func TestResponseIDsDifferAcrossInstances(t *testing.T) {
	c := testClient(t)
	ids := map[string]int{}
	for instance := range 2 {
		r := startServer(t, testConfig(t))
		for range 3 {
			status, _, body := do(t, c, "POST", r.URL()+"/v1/completions", `{"prompt":"hi","max_tokens":2}`)
			var resp struct{ ID string }
			if status != 200 || json.Unmarshal(body, &resp) != nil || !strings.HasPrefix(resp.ID, "cmpl-") {
				t.Fatalf("instance %d: %d %s", instance, status, body)
			}
			if prev, seen := ids[resp.ID]; seen {
				t.Fatalf("instance %d repeats ID %s first given by instance %d", instance, resp.ID, prev)
			}
			ids[resp.ID] = instance
		}
	}
}
